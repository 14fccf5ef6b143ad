"""Fault table: the Anthropic Messages and Responses wires, over a socket, in a run.

Each test talks to `tests.faults.server.ModelServer` (a real HTTP server on 127.0.0.1 that
answers any path) speaking Anthropic's or the Responses API's shapes, and reads what the run, the
store and the spans say. What each client does with a fault is unit-tested against
``httpx.MockTransport`` in ``tests/test_anthropic_model.py`` and ``tests/test_responses_model.py``;
the Chat Completions wire's faults are in ``test_model_server.py`` and ``test_secrets.py``.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.faults.server import Answer, ModelServer, reply, serving, stream

pytestmark = pytest.mark.timeout(60)

KEY = "k9Vq2"  # short, no known shape: only the client knows it is a key


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def anthropic(server: ModelServer, **kwargs: Any) -> wb.Model:
    kwargs.setdefault("retry", wb.RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0))
    base = server.url.removesuffix("/v1")
    return wb.AnthropicModel("claude-sonnet-4-5", base_url=base, api_key=KEY, **kwargs)


def responses(server: ModelServer, **kwargs: Any) -> wb.Model:
    kwargs.setdefault("retry", wb.RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0))
    return wb.OpenAIResponsesModel("gpt-5-mini", base_url=server.url, api_key=KEY, **kwargs)


def run(model: wb.Model, *, stream_it: bool = False, **options: Any) -> wb.RunResult:
    agent = wb.Agent(model=model, tools=[add], stop=wb.MaxSteps(3), **options)
    return agent.run_sync("What is 1 + 2?", settings={"stream": stream_it})


def failed_with(result: wb.RunResult, kind: type[Exception]) -> str:
    assert result.status is wb.ExecutionStatus.FAILED, result.output
    error = result.state.error
    assert error is not None and error.type == kind.__name__, error
    return error.message


def events(*items: tuple[str, dict[str, Any]] | str) -> bytes:
    out = [i if isinstance(i, str) else f"event: {i[0]}\ndata: {json.dumps(i[1])}" for i in items]
    return "".join(f"{line}\n\n" for line in out).encode()


# --- Anthropic's shapes --------------------------------------------------------------------------


def message(*content: dict[str, Any], stop: str = "end_turn", usage: bool = True) -> dict[str, Any]:
    body: dict[str, Any] = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": list(content),
        "stop_reason": stop,
    }
    if usage:
        body["usage"] = {"input_tokens": 10, "output_tokens": 5, "cache_read_input_tokens": 2}
    return body


def overloaded(status: int = 529) -> Answer:
    error = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    return reply(status, error)


MESSAGE_START = ("message_start", {"type": "message_start", "message": message()})
TEXT_BLOCK = (
    "content_block_start",
    {"type": "content_block_start", "index": 0, "content_block": {"type": "text", "text": ""}},
)


def text_delta(text: str) -> tuple[str, dict[str, Any]]:
    piece = {"type": "text_delta", "text": text}
    return ("content_block_delta", {"type": "content_block_delta", "index": 0, "delta": piece})


def test_anthropic_529_overloaded_is_retried(server: ModelServer) -> None:
    server.answer(overloaded(), reply(200, message({"type": "text", "text": "3"})))
    assert run(anthropic(server)).output == "3" and len(server.requests) == 2


def test_anthropic_529_past_the_retries_fails_the_run_as_a_server_error(
    server: ModelServer,
) -> None:
    server.answer(overloaded())
    message_ = failed_with(run(anthropic(server)), wb.ServerError)
    assert "529" in message_ and "Overloaded" in message_ and len(server.requests) == 2


def test_anthropic_error_event_mid_stream_fails_the_run_and_is_not_retried(
    server: ModelServer,
) -> None:
    overload = {"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}
    body = events(MESSAGE_START, TEXT_BLOCK, text_delta("Hel"), ("error", overload))
    server.answer(stream(body))
    before = len(server.requests)
    message_ = failed_with(run(anthropic(server), stream_it=True), wb.ServerError)
    assert "overloaded_error: Overloaded" in message_
    assert len(server.requests) == before + 1


@pytest.mark.parametrize(
    ("body", "said"),
    [
        (events(MESSAGE_START, TEXT_BLOCK, text_delta("Hel")), "ended early"),  # truncated
        (events(MESSAGE_START, "data: {half an event"), "not an Anthropic event"),  # malformed
    ],
    ids=["truncated", "malformed-sse"],
)
def test_anthropic_broken_streams_fail_the_run(server: ModelServer, body: bytes, said: str) -> None:
    server.answer(stream(body))
    assert said in failed_with(run(anthropic(server), stream_it=True), wb.MalformedResponseError)


def test_anthropic_a_signature_the_server_rejects_fails_the_run_with_its_words(
    server: ModelServer,
) -> None:
    said = "messages.1.content.0: Invalid `signature` in `thinking` block"
    thinking = {"type": "thinking", "thinking": "Add them.", "signature": "forged"}
    call = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}}
    rejected = {"type": "error", "error": {"type": "invalid_request_error", "message": said}}
    server.answer(reply(200, message(thinking, call, stop="tool_use")), reply(400, rejected))
    result = run(anthropic(server))
    assert "Invalid `signature`" in failed_with(result, wb.BadRequestError)
    # the thinking went back as it came, before the call, in the request the server refused
    sent = server.requests[1].body["messages"][1]["content"]
    assert sent[0] == thinking and sent[1]["type"] == "tool_use"


def test_anthropic_tool_input_that_is_not_an_object_gets_a_retry_prompt(
    server: ModelServer,
) -> None:
    bad = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": "1, 2"}
    server.answer(
        reply(200, message(bad, stop="tool_use")),
        reply(200, message({"type": "text", "text": "3"})),
    )
    result = run(anthropic(server))
    assert result.output == "3"
    assert [o.status for o in result.steps[0].tool_outcomes] == ["retry"]
    # the retry went back as an is_error tool_result, with the call as an empty object
    turns = server.requests[1].body["messages"]
    assert turns[1]["content"][0]["input"] == {}
    assert turns[2]["content"][0]["is_error"] is True


def test_anthropic_missing_usage_is_an_unknown_cost(server: ModelServer) -> None:
    server.answer(reply(200, message({"type": "text", "text": "3"}, usage=False)))
    result = run(anthropic(server))
    assert result.output == "3" and result.usage.cost is None and result.usage.requests == 1


# --- the Responses API's shapes ------------------------------------------------------------------


def response(*output: dict[str, Any], usage: bool = True, **extra: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "resp_1", "status": "completed", "output": list(output), **extra}
    if usage:
        body["usage"] = {"input_tokens": 10, "output_tokens": 5}
    return body


def said(text: str) -> dict[str, Any]:
    return {
        "type": "message",
        "role": "assistant",
        "content": [{"type": "output_text", "text": text}],
    }


CREATED = {"type": "response.created", "response": {"id": "resp_1", "status": "in_progress"}}


def sse(*items: dict[str, Any] | str) -> bytes:
    return events(*[i if isinstance(i, str) else (str(i["type"]), i) for i in items])


BUSY = reply(503, {"error": {"message": "busy", "type": "server_error"}})


def test_responses_5xx_is_retried(server: ModelServer) -> None:
    server.answer(BUSY, reply(200, response(said("3"))))
    assert run(responses(server)).output == "3" and len(server.requests) == 2


def test_responses_5xx_past_the_retries_fails_the_run_as_a_server_error(
    server: ModelServer,
) -> None:
    server.answer(BUSY)
    assert "busy" in failed_with(run(responses(server)), wb.ServerError)


def test_responses_error_event_mid_stream_fails_the_run(server: ModelServer) -> None:
    body = sse(
        CREATED,
        {"type": "response.output_text.delta", "delta": "Hel"},
        {"type": "error", "code": "server_error", "message": "the model crashed"},
    )
    server.answer(stream(body))
    message_ = failed_with(run(responses(server), stream_it=True), wb.ServerError)
    assert "server_error: the model crashed" in message_


@pytest.mark.parametrize(
    ("body", "said_"),
    [
        (sse(CREATED, {"type": "response.output_text.delta", "delta": "Hel"}), "ended early"),
        (sse(CREATED, "data: {half an event"), "not a Responses API event"),
    ],
    ids=["truncated", "malformed-sse"],
)
def test_responses_broken_streams_fail_the_run(
    server: ModelServer, body: bytes, said_: str
) -> None:
    server.answer(stream(body))
    assert said_ in failed_with(run(responses(server), stream_it=True), wb.MalformedResponseError)


def test_responses_reasoning_the_server_rejects_fails_the_run_with_its_words(
    server: ModelServer,
) -> None:
    reasoning = {"type": "reasoning", "id": "rs_1", "summary": [], "encrypted_content": "gAAAA"}
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "add",
        "arguments": '{"a": 1, "b": 2}',
    }
    said_ = "The encrypted content for item rs_1 could not be verified."
    server.answer(reply(200, response(reasoning, call)), reply(400, {"error": {"message": said_}}))
    assert "could not be verified" in failed_with(run(responses(server)), wb.BadRequestError)
    sent = server.requests[1].body
    assert sent["store"] is False and sent["input"][1] == reasoning  # back as it came


def test_responses_arguments_that_are_not_json_get_a_retry_prompt(server: ModelServer) -> None:
    call = {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 1,'}
    server.answer(reply(200, response(call)), reply(200, response(said("3"))))
    result = run(responses(server))
    assert result.output == "3"
    assert [o.status for o in result.steps[0].tool_outcomes] == ["retry"]
    items = server.requests[1].body["input"]
    assert items[1]["arguments"] == "{}" and items[2]["type"] == "function_call_output"


def test_responses_missing_usage_is_an_unknown_cost(server: ModelServer) -> None:
    server.answer(reply(200, response(said("3"), usage=False)))
    result = run(responses(server))
    assert result.output == "3" and result.usage.cost is None


# --- their keys ----------------------------------------------------------------------------------

ECHOES = {
    "anthropic 401": (
        anthropic,
        reply(401, {"type": "error", "error": {"message": f"bad {KEY}"}}),
        False,
    ),
    "anthropic error event": (
        anthropic,
        stream(events(MESSAGE_START, ("error", {"type": "error", "error": {"message": KEY}}))),
        True,
    ),
    "responses 401": (responses, reply(401, {"error": {"message": f"Incorrect key {KEY}"}}), False),
    "responses failed event": (
        responses,
        stream(sse(CREATED, {"type": "response.failed", "response": {"error": {"message": KEY}}})),
        True,
    ),
}


@pytest.mark.parametrize(("make", "answer", "streamed"), ECHOES.values(), ids=ECHOES.keys())
def test_an_echoed_key_leaves_by_no_path(
    server: ModelServer, tmp_path: Path, make: Any, answer: Answer, streamed: bool
) -> None:
    server.answer(answer)
    model = make(server, max_retries=0)
    telemetry = wb.Telemetry(capture_content=True)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    result = run(model, stream_it=streamed, telemetry=telemetry, store=store)
    store.close()
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.state.error is not None and "[REDACTED]" in result.state.error.message
    sent = server.requests[-1].headers
    assert KEY in (sent.get("x-api-key", "") + sent.get("Authorization", ""))  # it was used
    paths = {
        "the run's error": result.state.error.message,
        "the result's repr": repr(result),
        "the model's repr": repr(model),
        "spans": "\n".join(span.to_json() for span in telemetry.spans),
        "the store": b"".join(p.read_bytes() for p in tmp_path.iterdir()).decode(
            "utf-8", "replace"
        ),
    }
    leaked = [where for where, text in paths.items() if KEY in text]
    assert not leaked, f"the key leaked into {leaked}"
