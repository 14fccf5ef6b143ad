"""What `make demo` installs, and kernels that can import nothing else.

The README sends a newcomer from `make demo` to the notebooks, so every notebook must run with
the packages that install brings and no others. The test venv has many more (the test tools, the
proxy's and other frameworks' packages), which would hide a notebook that needs an extra the
demo does not install (07_debugger once failed on Run All with ``No module named 'httpx2'``).
A second venv per test run would cost minutes; instead the closure of the demo's requirements is
read from the installed packages' own metadata, and the notebooks' kernels refuse every module
whose file belongs to a distribution outside it (`tests/demo_guard.py`), as the demo's venv would.
"""

from __future__ import annotations

import json
import os
import re
import shutil
from importlib import metadata
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
_IMPORTABLE = {".py", ".so", ".pyd"}


def demo_extras() -> list[str]:
    """The extras the Makefile's ``.demo-installed`` rule installs the package with."""
    makefile = (ROOT / "Makefile").read_text()
    rule = re.search(r"\$\(VENV\)/\.demo-installed:.*\n\t\$\(PIP\) -e '\.\[(.*?)\]'", makefile)
    assert rule is not None, "the Makefile's .demo-installed rule installs no extras"
    return rule.group(1).split(",")


def demo_distributions() -> frozenset[str]:
    """The distributions ``pip install -e '.[extras]'`` installs here, by canonical name.

    Followed through each installed distribution's requirements, with their markers evaluated
    for this interpreter and the extras asked for.
    """
    wanted: dict[str, set[str]] = {}
    todo: list[tuple[str, frozenset[str]]] = [("workbench", frozenset(demo_extras()))]
    while todo:
        name, extras = todo.pop()
        key = canonicalize_name(name)
        done = wanted.get(key)
        if done is not None and extras <= done:
            continue
        wanted.setdefault(key, set()).update(extras)
        try:
            requires = metadata.distribution(name).requires or []
        except metadata.PackageNotFoundError as missing:
            raise AssertionError(f"`make demo` installs {name}, not installed here") from missing
        for spec in requires:
            requirement = Requirement(spec)
            marker = requirement.marker
            if marker is None or any(marker.evaluate({"extra": e}) for e in {"", *extras}):
                todo.append((requirement.name, frozenset(requirement.extras)))
    return frozenset(wanted)


def foreign_files() -> dict[str, str]:
    """Each importable file of the installed distributions outside the demo's, to its name."""
    demo = demo_distributions()
    foreign: dict[str, str] = {}
    theirs: set[str] = set()
    for dist in metadata.distributions():
        name = canonicalize_name(dist.metadata["Name"])
        for file in dist.files or []:
            if file.suffix in _IMPORTABLE:
                path = os.path.normpath(dist.locate_file(file))
                if name in demo:
                    theirs.add(path)
                else:
                    foreign[path] = name
    return {path: name for path, name in foreign.items() if path not in theirs}


def demo_kernel_env(folder: Path) -> dict[str, str]:
    """The environment of a kernel that imports only what `make demo` installs.

    Writes, under ``folder``, the list of foreign files and an ``IPYTHONDIR`` whose startup
    file is `tests/demo_guard.py`.
    """
    listing = folder / "foreign.json"
    listing.write_text(json.dumps(foreign_files()))
    startup = folder / "ipython" / "profile_default" / "startup"
    startup.mkdir(parents=True)
    shutil.copy(Path(__file__).with_name("demo_guard.py"), startup / "00-demo-install.py")
    return {
        **os.environ,
        "IPYTHONDIR": str(folder / "ipython"),
        "WORKBENCH_DEMO_FOREIGN": str(listing),
    }
