"""Fault table: the user's own code that never returns.

Already covered in ``tests/faults/test_tools.py`` and ``tests/test_hooks.py``: a tool or an
async hook past its timeout. Here: every kind of sync user callback the loop calls, stuck.
Every sync call runs on one portal loop, and a breakpoint predicate that blocked once froze every
other synchronous run in the process (23 s for an unrelated agent). Now the user's sync code runs
in worker threads (`workbench._sync.call_user`): a stuck callback holds up its own run only (and
only until its timeout, where the design has one), and the others go on meanwhile.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import pytest

import workbench as wb

pytestmark = pytest.mark.timeout(120)

WAIT = 30.0
"""How long the other run may take before it counts as frozen (it takes milliseconds)."""


class Stuck:
    """A callback that blocks until the test ends (or a minute passes)."""

    def __init__(self) -> None:
        self.entered = threading.Event()
        self.released = threading.Event()

    def __call__(self, *args: Any) -> Any:
        self.entered.set()
        self.released.wait(60)
        return True


@pytest.fixture
def stuck() -> Iterator[Stuck]:
    callback = Stuck()
    yield callback
    callback.released.set()


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def script() -> list[wb.ModelResponse]:
    return [wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}), wb.ModelResponse.text("3")]


def an_unrelated_run_finishes_while(stuck: Stuck, start_stuck: Callable[[], object]) -> None:
    """Start the stuck run in a thread; once its callback is stuck, another run must finish."""
    with ThreadPoolExecutor(2) as pool:
        stuck_run = pool.submit(start_stuck)
        assert stuck.entered.wait(WAIT), "the stuck callback was never called"
        other = wb.Agent(model=wb.ScriptedModel(script()), tools=[add], name="other")
        result = pool.submit(other.run_sync, "1 + 2?").result(timeout=WAIT)
        assert result.output == "3" and result.steps[0].tool_outcomes[0].status == "ok"
        assert not stuck_run.done()  # the other run finished while this one was stuck
        stuck.released.set()
        stuck_run.result(timeout=WAIT)


class StuckCondition(wb.StopCondition):
    def __init__(self, stuck: Stuck) -> None:
        self.stuck = stuck

    def check(self, view: wb.RunView) -> wb.StopReason | None:
        self.stuck()
        return None


def agent_with(kind: str, stuck: Stuck) -> wb.Agent:
    model = wb.ScriptedModel(script())
    match kind:
        case "tool":
            return wb.Agent(model=model, tools=[wb.tool(name="add")(lambda a, b: stuck())])
        case "guard":
            return wb.Agent(model=model, tools=[add], guards=[lambda call, ctx: stuck()])
        case "hook":
            hook = wb.Hook(wb.HookEvent.PRE_TOOL_USE, lambda data: stuck() and None)
            return wb.Agent(model=model, tools=[add], hooks=[hook])
        case "stop condition":
            return wb.Agent(model=model, tools=[add], stop=wb.MaxSteps(5) | StuckCondition(stuck))
        case "history processor":
            return wb.Agent(model=model, tools=[add], history_processors=[lambda m: stuck() and m])
        case "toolset filter":
            return wb.Agent(model=model, tools=[wb.Toolset([add]).filtered(lambda t, v: stuck())])
    raise AssertionError(kind)


KINDS = ["tool", "guard", "hook", "stop condition", "history processor", "toolset filter"]


@pytest.mark.parametrize("kind", KINDS)
def test_a_stuck_callback_holds_up_its_own_run_only(kind: str, stuck: Stuck) -> None:
    agent = agent_with(kind, stuck)
    an_unrelated_run_finishes_while(stuck, lambda: agent.run_sync("1 + 2?"))


def test_a_stuck_breakpoint_predicate_holds_up_its_own_run_only(stuck: Stuck) -> None:
    """The issue's case: the predicate ran on the loop every sync run shares."""
    agent = wb.Agent(model=wb.ScriptedModel(script()), tools=[add])
    run = agent.start("1 + 2?", breakpoints=[wb.Break.when(stuck)])
    an_unrelated_run_finishes_while(stuck, run.run_to_breakpoint)


def test_a_stuck_sync_hook_is_bounded_by_its_timeout(stuck: Stuck) -> None:
    hook = wb.Hook(wb.HookEvent.PRE_TOOL_USE, lambda data: stuck() and None, timeout=0.5)
    agent = wb.Agent(model=wb.ScriptedModel(script()), tools=[add], hooks=[hook])
    result = agent.run_sync("1 + 2?")
    assert result.output == "3"
    assert any("timed out after 0.5s" in e for e in result.steps[0].hook_errors)


def test_stuck_sync_tools_past_their_timeout_leave_threads_for_everyone_else(stuck: Stuck) -> None:
    """Each keeps its thread; asyncio's default pool (6 here) would then be used up."""
    blocking = wb.tool(name="add", timeout=0.2)(lambda a, b: stuck())
    for _ in range(10):
        script_ = [wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}), wb.ModelResponse.text("-")]
        wb.Agent(model=wb.ScriptedModel(script_), tools=[blocking]).run_sync("go")
    agent = wb.Agent(model=wb.ScriptedModel(script()), tools=[add])
    with ThreadPoolExecutor(1) as pool:
        result = pool.submit(agent.run_sync, "1 + 2?").result(timeout=WAIT)
    (outcome,) = result.steps[0].tool_outcomes
    assert (outcome.status, outcome.content) == ("ok", "3")
