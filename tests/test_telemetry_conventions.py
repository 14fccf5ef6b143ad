"""Telemetry content and conventions: message content in the GenAI conventions' shape, what it
costs as a run grows, tool definitions and descriptions, finish reasons, the convention names
chosen (older or newer), and a trace id chosen before the run."""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import workbench as wb
from tests.test_openai_model import SECRET as API_KEY
from tests.test_openai_model import Recorder, ask, completion, make_model
from tests.test_telemetry import SECRET, R, add, by_name, calculator, run_with_pause
from workbench.models.base import server_of
from workbench.telemetry import names as n


def test_content_is_captured_in_the_conventions_shape() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    run_with_pause(telemetry)
    second_chat = by_name(telemetry.spans, "chat")[1].attributes or {}
    assert n.SYSTEM_INSTRUCTIONS not in second_chat  # Chat Completions style: in the messages
    inputs = json.loads(str(second_chat[n.INPUT_MESSAGES]))
    assert [m["role"] for m in inputs] == ["system", "user", "assistant", "tool"]
    assert inputs[0]["parts"] == [{"type": "text", "content": "You are a calculator."}]
    inputs = inputs[1:]
    call = inputs[1]["parts"][0]
    assert (call["type"], call["name"], call["arguments"]) == (
        "tool_call",
        "add",
        {"a": 17, "b": "twenty-five"},
    )
    answer = inputs[2]["parts"][0]
    assert answer["type"] == "tool_call_response" and answer["id"] == call["id"]
    outputs = json.loads(str(second_chat[n.OUTPUT_MESSAGES]))
    assert outputs[0]["role"] == "assistant" and outputs[0]["finish_reason"] == "tool_call"
    tool = by_name(telemetry.spans, "execute_tool multiply")[0].attributes or {}
    assert json.loads(str(tool[n.TOOL_CALL_ARGUMENTS])) == {"a": 42, "b": 2}
    assert tool[n.TOOL_CALL_RESULT] == "84"
    retry = by_name(telemetry.spans, "execute_tool add")[0].attributes or {}
    assert n.TOOL_CALL_RESULT not in retry and n.TOOL_CALL_ARGUMENTS in retry  # failed: no result
    first_run, last_run = (s.attributes or {} for s in by_name(telemetry.spans, "invoke_agent"))
    assert json.loads(str(first_run[n.SYSTEM_INSTRUCTIONS])) == [
        {"type": "text", "content": "You are a calculator."}
    ]
    asked = json.loads(str(first_run[n.INPUT_MESSAGES]))
    assert asked == [
        {
            "role": "user",
            "parts": [{"type": "text", "content": "What is 17 + 25, doubled? Save it."}],
        }
    ]
    assert first_run[n.RESPONSE_FINISH_REASONS] == ("tool_calls",)
    answered = json.loads(str(last_run[n.OUTPUT_MESSAGES]))
    assert answered[0]["parts"] == [{"type": "text", "content": "84, saved."}]
    assert answered[0]["finish_reason"] == "stop" and last_run[n.RESPONSE_FINISH_REASONS] == (
        "stop",
    )


def test_no_content_without_capture() -> None:
    telemetry = wb.Telemetry()
    run_with_pause(telemetry)
    content = {n.INPUT_MESSAGES, n.OUTPUT_MESSAGES, n.SYSTEM_INSTRUCTIONS}
    content |= {n.TOOL_CALL_ARGUMENTS, n.TOOL_CALL_RESULT}
    assert not any(content & set(s.attributes or {}) for s in telemetry.spans)


def test_content_cost_grows_with_new_messages_not_history(monkeypatch: pytest.MonkeyPatch) -> None:
    from workbench.telemetry import content

    encoded: list[str] = []
    original = content.ContentEncoder._message

    def counting(self: content.ContentEncoder, role: str, parts: Any) -> str:
        encoded.append(role)
        return original(self, role, parts)

    monkeypatch.setattr(content.ContentEncoder, "_message", counting)
    steps = 30
    script = [R.tool_call("add", {"a": i, "b": 1}) for i in range(steps)] + [R.text("done")]
    agent = calculator(wb.Telemetry(capture_content=True), script)
    agent.stop = wb.MaxSteps(steps + 5)
    result = agent.run_sync("count")
    messages = len(result.messages)
    assert result.status is wb.ExecutionStatus.COMPLETED and messages == 2 * steps + 3
    # each message is encoded once as input and each answer once as output: linear, not quadratic
    assert messages - 1 <= len(encoded) <= 2 * messages


def test_content_json_is_what_json_dumps_writes() -> None:
    """Messages are written from templates: byte for byte what ``json.dumps`` writes."""
    from workbench.messages import RetryPrompt, TextPart, ToolCall, ToolResult
    from workbench.redact import Redactor
    from workbench.telemetry.content import ContentEncoder

    tricky = 'quote " backslash \\ newline \n tab \t nul \x00 accents \u00e9\u20ac emoji \U0001f600'
    arguments = {
        "text": tricky,
        "n": [1, 2.5, None, True],
        "api_key": "hunter2",
        "x": {"y": SECRET},
    }
    call = ToolCall(name="add", arguments=arguments, call_id=f"c{tricky}")
    broken = ToolCall(name="add", call_id="c2", invalid_arguments=f'{{"a": {tricky}')
    answer = R(
        parts=(TextPart(text=tricky), call, broken), finish_reason=wb.FinishReason.TOOL_CALLS
    )
    conversation = (
        wb.Message.user(tricky),
        wb.Message(role="assistant", parts=answer.parts),
        wb.Message(role="tool", parts=(ToolResult(call_id=call.call_id, content=tricky),)),
        wb.Message(role="tool", parts=(RetryPrompt(call_id="c2", content="fix it"),)),
        wb.Message(role="user", parts=(RetryPrompt(content=f"empty {SECRET}"),)),
    )
    redacted = {
        "text": tricky,
        "n": [1, 2.5, None, True],
        "api_key": "[REDACTED]",
        "x": {"y": "[REDACTED]"},
    }
    expected_answer = {
        "role": "assistant",
        "parts": [
            {"type": "text", "content": tricky},
            {"type": "tool_call", "id": call.call_id, "name": "add", "arguments": redacted},
            {"type": "tool_call", "id": "c2", "name": "add", "arguments": f'{{"a": {tricky}'},
        ],
    }
    expected_inputs = [
        {"role": "user", "parts": [{"type": "text", "content": tricky}]},
        expected_answer,
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": call.call_id, "response": tricky}],
        },
        {
            "role": "tool",
            "parts": [{"type": "tool_call_response", "id": "c2", "response": "fix it"}],
        },
        {"role": "user", "parts": [{"type": "text", "content": "empty [REDACTED]"}]},
    ]

    def dumps(value: Any) -> str:
        return json.dumps(value, ensure_ascii=False)

    encoder = ContentEncoder(Redactor())
    assert encoder.request(conversation[:1]) == f"[{dumps(expected_inputs[0])}]"
    output = encoder.response(answer)
    assert output == dumps([{**expected_answer, "finish_reason": "tool_call"}])
    assert encoder.arguments(call.arguments) == dumps(redacted)
    assert encoder.arguments(dict(arguments)) == dumps(redacted)
    inputs = encoder.request(conversation)
    assert inputs == "[" + ",".join(dumps(m) for m in expected_inputs) + "]"
    system = wb.Message.system(tricky)
    assert encoder.instructions((system, *conversation)) == dumps(
        [{"type": "text", "content": tricky}]
    )
    assert encoder.request((system, *conversation)).startswith(
        "[" + dumps({"role": "system", "parts": [{"type": "text", "content": tricky}]})
    )


def test_tool_definitions_descriptions_stream_and_unknown_finish_reason() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    unsure = R.text("hm").model_copy(update={"finish_reason": wb.FinishReason.UNKNOWN})
    agent = calculator(telemetry, [R.tool_call("add", {"a": 1, "b": 2}), unsure])
    agent.run_sync("1 + 2?", settings={"stream": False, "temperature": 0})
    first, second = by_name(telemetry.spans, "chat")
    attributes = first.attributes or {}
    assert n.REQUEST_STREAM not in attributes and attributes[n.REQUEST_TEMPERATURE] == 0
    definitions = json.loads(str(attributes[n.TOOL_DEFINITIONS]))
    assert [d["name"] for d in definitions] == ["add", "multiply", "save"]
    assert definitions[0] == {
        "type": "function",
        "name": "add",
        "description": "Add two integers.",
        "parameters": add.definition.parameters,
    }
    tool = by_name(telemetry.spans, "execute_tool add")[0].attributes or {}
    assert tool[n.TOOL_DESCRIPTION] == "Add two integers."
    assert tool[n.CONVERSATION_ID] == attributes[n.CONVERSATION_ID] == tool[n.RUN_ID]
    output = json.loads(str((second.attributes or {})[n.OUTPUT_MESSAGES]))
    assert output[0]["finish_reason"] == "unknown"  # not made into "stop"
    telemetry.clear()
    agent.model = wb.ScriptedModel([R.text("ok")], name="scripted")
    agent.run_sync("hi", settings={"stream": True})
    (chat,) = by_name(telemetry.spans, "chat")
    assert (chat.attributes or {})[n.REQUEST_STREAM] is True


def test_older_or_both_attribute_names_where_the_conventions_renamed_them() -> None:
    assert n.CONVENTIONS_VERSION == "1.41.0"
    for conventions, present, absent in [
        ("older", {"gen_ai.system", "gen_ai.usage.prompt_tokens"}, {n.PROVIDER}),
        ("both", {"gen_ai.system", n.PROVIDER, "gen_ai.usage.completion_tokens"}, set()),
        ("current", {n.PROVIDER, n.USAGE_INPUT_TOKENS}, {"gen_ai.system"}),
    ]:
        telemetry = wb.Telemetry(conventions=conventions)  # type: ignore[arg-type]
        calculator(telemetry, ["4"]).run_sync("2 + 2?")
        (chat,) = by_name(telemetry.spans, "chat")
        keys = set(chat.attributes or {})
        assert present <= keys and not absent & keys, conventions
        if conventions == "older":
            assert (chat.attributes or {})["gen_ai.system"] == "workbench"
    with pytest.raises(ValueError, match="conventions must be"):
        wb.Telemetry(conventions="newest")  # type: ignore[arg-type]


def test_a_trace_id_chosen_before_the_run_is_the_run_spans() -> None:
    """The loop can give an execution its trace id when it starts (``AgentState.trace_id``,
    from `new_trace_id`); the spans then go under it."""
    from workbench.traceids import new_trace_id, valid_trace_id

    trace_id = new_trace_id()
    assert valid_trace_id(trace_id) and trace_id != new_trace_id()
    telemetry = wb.Telemetry()
    observer = telemetry.observer(wb.ScriptedModel([], name="m"))
    state = wb.AgentState(agent_name="chosen", trace_id=trace_id)
    observer.run_started(state.moved(wb.Transition.START))
    ref = observer.trace_context()
    assert ref is not None and ref.trace_id == trace_id
    observer.run_ended(
        state.moved(wb.Transition.START).moved(
            wb.Transition.ABORT, stop_reason=wb.StopReason.ABORTED
        )
    )
    (run,) = telemetry.spans
    assert run.context is not None and format(run.context.trace_id, "032x") == trace_id
    assert format(run.context.span_id, "016x") == ref.span_id
    assert wb.AgentState.from_json(state.to_json()).trace_id == trace_id  # kept with the state


async def test_cache_and_reasoning_tokens_reach_usage_and_the_chat_span() -> None:
    usage = {
        "prompt_tokens": 1000,
        "completion_tokens": 200,
        "prompt_tokens_details": {"cached_tokens": 768},
        "completion_tokens_details": {"reasoning_tokens": 150},
    }
    handler = Recorder(httpx.Response(200, json=completion("Hi", usage=usage)))
    model = make_model(handler)
    response = await model.request(ask())
    assert (response.usage.cache_read_tokens, response.usage.reasoning_tokens) == (768, 150)
    assert (response.usage + response.usage).cache_read_tokens == 1536

    telemetry = wb.Telemetry()
    agent = wb.Agent(model=model, telemetry=telemetry, store=False)
    await agent.run("Hi")
    chat = next(s for s in telemetry.spans if s.name.startswith("chat"))
    attributes = chat.attributes or {}
    assert attributes["gen_ai.usage.cache_read.input_tokens"] == 768
    assert attributes["gen_ai.usage.reasoning.output_tokens"] == 150
    host, port = server_of(model)
    assert (attributes["server.address"], attributes["server.port"]) == (host, port)
    assert host and API_KEY not in str(attributes)


CONVENTIONS_TYPES: dict[str, type | tuple[type, ...]] = {
    # the GenAI conventions' registry (semantic conventions 1.41.0): the type of each attribute
    # we write; a string[] is a tuple of str here, as the SDK keeps it
    "gen_ai.operation.name": str,
    "gen_ai.provider.name": str,
    "gen_ai.agent.name": str,
    "gen_ai.conversation.id": str,
    "gen_ai.request.model": str,
    "gen_ai.request.temperature": float,
    "gen_ai.request.top_p": float,
    "gen_ai.request.max_tokens": int,
    "gen_ai.request.seed": int,
    "gen_ai.request.stop_sequences": tuple,
    "gen_ai.request.stream": bool,
    "gen_ai.response.model": str,
    "gen_ai.response.id": str,
    "gen_ai.response.finish_reasons": tuple,
    "gen_ai.response.time_to_first_chunk": float,
    "gen_ai.usage.input_tokens": int,
    "gen_ai.usage.output_tokens": int,
    "gen_ai.usage.cache_read.input_tokens": int,
    "gen_ai.usage.reasoning.output_tokens": int,
    "gen_ai.tool.name": str,
    "gen_ai.tool.call.id": str,
    "gen_ai.tool.type": str,
    "gen_ai.tool.description": str,
    "gen_ai.tool.call.arguments": str,
    "gen_ai.tool.call.result": str,
    "gen_ai.tool.definitions": str,
    "gen_ai.input.messages": str,
    "gen_ai.output.messages": str,
    "gen_ai.system_instructions": str,
    "error.type": str,
    "server.address": str,
    "server.port": int,
}


def test_every_genai_attribute_has_the_type_the_conventions_give() -> None:
    """A temperature of 0 is the double 0.0, a stop string a string[]: backends that type a
    column by the first value they see (and the conventions' registry) expect exactly that."""
    telemetry = wb.Telemetry(capture_content=True)
    settings: wb.ModelSettings = {
        "temperature": 0,
        "top_p": 1,
        "max_tokens": 64,
        "seed": 1,
        "stop": ["END"],
    }
    calculator(telemetry).run_sync("What is 1 + 2?", settings=settings)
    seen: dict[str, set[type]] = {}
    for span in telemetry.spans:
        for key, value in (span.attributes or {}).items():
            if key.startswith("gen_ai.") or key in CONVENTIONS_TYPES:
                seen.setdefault(key, set()).add(type(value))
    unknown = sorted(set(seen) - set(CONVENTIONS_TYPES))
    assert unknown == []  # a gen_ai.* key we write and this table does not know
    wrong = {
        k: v for k, v in seen.items() if not all(issubclass(t, CONVENTIONS_TYPES[k]) for t in v)
    }
    assert wrong == {}
    chat = next(s for s in telemetry.spans if s.name.startswith("chat"))
    attributes = chat.attributes or {}
    assert (
        attributes[n.REQUEST_TEMPERATURE] == 0.0
        and type(attributes[n.REQUEST_TEMPERATURE]) is float
    )
    assert attributes[n.REQUEST_STOP_SEQUENCES] == ("END",)
