"""The index on disk: one home for its tables, their schema, and every read and write of them.

`connection` opens the database (a folder or object storage), `schema` declares the tables,
`registry` lists repos and their table generations, `lease` keeps to one index run per repo,
`create_tables` writes, `reader` reads (the typed read API), `gate` serves indexed files from
disk, and `filters` is the one place a value is quoted into a filter.
"""
