"""An IPython startup file: this kernel imports only what `make demo` installs.

`tests/demo_install.py` copies it into a kernel's ``IPYTHONDIR`` and names, in
``WORKBENCH_DEMO_FOREIGN``, a JSON file mapping each importable file of the distributions that
`make demo` does not install to its distribution. An import that would load one of those files
fails as it would in the demo's own venv, saying which distribution is missing. Self-contained
(the kernel runs it before any cell), standard library only.
"""

from __future__ import annotations

import importlib.machinery
import json
import os
import sys
from collections.abc import Sequence
from importlib.machinery import ModuleSpec
from types import ModuleType

with open(os.environ["WORKBENCH_DEMO_FOREIGN"], encoding="utf-8") as _file:
    _FOREIGN: dict[str, str] = json.load(_file)


class DemoInstallOnly:
    """A meta path finder placed first: it refuses a module another distribution provides."""

    @classmethod
    def find_spec(
        cls, name: str, path: Sequence[str] | None = None, target: ModuleType | None = None
    ) -> ModuleSpec | None:
        """Refuse ``name`` if a foreign distribution has its file; else leave it to the rest."""
        spec = importlib.machinery.PathFinder.find_spec(name, path)
        origin = spec.origin if spec is not None else None
        dist = _FOREIGN.get(os.path.normpath(origin)) if origin else None
        if dist is not None:
            raise ModuleNotFoundError(
                f"No module named {name!r} ({dist} is not installed by `make demo`)", name=name
            )
        return None


sys.meta_path.insert(0, DemoInstallOnly)
