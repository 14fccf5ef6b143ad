"""The README's tour runs as written."""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_readme_tour_runs(tmp_path: Path) -> None:
    readme = (ROOT / "README.md").read_text()
    match = re.search(r"## A 30-line tour\n\n```python\n(.*?)```", readme, re.S)
    assert match is not None
    script = tmp_path / "tour.py"
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
    assert "completed completed 1 + 2 = 3, saved." in out
    assert "first divergence: step" in out
