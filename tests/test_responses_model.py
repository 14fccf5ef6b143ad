"""OpenAIResponsesModel against httpx.MockTransport: the Responses wire both ways, streams, faults.

The shared HTTP side (backoff, timeouts, the client per loop) is tested once, through
`OpenAIModel`, in ``tests/test_openai_model.py``; here is what is the Responses API's own. The
same faults over a real socket, in a run, are in ``tests/faults/test_model_wires.py``.
"""

from __future__ import annotations

import json
from typing import Any

import httpx
import pytest

import workbench as wb
from tests.live.fewshot import ADD
from tests.test_openai_model import FakeSleep, Recorder
from workbench.models import (
    BadRequestError,
    MalformedResponseError,
    ModelRequest,
    OpenAIResponsesModel,
    RateLimitError,
    ServerError,
)

SECRET = "sk-test-responses-0123456789SECRET"
BASE = "http://responses.test/v1"
ENCRYPTED = "gAAAAABo" + "e" * 40


def make_model(
    handler: Recorder, *, model: str = "gpt-5-mini", **kwargs: Any
) -> OpenAIResponsesModel:
    client = httpx.AsyncClient(transport=httpx.MockTransport(handler))
    kwargs.setdefault("sleep", FakeSleep())
    return OpenAIResponsesModel(model, base_url=BASE, api_key=SECRET, http_client=client, **kwargs)


def response(*output: dict[str, Any], status: str = "completed", **extra: Any) -> dict[str, Any]:
    return {
        "id": "resp_1",
        "object": "response",
        "model": "gpt-5-mini-2025-08-07",
        "status": status,
        "output": list(output),
        "usage": {
            "input_tokens": 1000,
            "input_tokens_details": {"cached_tokens": 400},
            "output_tokens": 300,
            "output_tokens_details": {"reasoning_tokens": 250},
            "total_tokens": 1300,
        },
        **extra,
    }


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": text, "annotations": []}],
    }


def call(call_id: str, arguments: str, name: str = "add") -> dict[str, Any]:
    return {
        "type": "function_call",
        "id": f"fc_{call_id}",
        "call_id": call_id,
        "name": name,
        "arguments": arguments,
    }


def reasoning(summary: str, encrypted: str | None = ENCRYPTED) -> dict[str, Any]:
    return {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": summary}],
        "encrypted_content": encrypted,
    }


def ok(body: dict[str, Any]) -> httpx.Response:
    return httpx.Response(200, json=body)


def ask(*messages: wb.Message, **settings: Any) -> ModelRequest:
    return ModelRequest(
        messages=messages or (wb.Message.user("What is 17 + 25?"),),
        tools=(ADD,),
        settings=settings,  # type: ignore[arg-type]
    )


CONVERSATION = (
    wb.Message.system("You add numbers."),
    wb.Message.user("What is 17 + 25 and 1 + 2?"),
    wb.Message(
        role="assistant",
        parts=(
            wb.ThinkingPart(text="Two sums.", signature=ENCRYPTED, provider="openai", id="rs_1"),
            wb.ThinkingPart(text="theirs", signature="EqQB", provider="anthropic"),
            wb.TextPart(text="Adding."),
            wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="call_1"),
            wb.ToolCall(name="add", call_id="call_2", invalid_arguments='{"a": 1,'),
        ),
    ),
    wb.Message(
        role="tool",
        parts=(
            wb.ToolResult(call_id="call_1", name="add", content="42"),
            wb.RetryPrompt(content="bad JSON", call_id="call_2", name="add"),
        ),
    ),
    wb.Message(role="user", parts=(wb.RetryPrompt(content="Answer in words."),)),
)


async def test_the_body_is_stateless_items_in_order() -> None:
    recorder = Recorder(ok(response(said("ok"))))
    await make_model(recorder).request(ask(*CONVERSATION, temperature=0, max_tokens=64))
    body = recorder.body()
    assert str(recorder.requests[0].url) == f"{BASE}/responses"
    assert recorder.requests[0].headers["authorization"] == f"Bearer {SECRET}"
    assert body["store"] is False and "previous_response_id" not in body
    assert body["include"] == ["reasoning.encrypted_content"]
    assert (body["temperature"], body["max_output_tokens"]) == (0, 64)
    assert body["tools"] == [
        {
            "type": "function",
            "name": "add",
            "description": ADD.description,
            "parameters": ADD.parameters,
            "strict": False,
        }
    ]
    assert body["input"] == [
        {"type": "message", "role": "system", "content": "You add numbers."},
        {"type": "message", "role": "user", "content": "What is 17 + 25 and 1 + 2?"},
        {
            "type": "reasoning",
            "id": "rs_1",
            "summary": [{"type": "summary_text", "text": "Two sums."}],
            "encrypted_content": ENCRYPTED,
        },  # anthropic's thinking is left out
        {"type": "message", "role": "assistant", "content": "Adding."},
        {
            "type": "function_call",
            "call_id": "call_1",
            "name": "add",
            "arguments": '{"a": 17, "b": 25}',
        },
        {"type": "function_call", "call_id": "call_2", "name": "add", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "call_1", "output": "42"},
        {
            "type": "function_call_output",
            "call_id": "call_2",
            "output": "bad JSON\n\nFix the errors and try again.",
        },
        {
            "type": "message",
            "role": "user",
            "content": "Answer in words.\n\nFix the errors and try again.",
        },
    ]


@pytest.mark.parametrize(
    ("ours", "theirs"),
    [
        ("auto", "auto"),
        ("required", "required"),
        ("add", {"type": "function", "name": "add"}),
    ],
)
async def test_tool_choice(ours: Any, theirs: Any) -> None:
    recorder = Recorder(ok(response(said("ok"))))
    await make_model(recorder).request(ask(tool_choice=ours))
    assert recorder.body()["tool_choice"] == theirs


async def test_reasoning_effort_and_what_the_wire_has_no_place_for() -> None:
    recorder = Recorder(ok(response(said("ok"))))
    await make_model(recorder).request(
        ask(reasoning_effort="low", seed=1, stop=["\n"], extra_body={"include": [], "top_k": 3})
    )
    body = recorder.body()
    assert body["reasoning"] == {"effort": "low", "summary": "auto"}
    assert "seed" not in body and "stop" not in body  # the Responses API has neither
    assert body["include"] == [] and body["top_k"] == 3  # extra_body is merged last


async def test_an_answer_with_reasoning_parallel_calls_and_usage() -> None:
    answer = response(
        reasoning("Both at once."),
        call("call_1", '{"a": 17, "b": 25}'),
        call("call_2", '{"a": 1, "b": 2}'),
        {"type": "web_search_call", "id": "ws_1", "status": "completed"},
    )
    result = await make_model(Recorder(ok(answer))).request(ask())
    assert result.parts == (
        wb.ThinkingPart(text="Both at once.", signature=ENCRYPTED, provider="openai", id="rs_1"),
        wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="call_1"),
        wb.ToolCall(name="add", arguments={"a": 1, "b": 2}, call_id="call_2"),
    )
    assert result.finish_reason is wb.FinishReason.TOOL_CALLS
    assert (result.model_name, result.response_id) == ("gpt-5-mini-2025-08-07", "resp_1")
    usage = result.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.reasoning_tokens) == (1000, 400, 250)
    # $0.25 input, $0.025 cached input, $2 output, per million
    assert usage.cost == pytest.approx((600 * 0.25 + 400 * 0.025 + 300 * 2.0) / 1e6)


async def test_the_reasoning_goes_back_as_it_came_on_the_next_call() -> None:
    first_answer = response(reasoning("Call it."), call("call_9", '{"a": 2, "b": 3}'))
    recorder = Recorder(ok(first_answer), ok(response(said("5"))))
    model = make_model(recorder)
    first = await model.request(ask(wb.Message.user("2 + 3?")))
    follow = (
        wb.Message.user("2 + 3?"),
        first.to_message(),
        wb.Message.tool_result("call_9", "5", name="add"),
    )
    await model.request(ask(*follow))
    sent = recorder.body(1)["input"]
    assert sent[1] == {k: v for k, v in reasoning("Call it.").items()}
    assert sent[2]["call_id"] == "call_9" and "id" not in sent[2]


async def test_an_open_models_readable_reasoning_goes_back_as_content() -> None:
    """llama.cpp sends reasoning as ``content`` with an empty ``encrypted_content``."""
    open_reasoning = {
        "type": "reasoning",
        "id": "rs_x",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "Let me add."}],
        "encrypted_content": "",
    }
    recorder = Recorder(ok(response(open_reasoning, said("5"))), ok(response(said("ok"))))
    model = make_model(recorder)
    first = await model.request(ask())
    assert first.parts[0] == wb.ThinkingPart(
        text="Let me add.", signature="", provider="openai", id="rs_x"
    )
    await model.request(ask(wb.Message.user("q"), first.to_message(), wb.Message.user("more")))
    assert recorder.body(1)["input"][1] == {
        "type": "reasoning",
        "id": "rs_x",
        "summary": [],
        "content": [{"type": "reasoning_text", "text": "Let me add."}],
    }


@pytest.mark.parametrize(
    ("status", "reason", "ours"),
    [
        ("completed", None, wb.FinishReason.STOP),
        ("incomplete", "max_output_tokens", wb.FinishReason.LENGTH),
        ("incomplete", "content_filter", wb.FinishReason.CONTENT_FILTER),
        ("incomplete", "other", wb.FinishReason.UNKNOWN),
    ],
)
async def test_statuses_are_finish_reasons(status: str, reason: str | None, ours: Any) -> None:
    details = {"incomplete_details": {"reason": reason}} if reason else {}
    answer = response(said("x"), status=status, **details)
    assert (await make_model(Recorder(ok(answer))).request(ask())).finish_reason is ours


async def test_arguments_that_are_not_json_are_kept_for_a_retry() -> None:
    answer = response(call("call_1", '{"a": 1, "b":'))
    (bad,) = (await make_model(Recorder(ok(answer))).request(ask())).calls
    assert bad.invalid_arguments == '{"a": 1, "b":' and bad.arguments == {}


async def test_missing_usage_is_an_unknown_cost() -> None:
    answer = response(said("hi"))
    del answer["usage"]
    result = await make_model(Recorder(ok(answer))).request(ask())
    assert result.usage.cost is None and result.usage.requests == 1


# --- streams -------------------------------------------------------------------------------------


def events(*items: dict[str, Any] | str) -> bytes:
    out = []
    for item in items:
        if isinstance(item, str):
            out.append(item)
        else:
            out.append(f"event: {item['type']}\ndata: {json.dumps(item)}")
    return "".join(f"{e}\n\n" for e in out).encode()


def stream(body: bytes) -> httpx.Response:
    return httpx.Response(200, content=body, headers={"content-type": "text/event-stream"})


CREATED = {"type": "response.created", "response": {"id": "resp_s", "status": "in_progress"}}


def completed(*output: dict[str, Any]) -> dict[str, Any]:
    return {"type": "response.completed", "response": response(*output)}


async def test_a_stream_is_folded_into_one_answer() -> None:
    body = events(
        CREATED,
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning("")},
        {"type": "response.reasoning_summary_text.delta", "delta": "Thinking"},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning("Thinking")},
        {"type": "response.output_text.delta", "delta": "17 + 25"},
        {"type": "response.output_text.delta", "delta": " = 42"},
        {"type": "response.output_item.done", "output_index": 1, "item": said("17 + 25 = 42")},
        completed(reasoning("Thinking"), said("17 + 25 = 42")),
    )
    pieces: list[str] = []
    request = ask(stream=True).model_copy(update={"on_text_delta": pieces.append})
    recorder = Recorder(stream(body))
    result = await make_model(recorder).request(request)
    assert recorder.body()["stream"] is True
    assert pieces == ["17 + 25", " = 42"]
    assert result.parts == (
        wb.ThinkingPart(text="Thinking", signature=ENCRYPTED, provider="openai", id="rs_1"),
        wb.TextPart(text="17 + 25 = 42"),
    )
    assert result.usage.input_tokens == 1000 and result.response_id == "resp_1"
    assert result.time_to_first_token is not None


async def test_a_stream_whose_end_has_no_output_takes_the_items_as_they_came() -> None:
    finished = {"type": "response.completed", "response": {**response(), "output": []}}
    body = events(
        CREATED,
        {"type": "response.function_call_arguments.delta", "delta": '{"a": 1'},
        {"type": "response.output_item.done", "item": call("call_1", '{"a": 1, "b": 2}')},
        finished,
    )
    result = await make_model(Recorder(stream(body))).request(ask(stream=True))
    assert result.calls[0].arguments == {"a": 1, "b": 2}
    assert result.finish_reason is wb.FinishReason.TOOL_CALLS


async def test_an_error_event_mid_stream_is_a_typed_error_and_not_retried() -> None:
    body = events(
        CREATED,
        {"type": "response.output_text.delta", "delta": "Hel"},
        {"type": "error", "code": "rate_limit_exceeded", "message": "Slow down"},
    )
    recorder = Recorder(stream(body))
    with pytest.raises(RateLimitError, match="rate_limit_exceeded: Slow down"):
        await make_model(recorder).request(ask(stream=True))
    assert len(recorder.requests) == 1


async def test_a_failed_response_is_a_typed_error() -> None:
    failed = {
        "type": "response.failed",
        "response": {
            **response(status="failed"),
            "error": {"code": "server_error", "message": "oops"},
        },
    }
    with pytest.raises(ServerError, match="server_error: oops"):
        await make_model(Recorder(stream(events(CREATED, failed)))).request(ask(stream=True))
    whole = response(status="failed", error={"code": "server_error", "message": "down"})
    with pytest.raises(ServerError, match="down"):
        await make_model(Recorder(ok(whole)), max_retries=0).request(ask())


@pytest.mark.parametrize(
    ("body", "match"),
    [
        (events(CREATED, {"type": "response.output_text.delta", "delta": "Hi"}), "ended early"),
        (events(CREATED, "data: {not json"), "not a Responses API event"),
        (events(CREATED, completed(call("c", "{}", name=""))), "without a name"),
    ],
    ids=["truncated", "malformed-sse", "nameless-call"],
)
async def test_broken_streams_are_malformed_responses(body: bytes, match: str) -> None:
    with pytest.raises(MalformedResponseError, match=match):
        await make_model(Recorder(stream(body))).request(ask(stream=True))


async def test_an_error_event_that_is_not_json_is_still_an_error() -> None:
    body = events(CREATED, "event: error\ndata: upstream went away")
    with pytest.raises(ServerError, match="upstream went away"):
        await make_model(Recorder(stream(body))).request(ask(stream=True))


# --- errors --------------------------------------------------------------------------------------


async def test_a_reasoning_item_the_server_rejects_is_a_bad_request_with_its_words() -> None:
    said_by_server = "Item with id 'rs_1' not found. Items are not persisted when store is false."
    rejected = httpx.Response(400, json={"error": {"message": said_by_server, "code": None}})
    recorder = Recorder(rejected)
    with pytest.raises(BadRequestError, match="not persisted"):
        await make_model(recorder).request(ask(*CONVERSATION))
    assert len(recorder.requests) == 1


async def test_429_is_retried_honouring_retry_after_ms() -> None:
    sleep = FakeSleep()
    limited = httpx.Response(
        429, json={"error": {"message": "slow"}}, headers={"retry-after-ms": "250"}
    )
    recorder = Recorder(limited, ok(response(said("fine"))))
    result = await make_model(recorder, sleep=sleep).request(ask())
    assert result.text_content == "fine" and sleep.delays == [0.25]


@pytest.mark.parametrize(
    "body", [b"<html>", b'{"output": "nope"}', b'{"output": [{"no": "type"}]}']
)
async def test_what_is_not_a_response_is_a_malformed_response(body: bytes) -> None:
    answer = httpx.Response(200, content=body, headers={"content-type": "application/json"})
    with pytest.raises(MalformedResponseError):
        await make_model(Recorder(answer)).request(ask())


async def test_the_key_never_leaves() -> None:
    echoed = httpx.Response(401, json={"error": {"message": f"Incorrect API key {SECRET}"}})
    with pytest.raises(wb.AuthenticationError) as caught:
        await make_model(Recorder(echoed)).request(ask())
    assert SECRET not in str(caught.value)
    body = events(CREATED, {"type": "error", "code": "x", "message": f"key {SECRET}"})
    with pytest.raises(ServerError) as streamed:
        await make_model(Recorder(stream(body))).request(ask(stream=True))
    assert SECRET not in str(streamed.value)
    assert SECRET not in repr(make_model(Recorder(ok(response()))))
