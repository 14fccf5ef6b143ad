"""`Break.on_error()` stops where a tool failed, anywhere in the tree; a breakpoint naming a tool
no agent has warns instead of waiting silently for a stop that never comes."""

from __future__ import annotations

import warnings

import pytest

import workbench as wb
from tests._failing_team import BROKEN_LINE
from tests._failing_team import team as _team
from workbench.notebook import Stepper


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def test_on_error_stops_after_the_failed_call_two_sub_agents_down() -> None:
    run = _team().start("what is the price?", breakpoints=[wb.Break.on_error()])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint == wb.Break.on_error()
    assert (event.state.agent_name, event.depth, event.phase, event.step) == (
        "digger",
        2,
        wb.Phase.TOOLS,
        3,  # not steps 1 and 2: their lookups worked
    )
    digger = run.subrun
    assert digger is not None and digger.state.agent_name == "digger"
    last = digger.state.messages[-1].parts[0]
    assert isinstance(last, wb.ToolResult) and last.is_error and "TypeError" in last.content
    assert run.run_to_breakpoint() is None  # nothing else failed: the tree finishes
    assert run.result.output == "9.99"


def test_on_error_of_scope_run_does_not_stop_in_sub_runs() -> None:
    run = _team().start("go", breakpoints=[wb.Break.on_error(scope="run")])
    assert run.run_to_breakpoint() is None  # the failure was the digger's, not the lead's
    assert str(wb.Break.on_error(scope="run")) == "on a tool error (this run only)"
    assert str(wb.Break.on_error()) == "on a tool error"


def test_the_stepper_takes_error_in_its_breakpoint_box_and_continue_stops_there() -> None:
    stepper = Stepper(_team(), "go")
    stepper.break_input.value = "error"
    stepper.add_break_button.click()
    assert list(stepper.break_list.options) == ["on a tool error"]
    stepper.continue_button.click()
    assert stepper.stopped_at == wb.Break.on_error()
    assert "stopped at breakpoint on a tool error in digger" in stepper.status.value
    assert "TypeError" in stepper.messages.value  # the digger's failed result is shown
    # and where it was raised: the failed call of the step so far, with its traceback
    assert "Failed so far" in stepper.messages.value
    assert "in apply_discount" in stepper.messages.value and BROKEN_LINE in stepper.messages.value
    stepper.run_button.click()
    assert stepper.result.output == "9.99" and stepper.errors == []


def test_a_breakpoint_on_a_tool_no_agent_has_warns_and_says_which_tools_there_are() -> None:
    with pytest.warns(
        wb.BreakpointWarning, match="no agent of this run's tree has a tool 'serach'"
    ) as caught:
        run = _team().start("go", breakpoints=[wb.Break.on_tool("serach")])
    assert "apply_discount, dig, lookup_price, research" in str(caught[0].message)
    assert [str(b) for b in run.breakpoints] == ["on tool 'serach'"]  # kept: tools may change
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # none of these warns: each tool is in the tree
        breakpoints = [wb.Break.on_tool("lookup_price"), wb.Break.on_tool("dig")]
        _team().start("go", breakpoints=breakpoints)
    with pytest.warns(wb.BreakpointWarning, match="this run has no tool 'lookup_price'"):
        _team().start("go", breakpoints=[wb.Break.on_tool("lookup_price", scope="run")])


def test_the_stepper_shows_the_warning_and_marks_the_breakpoint() -> None:
    with pytest.warns(wb.BreakpointWarning):
        stepper = Stepper(_team(), "go", breakpoints=[wb.Break.on_tool("nope")])
    assert "warning: breakpoint on tool &#x27;nope&#x27; can never fire" in stepper.status.value
    with pytest.warns(wb.BreakpointWarning, match="nonexistent"):
        stepper.add_breakpoint("tool:nonexistent")
    assert "can never fire" in stepper.status.value
    assert list(stepper.break_list.options) == [
        "on tool 'nope' ⚠ can never fire",
        "on tool 'nonexistent' ⚠ can never fire",
    ]


def test_tools_of_toolsets_count_by_the_name_they_are_offered_by() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel(["hi"]),
        tools=[wb.Toolset([search]).prefixed("web_")],
        store=False,
    )
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        agent.start("go", breakpoints=[wb.Break.on_tool("web_search")])
    with pytest.warns(wb.BreakpointWarning, match="tools: web_search"):
        agent.start("go", breakpoints=[wb.Break.on_tool("search")])
