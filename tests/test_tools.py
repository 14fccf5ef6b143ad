"""Tools from functions: schemas, validation, context, truncation; history processors."""

from __future__ import annotations

import pytest

import workbench as wb
from workbench.tools import truncate


def test_schema_from_signature_and_docstring() -> None:
    @wb.tool(retries=3, timeout=2.0)
    async def search(query: str, limit: int = 5, ctx: wb.ToolContext | None = None) -> list[str]:
        """Search the notes.

        Longer explanation that is not part of the summary.

        Args:
            query: What to look for.
            limit: How many hits, at most.
        """
        return []

    d = search.definition
    assert d.name == "search" and d.description == "Search the notes."
    assert d.parameters["required"] == ["query"]
    assert d.parameters["properties"]["query"] == {
        "description": "What to look for.",
        "title": "Query",
        "type": "string",
    }
    assert d.parameters["properties"]["limit"]["default"] == 5
    assert "ctx" in d.parameters["properties"]  # Optional context is a plain parameter
    assert search.retries == 3 and search.timeout == 2.0


def test_context_parameter_is_injected_not_described() -> None:
    seen: list[int] = []

    @wb.tool
    def where(ctx: wb.ToolContext) -> str:
        """Which step is this."""
        seen.append(ctx.step)
        return "here"

    assert where.definition.parameters["properties"] == {}
    model = wb.ScriptedModel([wb.ModelResponse.tool_call("where", {}), "ok"])
    wb.Agent(model=model, tools=[where]).run_sync("x")
    assert seen == [1]


def test_validation_coerces_safely_and_names_fields() -> None:
    @wb.tool
    def add(a: int, b: int) -> int:
        """Add."""
        return a + b

    assert add.validate({"a": "1", "b": 2}) == {"a": 1, "b": 2}
    with pytest.raises(wb.ArgumentError, match="argument 'b' is required but missing"):
        add.validate({"a": 1})
    with pytest.raises(wb.ArgumentError, match="argument 'c' is not a parameter of this tool"):
        add.validate({"a": 1, "b": 2, "c": 3})
    with pytest.raises(
        wb.ArgumentError, match=r"argument 'a': Input should be a valid integer.*got 1.5"
    ):
        add.validate({"a": 1.5, "b": 2})


def test_plain_functions_become_tools_and_names_are_unique() -> None:
    def shout(text: str) -> str:
        """Upper-case."""
        return text.upper()

    agent = wb.Agent(model=wb.ScriptedModel([]), tools=[shout])
    assert agent.tools["shout"].description == "Upper-case."
    with pytest.raises(ValueError, match="two tools are named 'shout'"):
        wb.Agent(model=wb.ScriptedModel([]), tools=[shout, shout])
    with pytest.raises(TypeError, match=r"\*args and \*\*kwargs"):
        wb.tool(lambda *args: None)


def test_non_string_results_become_json() -> None:
    @wb.tool
    def info() -> dict[str, object]:
        """Info."""
        return {"n": 1, "items": [1, 2]}

    model = wb.ScriptedModel([wb.ModelResponse.tool_call("info", {}), "ok"])
    result = wb.Agent(model=model, tools=[info]).run_sync("x")
    assert result.messages[2].parts[0].content == '{"n":1,"items":[1,2]}'  # type: ignore[union-attr]


def test_truncate() -> None:
    assert truncate("abc", 3) == "abc"
    assert truncate("abcdef", 2) == "ab\n[truncated: showing the first 2 of 6 characters; 4 cut]"


def _conversation(n: int) -> list[wb.Message]:
    messages = [wb.Message.system("sys")]
    for i in range(n):
        messages += [
            wb.Message.assistant_tool_call("t", {"i": i}, call_id=f"c{i}"),
            wb.Message.tool_result(f"c{i}", "r" * 40),
        ]
    return messages


def test_keep_last_keeps_system_and_pairs() -> None:
    messages = _conversation(5)
    kept = wb.KeepLast(3)(messages)
    assert kept[0].role == "system"
    assert [m.role for m in kept[1:]] == [
        "assistant",
        "tool",
        "assistant",
        "tool",
    ]  # no orphan result
    assert wb.KeepLast(100)(messages) is messages


def test_token_window_fits_newest_messages() -> None:
    messages = _conversation(50)
    kept = wb.TokenWindow(60)(messages)
    assert kept[0].role == "system" and kept[1].role == "assistant"
    assert len(kept) < len(messages)
    assert kept[-1] is messages[-1]


def test_history_processors_shape_only_what_is_sent() -> None:
    model = wb.FunctionModel(
        lambda m, r: wb.ModelResponse.tool_call("t", {}) if len(r.messages) < 99 else "x"
    )

    @wb.tool
    def t() -> str:
        """T."""
        return "ok"

    agent = wb.Agent(
        model=model,
        tools=[t],
        history_processors=[wb.KeepLast(2)],
        stop=wb.MaxSteps(4),
        wrap_up_message=None,
    )
    result = agent.run_sync("x")
    assert all(len(call.messages) <= 3 for call in model.calls)
    assert len(result.messages) == 9  # the run's history itself is whole
    assert result.steps[-1].messages_in == tuple(model.calls[-1].messages)


def test_a_step_holds_the_conversation_once() -> None:
    # the step's record, the model's request and the snapshot's state share one tuple: a run
    # holds its conversation once per step, whatever records refer to it
    model = wb.FunctionModel(
        lambda m, r: wb.ModelResponse.tool_call("t", {}) if len(m) < 5 else "x"
    )

    @wb.tool
    def t() -> str:
        """T."""
        return "ok"

    result = wb.Agent(model=model, tools=[t], store=False, wrap_up_message=None).run_sync("x")
    assert len(result.steps) == 3
    for step, call, snapshot in zip(result.steps, model.calls, result.snapshots, strict=True):
        assert step.messages_in is call.messages is snapshot.state.messages


def test_a_history_processor_returning_no_messages_fails_the_run() -> None:
    model = wb.ScriptedModel([wb.ModelResponse.text("hi")])
    agent = wb.Agent(
        model=model, history_processors=[lambda ms: [*ms, "not a message"]], store=False
    )
    result = agent.run_sync("x")
    assert result.status is wb.ExecutionStatus.FAILED and not model.calls
    assert result.state.error is not None and result.state.error.phase is wb.Phase.PREPARE
    assert "messages_in.1" in result.state.error.message and "Message" in result.state.error.message


def test_a_json_schema_that_refers_to_nothing_is_refused_for_any_tool() -> None:
    schema = {
        "type": "object",
        "$defs": {"a/b": {"type": "integer"}},
        "properties": {"x": {"$ref": "#/$defs/Missing"}, "y": {"$ref": "#/$defs/a~1b"}},
    }

    def lookup(**arguments: object) -> str:
        return "ok"

    with pytest.raises(ValueError, match=r"refers to '#/\$defs/Missing' \(at properties/x\)"):
        wb.Tool(function=lookup, name="lookup", description="Look.", parameters=schema)
    schema["properties"] = {"y": {"$ref": "#/$defs/a~1b"}}  # an escaped pointer resolves
    tool = wb.Tool(function=lookup, name="lookup", description="Look.", parameters=schema)
    assert tool.validate({"y": 3}) == {"y": 3}
