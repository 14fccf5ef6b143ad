"""Breakpoints: run_to_breakpoint stops before what a breakpoint names, and says which fired."""

from __future__ import annotations

import pytest

import workbench as wb

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def _agent() -> wb.Agent:
    script = [
        R.tool_call("add", {"a": 1, "b": 2}, call_id="c1"),
        R.tool_call("delete_file", {"path": "/tmp/x"}, call_id="c2"),
        R.tool_call("add", {"a": 3, "b": 4}, call_id="c3"),
        R.text("done"),
    ]
    return wb.Agent(model=wb.ScriptedModel(script), tools=[add, delete_file], store=False)


def test_on_tool_stops_before_the_call_runs_and_the_call_can_be_dropped() -> None:
    run = _agent().start("go", breakpoints=[wb.Break.on_tool("delete_file")])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint == wb.Break.on_tool("delete_file")
    assert (event.phase, event.step) == (wb.Phase.INFERENCE, 2)
    assert [c.name for c in run.pending_calls] == ["delete_file"]
    run.drop_call("c2", "not on a Monday")
    assert run.run_to_breakpoint() is None  # nothing else fires; the run ends
    result = run.result
    assert result.output == "done"
    dropped = result.steps[1].new_messages[-1].parts[0]
    assert isinstance(dropped, wb.ToolResult) and "not on a Monday" in dropped.content


def test_at_step_stops_once_the_step_is_prepared() -> None:
    run = _agent().start("go", breakpoints=[wb.Break.at_step(3)])
    event = run.run_to_breakpoint()
    assert event is not None and (event.phase, event.step) == (wb.Phase.PREPARE, 3)
    assert str(event.breakpoint) == "at step 3"
    assert run.snapshots[-1].step == 3 and run.next_phase_name is wb.Phase.INFERENCE


def test_before_a_phase_fires_every_time_and_continue_moves_on() -> None:
    run = _agent().start("go", breakpoints=[wb.Break.before(wb.Phase.CONTINUATION)])
    stops = []
    while (event := run.run_to_breakpoint()) is not None:
        stops.append((event.phase, event.step))
    assert stops == [(wb.Phase.TOOLS, n) for n in (1, 2, 3, 4)]
    assert run.done and run.result.output == "done"


def test_when_a_predicate_holds_and_breakpoints_can_be_added_later() -> None:
    run = _agent().start("go")
    run.breakpoints.append(wb.Break.when(lambda view: view.state.usage.requests >= 2, "two calls"))
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint is not None
    assert event.breakpoint.label == "when two calls" and event.state.usage.requests == 2


def test_a_predicate_that_raises_stops_the_run_with_the_error_and_does_not_crash_it() -> None:
    def broken(view: wb.RunView) -> bool:
        raise KeyError("nope")

    run = _agent().start("go", breakpoints=[wb.Break.when(broken)])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint is not None
    assert event.breakpoint.error == "KeyError: 'nope'" and "raised" in str(event.breakpoint)
    assert event.state.status is wb.ExecutionStatus.RUNNING
    run.breakpoints.clear()
    assert run.run_to_end().output == "done"


def test_steps_count_from_one() -> None:
    with pytest.raises(ValueError, match="from 1"):
        wb.Break.at_step(0)


def test_metadata_is_kept_on_the_state_and_in_the_store() -> None:
    store = wb.RunStore(":memory:")
    agent = wb.Agent(model=wb.ScriptedModel(["hi"]), store=store)
    result = agent.run_sync("x", metadata={"user": "ada", "ticket": 7})
    assert result.state.metadata == {"user": "ada", "ticket": 7}
    assert store.load(result.run_id).state.metadata == {"user": "ada", "ticket": 7}


def test_a_resumed_run_result_is_the_whole_run() -> None:
    @wb.tool(requires_approval=True)
    def save(name: str) -> str:
        """Save."""
        return f"saved {name}"

    store = wb.RunStore(":memory:")
    script = [R.tool_call("add", {"a": 1, "b": 2}), R.tool_call("save", {"name": "x"}), "ok"]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[add, save], store=store)
    paused = agent.run_sync("go")
    assert paused.status is wb.ExecutionStatus.PAUSED
    state = wb.AgentState.from_json(paused.state.to_json())
    done = agent.resume_sync(state, approvals={paused.pending[0].call_id: True})
    assert done.output == "ok"
    assert [s.step for s in done.snapshots] == [1, 2, 3]
    assert [s.index for s in done.steps] == [1, 2, 2, 3]  # step 2 paused, then resumed


def test_combining_a_paused_and_a_whole_resumed_result_keeps_each_step_once() -> None:
    from workbench.notebook import combine_results

    @wb.tool(requires_approval=True)
    def save(name: str) -> str:
        """Save."""
        return f"saved {name}"

    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("save", {"name": "x"}), "ok"]),
        tools=[save],
        store=wb.RunStore(":memory:"),
    )
    paused = agent.run_sync("go")
    done = agent.resume_sync(paused.state, approvals={paused.pending[0].call_id: True})
    combined = combine_results([paused, done])
    assert combined.steps == done.steps and combined.snapshots == done.snapshots


@pytest.mark.parametrize(
    ("text", "label"),
    [
        ("before:TOOLS", "before tools"),
        (" Before : Inference ", "before inference"),
        ("STEP: 3", "at step 3"),
        ("tool : Delete_File", "on tool 'Delete_File'"),  # a tool's name is kept as written
    ],
)
def test_typed_breakpoints_ignore_case_and_spaces_but_not_in_tool_names(
    text: str, label: str
) -> None:
    from workbench.breakpoints import parse_break  # what the Stepper's text box uses

    assert parse_break(text).label == label


def test_a_typed_breakpoint_with_an_unknown_phase_lists_the_phases() -> None:
    from workbench.breakpoints import parse_break

    with pytest.raises(ValueError, match="prepare, inference, tools, continuation"):
        parse_break("before:tool")
    with pytest.raises(ValueError, match=r"'step:x'.*a step number"):
        parse_break("step:x")
