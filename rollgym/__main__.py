"""``python -m rollgym``: the ``rollgym`` command, for when the console script is not on ``PATH``."""

import sys

from rollgym.cli import main

if __name__ == "__main__":
    sys.exit(main())
