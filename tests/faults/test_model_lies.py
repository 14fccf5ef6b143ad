"""A model that lies about ids: two tool calls of one response with the same call id."""

from __future__ import annotations

import workbench as wb

R = wb.ModelResponse


@wb.tool
def echo(text: str) -> str:
    """Echo the text."""
    return text


def test_two_calls_with_one_id_each_keep_their_own_result() -> None:
    same = R.tool_calls(
        [("echo", {"text": "first"}), ("echo", {"text": "second"})], call_ids=["call_1", "call_1"]
    )
    agent = wb.Agent(model=wb.ScriptedModel([same, "ok"]), tools=[echo], store=False)
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.COMPLETED
    calls = result.messages[1].tool_calls
    assert [c.call_id for c in calls] == ["call_1", "call_1-2"]
    answers = [p for m in result.messages if m.role == "tool" for p in m.parts]
    assert [(a.call_id, a.content) for a in answers] == [
        ("call_1", "first"),
        ("call_1-2", "second"),
    ]
    outcomes = result.steps[0].tool_outcomes
    assert [(o.call_id, o.content) for o in outcomes] == [
        ("call_1", "first"),
        ("call_1-2", "second"),
    ]
