"""Re-running a sub-run from its own snapshot: a new run of its own, not a call of the parent.

The parent never made the re-run's tool call, so the re-run must not join the parent's tree: the
parent loads with the sub-runs it called, deleting the parent keeps the user's re-run, and a diff
of the parent with its stored copy shows no sub-run that appeared from nowhere.
"""

from __future__ import annotations

from pathlib import Path

import workbench as wb


def _lead(store: wb.RunStore) -> tuple[wb.Agent, wb.Agent]:
    sub = wb.Agent(wb.ScriptedModel(["sub answer", "sub again"]), name="sub", store=store)
    lead = wb.Agent(
        wb.ScriptedModel([wb.ModelResponse.tool_call("ask", {"task": "x"}), "lead answer"]),
        name="lead",
        tools=[sub.as_tool("ask", "Ask.")],
        store=store,
    )
    return lead, sub


def test_a_rerun_of_a_sub_run_is_a_root_run_outside_the_parents_tree(tmp_path: Path) -> None:
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        lead, sub = _lead(store)
        original = lead.run_sync("go")
        (child,) = original.children
        again = sub.rerun_sync(store.snapshot(child.run_id, 1), model=sub.model)  # live
        assert again.output == "sub again"
        assert again.state.rerun_of is not None and again.state.rerun_of.run_id == child.run_id
        assert (again.parent_run_id, again.parent_call_id, again.state.depth) == (None, None, 0)
        loaded = store.load(original.run_id)
        assert [c.run_id for c in loaded.children] == [child.run_id]
        assert wb.diff(original, loaded).subruns[0].a_id == child.run_id
        assert len(wb.diff(original, loaded).subruns) == 1
        listed = {s.run_id: s for s in store.runs()}
        assert (listed[again.run_id].depth, listed[again.run_id].parent_run_id) == (0, None)
        store.delete(original.run_id)  # the parent and its sub-run go; the re-run stays
        assert [s.run_id for s in store.runs()] == [again.run_id]
        assert store.load(again.run_id).output == "sub again"
