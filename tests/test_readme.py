"""The README's tour runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.demo_install import demo_distributions

ROOT = Path(__file__).resolve().parent.parent


def test_readme_tour_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## A 30-line tour\n\n```python\n(.*?)```", readme, re.S)
    assert match is not None
    script = tmp_path / "tour.py"
    # A reader keeps stepping the tour's stepped run: it must have a script to finish on.
    script.write_text(match.group(1) + "print('stepped to the end:', run.run_to_end().status)\n")
    env = {**os.environ, "WORKBENCH_STORE": ":memory:"}
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert "completed completed 1 + 2 = 3, saved." in out
    assert "first divergence: step" in out
    assert "stepped to the end: completed" in out


def test_readme_fix_and_rerun_recipe_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## A tool was wrong: [^\n]*\n\n```python\n(.*?)```", readme, re.S)
    assert match is not None
    script = tmp_path / "recipe.py"
    script.write_text(match.group(1))
    env = {**os.environ, "WORKBENCH_STORE": ":memory:"}
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert "completed, 1 tool error: step 1, apply_discount in shop" in out
    assert "It costs 90.0." in out
    assert "failed in a (Tool 'apply_discount' failed: TypeError" in out
    assert "succeeds in b: '90.0'" in out


def test_readme_many_runs_snippet_runs(tmp_path: Path) -> None:
    """The "Many runs" lines run as written, in a folder of their own, and find what they say."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## Many runs\n.*?```python\n(.*?)```", readme, re.S)
    assert match is not None
    script = tmp_path / "runs.py"
    look = 'print(len(wb.runs(store, errors=True, tool="apply_discount", since="2h")))\n'
    script.write_text(match.group(1) + look)
    env = {**os.environ, "WORKBENCH_STORE": ":memory:"}
    out = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=300,
        env=env,
        cwd=tmp_path,
        check=True,
    ).stdout
    assert int(out.split()[-1]) > 0
    assert (tmp_path / "eval.sqlite").exists()  # what the terminal lines after it read


def test_the_readme_says_how_to_reach_the_venvs_commands_before_using_them() -> None:
    """After `make demo`, `workbench` and `python` are the venv's only once it is activated."""
    readme = (ROOT / "README.md").read_text()
    activate = readme.index(". .venv/bin/activate")
    first_command = re.search(r"`workbench (show|runs|report|trace|export|push)\b", readme)
    assert first_command is not None
    assert activate < first_command.start()


def test_the_notebook_path_needs_only_make_demo() -> None:
    """`make demo` installs what `.venv/bin/jupyter lab notebooks/` and the widgets need.

    (That every notebook runs with only what it installs is tests/test_notebooks.py's.)
    """
    readme = (ROOT / "README.md").read_text()
    assert "After `make demo`, open them with `.venv/bin/jupyter lab notebooks/`" in readme
    assert {"jupyterlab", "ipywidgets", "anywidget", "ipykernel"} <= demo_distributions()
