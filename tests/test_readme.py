"""The README's snippets run as written, and it says how to reach what they use."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

from tests.demo_install import demo_distributions

ROOT = Path(__file__).resolve().parent.parent


def run_snippet(heading: str, tmp_path: Path, *, then: str = "", timeout: float = 120) -> str:
    """The first Python block under the README heading matching ``heading``, run as a script in
    a folder of its own (``then`` appended: what a reader does next); its output."""
    readme = (ROOT / "README.md").read_text()
    match = re.search(rf"## {heading}\n.*?```python\n(.*?)```", readme, re.S)
    assert match is not None, heading
    script = tmp_path / "snippet.py"
    script.write_text(match.group(1) + then)
    env = {**os.environ, "WORKBENCH_STORE": ":memory:"}
    done = subprocess.run(
        [sys.executable, str(script)],
        capture_output=True,
        text=True,
        timeout=timeout,
        env=env,
        cwd=tmp_path,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    return done.stdout


def test_readme_tour_runs(tmp_path: Path) -> None:
    # A reader keeps stepping the tour's stepped run: it must have a script to finish on.
    then = "print('stepped to the end:', run.run_to_end().status)\n"
    out = run_snippet("A 30-line tour", tmp_path, then=then)
    assert "completed completed 1 + 2 = 3, saved." in out
    assert "first divergence: step" in out
    assert "stepped to the end: completed" in out


def test_readme_fix_and_rerun_recipe_runs(tmp_path: Path) -> None:
    out = run_snippet("A tool was wrong: [^\n]*", tmp_path)
    assert "completed, 1 tool error: step 1, apply_discount in shop" in out
    assert "It costs 90.0." in out
    assert "failed in a (Tool 'apply_discount' failed: TypeError" in out
    assert "succeeds in b: '90.0'" in out


def test_readme_many_runs_snippet_runs(tmp_path: Path) -> None:
    """The "Many runs" lines run as written, in a folder of their own, and find what they say."""
    then = 'print(len(wb.runs(store, errors=True, tool="apply_discount", since="2h")))\n'
    out = run_snippet("Many runs", tmp_path, then=then, timeout=300)
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
