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


def test_arguments_nested_past_the_recursion_limit_are_a_retry_not_a_crash() -> None:
    deep = "[" * 100_000 + "]" * 100_000
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("echo", '{"text": ' + deep + "}"), "gave up"]),
        tools=[echo],
        store=False,
    )
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.COMPLETED
    retry = result.steps[0].tool_outcomes[0]
    assert retry.status == "retry" and "not a valid JSON object" in retry.content


def test_a_tool_error_with_lone_surrogates_is_stored_and_exported() -> None:
    @wb.tool
    def listing(path: str) -> str:
        """List a directory."""
        raise OSError("cannot open caf\udce9")

    store = wb.RunStore(":memory:")
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("listing", {"path": "."}), "ok"]),
        tools=[listing],
        store=store,
    )
    result = agent.run_sync("go")
    assert "caf\ufffd" in result.steps[0].tool_outcomes[0].content
    assert store.load(result.run_id).steps[0].tool_outcomes[0].status == "error"
    result.state.to_json().encode()  # no lone surrogate left to refuse
