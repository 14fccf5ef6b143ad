"""Stop conditions, budgets, wrap-up and the grace turn."""

from __future__ import annotations

import asyncio

import pytest

import workbench as wb

R = wb.ModelResponse


@wb.tool
def ping() -> str:
    """Answers pong."""
    return "pong"


@wb.tool
def finish(summary: str) -> str:
    """Completion tool: call it when the task is done."""
    return "finished"


def always_ping(messages: object, request: wb.ModelRequest) -> R:
    return R.tool_call(
        "ping", {}, usage=wb.Usage(input_tokens=100, output_tokens=10, requests=1, cost=0.01)
    )


def test_composition_and_limits() -> None:
    either = wb.MaxSteps(10) | wb.MaxTokens(500) | wb.Timeout(60)
    assert isinstance(either, wb.AnyOf) and len(either.conditions) == 3
    assert either.limits() == wb.Limits(max_steps=10, max_tokens=500, timeout=60)
    both = wb.MaxSteps(10) & wb.MaxSteps(20)
    assert both.limits().max_steps == 20
    assert (wb.MaxSteps(3) & wb.ToolCalled("x")).limits().max_steps is None
    assert repr(wb.MaxSteps(3) | wb.DoomLoop(2)) == "MaxSteps(3) | DoomLoop(2)"
    with pytest.raises(ValueError, match="n >= 1"):
        wb.MaxSteps(0)


def test_all_of_needs_every_condition() -> None:
    agent = wb.Agent(
        model=wb.FunctionModel(always_ping),
        tools=[ping],
        stop=(wb.MaxSteps(2) & wb.MaxTokens(400)) | wb.MaxSteps(10),
    )
    result = agent.run_sync("x")
    # MaxSteps(2) fires at step 2 but the tokens (110 a step) reach 400 only at step 4
    assert len(result.steps) == 4 and result.stop_reason is wb.StopReason.STEP_LIMIT


def test_token_budget_is_checked_before_the_model_call() -> None:
    model = wb.FunctionModel(always_ping)
    agent = wb.Agent(model=model, tools=[ping], stop=wb.MaxTokens(250) | wb.MaxSteps(10))
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.TOKEN_LIMIT
    assert len(model.calls) == 3 and result.usage.total_tokens == 330
    # the third answer's tools were not run: the budget was spent before TOOLS
    assert result.steps[-1].tool_outcomes == ()


def test_cost_limit() -> None:
    agent = wb.Agent(model=wb.FunctionModel(always_ping), tools=[ping], stop=wb.MaxCost(0.025))
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.COST_LIMIT and len(result.steps) == 3


def test_unknown_cost_never_fires_cost_limit() -> None:
    def unpriced(messages: object, request: wb.ModelRequest) -> R:
        return R.tool_call("ping", {}, usage=wb.Usage(input_tokens=1, requests=1, cost=None))

    agent = wb.Agent(
        model=wb.FunctionModel(unpriced), tools=[ping], stop=wb.MaxCost(1e-9) | wb.MaxSteps(3)
    )
    result = agent.run_sync("x")
    assert result.usage.cost is None and result.stop_reason is wb.StopReason.STEP_LIMIT


def test_timeout_bounds_the_model_call() -> None:
    async def hang(messages: object, request: wb.ModelRequest) -> R:
        await asyncio.Event().wait()
        raise AssertionError("unreachable")

    result = wb.Agent(model=wb.FunctionModel(hang), stop=wb.Timeout(0.1)).run_sync("x")
    assert result.stop_reason is wb.StopReason.TIME_LIMIT
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert result.state.elapsed >= 0.1


def test_doom_loop() -> None:
    agent = wb.Agent(
        model=wb.FunctionModel(always_ping), tools=[ping], stop=wb.DoomLoop(3) | wb.MaxSteps(10)
    )
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.DOOM_LOOP and len(result.steps) == 3


def test_doom_loop_ignores_varied_calls() -> None:
    counter = iter(range(100))

    def vary(messages: object, request: wb.ModelRequest) -> R:
        return R.tool_call("finish", {"summary": str(next(counter))})

    agent = wb.Agent(
        model=wb.FunctionModel(vary), tools=[finish], stop=wb.DoomLoop(2) | wb.MaxSteps(4)
    )
    assert agent.run_sync("x").stop_reason is wb.StopReason.STEP_LIMIT


def test_error_budget_consecutive() -> None:
    @wb.tool(retries=10)
    def flaky() -> str:
        """Always fails."""
        raise RuntimeError("nope")

    model = wb.FunctionModel(lambda m, r: R.tool_call("flaky", {}))
    agent = wb.Agent(
        model=model, tools=[flaky], stop=wb.ErrorBudget(max_consecutive=3) | wb.MaxSteps(10)
    )
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.ERROR_BUDGET
    assert result.state.errors_consecutive == 3 and len(result.steps) == 3


def test_tool_called_completes_the_task() -> None:
    model = wb.ScriptedModel([R.tool_call("ping", {}), R.tool_call("finish", {"summary": "done"})])
    agent = wb.Agent(
        model=model, tools=[ping, finish], stop=wb.ToolCalled("finish") | wb.MaxSteps(10)
    )
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.TASK_COMPLETE and len(result.steps) == 2
    assert result.output == "done"  # the answer given in the completion call


def test_grace_turn_lets_the_model_call_the_completion_tool() -> None:
    model = wb.FunctionModel(
        lambda m, request: (
            R.tool_call("finish", {"summary": "s"})
            if [t.name for t in request.tools] == ["finish"]
            else R.tool_call("ping", {})
        )
    )
    agent = wb.Agent(
        model=model,
        tools=[ping, finish],
        stop=wb.MaxSteps(2) | wb.ToolCalled("finish"),
        wrap_up_message=None,
        grace_tool="finish",
    )
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.TASK_COMPLETE
    assert len(result.steps) == 3 and result.steps[-1].tools_offered == ("finish",)
    assert "Call the tool 'finish' now" in model.calls[-1].messages[-1].text


def test_grace_turn_unused_keeps_the_limit() -> None:
    agent = wb.Agent(
        model=wb.FunctionModel(always_ping),
        tools=[ping, finish],
        stop=wb.MaxSteps(2),
        wrap_up_message=None,
        grace_tool="finish",
    )
    result = agent.run_sync("x")
    assert result.stop_reason is wb.StopReason.STEP_LIMIT and len(result.steps) == 3
    assert result.steps[-1].tool_outcomes[0].status == "denied"


def test_grace_tool_must_be_a_tool() -> None:
    with pytest.raises(ValueError, match="grace_tool 'nope' is not one of the tools: ping"):
        wb.Agent(model=wb.ScriptedModel([]), tools=[ping], grace_tool="nope")


def test_snapshot_budget_counts_down() -> None:
    agent = wb.Agent(model=wb.FunctionModel(always_ping), tools=[ping], stop=wb.MaxSteps(3))
    result = agent.run_sync("x")
    assert [s.budget.steps_left for s in result.snapshots] == [3, 2, 1]
    assert [s.step for s in result.snapshots] == [1, 2, 3]
    assert result.snapshots[2].state.step == 2  # the state at the start of step 3
