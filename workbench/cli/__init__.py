"""The ``workbench`` command line: every verb, in this package.

The command line sits on top of the library: it imports the library, and nothing in the library
imports it. ``python -m workbench.cli`` and the ``workbench`` console script both run `main`.
"""

from workbench.cli.app import main

__all__ = ["main"]
