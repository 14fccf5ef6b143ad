"""Fault table: the Chat Completions faults of the transport, asked again of the newer wires.

`test_model_server.py` puts the Chat Completions client through a server that hangs, drips,
cuts its body short, lies about shapes and encodings, names tools that do not exist and reports
negative usage; `test_secrets.py` quotes the key past the 500-character cut. The Anthropic
Messages and Responses clients share that transport (`models._http`) but read their own bodies,
streams, tool calls and usage, so each of those faults is asked here of both, over a socket, in a
run. What only one of the two wires has (529, error events, signatures, reasoning items, their
echoed keys) is in `test_model_wires.py`.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import Any

import pytest

import workbench as wb
from tests.faults.server import (
    ModelServer,
    drip,
    false_gzip,
    hang,
    headers_then_drop,
    reply,
    serving,
    stream,
)
from tests.faults.test_model_wires import (
    CREATED,
    MESSAGE_START,
    TEXT_BLOCK,
    add,
    events,
    failed_with,
    message,
    response,
    said,
    sse,
    text_delta,
)
from workbench.models import ModelRequest

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


@dataclass(frozen=True)
class Wire:
    """How one wire's client is made and what its server says."""

    make: Callable[..., wb.Model]
    text: Callable[[str], dict[str, Any]]
    call: Callable[[str, dict[str, Any]], dict[str, Any]]
    drip: bytes
    """A valid stream of many small events: dripped, it would take far longer than the timeout."""
    usage: dict[str, int]
    """Usage as the wire reports it, negative."""

    def with_usage(self, body: dict[str, Any]) -> dict[str, Any]:
        return {**body, "usage": self.usage}


def _anthropic(server: ModelServer, key: str = "k", **kwargs: Any) -> wb.Model:
    kwargs.setdefault("retry", wb.RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0))
    base = server.url.removesuffix("/v1")
    return wb.AnthropicModel("claude-sonnet-4-5", base_url=base, api_key=key, **kwargs)


def _responses(server: ModelServer, key: str = "k", **kwargs: Any) -> wb.Model:
    kwargs.setdefault("retry", wb.RetryPolicy(max_retries=1, initial_delay=0.01, jitter=0))
    return wb.OpenAIResponsesModel("gpt-5-mini", base_url=server.url, api_key=key, **kwargs)


def _tool_use(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    block = {"type": "tool_use", "id": "toolu_1", "name": name, "input": arguments}
    return message(block, stop="tool_use")


def _function_call(name: str, arguments: dict[str, Any]) -> dict[str, Any]:
    item = {"type": "function_call", "call_id": "c1", "name": name}
    return response({**item, "arguments": json.dumps(arguments)})


DELTA = {"type": "response.output_text.delta", "delta": "word "}
WIRES = {
    "messages": Wire(
        make=_anthropic,
        text=lambda text: message({"type": "text", "text": text}),
        call=_tool_use,
        drip=events(MESSAGE_START, TEXT_BLOCK, *[text_delta("word ") for _ in range(50)]),
        usage={"input_tokens": -1_000_000, "output_tokens": -5},
    ),
    "responses": Wire(
        make=_responses,
        text=lambda text: response(said(text)),
        call=_function_call,
        drip=sse(CREATED, *[DELTA for _ in range(50)]),
        usage={"input_tokens": -1_000_000, "output_tokens": -5},
    ),
}


@pytest.fixture(params=list(WIRES))
def wire(request: pytest.FixtureRequest) -> Wire:
    return WIRES[request.param]


def run(model: wb.Model, *, stream_it: bool = False) -> wb.RunResult:
    agent = wb.Agent(model=model, tools=[add], stop=wb.MaxSteps(3))
    return agent.run_sync("What is 1 + 2?", settings={"stream": stream_it})


# --- hangs and drips -----------------------------------------------------------------------------


def test_a_server_that_never_answers_is_a_timeout(server: ModelServer, wire: Wire) -> None:
    server.answer(hang())
    started = time.monotonic()
    message_ = failed_with(run(wire.make(server, timeout=0.5)), wb.ModelTimeoutError)
    assert "did not answer within 0.5s" in message_
    assert time.monotonic() - started < 10 and len(server.requests) == 1


def test_a_dripping_stream_is_bounded_by_the_timeout(server: ModelServer, wire: Wire) -> None:
    server.answer(stream(wire.drip, every=0.2, piece=1))
    started = time.monotonic()
    failed_with(run(wire.make(server, timeout=1.0), stream_it=True), wb.ModelTimeoutError)
    took = time.monotonic() - started
    assert took < 5, f"the whole request took {took:.1f}s with timeout=1"


def test_a_dripping_complete_body_is_bounded_by_the_timeout(
    server: ModelServer, wire: Wire
) -> None:
    server.answer(drip(json.dumps(wire.text("slowly")).encode()))
    started = time.monotonic()
    failed_with(run(wire.make(server, timeout=1.0)), wb.ModelTimeoutError)
    assert time.monotonic() - started < 5


# --- truncation and lies about shapes ------------------------------------------------------------


def test_a_body_cut_short_of_its_length_fails_the_run(server: ModelServer, wire: Wire) -> None:
    payload = json.dumps(wire.text("cut")).encode()
    server.answer(headers_then_drop(len(payload), payload[:20]))
    result = run(wire.make(server, max_retries=0))
    assert result.status is wb.ExecutionStatus.FAILED and result.state.error is not None
    assert result.state.error.type in {"ModelConnectionError", "MalformedResponseError"}


@pytest.mark.parametrize(
    "body",
    [[1, 2, 3], {"content": "all of it", "output": "all of it"}, {"content": [7], "output": [7]}],
    ids=["a-list", "text-for-the-list", "numbers-for-the-items"],
)
def test_a_200_of_the_wrong_shape_fails_the_run(server: ModelServer, wire: Wire, body: Any) -> None:
    server.answer(reply(200, json.dumps(body), "application/json"))
    failed_with(run(wire.make(server)), wb.MalformedResponseError)


def test_a_200_html_page_fails_the_run_with_the_page_quoted(
    server: ModelServer, wire: Wire
) -> None:
    server.answer(reply(200, "<html>captive portal</html>"))
    assert "captive portal" in failed_with(run(wire.make(server)), wb.MalformedResponseError)


def test_a_body_that_lies_about_its_encoding_fails_the_run(server: ModelServer, wire: Wire) -> None:
    server.answer(false_gzip())
    message_ = failed_with(run(wire.make(server)), wb.MalformedResponseError)
    assert "could not be decoded" in message_


# --- tool calls and usage ------------------------------------------------------------------------


def test_a_call_to_a_tool_that_does_not_exist_gets_a_retry_prompt(
    server: ModelServer, wire: Wire
) -> None:
    server.answer(reply(200, wire.call("rm_rf", {})), reply(200, wire.text("ok")))
    result = run(wire.make(server))
    assert result.output == "ok"
    assert "Unknown tool 'rm_rf'" in json.dumps(server.requests[1].body)


def test_a_call_without_a_name_fails_the_run(server: ModelServer, wire: Wire) -> None:
    body = wire.call("add", {"a": 1, "b": 2})
    for block in [*body.get("content", []), *body.get("output", [])]:
        del block["name"]
    server.answer(reply(200, body))
    failed_with(run(wire.make(server)), wb.MalformedResponseError)


def test_negative_usage_cannot_lift_a_token_budget(server: ModelServer, wire: Wire) -> None:
    """A server that reports negative tokens would have the run's totals go down."""
    call = wire.call("add", {"a": 1, "b": 2})
    server.answer(
        reply(200, call),
        reply(200, wire.with_usage(call)),
        reply(200, wire.text("done")),
    )
    agent = wb.Agent(model=wire.make(server), tools=[add], stop=wb.MaxTokens(25))
    result = agent.run_sync("hi")
    assert result.usage.input_tokens >= 0 and result.usage.output_tokens >= 0
    assert result.stop_reason is wb.StopReason.TOKEN_LIMIT  # 15 + 0 + 15 > 25


# --- the key quoted past the cut -----------------------------------------------------------------


@pytest.mark.parametrize("streamed", [False, True])
def test_a_key_cut_by_the_quote_limit_leaves_no_piece(
    server: ModelServer, wire: Wire, streamed: bool
) -> None:
    """Errors quote the first 200-500 characters of what the server said: scrubbed first."""
    key = "Zq81-local-token-abcdef"
    for pad in (190, 195, 490, 495):
        page = f"{'x' * pad}{key} and more"
        server.answer(stream(f"data: {page}\n\n".encode()) if streamed else reply(200, page))
        request = ModelRequest(messages=[wb.Message.user("hi")], settings={"stream": streamed})
        with pytest.raises(wb.MalformedResponseError) as caught:
            asyncio.run(wire.make(server, key=key).request(request))
        assert key[:6] not in str(caught.value), pad


def test_answers_of_the_right_shape_pass(server: ModelServer, wire: Wire) -> None:
    """The control: the shapes above, well formed, make a run that completes."""
    server.answer(reply(200, wire.call("add", {"a": 1, "b": 2})), reply(200, wire.text("3")))
    result = run(wire.make(server))
    assert result.output == "3" and result.steps[0].tool_outcomes[0].content == "3"


@pytest.mark.parametrize("client", [wb.OpenAIModel, wb.AnthropicModel, wb.OpenAIResponsesModel])
def test_a_base_url_that_is_no_url_is_refused_when_the_model_is_made(
    client: type[wb.OpenAIModel], monkeypatch: pytest.MonkeyPatch
) -> None:
    """'localhost:8088/v1' (no scheme) was tried three times with backoff, then 'cannot reach';
    a port past 65535 failed the run as 'unhandled errors in a TaskGroup (1 sub-exception)'."""
    for url in ["localhost:8088/v1", "http://", "http://127.0.0.1:99999/v1"]:
        with pytest.raises(wb.InvalidURL, match=r"^base_url: '.*' is not"):
            client("m", base_url=url, api_key="k" * 12)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", "localhost:8088")
    if client is wb.AnthropicModel:  # the one read from a variable: named
        with pytest.raises(wb.InvalidURL, match=r"^ANTHROPIC_BASE_URL: 'localhost:8088' is not"):
            client("m", api_key="k" * 12)
    assert client("m", base_url="http://127.0.0.1:8088/v1/", api_key="k").base_url.endswith("/v1")
