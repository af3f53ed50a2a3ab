"""``python -m udbench``: the command line (:func:`udbench.cli.main`)."""

import sys

from udbench.cli import main

if __name__ == "__main__":
    sys.exit(main())
