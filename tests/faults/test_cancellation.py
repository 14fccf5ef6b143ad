"""A run whose task is cancelled (Ctrl+C in a notebook, a cancelled task) ends ABORTED.

The cancellation still propagates to the caller; the run's span closes and the store says aborted.
"""

from __future__ import annotations

import asyncio

import pytest

import workbench as wb

R = wb.ModelResponse


class _Gate:
    """Holds the run inside one phase until the test cancels it."""

    def __init__(self) -> None:
        self.entered = asyncio.Event()

    async def hold(self) -> None:
        self.entered.set()
        await asyncio.sleep(3600)


def _agent(gate: _Gate, where: str, store: wb.RunStore) -> wb.Agent:
    async def model(messages: list[wb.Message], info: object) -> R:
        if where == "inference":
            await gate.hold()
        if any(m.role == "tool" for m in messages):
            return R.text("done")
        return R.tool_call("slow", {})

    @wb.tool
    async def slow() -> str:
        """A tool that waits."""
        await gate.hold()
        return "never"

    return wb.Agent(
        model=wb.FunctionModel(model),
        tools=[slow],
        store=store,
        telemetry=wb.Telemetry(),
    )


@pytest.mark.parametrize("where", ["inference", "tools"])
async def test_a_cancelled_run_ends_aborted_and_the_cancellation_propagates(where: str) -> None:
    gate, store = _Gate(), wb.RunStore(":memory:")
    agent = _agent(gate, where, store)
    run = agent.start("go")
    task = asyncio.create_task(run.arun_to_end())
    await asyncio.wait_for(gate.entered.wait(), 5)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert run.state.status is wb.ExecutionStatus.ABORTED
    assert run.state.stop_reason is wb.StopReason.ABORTED
    assert run.done and run.next_phase_name is None
    stored = store.load(run.state.run_id)
    assert stored.status is wb.ExecutionStatus.ABORTED
    assert len(stored.steps) == 1  # the step under way is recorded, not lost
    assert agent.telemetry is not None
    spans = {s.name: s for s in agent.telemetry.spans}
    run_span = next(s for name, s in spans.items() if name.startswith("invoke_agent"))
    assert run_span.end_time is not None  # the run span closed, so it can be exported


async def test_an_abort_during_a_phase_takes_effect_when_the_phase_ends() -> None:
    started, release = asyncio.Event(), asyncio.Event()

    async def model(messages: list[wb.Message], info: object) -> R:
        started.set()
        await release.wait()
        return R.tool_call("add", {"a": 1})

    agent = wb.Agent(model=wb.FunctionModel(model), store=False)
    run = agent.start("go")
    run.next_phase()  # PREPARE
    inference = asyncio.create_task(run.anext_phase())
    await started.wait()
    run.abort()  # the model call is under way: the abort waits for it
    assert run.state.status is wb.ExecutionStatus.RUNNING
    release.set()
    event = await inference
    assert event is not None and event.phase is wb.Phase.INFERENCE
    assert event.state.status is wb.ExecutionStatus.ABORTED
    assert run.state.pending == () and await run.anext_phase() is None
