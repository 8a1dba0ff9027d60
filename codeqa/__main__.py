"""`python -m codeqa`: the same as the `codeqa` command."""

import sys

from codeqa.cli import main

sys.exit(main())
