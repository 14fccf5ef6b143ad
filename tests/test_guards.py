"""Guards fail closed: whatever a guard answers or raises, a bad answer denies only that call."""

from __future__ import annotations

from typing import Any

import pytest

import workbench as wb

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def run_with(answer: Any) -> wb.RunResult:
    def guard(call: wb.ToolCall, ctx: wb.ToolContext) -> Any:
        return answer

    model = wb.ScriptedModel([R.tool_call("add", {"a": 1, "b": 2}), R.text("done")])
    return wb.Agent(model=model, tools=[add], guards=[guard], store=False).run_sync("go")


@pytest.mark.parametrize(
    ("answer", "why"),
    [
        (None, "returned None, not a ToolPermission"),
        ("allow", "returned 'allow', not a ToolPermission"),
        ((wb.ToolPermission.ALLOW, "fine", "extra"), "returned a tuple of 3"),
        ((wb.ToolPermission.ALLOW,), "returned a tuple of 1"),
        ((wb.ToolPermission.ALLOW, 42), "gave the reason 42, not a string"),
    ],
    ids=["none", "str", "triple", "single", "int-reason"],
)
def test_a_malformed_answer_denies_the_call_and_the_run_goes_on(answer: Any, why: str) -> None:
    result = run_with(answer)
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "done"
    (outcome,) = result.steps[0].tool_outcomes
    assert outcome.status == "denied"
    assert f"guard guard {why}" in outcome.content
    # a bug in the guard: an error of the run, at its top, as a guard that raised is
    (error,) = result.errors
    assert (error.kind, error.type, error.where) == ("guard", "TypeError", "step 1, add in agent")
    assert error.message.startswith(f"guard guard {why}")
    assert result.summary == "completed, 1 guard error: step 1, add in agent"


def test_a_well_formed_answer_decides() -> None:
    denied = run_with((wb.ToolPermission.DENY, "not today")).steps[0].tool_outcomes[0]
    assert (denied.status, denied.content) == ("denied", "Permission denied: not today")
    assert run_with(wb.ToolPermission.ALLOW).steps[0].tool_outcomes[0].content == "3"
    unexplained = run_with((wb.ToolPermission.DENY, None)).steps[0].tool_outcomes[0]
    assert unexplained.content == "Permission denied: deny by guard guard"


def test_a_malformed_answer_keeps_the_secrets_it_holds_from_the_model_and_the_store() -> None:
    """A guard that returned the wrong thing (here a client's settings) is quoted to say so."""
    key = "sk-proj-" + "A1b2C3d4E5f6G7h8I9j0" * 2
    result = run_with({"api_key": key})
    (outcome,) = result.steps[0].tool_outcomes
    assert outcome.status == "denied"
    assert outcome.content == (
        "Permission denied: guard guard returned {'api_key': '[REDACTED]'}, not a ToolPermission"
    )
    assert key not in result.state.model_dump_json()  # the messages the model reads, stored


def test_a_guard_that_raises_keeps_secrets_in_its_error_from_the_model() -> None:
    key = "sk-live0123456789abcdefghij"

    def policy(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        raise RuntimeError(f"policy service refused token {key}")

    model = wb.ScriptedModel([R.tool_call("add", {"a": 1, "b": 2}), R.text("done")])
    result = wb.Agent(model=model, tools=[add], guards=[policy], store=False).run_sync("go")
    (outcome,) = result.steps[0].tool_outcomes
    assert outcome.status == "denied"
    assert outcome.content == (
        "Permission denied: guard policy failed: RuntimeError: policy service refused token "
        "[REDACTED]"
    )
    assert key not in str([m.model_dump() for m in model.calls[1].messages])  # as a tool's error
