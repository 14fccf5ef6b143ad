"""AnthropicModel against httpx.MockTransport: the Messages wire both ways, streams, faults, keys.

The shared HTTP side (backoff, timeouts, the client per loop) is tested once, through
`OpenAIModel`, in ``tests/test_openai_model.py``; here is what is Anthropic's own. The same faults
over a real socket, in a run, are in ``tests/faults/test_model_wires.py``.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from typing import Any

import httpx
import pytest

import workbench as wb
from tests.live.fewshot import ADD
from tests.test_openai_model import FakeSleep, Recorder
from workbench.models import (
    AnthropicModel,
    AuthenticationError,
    BadRequestError,
    MalformedResponseError,
    ModelRequest,
    ServerError,
)

SECRET = "ant-test-key-0123456789SECRET"
BASE = "http://claude.test"
SIGNATURE = "EqQBCkgIARABGAIiQL2b" + "s" * 30

Handler = Callable[[httpx.Request], httpx.Response]


def make_model(
    handler: Handler, *, model: str = "claude-sonnet-4-5", **kwargs: Any
) -> AnthropicModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("sleep", FakeSleep())
    return AnthropicModel(model, base_url=BASE, api_key=SECRET, http_client=client, **kwargs)


def message(*content: dict[str, Any], stop: str = "end_turn", **usage: int) -> dict[str, Any]:
    return {
        "id": "msg_01",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5-20250929",
        "content": list(content),
        "stop_reason": stop,
        "usage": {"input_tokens": 1000, "output_tokens": 200, **usage},
    }


def text(value: str) -> dict[str, Any]:
    return {"type": "text", "text": value}


def tool_use(call_id: str, name: str, arguments: Any) -> dict[str, Any]:
    return {"type": "tool_use", "id": call_id, "name": name, "input": arguments}


def thinking(value: str, signature: str = SIGNATURE) -> dict[str, Any]:
    return {"type": "thinking", "thinking": value, "signature": signature}


def ok(body: dict[str, Any], **headers: str) -> httpx.Response:
    return httpx.Response(200, json=body, headers=headers)


def error(status: int, kind: str, said: str, **headers: str) -> httpx.Response:
    body = {"type": "error", "error": {"type": kind, "message": said}, "request_id": "req_1"}
    return httpx.Response(status, json=body, headers=headers)


def events(*items: tuple[str, dict[str, Any]] | str) -> bytes:
    """Server-sent events as Anthropic sends them (``event:``, ``data:``); strings as given."""
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        else:
            out.append(f"event: {item[0]}\ndata: {json.dumps(item[1])}")
    return "".join(f"{e}\n\n" for e in out).encode()


def stream(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def ask(*messages: wb.Message, **settings: Any) -> ModelRequest:
    return ModelRequest(
        messages=messages or (wb.Message.user("What is 17 + 25?"),),
        tools=(ADD,),
        settings=settings,  # type: ignore[arg-type]
    )


CONVERSATION = (
    wb.Message.system("You add numbers."),
    wb.Message.system("Use the tool."),
    wb.Message.user("What is 17 + 25 and 1 + 2?"),
    wb.Message(
        role="assistant",
        parts=(
            wb.ThinkingPart(text="Two sums.", signature=SIGNATURE, provider="anthropic"),
            wb.ThinkingPart(signature="ZGF0YQ==", provider="anthropic", redacted=True),
            wb.ThinkingPart(text="other", signature="gAAA", provider="openai", id="rs_1"),
            wb.TextPart(text="Adding."),
            wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="toolu_1"),
            wb.ToolCall(name="add", call_id="toolu_2", invalid_arguments='{"a": 1,'),
        ),
    ),
    wb.Message(
        role="tool",
        parts=(
            wb.ToolResult(call_id="toolu_1", name="add", content="42"),
            wb.RetryPrompt(content="bad JSON", call_id="toolu_2", name="add"),
        ),
    ),
    wb.Message.user("And then?"),
    wb.Message.system("A late instruction."),
)


async def test_the_body_places_the_system_prompt_and_merges_turns() -> None:
    recorder = Recorder(ok(message(text("ok"))))
    await make_model(recorder).request(ask(*CONVERSATION, temperature=0, stop=["\n"]))
    body = recorder.body()
    assert body["model"] == "claude-sonnet-4-5"
    assert body["system"] == "You add numbers.\n\nUse the tool."
    assert body["max_tokens"] == 4096  # required by the API: sent when the settings say nothing
    assert body["temperature"] == 0 and body["stop_sequences"] == ["\n"]
    assert "stream" not in body
    assert body["tools"] == [
        {"name": "add", "description": ADD.description, "input_schema": ADD.parameters}
    ]
    user, assistant, results = body["messages"]
    assert user == {"role": "user", "content": [text("What is 17 + 25 and 1 + 2?")]}
    assert assistant == {
        "role": "assistant",
        "content": [
            thinking("Two sums."),
            {"type": "redacted_thinking", "data": "ZGF0YQ=="},  # unchanged; openai's left out
            text("Adding."),
            tool_use("toolu_1", "add", {"a": 17, "b": 25}),
            tool_use("toolu_2", "add", {}),  # never the broken text: the API takes an object
        ],
    }
    # the tool results, the next question and the late system message are one user turn,
    # tool results first
    assert results["role"] == "user"
    assert results["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "42"},
        {
            "type": "tool_result",
            "tool_use_id": "toolu_2",
            "content": "bad JSON\n\nFix the errors and try again.",
            "is_error": True,
        },
        text("And then?"),
        text("A late instruction."),
    ]


async def test_errors_go_back_as_is_error_results() -> None:
    recorder = Recorder(ok(message(text("ok"))))
    failed = wb.Message(
        role="tool",
        parts=(wb.ToolResult(call_id="c1", name="add", content="boom", is_error=True),),
    )
    call = wb.Message.assistant_tool_call("add", {"a": 1, "b": 2}, call_id="c1")
    await make_model(recorder).request(ask(wb.Message.user("1 + 2?"), call, failed))
    (result,) = recorder.body()["messages"][-1]["content"]
    assert result == {
        "type": "tool_result",
        "tool_use_id": "c1",
        "content": "boom",
        "is_error": True,
    }


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("auto", {"type": "auto"}),
        ("none", {"type": "none"}),
        ("required", {"type": "any"}),
        ("add", {"type": "tool", "name": "add"}),
        ({"type": "any", "disable_parallel_tool_use": True}, None),
    ],
)
async def test_tool_choice(ours: Any, theirs: Any) -> None:
    recorder = Recorder(ok(message(text("ok"))))
    await make_model(recorder).request(ask(tool_choice=ours))
    assert recorder.body()["tool_choice"] == (theirs or ours)


async def test_thinking_budget_max_tokens_and_extra_body() -> None:
    recorder = Recorder(ok(message(text("ok"))))
    await make_model(recorder).request(
        ask(thinking_budget=2048, max_tokens=8000, extra_body={"top_k": 5, "metadata": {"a": 1}})
    )
    body = recorder.body()
    assert body["thinking"] == {"type": "enabled", "budget_tokens": 2048}
    assert body["max_tokens"] == 8000 and body["top_k"] == 5 and body["metadata"] == {"a": 1}


async def test_headers_carry_the_key_and_the_version(monkeypatch: pytest.MonkeyPatch) -> None:
    recorder = Recorder(ok(message(text("ok"))))
    await make_model(recorder, headers={"anthropic-beta": "b1"}).request(ask())
    sent = recorder.requests[0]
    assert str(sent.url) == f"{BASE}/v1/messages"
    assert sent.headers["x-api-key"] == SECRET and "authorization" not in sent.headers
    assert sent.headers["anthropic-version"] == "2023-06-01"
    assert sent.headers["anthropic-beta"] == "b1"
    monkeypatch.setenv("ANTHROPIC_API_KEY", "from-env-key")
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "http://env.test/")
    from_env = AnthropicModel("claude-haiku-4-5")
    assert (
        from_env.base_url == "http://env.test" and from_env.redact("from-env-key") == "[REDACTED]"
    )


async def test_an_answer_with_thinking_parallel_calls_and_cache_usage() -> None:
    answer = message(
        thinking("Both at once."),
        {"type": "redacted_thinking", "data": "cmVkYWN0ZWQ="},
        text("Adding both."),
        tool_use("toolu_1", "add", {"a": 17, "b": 25}),
        tool_use("toolu_2", "add", {"a": 1, "b": 2}),
        {"type": "server_tool_use", "id": "srv_1", "name": "web_search", "input": {}},
        stop="tool_use",
        cache_read_input_tokens=3000,
        cache_creation_input_tokens=500,
    )
    response = await make_model(Recorder(ok(answer))).request(ask())
    assert response.parts == (
        wb.ThinkingPart(text="Both at once.", signature=SIGNATURE, provider="anthropic"),
        wb.ThinkingPart(signature="cmVkYWN0ZWQ=", provider="anthropic", redacted=True),
        wb.TextPart(text="Adding both."),
        wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="toolu_1"),
        wb.ToolCall(name="add", arguments={"a": 1, "b": 2}, call_id="toolu_2"),
    )
    assert response.finish_reason is wb.FinishReason.TOOL_CALLS
    assert (response.model_name, response.response_id) == ("claude-sonnet-4-5-20250929", "msg_01")
    usage = response.usage
    # the conventions' input count includes the cached input; Anthropic's does not
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (
        4500,
        3000,
        500,
    )
    # $3 plain input, $0.30 cache reads, $3.75 cache writes, $15 output, per million
    expected = (1000 * 3 + 3000 * 0.30 + 500 * 3.75 + 200 * 15) / 1e6
    assert usage.cost == pytest.approx(expected)


async def test_the_answers_thinking_goes_back_unchanged_on_the_next_call() -> None:
    answer = message(
        thinking("Call the tool."),
        {"type": "redacted_thinking", "data": "c2VjcmV0"},
        tool_use("toolu_9", "add", {"a": 2, "b": 3}),
        stop="tool_use",
    )
    recorder = Recorder(ok(answer), ok(message(text("2 + 3 = 5"))))
    model = make_model(recorder)
    first = await model.request(ask(wb.Message.user("2 + 3?")))
    follow = (
        wb.Message.user("2 + 3?"),
        first.to_message(),
        wb.Message.tool_result("toolu_9", "5", name="add"),
    )
    await model.request(ask(*follow))
    assert recorder.body(1)["messages"][1]["content"] == answer["content"]


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("end_turn", wb.FinishReason.STOP),
        ("stop_sequence", wb.FinishReason.STOP),
        ("max_tokens", wb.FinishReason.LENGTH),
        ("tool_use", wb.FinishReason.TOOL_CALLS),
        ("refusal", wb.FinishReason.CONTENT_FILTER),
        ("pause_turn", wb.FinishReason.UNKNOWN),
    ],
)
async def test_stop_reasons_are_mapped(wire: str, ours: wb.FinishReason) -> None:
    response = await make_model(Recorder(ok(message(text("x"), stop=wire)))).request(ask())
    assert response.finish_reason is ours


async def test_a_tool_use_whose_input_is_not_an_object_is_kept_for_a_retry() -> None:
    answer = message(tool_use("toolu_1", "add", [1, 2]), stop="tool_use")
    response = await make_model(Recorder(ok(answer))).request(ask())
    (call,) = response.calls
    assert call.arguments == {} and call.invalid_arguments == "[1, 2]"


async def test_missing_usage_is_an_unknown_cost_and_an_unknown_model_no_price() -> None:
    answer = message(text("hi"))
    del answer["usage"]
    response = await make_model(Recorder(ok(answer))).request(ask())
    assert response.usage.cost is None and response.usage.requests == 1
    priced = await make_model(Recorder(ok(message(text("x")))), model="local").request(ask())
    assert priced.usage.cost is None  # unknown, not free


# --- streams -------------------------------------------------------------------------------------


def start(**usage: int) -> tuple[str, dict[str, Any]]:
    body = message(**usage)
    body["usage"] = {"input_tokens": 1000, "output_tokens": 1, **usage}
    return ("message_start", {"type": "message_start", "message": {**body, "content": []}})


def block(index: int, content: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    return (
        "content_block_start",
        {"type": "content_block_start", "index": index, "content_block": content},
    )


def delta(index: int, **piece: Any) -> tuple[str, dict[str, Any]]:
    return ("content_block_delta", {"type": "content_block_delta", "index": index, "delta": piece})


def stop_block(index: int) -> tuple[str, dict[str, Any]]:
    return ("content_block_stop", {"type": "content_block_stop", "index": index})


def finish(reason: str, output: int = 200) -> list[tuple[str, dict[str, Any]]]:
    return [
        (
            "message_delta",
            {
                "type": "message_delta",
                "delta": {"stop_reason": reason, "stop_sequence": None},
                "usage": {"output_tokens": output},
            },
        ),
        ("message_stop", {"type": "message_stop"}),
    ]


WHOLE_STREAM = events(
    start(cache_read_input_tokens=10),
    ("ping", {"type": "ping"}),
    block(0, {"type": "thinking", "thinking": "", "signature": ""}),
    delta(0, type="thinking_delta", thinking="Two "),
    delta(0, type="thinking_delta", thinking="calls."),
    delta(0, type="signature_delta", signature=SIGNATURE),
    stop_block(0),
    block(1, {"type": "text", "text": ""}),
    delta(1, type="text_delta", text="Add"),
    delta(1, type="text_delta", text="ing."),
    stop_block(1),
    block(2, {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {}}),
    delta(2, type="input_json_delta", partial_json='{"a": 17, '),
    delta(2, type="input_json_delta", partial_json='"b": 25}'),
    stop_block(2),
    block(3, {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}}),
    delta(3, type="input_json_delta", partial_json='{"a": 1, "b":'),  # cut short: invalid
    stop_block(3),
    *finish("tool_use"),
)


async def test_a_stream_is_folded_into_one_answer() -> None:
    recorder = Recorder(stream(WHOLE_STREAM))
    pieces: list[str] = []
    request = ask(stream=True).model_copy(update={"on_text_delta": pieces.append})
    response = await make_model(recorder).request(request)
    assert recorder.body()["stream"] is True
    assert pieces == ["Add", "ing."]
    thought, said, good, bad = response.parts
    assert thought == wb.ThinkingPart(text="Two calls.", signature=SIGNATURE, provider="anthropic")
    assert said == wb.TextPart(text="Adding.")
    assert (good.call_id, good.arguments) == ("toolu_1", {"a": 17, "b": 25})  # type: ignore[union-attr]
    assert bad.invalid_arguments == '{"a": 1, "b":'  # type: ignore[union-attr]
    assert response.finish_reason is wb.FinishReason.TOOL_CALLS
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1010, 200)
    assert response.time_to_first_token is not None and response.time_to_first_token >= 0


async def test_an_error_event_mid_stream_is_the_typed_error_it_stands_for() -> None:
    body = events(
        start(),
        block(0, {"type": "text", "text": ""}),
        delta(0, type="text_delta", text="Hel"),
        (
            "error",
            {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}},
        ),
    )
    recorder = Recorder(stream(body))
    with pytest.raises(ServerError) as caught:
        await make_model(recorder).request(ask(stream=True))
    assert caught.value.status_code == 529
    assert "overloaded_error: Overloaded" in str(caught.value)
    assert len(recorder.requests) == 1  # a stream that started is never retried


async def test_an_error_event_that_is_not_json_is_still_an_error() -> None:
    body = events(start(), "event: error\ndata: upstream went away")
    with pytest.raises(ServerError, match="upstream went away"):
        await make_model(Recorder(stream(body))).request(ask(stream=True))


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (
            events(start(), block(0, text("")), delta(0, type="text_delta", text="Hi")),
            "message_stop",
        ),
        (events(start(), "data: {not json"), "not an Anthropic event"),
        (events(start(), delta(5, type="text_delta", text="x")), "never begun"),
        (
            events(start(), ("content_block_delta", {"type": "content_block_delta"})),
            "without an index",
        ),
        (
            events(
                start(),
                block(0, text("")),
                ("content_block_delta", {"type": "content_block_delta", "index": 0}),
            ),
            "without one",
        ),
        (events(start(), block(0, {"type": "tool_use", "id": "t"}), *finish("tool_use")), "name"),
    ],
    ids=["truncated", "malformed-sse", "unknown-block", "no-index", "no-delta", "nameless-tool"],
)
async def test_broken_streams_are_malformed_responses(body: bytes, match: str) -> None:
    with pytest.raises(MalformedResponseError, match=match):
        await make_model(Recorder(stream(body))).request(ask(stream=True))


# --- errors and retries --------------------------------------------------------------------------


async def test_529_overloaded_is_retried_honouring_retry_after() -> None:
    sleep = FakeSleep()
    recorder = Recorder(
        error(529, "overloaded_error", "Overloaded", **{"retry-after": "7"}),
        ok(message(text("fine"))),
    )
    response = await make_model(recorder, sleep=sleep).request(ask())
    assert response.text_content == "fine"
    assert sleep.delays == [7.0] and len(recorder.requests) == 2


async def test_529_until_the_retries_run_out_is_a_server_error() -> None:
    recorder = Recorder(error(529, "overloaded_error", "Overloaded"))
    with pytest.raises(ServerError, match=r"529 server error .*Overloaded") as caught:
        await make_model(recorder, max_retries=2).request(ask())
    assert caught.value.status_code == 529 and len(recorder.requests) == 3


async def test_a_signature_the_server_rejects_is_a_bad_request_with_its_words() -> None:
    said = "messages.1.content.0: Invalid `signature` in `thinking` block"
    recorder = Recorder(error(400, "invalid_request_error", said))
    with pytest.raises(BadRequestError, match="Invalid `signature`") as caught:
        await make_model(recorder).request(ask(*CONVERSATION[:5]))
    assert caught.value.status_code == 400 and len(recorder.requests) == 1  # not retried


async def test_an_error_object_in_a_200_is_the_typed_error() -> None:
    body = {"type": "error", "error": {"type": "authentication_error", "message": "bad key"}}
    with pytest.raises(AuthenticationError, match="bad key"):
        await make_model(Recorder(ok(body))).request(ask())


@pytest.mark.parametrize(
    "body",
    [b"<html>oops</html>", b'{"type": "message", "content": "not a list"}', b'{"type": "foo"}'],
)
async def test_what_is_not_a_message_is_a_malformed_response(body: bytes) -> None:
    response = httpx.Response(200, content=body, headers={"content-type": "application/json"})
    with pytest.raises(MalformedResponseError):
        await make_model(Recorder(response)).request(ask())


async def test_the_key_never_leaves(caplog: pytest.LogCaptureFixture) -> None:
    echoed = error(401, "authentication_error", f"invalid x-api-key: {SECRET}")
    with pytest.raises(AuthenticationError) as caught:
        await make_model(Recorder(echoed)).request(ask())
    assert SECRET not in str(caught.value) and "[REDACTED]" in str(caught.value)
    streamed = events(start(), ("error", {"type": "error", "error": {"message": SECRET}}))
    with pytest.raises(ServerError) as caught:
        await make_model(Recorder(stream(streamed))).request(ask(stream=True))
    assert SECRET not in str(caught.value)
    model = make_model(Recorder(ok(message(text("x")))))
    assert SECRET not in repr(model) and SECRET not in caplog.text
