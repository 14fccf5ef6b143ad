"""`result.snapshot(step=n)`: the snapshot before step n, as steps are shown, live or stored."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _agent(store: wb.RunStore | None = None) -> wb.Agent:
    script = [R.tool_call("add", {"a": 1, "b": 2}), R.tool_call("add", {"a": 3, "b": 4}), "7"]
    return wb.Agent(model=wb.ScriptedModel(script), tools=[add], store=store or False)


def test_the_snapshot_of_step_n_is_the_one_taken_before_step_n() -> None:
    result = _agent().run_sync("add")
    assert [result.snapshot(step=n).step for n in (1, 2, 3)] == [1, 2, 3]
    assert result.snapshot(step=3) is result.snapshots[2]
    third = result.snapshot(step=3).state.messages  # what step 3's model call was sent
    answer = third[-1].parts[0]
    assert isinstance(answer, wb.ToolResult) and answer.content == "7"
    with pytest.raises(wb.NoSuchStep, match=r"has no step 4: it has steps 1-3"):
        result.snapshot(step=4)
    with pytest.raises(LookupError, match="has no step 0"):
        result.snapshot(step=0)


def test_a_rerun_counts_its_steps_as_the_original_and_a_stored_run_has_them(
    tmp_path: Path,
) -> None:
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        agent = _agent(store)
        original = agent.run_sync("add")
        fork = agent.rerun_sync(
            original.snapshot(step=2),
            model=wb.ScriptedModel([R.tool_call("add", {"a": 3, "b": 4}), "7"]),
        )
        assert fork.snapshot(step=2).state.rerun_of is not None
        with pytest.raises(wb.NoSuchStep, match="it has steps 2-3"):
            fork.snapshot(step=1)
        loaded = store.load(original.run_id)
        assert loaded.snapshot(step=2).id == original.snapshot(step=2).id
