"""OpenAIModel against httpx.MockTransport: the wire format, streaming, retries, faults, secrets."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
from collections.abc import AsyncIterator, Callable
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.live.fewshot import ADD  # the same tool the live tests offer the real model
from workbench.messages import (
    FinishReason,
    Message,
    ModelResponse,
    RetryPrompt,
    TextPart,
    ToolCall,
    ToolResult,
)
from workbench.models import (
    PRICES,
    AuthenticationError,
    BadRequestError,
    MalformedResponseError,
    ModelConnectionError,
    ModelError,
    ModelPrice,
    ModelRequest,
    ModelTimeoutError,
    OpenAIModel,
    RateLimitError,
    RetryPolicy,
    ServerError,
)
from workbench.models._http import _SHARED_CLIENTS, _ClientPerLoop, retry_after_seconds
from workbench.models.prices import price_for

DATA = Path(__file__).parent / "data" / "openai"
SECRET = "sk-test-0123456789abcdefSECRET"
BASE = "http://llm.test/v1"


Handler = Callable[[httpx.Request], httpx.Response]


class Recorder:
    """A MockTransport handler answering from a list, keeping every request it got."""

    def __init__(self, *answers: httpx.Response | Exception) -> None:
        self.answers = list(answers)
        self.requests: list[httpx.Request] = []

    def __call__(self, request: httpx.Request) -> httpx.Response:
        self.requests.append(request)
        answer = self.answers.pop(0) if len(self.answers) > 1 else self.answers[0]
        if isinstance(answer, Exception):
            raise answer
        return answer

    def body(self, index: int = -1) -> Any:
        return json.loads(self.requests[index].content)


class FakeSleep:
    """Records the waits instead of waiting."""

    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, seconds: float) -> None:
        self.delays.append(seconds)


def make_model(
    handler: Handler,
    *,
    model: str = "gpt-4o-mini",
    sleep: FakeSleep | None = None,
    **kwargs: Any,
) -> OpenAIModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    return OpenAIModel(
        model,
        base_url=BASE,
        api_key=SECRET,
        http_client=client,
        sleep=sleep or FakeSleep(),
        **kwargs,
    )


def completion(
    content: str | None = "Hello!",
    *,
    tool_calls: list[dict[str, Any]] | None = None,
    finish: str = "stop",
    usage: dict[str, int] | None = None,
) -> dict[str, Any]:
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if tool_calls is not None:
        message["tool_calls"] = tool_calls
    return {
        "id": "chatcmpl-123",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini-2024-07-18",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage or {"prompt_tokens": 1000, "completion_tokens": 2000, "total_tokens": 3000},
    }


def sse(*events: dict[str, Any] | str) -> bytes:
    lines = [e if isinstance(e, str) else f"data: {json.dumps(e)}" for e in events]
    return "".join(f"{line}\n\n" for line in lines).encode()


def chunk(delta: dict[str, Any] | None = None, finish: str | None = None, **top: Any) -> dict:
    choices = [] if delta is None else [{"index": 0, "delta": delta, "finish_reason": finish}]
    return {"id": "chatcmpl-s1", "model": "gpt-4o-mini", "choices": choices, **top}


def stream_response(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


def ask(text: str = "Hi", **settings: Any) -> ModelRequest:
    return ModelRequest(messages=[Message.user(text)], settings=settings)  # type: ignore[typeddict-item]


# --- complete responses -------------------------------------------------------------------------


async def test_text_response_has_parts_usage_cost_and_provenance() -> None:
    handler = Recorder(httpx.Response(200, json=completion("Hello!")))
    response = await make_model(handler).request(ask())

    assert response.parts == (TextPart(text="Hello!"),)
    assert response.finish_reason is FinishReason.STOP
    assert response.model_name == "gpt-4o-mini-2024-07-18"
    assert response.response_id == "chatcmpl-123"
    assert response.time_to_first_token is None
    assert (response.usage.input_tokens, response.usage.output_tokens) == (1000, 2000)
    assert response.usage.requests == 1
    assert response.usage.cost == pytest.approx((1000 * 0.15 + 2000 * 0.60) / 1e6)


async def test_request_body_carries_history_tools_and_settings() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    model = make_model(handler, headers={"X-Trace": "t1"})
    broken = ToolCall.parse("add", '{"a": 1, "b":', "c2")
    history = [
        Message.system("You add."),
        Message.user("What is 2 + 3?"),
        Message.assistant_tool_call("add", {"a": 2, "b": 3}, call_id="c1"),
        Message.tool_result("c1", "5", name="add"),
        Message(role="assistant", parts=(TextPart(text="Let me add."), broken)),
        Message(role="tool", parts=(RetryPrompt(content="bad JSON", call_id="c2", name="add"),)),
        Message(role="user", parts=(RetryPrompt(content="Answer in one line."),)),
    ]
    settings = {"temperature": 0, "top_p": 0.5, "seed": 1, "max_tokens": 64, "stop": ["\n\n"]}
    request = ModelRequest(
        messages=history, tools=[ADD], settings={**settings, "tool_choice": "add"}
    )  # type: ignore[typeddict-item]

    await model.request(request)

    sent = handler.requests[0]
    assert sent.url == f"{BASE}/chat/completions"
    assert sent.headers["authorization"] == f"Bearer {SECRET}"
    assert sent.headers["x-trace"] == "t1"
    body = handler.body()
    assert body["model"] == "gpt-4o-mini"
    assert {k: body[k] for k in settings} == settings
    assert "stream" not in body
    assert body["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "add",
                "description": "Add two integers.",
                "parameters": ADD.parameters,
            },
        }
    ]
    assert body["tool_choice"] == {"type": "function", "function": {"name": "add"}}
    assert body["messages"] == [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": "What is 2 + 3?"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": "c1",
                    "type": "function",
                    "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
                }
            ],
        },
        {"role": "tool", "content": "5", "tool_call_id": "c1"},
        {
            "role": "assistant",
            "content": "Let me add.",
            # the model's broken JSON is never sent back: servers answer 500 to it
            "tool_calls": [
                {"id": "c2", "type": "function", "function": {"name": "add", "arguments": "{}"}}
            ],
        },
        {
            "role": "tool",
            "content": "bad JSON\n\nFix the errors and try again.",
            "tool_call_id": "c2",
        },
        {"role": "user", "content": "Answer in one line.\n\nFix the errors and try again."},
    ]


async def test_tool_result_parts_become_one_tool_message_each() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    results = Message(
        role="tool",
        parts=(
            ToolResult(call_id="a", name="add", content="3"),
            ToolResult(call_id="b", name="add", content="boom", is_error=True),
        ),
    )
    await make_model(handler).request(ModelRequest(messages=[results]))
    assert handler.body()["messages"] == [
        {"role": "tool", "content": "3", "tool_call_id": "a"},
        {"role": "tool", "content": "boom", "tool_call_id": "b"},
    ]


async def test_no_api_key_sends_no_authorization(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    handler = Recorder(httpx.Response(200, json=completion()))
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    model = OpenAIModel("local", base_url=BASE + "/", http_client=client)
    await model.request(ask())
    assert "authorization" not in handler.requests[0].headers
    assert handler.requests[0].url == f"{BASE}/chat/completions"


async def test_api_key_defaults_to_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    handler = Recorder(httpx.Response(200, json=completion()))
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    await OpenAIModel("gpt-4o", base_url=BASE, http_client=client).request(ask())
    assert handler.requests[0].headers["authorization"] == f"Bearer {SECRET}"


async def test_tool_choice_without_tools_is_not_sent() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    await make_model(handler).request(ask(tool_choice="required"))
    assert "tool_choice" not in handler.body()
    assert "tools" not in handler.body()


async def test_tool_calls_are_parsed_and_invalid_arguments_kept() -> None:
    calls = [
        {"id": "c1", "type": "function", "function": {"name": "add", "arguments": '{"a":1,"b":2}'}},
        {"id": "c2", "type": "function", "function": {"name": "add", "arguments": '{"a": 1, "b'}},
    ]
    body = completion(None, tool_calls=calls, finish="tool_calls")
    response = await make_model(Recorder(httpx.Response(200, json=body))).request(ask())

    assert response.finish_reason is FinishReason.TOOL_CALLS
    first, second = response.calls
    assert (first.name, first.arguments, first.call_id) == ("add", {"a": 1, "b": 2}, "c1")
    assert first.invalid_arguments is None
    assert (second.arguments, second.invalid_arguments) == ({}, '{"a": 1, "b')
    assert response.text_content == ""


@pytest.mark.parametrize(
    ("wire", "ours"),
    [
        ("stop", FinishReason.STOP),
        ("length", FinishReason.LENGTH),
        ("tool_calls", FinishReason.TOOL_CALLS),
        ("function_call", FinishReason.TOOL_CALLS),
        ("content_filter", FinishReason.CONTENT_FILTER),
        ("something_new", FinishReason.UNKNOWN),
    ],
)
async def test_finish_reasons_are_mapped(wire: str, ours: FinishReason) -> None:
    handler = Recorder(httpx.Response(200, json=completion(finish=wire)))
    assert (await make_model(handler).request(ask())).finish_reason is ours


# --- prices --------------------------------------------------------------------------------------


async def test_unknown_model_costs_unknown_not_zero() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    response = await make_model(handler, model="gemma-3-270m").request(ask())
    assert response.usage.cost is None
    assert response.usage.input_tokens == 1000


async def test_price_argument_overrides_the_table() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    model = make_model(
        handler, model="gemma-3-270m", price=ModelPrice(input_per_million=0, output_per_million=0)
    )
    assert (await model.request(ask())).usage.cost == 0.0


async def test_missing_usage_is_unknown_cost() -> None:
    body = completion()
    del body["usage"]
    response = await make_model(Recorder(httpx.Response(200, json=body))).request(ask())
    assert (response.usage.total_tokens, response.usage.cost) == (0, None)


def test_price_table_knows_dated_snapshots_and_is_overridable(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    assert price_for("gpt-4o-2024-08-06") == PRICES["gpt-4o"]
    assert price_for("gpt-4o-audio-preview") is None
    monkeypatch.setitem(PRICES, "my-model", ModelPrice(input_per_million=1, output_per_million=2))
    assert OpenAIModel("my-model", api_key="x").price == ModelPrice(
        input_per_million=1, output_per_million=2
    )
    assert ModelPrice(input_per_million=1, output_per_million=2).cost(
        1_000_000, 500_000
    ) == pytest.approx(2.0)


# --- streaming -----------------------------------------------------------------------------------


async def test_stream_text_deltas_usage_and_time_to_first_token() -> None:
    body = sse(
        ": keep-alive comment",
        chunk({"role": "assistant", "content": ""}),
        chunk({"content": "Hel"}),
        chunk({"content": "lo"}),
        chunk({}, finish="stop"),
        chunk(None, usage={"prompt_tokens": 12, "completion_tokens": 3}),
        "data: [DONE]",
    )
    handler = Recorder(stream_response(body))
    pieces: list[str] = []
    request = ModelRequest(
        messages=[Message.user("Hi")], settings={"stream": True}, on_text_delta=pieces.append
    )

    response = await make_model(handler).request(request)

    assert pieces == ["Hel", "lo"]
    assert response.parts == (TextPart(text="Hello"),)
    assert response.finish_reason is FinishReason.STOP
    assert (response.usage.input_tokens, response.usage.output_tokens) == (12, 3)
    assert response.time_to_first_token is not None
    assert response.time_to_first_token >= 0
    assert response.response_id == "chatcmpl-s1"
    assert handler.body()["stream"] is True
    assert handler.body()["stream_options"] == {"include_usage": True}


async def test_stream_assembles_interleaved_tool_call_deltas_by_index() -> None:
    def call(index: int, **function: str) -> dict[str, Any]:
        head = {"id": f"c{index}", "type": "function"} if "name" in function else {}
        return {"tool_calls": [{"index": index, **head, "function": function}]}

    body = sse(
        chunk(call(0, name="add", arguments="")),
        chunk(call(0, arguments='{"a": ')),
        chunk(call(1, name="add", arguments='{"a": 5')),
        chunk(call(0, arguments="17, ")),
        chunk(call(1, arguments=", ")),  # never finished: invalid JSON
        chunk(call(0, arguments='"b": 25}')),
        chunk({}, finish="tool_calls"),
        chunk(None, usage={"prompt_tokens": 40, "completion_tokens": 20}),
        "data: [DONE]",
    )
    response = await make_model(Recorder(stream_response(body))).request(ask(stream=True))

    first, second = response.calls
    assert (first.call_id, first.name, first.arguments) == ("c0", "add", {"a": 17, "b": 25})
    assert (second.call_id, second.invalid_arguments) == ("c1", '{"a": 5, ')
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.time_to_first_token is not None


async def test_stream_tool_calls_without_index_are_separate_calls() -> None:
    whole = {"id": "x", "function": {"name": "add", "arguments": {"a": 1, "b": 2}}}
    body = sse(chunk({"tool_calls": [whole, {**whole, "id": "y"}]}, finish="tool_calls"))
    response = await make_model(Recorder(stream_response(body))).request(ask(stream=True))
    assert [(c.call_id, c.arguments) for c in response.calls] == [
        ("x", {"a": 1, "b": 2}),
        ("y", {"a": 1, "b": 2}),
    ]


async def test_stream_accepts_crlf_and_data_without_space() -> None:
    body = b'data:{"choices":[{"delta":{"content":"ok"},"finish_reason":"stop"}]}\r\n\r\n'
    body += b"data: [DONE]\r\n\r\n"
    response = await make_model(Recorder(stream_response(body))).request(ask(stream=True))
    assert response.text_content == "ok"
    assert response.usage.cost is None  # the server sent no usage


async def test_truncated_stream_is_a_malformed_response() -> None:
    body = sse(chunk({"content": "Hel"}))  # no finish reason, no [DONE]
    handler = Recorder(stream_response(body))
    sleep = FakeSleep()
    with pytest.raises(MalformedResponseError, match="ended early"):
        await make_model(handler, sleep=sleep).request(ask(stream=True))
    assert len(handler.requests) == 1  # a started stream is never retried
    assert sleep.delays == []


async def test_stream_cut_mid_event_is_a_malformed_response() -> None:
    body = sse(chunk({"content": "Hel"})) + b'data: {"choices": [{"delta": {"cont'
    with pytest.raises(MalformedResponseError, match="not a chat completion chunk"):
        await make_model(Recorder(stream_response(body))).request(ask(stream=True))


async def test_stream_error_event_is_a_server_error() -> None:
    body = sse(chunk({"content": "Hel"}), {"error": {"code": 500, "message": "KV cache full"}})
    with pytest.raises(ServerError, match="KV cache full"):
        await make_model(Recorder(stream_response(body))).request(ask(stream=True))


async def test_stream_broken_off_by_the_network_is_a_malformed_response() -> None:
    async def body() -> AsyncIterator[bytes]:
        yield sse(chunk({"content": "Hel"}))
        raise httpx.RemoteProtocolError("peer closed connection")

    handler = Recorder(httpx.Response(200, content=body()))
    with pytest.raises(MalformedResponseError, match="broke off"):
        await make_model(handler).request(ask(stream=True))
    assert len(handler.requests) == 1


async def test_cancelling_a_stream_closes_the_response() -> None:
    first_piece = asyncio.Event()
    closed = asyncio.Event()

    async def body() -> AsyncIterator[bytes]:
        try:
            yield sse(chunk({"content": "Hel"}))
            await asyncio.Event().wait()  # the server goes quiet
            yield b""
        finally:
            closed.set()

    handler = Recorder(httpx.Response(200, content=body()))
    request = ModelRequest(
        messages=[Message.user("Hi")],
        settings={"stream": True},
        on_text_delta=lambda _: first_piece.set(),
    )
    task = asyncio.create_task(make_model(handler).request(request))
    await first_piece.wait()
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert closed.is_set()


# --- faults and retries --------------------------------------------------------------------------


async def test_429_with_retry_after_then_success() -> None:
    limited = httpx.Response(429, headers={"Retry-After": "2"}, json={"error": {"message": "slow"}})
    handler = Recorder(limited, httpx.Response(200, json=completion("ok")))
    sleep = FakeSleep()
    response = await make_model(handler, sleep=sleep).request(ask())
    assert response.text_content == "ok"
    assert sleep.delays == [2.0]
    assert len(handler.requests) == 2


async def test_retry_after_as_http_date() -> None:
    when = email.utils.format_datetime(datetime.now(UTC) + timedelta(seconds=30), usegmt=True)
    limited = httpx.Response(429, headers={"Retry-After": when})
    handler = Recorder(limited, httpx.Response(200, json=completion("ok")))
    sleep = FakeSleep()
    await make_model(handler, sleep=sleep).request(ask())
    assert sleep.delays == [pytest.approx(30, abs=2)]


def test_retry_after_parsing() -> None:
    now = datetime(2025, 1, 1, tzinfo=UTC)
    date = email.utils.format_datetime(now + timedelta(seconds=7), usegmt=True)
    assert retry_after_seconds(httpx.Headers({"retry-after": "1.5"})) == 1.5
    assert retry_after_seconds(httpx.Headers({"retry-after-ms": "250"})) == 0.25
    assert retry_after_seconds(httpx.Headers({"retry-after": date}), now=now) == 7
    assert retry_after_seconds(httpx.Headers({"retry-after": "-3"})) == 0
    assert retry_after_seconds(httpx.Headers({"retry-after": "soon"})) is None
    assert retry_after_seconds(httpx.Headers()) is None


async def test_500_until_the_retry_budget_ends() -> None:
    handler = Recorder(httpx.Response(500, json={"error": {"message": "model crashed"}}))
    sleep = FakeSleep()
    policy = RetryPolicy(max_retries=3, initial_delay=1.0, max_delay=3.0, jitter=0.5)
    with pytest.raises(ServerError, match="model crashed") as caught:
        await make_model(handler, sleep=sleep, retry=policy).request(ask())
    assert caught.value.status_code == 500
    assert len(handler.requests) == 4
    # exponential (1, 2, 4 capped at 3), each less up to half of it for jitter
    for delay, ceiling in zip(sleep.delays, [1.0, 2.0, 3.0], strict=True):
        assert ceiling / 2 <= delay <= ceiling


async def test_max_retries_argument_overrides_the_policy() -> None:
    handler = Recorder(httpx.Response(503, text="unavailable"))
    with pytest.raises(ServerError, match=r"503 server error .*unavailable"):
        await make_model(handler, max_retries=0).request(ask())
    assert len(handler.requests) == 1


async def test_retries_stop_at_the_total_time_budget() -> None:
    limited = httpx.Response(429, headers={"Retry-After": "120"}, json={"error": "quota"})
    handler = Recorder(limited)
    sleep = FakeSleep()
    policy = RetryPolicy(max_total_seconds=60)
    with pytest.raises(RateLimitError, match="quota"):
        await make_model(handler, sleep=sleep, retry=policy).request(ask())
    assert sleep.delays == []  # waiting 120 s would break the 60 s budget: give up now
    assert len(handler.requests) == 1


async def test_connection_errors_are_retried() -> None:
    handler = Recorder(
        httpx.ConnectError("connection refused"), httpx.Response(200, json=completion())
    )
    sleep = FakeSleep()
    response = await make_model(handler, sleep=sleep).request(ask(stream=False))
    assert response.text_content == "Hello!"
    assert len(sleep.delays) == 1


async def test_connection_errors_exhausted() -> None:
    handler = Recorder(httpx.ConnectError("connection refused"))
    with pytest.raises(ModelConnectionError, match=r"cannot reach .*connection refused"):
        await make_model(handler, max_retries=2).request(ask())
    assert len(handler.requests) == 3


async def test_a_connection_closed_under_the_request_is_retried_at_once() -> None:
    dropped = httpx.RemoteProtocolError("Server disconnected without sending a response.")
    handler = Recorder(dropped, httpx.Response(200, json=completion("ok")))
    sleep = FakeSleep()
    response = await make_model(handler, sleep=sleep).request(ask())
    assert response.text_content == "ok"
    assert sleep.delays == []  # the server never answered on that connection: no reason to wait
    assert len(handler.requests) == 2  # sent again once, on a fresh connection


async def test_read_timeout_is_a_timeout_error_and_not_retried() -> None:
    handler = Recorder(httpx.ReadTimeout("timed out"))
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 2\.5s"):
        await make_model(handler).request(ask(timeout=2.5))
    assert len(handler.requests) == 1


async def test_timeout_setting_reaches_httpx() -> None:
    handler = Recorder(httpx.Response(200, json=completion()))
    await make_model(handler, timeout=30).request(ask())
    await make_model(handler, timeout=30).request(ask(timeout=4))
    assert [r.extensions["timeout"]["read"] for r in handler.requests] == [30, 4]


async def test_401_is_an_authentication_error_and_not_retried() -> None:
    said = {"error": {"message": f"Incorrect API key provided: {SECRET}", "type": "invalid"}}
    handler = Recorder(httpx.Response(401, json=said))
    with pytest.raises(AuthenticationError) as caught:
        await make_model(handler).request(ask())
    assert len(handler.requests) == 1
    assert caught.value.status_code == 401
    assert "Incorrect API key provided: [REDACTED]" in str(caught.value)
    assert SECRET not in str(caught.value)


async def test_400_is_a_bad_request_with_the_servers_message() -> None:
    said = {"error": {"message": "'messages' must contain at least one message"}}
    handler = Recorder(httpx.Response(400, json=said))
    with pytest.raises(BadRequestError, match="'messages' must contain at least one message"):
        await make_model(handler).request(ask())
    assert len(handler.requests) == 1


async def test_invalid_json_body_is_a_malformed_response() -> None:
    handler = Recorder(httpx.Response(200, text="<html>Bad Gateway</html>"))
    with pytest.raises(MalformedResponseError, match=r"not a chat completion.*Bad Gateway"):
        await make_model(handler).request(ask())


@pytest.mark.parametrize(
    ("body", "message"),
    [
        ({"id": "x", "choices": []}, "no choices"),
        ({"choices": [{"message": {"content": 3}}]}, "not a chat completion"),
        ({"error": {"message": "overloaded"}}, "overloaded"),
        (
            {"choices": [{"message": {"tool_calls": [{"function": {"arguments": "{}"}}]}}]},
            "without a function name",
        ),
    ],
)
async def test_wrong_shapes_are_malformed_responses(body: dict[str, Any], message: str) -> None:
    with pytest.raises(MalformedResponseError, match=message):
        await make_model(Recorder(httpx.Response(200, json=body))).request(ask())


async def test_all_errors_are_model_errors() -> None:
    for error in (AuthenticationError, BadRequestError, RateLimitError, ServerError):
        assert issubclass(error, ModelError)
    for other in (MalformedResponseError, ModelTimeoutError, ModelConnectionError):
        assert issubclass(other, ModelError)


# --- secrets -------------------------------------------------------------------------------------


async def test_the_api_key_is_in_no_repr_error_or_log(caplog: pytest.LogCaptureFixture) -> None:
    echo = f"bad header Authorization: Bearer {SECRET}"
    handler = Recorder(
        httpx.Response(500, text=echo),
        httpx.ConnectError(f"refused, headers were Bearer {SECRET}"),
        httpx.Response(403, text=echo),
    )
    model = make_model(handler)
    caplog.set_level(logging.DEBUG)

    with pytest.raises(AuthenticationError) as caught:
        await model.request(ask())

    assert len(handler.requests) == 3
    texts = [repr(model), str(model.__dict__), str(caught.value), repr(caught.value), caplog.text]
    assert caplog.records  # the retries were logged
    for text in texts:
        assert SECRET not in text
    assert "Bearer [REDACTED]" in str(caught.value)
    assert caught.value.__cause__ is None
    assert caught.value.__context__ is None


async def test_connection_error_message_is_redacted_and_unchained() -> None:
    handler = Recorder(httpx.ConnectError(f"proxy said {SECRET}"))
    with pytest.raises(ModelConnectionError) as caught:
        await make_model(handler, max_retries=0).request(ask())
    assert SECRET not in str(caught.value)
    assert caught.value.__cause__ is None


# --- the client the model owns -------------------------------------------------------------------


def test_owned_clients_are_one_per_loop_and_closed_with_their_loop() -> None:
    opened: list[httpx.AsyncClient] = []

    def factory() -> httpx.AsyncClient:
        opened.append(httpx.AsyncClient())
        return opened[-1]

    clients = _ClientPerLoop(factory)

    async def twice() -> tuple[httpx.AsyncClient, httpx.AsyncClient]:
        return await clients.get(), await clients.get()

    a1, a2 = asyncio.run(twice())
    b1, _ = asyncio.run(twice())
    assert a1 is a2
    assert a1 is not b1
    assert [c.is_closed for c in opened] == [True, True]


async def test_models_without_a_client_share_the_loops_client() -> None:
    first = await _SHARED_CLIENTS.get()
    assert await _SHARED_CLIENTS.get() is first
    assert not first.is_closed


# --- recorded from a real llama-server -----------------------------------------------------------
# Written by tests/live/record_fixtures.py: llama-server's exact bytes, and what we made of them.

RECORDED_JSON = sorted(p.name for p in DATA.glob("llama_*.json") if "expected" not in p.name)
RECORDED_SSE = sorted(p.stem for p in DATA.glob("llama_*.sse"))


def dumped(response: ModelResponse) -> list[dict[str, Any]]:
    return [p.model_dump() for p in response.parts]


@pytest.mark.parametrize("name", RECORDED_JSON)
async def test_recorded_llama_server_completions(name: str) -> None:
    record = json.loads((DATA / name).read_text())
    expected = record["expected"]
    handler = Recorder(httpx.Response(200, json=record["response"]))
    response = await make_model(handler, model="gemma-3-270m").request(ask())
    assert dumped(response) == expected["parts"]
    assert response.finish_reason == expected["finish_reason"]
    assert response.usage.output_tokens == expected["output_tokens"]


@pytest.mark.parametrize("name", RECORDED_SSE)
async def test_recorded_llama_server_streams(name: str) -> None:
    expected = json.loads((DATA / f"{name}.expected.json").read_text())
    handler = Recorder(stream_response((DATA / f"{name}.sse").read_bytes()))
    pieces: list[str] = []
    request = ModelRequest(
        messages=[Message.user("Hi")], settings={"stream": True}, on_text_delta=pieces.append
    )
    response = await make_model(handler, model="gemma-3-270m").request(request)
    assert dumped(response) == expected["parts"]
    assert response.finish_reason == expected["finish_reason"]
    assert response.usage.output_tokens == expected["output_tokens"]
    assert "".join(pieces) == response.text_content
    assert response.time_to_first_token is not None


def test_the_recordings_hold_the_faults_they_are_for() -> None:
    """The malformed-call recordings really hold a valid call and a truncated one."""
    assert "llama_malformed_call.json" in RECORDED_JSON
    assert "llama_malformed_call_stream" in RECORDED_SSE
    for name in ("llama_malformed_call.json", "llama_malformed_call_stream.expected.json"):
        text = (DATA / name).read_text()
        parts = json.loads(text).get("expected", json.loads(text))["parts"]
        assert [p["invalid_arguments"] is None for p in parts] == [True, False]


@pytest.mark.parametrize("end", ["\n", "\r", "\r\n"])
def test_server_sent_events_read_alike_by_line_and_by_piece(end: str) -> None:
    """A stream reads alike however its text is cut into pieces, by the proxy or the client.

    However the text is cut into two pieces: mid-line, between the CR and LF of a line end.
    """
    from workbench.models._wire import SseReader, sse_events

    lines = (": a comment", 'data: {"a": 1}', "", "event: ping", "data: one", "data: two", "")
    text = end.join((*lines, "error: bad gateway", "", "", "data: [DONE]"))
    expected = [("message", '{"a": 1}'), ("ping", "one\ntwo"), ("error", "bad gateway")]
    expected.append(("message", "[DONE]"))  # the last event needs no blank line after it
    for cut in range(len(text) + 1):
        reader = SseReader()
        events = [*reader.feed(text[:cut]), *reader.feed(text[cut:]), *reader.close()]
        assert events == expected, cut
    whole = SseReader()
    assert [*whole.feed(text + end), *whole.close()] == expected  # a line end at the very end

    async def arriving() -> AsyncIterator[str]:  # as a client reads it: pieces of any size
        for start in range(0, len(text), 3):
            yield text[start : start + 3]

    async def read() -> list[tuple[str, str]]:
        return [event async for event in sse_events(arriving())]

    assert asyncio.run(read()) == expected
