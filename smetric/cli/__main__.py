"""``python -m smetric.cli``: the ``smetric`` command."""

import sys

from . import main

if __name__ == "__main__":  # importing this module (e.g. walking the package) runs nothing
    sys.exit(main())
