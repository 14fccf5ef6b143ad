"""The store keeps a run tree: a lead agent's sub-runs load with it, and one damaged sub-run
neither hides the rest of the tree's records nor the lead's own run."""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path

import pytest

import workbench as wb


def _tree(store: wb.RunStore) -> wb.RunResult:
    """A lead that asks a mid agent, which asks an inner agent: three runs, one tree."""
    inner = wb.Agent(wb.ScriptedModel(["inner answer"]), name="inner", store=store)
    mid = wb.Agent(
        wb.ScriptedModel([wb.ModelResponse.tool_call("deeper", {"task": "dig"}), "mid answer"]),
        name="mid",
        tools=[inner.as_tool("deeper", "Go deeper.")],
        store=store,
    )
    lead = wb.Agent(
        wb.ScriptedModel([wb.ModelResponse.tool_call("ask", {"task": "x"}), "lead answer"]),
        name="lead",
        tools=[mid.as_tool("ask", "Ask.")],
        store=store,
    )
    return lead.run_sync("go")


def _damage_state(path: Path, run_id: str) -> None:
    """Make a run's stored state one from a newer workbench."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            (body,) = conn.execute("SELECT state FROM runs WHERE run_id = ?", (run_id,)).fetchone()
            raw = json.loads(body)
            raw["schema_version"] = 99
            conn.execute("UPDATE runs SET state = ? WHERE run_id = ?", (json.dumps(raw), run_id))
    finally:
        conn.close()


def test_a_damaged_sub_run_is_named_and_the_lead_still_loads(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        lead = _tree(store)
        mid = lead.children[0]
        inner = mid.children[0]
    _damage_state(path, inner.run_id)
    with wb.RunStore(path) as store:
        with pytest.raises(wb.StoreError) as caught:
            store.load(lead.run_id)
        text = str(caught.value)
        assert text.startswith(
            f"a sub-run of run {lead.run_id} cannot be loaded: run {inner.run_id}"
        )
        assert "written by a newer workbench" in text
        assert f"store.load({lead.run_id!r}, children=False)" in text
        alone = store.load(lead.run_id, children=False)  # the lead's own records are intact
        assert alone.state == lead.state and alone.children == ()
        assert store.load(mid.run_id, children=False).output == "mid answer"
        assert [r.run_id for r in store.runs()] == [lead.run_id, mid.run_id, inner.run_id]
