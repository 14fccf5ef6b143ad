"""``python -m workbench.cli``: the same as the ``workbench`` command."""

import sys

from workbench.cli.app import main

if __name__ == "__main__":  # importing the module (a walk over the package) runs nothing
    sys.exit(main())
