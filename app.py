"""Entry script: serve the CodeQA web chat from a checkout (`python app.py [--host H] [--port P]`).

The app itself is `codeqa.app` (`create_app`, also found by `flask --app app run`); installed,
the same command is `codeqa serve`.
"""

import sys

from codeqa.app import create_app, main

__all__ = ["create_app"]

if __name__ == "__main__":
    sys.exit(main())
