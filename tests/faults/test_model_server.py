"""Fault table: a model server that errs, hangs, drips, truncates or lies.

Every test talks to `tests.faults.server.ModelServer`, a real HTTP server on 127.0.0.1 speaking
the Chat Completions protocol, told per test how to misbehave. What the client does with each
fault is unit-tested against ``httpx.MockTransport`` in ``tests/test_openai_model.py``; here the
whole run meets the fault over a socket, and the test reads what the run, the store and the
spans say. Secrets in these answers are in ``tests/faults/test_secrets.py``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
from typing import Any

import pytest

import workbench as wb
from tests.faults.server import (
    ModelServer,
    chunk,
    completion,
    drip,
    drop,
    false_gzip,
    hang,
    headers_then_drop,
    reply,
    serving,
    sse,
    stream,
    tool_call,
)

pytestmark = pytest.mark.timeout(60)  # a fault that hangs the run fails its test, not the suite


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


def model(server: ModelServer, **kwargs: Any) -> wb.OpenAIModel:
    kwargs.setdefault("retry", wb.RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0))
    return wb.OpenAIModel("fault-model", base_url=server.url, api_key="k", **kwargs)


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def run(server: ModelServer, prompt: str = "hi", **kwargs: Any) -> wb.RunResult:
    settings = kwargs.pop("settings", None)
    agent = wb.Agent(model=model(server, **kwargs), tools=[add], stop=wb.MaxSteps(4))
    return agent.run_sync(prompt, settings=settings)


def failed_with(result: wb.RunResult, kind: type[Exception]) -> str:
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.stop_reason is wb.StopReason.ERROR
    error = result.state.error
    assert error is not None
    assert error.type == kind.__name__, error
    return error.message


# --- errors --------------------------------------------------------------------------------------


def test_a_5xx_is_retried_then_the_run_goes_on(server: ModelServer) -> None:
    server.answer(reply(503, {"error": {"message": "busy"}}), reply(200, completion("fine")))
    result = run(server)
    assert result.output == "fine"
    assert len(server.requests) == 2


def test_5xx_past_the_retries_fails_the_run_with_the_servers_words(server: ModelServer) -> None:
    server.answer(reply(502, "<html><h1>502 Bad Gateway</h1></html>"))
    message = failed_with(run(server), wb.ServerError)
    assert "502" in message and "Bad Gateway" in message
    assert len(server.requests) == 2  # the first try and one retry


def test_an_error_object_inside_a_200_fails_the_run(server: ModelServer) -> None:
    server.answer(reply(200, {"error": {"message": "model not loaded"}}))
    assert "model not loaded" in failed_with(run(server), wb.MalformedResponseError)


def test_a_dropped_connection_is_retried(server: ModelServer) -> None:
    server.answer(drop(), reply(200, completion("after the drop")))
    assert run(server).output == "after the drop"


def test_a_connection_closed_before_any_answer_is_sent_again_once_even_with_no_retries(
    server: ModelServer,
) -> None:
    """What llama-server does to a kept-alive connection: with ``max_retries=0`` the run fails
    only when the fresh connection is closed too, and then as a connection error."""
    no_retries = wb.RetryPolicy(max_retries=0)
    server.answer(drop(), drop(), drop(), reply(200, completion("on a fresh connection")))
    message = failed_with(run(server, retry=no_retries), wb.ModelConnectionError)
    assert "cannot reach" in message and len(server.requests) == 2
    assert run(server, retry=no_retries).output == "on a fresh connection"
    assert len(server.requests) == 4


# --- hangs and drips -----------------------------------------------------------------------------


def test_a_server_that_never_answers_is_a_timeout(server: ModelServer) -> None:
    server.answer(hang())
    started = time.monotonic()
    message = failed_with(run(server, timeout=0.5), wb.ModelTimeoutError)
    assert "did not answer within 0.5s" in message
    assert time.monotonic() - started < 10  # bounded; a read timeout is not retried
    assert len(server.requests) == 1


def test_a_dripping_stream_is_bounded_by_the_timeout(server: ModelServer) -> None:
    """Issue 15 #3: one byte every 0.2 s kept ``timeout=1`` waiting for as long as it liked."""
    body = sse(*[chunk("word ") for _ in range(50)], chunk(finish="stop"), "data: [DONE]")
    server.answer(stream(body, every=0.2, piece=1))
    started = time.monotonic()
    result = run(server, timeout=1.0, settings={"stream": True})
    took = time.monotonic() - started
    message = failed_with(result, wb.ModelTimeoutError)
    assert "1s" in message
    assert took < 5, f"the whole request took {took:.1f}s with timeout=1"


def test_a_dripping_complete_body_is_bounded_by_the_timeout(server: ModelServer) -> None:
    payload = json.dumps(completion("slowly")).encode()
    server.answer(drip(payload))
    started = time.monotonic()
    failed_with(run(server, timeout=1.0), wb.ModelTimeoutError)
    assert time.monotonic() - started < 5


def test_a_slow_but_steady_stream_within_the_timeout_completes(server: ModelServer) -> None:
    body = sse(chunk("one "), chunk("two"), chunk(finish="stop"), "data: [DONE]")
    server.answer(stream(body, every=0.05, piece=len(body) // 3 + 1))
    assert run(server, timeout=5.0, settings={"stream": True}).output == "one two"


# --- truncation ----------------------------------------------------------------------------------


def test_a_body_cut_short_of_its_length_fails_the_run(server: ModelServer) -> None:
    payload = json.dumps(completion("cut")).encode()
    server.answer(headers_then_drop(len(payload), payload[:20]))
    result = run(server)
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.state.error is not None
    assert result.state.error.type in {"ModelConnectionError", "MalformedResponseError"}


def test_a_stream_that_ends_without_done_or_finish_fails_the_run(server: ModelServer) -> None:
    server.answer(stream(sse(chunk("half an ans"))))
    message = failed_with(run(server, settings={"stream": True}), wb.MalformedResponseError)
    assert "ended early" in message


def test_a_stream_cut_inside_an_event_fails_the_run(server: ModelServer) -> None:
    server.answer(stream(sse(chunk("one")) + b'data: {"id": "chatcmpl-s", "choi'))
    failed_with(run(server, settings={"stream": True}), wb.MalformedResponseError)


# --- lies about shapes and ids -------------------------------------------------------------------


@pytest.mark.parametrize(
    ("body", "says"),
    [
        ({"id": "x", "choices": []}, "no choices"),
        ({"id": "x"}, "no choices"),
        ({"choices": [{"message": {"content": ["not", "text"]}}]}, "not a chat completion"),
        ({"choices": "all of them"}, "not a chat completion"),
        ([1, 2, 3], "not a chat completion"),
    ],
)
def test_a_200_of_the_wrong_shape_fails_the_run(server: ModelServer, body: Any, says: str) -> None:
    server.answer(reply(200, json.dumps(body), "application/json"))
    assert says in failed_with(run(server), wb.MalformedResponseError)


def test_a_body_that_lies_about_its_encoding_fails_the_run_with_a_model_error(
    server: ModelServer,
) -> None:
    server.answer(false_gzip())
    assert "could not be decoded" in failed_with(run(server), wb.MalformedResponseError)


def test_a_200_html_page_fails_the_run(server: ModelServer) -> None:
    server.answer(reply(200, "<html>captive portal</html>"))
    assert "captive portal" in failed_with(run(server), wb.MalformedResponseError)


def test_a_tool_call_without_an_id_still_gets_its_answer(server: ModelServer) -> None:
    call = tool_call("add", '{"a": 1, "b": 2}', call_id=None)
    server.answer(reply(200, completion(None, tool_calls=[call])), reply(200, completion("3")))
    result = run(server)
    assert result.output == "3"
    sent = server.requests[1].body["messages"]
    assistant, answer = sent[-2], sent[-1]
    assert answer["role"] == "tool" and answer["content"] == "3"
    assert answer["tool_call_id"] == assistant["tool_calls"][0]["id"]  # an id was made up


def test_a_tool_call_with_broken_json_arguments_gets_a_retry_prompt(server: ModelServer) -> None:
    call = tool_call("add", '{"a": 1, "b": ')
    server.answer(reply(200, completion(None, tool_calls=[call])), reply(200, completion("ok")))
    result = run(server)
    assert result.output == "ok"
    retry = server.requests[1].body["messages"][-1]
    assert retry["role"] == "tool" and "Fix the errors" in retry["content"]


def test_a_tool_call_to_a_tool_that_does_not_exist_gets_a_retry_prompt(
    server: ModelServer,
) -> None:
    call = tool_call("rm_rf", "{}")
    server.answer(reply(200, completion(None, tool_calls=[call])), reply(200, completion("ok")))
    assert run(server).output == "ok"
    assert "Unknown tool 'rm_rf'" in server.requests[1].body["messages"][-1]["content"]


def test_a_tool_call_without_a_name_fails_the_run(server: ModelServer) -> None:
    nameless = {"id": "c1", "type": "function", "function": {"arguments": "{}"}}
    server.answer(reply(200, completion(None, tool_calls=[nameless])))
    assert "without a function name" in failed_with(run(server), wb.MalformedResponseError)


def test_an_unknown_finish_reason_and_missing_usage_are_kept_as_unknown(
    server: ModelServer,
) -> None:
    body = completion("odd")
    body["choices"][0]["finish_reason"] = "eaten_by_a_grue"
    del body["usage"]
    server.answer(reply(200, body))
    result = run(server)
    assert result.output == "odd"
    assert result.steps[0].response is not None
    assert result.steps[0].response.finish_reason is wb.FinishReason.UNKNOWN
    assert result.usage.cost is None


def test_negative_usage_cannot_lift_a_token_budget(server: ModelServer) -> None:
    """A server that reports negative tokens would have the run's totals go down."""
    lying = completion(None, tool_calls=[tool_call("add", '{"a": 1, "b": 2}')])
    lying["usage"] = {"prompt_tokens": -1_000_000, "completion_tokens": -5}
    server.answer(reply(200, completion(None, tool_calls=[tool_call("add", '{"a": 1, "b": 2}')])))
    server.answer(reply(200, lying), reply(200, completion("done")))
    agent = wb.Agent(model=model(server), tools=[add], stop=wb.MaxTokens(25))
    result = agent.run_sync("hi")
    assert result.usage.input_tokens >= 0 and result.usage.output_tokens >= 0
    assert result.stop_reason is wb.StopReason.TOKEN_LIMIT  # 15 + 0 + 15 > 25
