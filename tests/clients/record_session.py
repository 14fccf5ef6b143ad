"""Record the Claude Code session that notebooks/09_claude_code.ipynb opens, offline.

Run from the repository's root (Claude Code installed by ``scripts/install-clients``)::

    .venv/bin/python -m tests.clients.record_session

Claude Code (``claude -p``, its default tools and prompt) works in a small project through the
proxy, in front of a scripted Messages upstream that thinks, lists the files, reads the notes and
answers; Claude Code runs the commands itself. The run is written as JSON to
``tests/data/claude_code_session.json`` (a `RunResult` round-trips through its JSON exactly):
read it before committing it.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

import workbench as wb
from tests.clients.agents import ROOT_BIN, claude_code
from tests.fake_upstream import Answer, fake_upstream
from tests.wires import message, message_events

OUT = Path(__file__).parents[1] / "data" / "claude_code_session.json"
NOTES = "Ship the proxy on Friday.\nAsk Ada about the Responses wire.\n"
PROMPT = "What do my notes say I should do? Look in this directory."
TURNS: list[dict[str, Any]] = [
    {
        "thinking": ("The notes are somewhere here: list the files first.", "c2lnLTE="),
        "calls": [("toolu_01", "Bash", {"command": "ls", "description": "List the files"})],
    },
    {
        "calls": [
            ("toolu_02", "Bash", {"command": "cat notes.txt", "description": "Read the notes"})
        ]
    },
    {"text": "Your notes say: ship the proxy on Friday, and ask Ada about the Responses wire."},
]


def session(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """The scripted model: one turn per tool result sent back so far."""
    results = sum(
        1
        for turn in body["messages"]
        if isinstance(turn["content"], list)
        for block in turn["content"]
        if isinstance(block, dict) and block.get("type") == "tool_result"
    )
    turn = TURNS[min(results, len(TURNS) - 1)]
    return (
        Answer(events=message_events(**turn))
        if body.get("stream")
        else Answer(body=message(**turn))
    )


def main() -> None:
    with tempfile.TemporaryDirectory() as place:
        project = Path(place)
        (project / "work").mkdir()
        (project / "work" / "notes.txt").write_text(NOTES)
        store = wb.RunStore(":memory:")
        drive = claude_code(ROOT_BIN, "--allowedTools", "Bash")
        with fake_upstream(session) as upstream, wb.proxy(upstream.url, store=store) as proxy:
            said = drive(proxy.url, project, prompt=PROMPT)
        (run_id,) = proxy.run_ids  # one conversation, one run
        run = store.load(run_id)
    print(f"Claude Code said: {said}")
    print(f"{len(run.steps)} steps; tools: {[c.name for s in run.steps for c in s.tool_calls]}")
    OUT.write_text(json.dumps(json.loads(run.model_dump_json()), indent=1) + "\n")
    print(f"wrote {OUT} ({OUT.stat().st_size:,} bytes)")


if __name__ == "__main__":
    main()
