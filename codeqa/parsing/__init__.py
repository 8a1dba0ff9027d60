"""Parsing: a repository folder → its files (`repo_files`) → definitions, references, doc
sections, module code and search tokens.

The language table (`languages.py`) and the tree-sitter queries (`queries/*.scm`) hold all
language knowledge, as data. Imports only `codeqa.core`.
"""
