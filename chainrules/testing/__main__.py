"""``python -m chainrules.testing MODULE``: see ``chainrules.testing.cli``."""

import sys

from chainrules.testing.cli import main

if __name__ == "__main__":
    sys.exit(main())
