"""Entry script: the indexing CLI from a checkout (`python preprocessing.py index PATH`).

The CLI is `codeqa.preprocessing`, the indexer `codeqa.indexing.indexer`; installed, the same
commands are `codeqa index | list | remove | watch`.
"""

import sys

from codeqa.preprocessing import main

if __name__ == "__main__":
    sys.exit(main())
