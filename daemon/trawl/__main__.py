"""``python -m trawl``: the ``trawl`` command (:func:`trawl.cli.main`)."""

import sys

from .cli import main

if __name__ == "__main__":
    sys.exit(main())
