"""A Stepper shows the truth when its run is driven from code, and one driver at a time."""

from __future__ import annotations

import asyncio
import threading

import pytest

import workbench as wb
from workbench.notebook import Stepper

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _adder() -> wb.Agent:
    script = [R.tool_call("add", {"a": 1, "b": 2}), R.tool_call("add", {"a": 3, "b": 3}), "6"]
    return wb.Agent(model=wb.ScriptedModel(script), name="adder", tools=[add], store=False)


def test_a_run_driven_to_the_end_from_code_shows_in_the_stepper() -> None:
    stepper = Stepper(_adder(), "add things")
    stepper.run.run_to_end()  # not a button: a cell's code
    assert "completed" in stepper.status.value and "step <b>3</b>" in stepper.status.value
    assert "pending" not in stepper.status.value
    assert [label for label, _ in stepper.step_picker.options] == [
        "step 1",
        "step 2",
        "step 3",
        "live",
    ]
    assert len(stepper.events) == 12  # every phase the code ran is in the Stepper's log
    assert stepper.next_phase_button.disabled and stepper.run_button.disabled
    stepper.draw_timeline()  # it follows on its own a moment later; a test does not wait
    figure = stepper.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert {trace["name"] for trace in figure["data"]} >= {"agent", "step", "tool"}


def test_phases_resume_and_abort_from_code_show_in_the_stepper() -> None:
    tool = add.with_options(requires_approval=True)
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("add", {"a": 1, "b": 2}, call_id="c1"), "3"]),
        name="adder",
        tools=[tool],
        store=False,
    )
    stepper = Stepper(agent, "add")
    stepper.run.next_phase()
    assert "next phase <b>inference</b>" in stepper.status.value
    stepper.run.run_to_end()
    assert "paused" in stepper.status.value
    assert [row.pending.call_id for row in stepper.approval_rows] == ["c1"]
    stepper.run.resume(approvals={"c1": True})  # answered from code: the rows go
    assert stepper.approval_rows == [] and not stepper.run_button.disabled
    stepper.run.abort()
    assert "aborted" in stepper.status.value and stepper.run_button.disabled


async def test_one_driver_at_a_time_and_the_stepper_waits_for_code_that_drives() -> None:
    entered, release = threading.Event(), threading.Event()

    async def slow(messages: list[wb.Message], info: object) -> str:
        entered.set()
        await asyncio.to_thread(release.wait, 30)
        return "late"

    stepper = Stepper(wb.Agent(model=wb.FunctionModel(slow), store=False), "q")
    stepper.next_step_button.click()
    assert await asyncio.to_thread(entered.wait, 30)
    assert stepper.busy and stepper.run.driving
    with pytest.raises(wb.UsageError, match="being driven by another call"):
        stepper.run.next_phase()  # a cell's code while the button's work runs
    stepper.run_button.click()  # a second press while busy does nothing
    release.set()
    await stepper.wait()
    assert not stepper.busy and stepper.errors == []
    assert stepper.result.output == "late" and stepper.result.status is wb.ExecutionStatus.COMPLETED
