"""Real agents as the proxy's clients: Claude Code and Codex from npm, and the Python SDKs.

The CLIs are installed by ``scripts/install-clients`` (pinned versions, into ``.clients/``; a
second run takes milliseconds). A test that needs them runs the script if it has not run, and is
skipped, saying why, only when the script found the npm registry out of reach.
"""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[2]
CLIENTS = ROOT / ".clients"

HOOK = """\
import json, sys
event = json.load(sys.stdin)
if event.get("tool_name") == sys.argv[1]:
    said = json.dumps(event.get("tool_input"))
    print(f"{sys.argv[1]} is not allowed here: {said}", file=sys.stderr)
    sys.exit(2)
print("{}")
"""
"""A Claude Code PreToolUse hook script: it blocks (exit 2, reason on stderr) the tool named."""


@pytest.fixture(scope="session")
def cli_bin() -> Path:
    """Where the ``claude`` and ``codex`` binaries are, installed if they were not."""
    done = subprocess.run(
        [str(ROOT / "scripts" / "install-clients")], capture_output=True, text=True, timeout=900
    )
    unavailable = CLIENTS / "unavailable"
    if done.returncode == 0 and unavailable.exists():
        pytest.skip(f"Claude Code and Codex are not installed: {unavailable.read_text().strip()}")
    assert done.returncode == 0, f"scripts/install-clients failed:\n{done.stderr}"
    return CLIENTS / "node_modules" / ".bin"


@pytest.fixture
def deny_hook(tmp_path: Path) -> str:
    """The command of a Claude Code hook script that blocks the tool named after it."""
    script = tmp_path / "deny.py"
    script.write_text(HOOK)
    return f"{sys.executable} {script}"
