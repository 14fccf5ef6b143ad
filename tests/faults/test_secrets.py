"""Fault table: secrets on every path out.

A secret that reaches a run (the client's API key echoed by a server, a bearer token in a hook's
command line, a key-shaped string in a tool's arguments) must not leave through the run's error,
the exception, a repr, the logs, the store file, the spans in memory, the OTLP export, the trace
files, the HTML report or the notebook's widget state.

The key used against the model server is short and has no known shape: only the client knows it
is a key, so only the client's own scrubbing (`OpenAIModel.redact`) can catch it.
"""

from __future__ import annotations

import asyncio
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests.faults.server import (
    Answer,
    ModelServer,
    TraceReceiver,
    completion,
    receiving,
    reply,
    serving,
    sse,
    stream,
)
from workbench.models import ModelRequest
from workbench.report import report_html

pytestmark = pytest.mark.timeout(120)

KEY = "h7Qz9"


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


@pytest.fixture
def receiver() -> Iterator[TraceReceiver]:
    with receiving() as running:
        yield running


def openai(server: ModelServer, key: str = KEY, **kwargs: Any) -> wb.OpenAIModel:
    return wb.OpenAIModel("m", base_url=server.url, api_key=key, max_retries=0, **kwargs)


def everything_written(
    tmp_path: Path, telemetry: wb.Telemetry, receiver: TraceReceiver
) -> dict[str, str]:
    """Each path out, as text: spans as made, the OTLP bytes received, the files, the store."""
    assert telemetry.shutdown(timeout=10) is not None
    paths = {
        "spans in memory": "\n".join(span.to_json() for span in telemetry.spans),
        "otlp export": b"".join(receiver.bodies).decode("utf-8", "replace"),
    }
    telemetry.write_jaeger_json(tmp_path / "run.jaeger.json")
    telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    for file in sorted(tmp_path.iterdir()):  # the store (and its WAL) and the trace files
        paths[file.name] = file.read_bytes().decode("utf-8", "replace")
    assert receiver.bodies, "the export reached the endpoint"
    return paths


def assert_nowhere(secret: str, paths: dict[str, str]) -> None:
    leaked = [where for where, text in paths.items() if secret in text]
    assert not leaked, f"{secret!r} leaked into {leaked}"


# --- issue 15 #1: the server echoes the client's key back ----------------------------------------

ECHOES: dict[str, tuple[Answer, bool]] = {  # the answer, and whether the request streams
    "an error object in a 200": (
        reply(200, {"error": {"message": f"key {KEY} is revoked"}}),
        False,
    ),
    "a 200 without choices": (
        reply(200, {"id": "x", "choices": [], "echo": f"Bearer {KEY}"}),
        False,
    ),
    "a 200 HTML page": (reply(200, f"<html>Your key {KEY} is not valid here</html>"), False),
    "a stream with a non-JSON data line": (stream(sse(f"data: the key was {KEY}")), True),
    "a stream error object": (stream(sse({"error": {"message": f"no {KEY}"}})), True),
    "a stream error event": (stream(b"event: error\ndata: key " + KEY.encode() + b"\n\n"), True),
    "a 500 quoting the key": (reply(500, {"error": {"message": f"refused {KEY}"}}), False),
}


@pytest.mark.parametrize(("answer", "streamed"), ECHOES.values(), ids=ECHOES.keys())
def test_an_echoed_api_key_leaves_by_no_path(
    server: ModelServer,
    receiver: TraceReceiver,
    tmp_path: Path,
    caplog: pytest.LogCaptureFixture,
    answer: Answer,
    streamed: bool,
) -> None:
    caplog.set_level(logging.DEBUG)
    server.answer(answer)
    model = openai(server)
    request = ModelRequest(messages=[wb.Message.user("hi")], settings={"stream": streamed})
    with pytest.raises(wb.ModelError) as caught:
        asyncio.run(model.request(request))

    telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=receiver.url)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = wb.Agent(model=model, telemetry=telemetry, store=store)
    result = agent.run_sync("hi", settings={"stream": streamed})
    store.close()

    assert result.status is wb.ExecutionStatus.FAILED
    assert result.state.error is not None and "[REDACTED]" in result.state.error.message
    paths = everything_written(tmp_path, telemetry, receiver)
    paths |= {
        "the exception": f"{caught.value} {caught.value!r}",
        "the run's error": result.state.error.message,
        "the result's repr": repr(result),
        "the model's repr": repr(model),
        "the logs": caplog.text,
    }
    assert_nowhere(KEY, paths)


@pytest.mark.parametrize("streamed", [False, True])
def test_a_key_cut_by_the_quote_limit_leaves_no_piece(server: ModelServer, streamed: bool) -> None:
    """Errors quote the first 200-500 characters: the key is scrubbed before the cut."""
    key = "Zq81-local-token-abcdef"
    for pad in (190, 195, 490, 495):
        page = f"{'x' * pad}{key} and more"
        server.answer(stream(sse(f"data: {page}")) if streamed else reply(200, f"<p>{page}</p>"))
        request = ModelRequest(messages=[wb.Message.user("hi")], settings={"stream": streamed})
        with pytest.raises(wb.MalformedResponseError) as caught:
            asyncio.run(openai(server, key=key).request(request))
        assert key[:6] not in str(caught.value), pad


def test_a_credential_header_is_scrubbed_like_the_key(server: ModelServer) -> None:
    server.answer(reply(200, {"error": {"message": "api-key Xy12Zw is not allowed"}}))
    model = wb.OpenAIModel(
        "m", base_url=server.url, api_key="", headers={"api-key": "Xy12Zw"}, max_retries=0
    )
    with pytest.raises(wb.MalformedResponseError) as caught:
        asyncio.run(model.request(ModelRequest(messages=[wb.Message.user("hi")])))
    assert "Xy12Zw" not in str(caught.value)
    assert server.requests[0].headers["api-key"] == "Xy12Zw"  # it was sent all the same


# --- issue 15 #2: a bearer token in a hook's command line -----------------------------------------

TOKEN = "hk-5f2a9c31d"


def test_a_token_in_a_hook_command_leaves_by_no_path(
    receiver: TraceReceiver, tmp_path: Path
) -> None:
    command = f"echo '{{}}' # curl -H 'Authorization: Bearer {TOKEN}' https://hooks.example"
    telemetry = wb.Telemetry(otlp_endpoint=receiver.url)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = wb.Agent(
        model=wb.ScriptedModel([wb.ModelResponse.text("done")]),
        hooks=[wb.CommandHook("UserPromptSubmit", command)],
        telemetry=telemetry,
        store=store,
    )
    result = agent.run_sync("hi")
    assert result.output == "done"
    hooks = [h.hook for step in result.steps for h in step.timing.per_hook]
    assert hooks and all("Bearer [REDACTED]" in h for h in hooks)
    store.close()
    paths = everything_written(tmp_path, telemetry, receiver)
    paths["report"] = report_html(wb.RunStore(tmp_path / "runs.sqlite").load(result.run_id))
    paths["repr"] = repr(agent.hooks)
    assert_nowhere(TOKEN, paths)


# --- beyond the issue: a password in a URL --------------------------------------------------------

PASSWORD = "pw-77q"


def test_a_password_in_the_base_url_leaves_by_no_path(
    server: ModelServer, receiver: TraceReceiver, tmp_path: Path
) -> None:
    server.answer(reply(502, "bad gateway"))
    base_url = server.url.replace("http://", f"http://user:{PASSWORD}@")
    model = wb.OpenAIModel("m", base_url=base_url, api_key=KEY, max_retries=0)
    traces = receiver.url.replace("http://", f"http://otel:{PASSWORD}@")
    telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=traces)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    result = wb.Agent(model=model, telemetry=telemetry, store=store).run_sync("hi")
    store.close()
    assert result.state.error is not None and "user:[REDACTED]@" in result.state.error.message
    texts = {
        "the run's error": result.state.error.message,
        "the model's repr": repr(model),
        "the telemetry's repr": repr(telemetry),
    }
    paths = everything_written(tmp_path, telemetry, receiver) | texts
    stats = telemetry.export_stats
    assert stats is not None and PASSWORD not in stats.endpoint
    assert_nowhere(PASSWORD, paths)


# --- beyond the issue: a key quoted by a tool's or the loop's exception ---------------------------

SHAPED = "sk-live4f9Qz7Lm2Xc8Vb1N"
"""A key with a known shape (the built-in patterns know it), as a library's error would quote."""


def test_a_key_in_a_tool_error_reaches_neither_the_model_nor_any_path(
    receiver: TraceReceiver, tmp_path: Path
) -> None:
    @wb.tool
    def charge(amount: int) -> str:
        """Charge the card."""
        raise PermissionError(f"invalid api key {SHAPED} for account 7")

    model = wb.ScriptedModel([wb.ModelResponse.tool_call("charge", {"amount": 3}), "sorry"])
    telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=receiver.url)
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = wb.Agent(model=model, tools=[charge], telemetry=telemetry, store=store)
    result = agent.run_sync("pay")
    store.close()
    read = [
        p.content for m in model.calls[1].messages for p in m.parts if isinstance(p, wb.ToolResult)
    ]
    assert read == [
        "Tool 'charge' failed: PermissionError: invalid api key [REDACTED] for account 7"
    ]
    paths = everything_written(tmp_path, telemetry, receiver)
    paths |= {"what the model read": "\n".join(read), "the result": f"{result!r} {result.steps!r}"}
    assert_nowhere(SHAPED, paths)


def test_a_key_in_the_exception_that_fails_a_run_is_not_kept() -> None:
    def leaky(messages: list[wb.Message], info: object) -> str:
        raise RuntimeError(f"upstream refused Authorization: Bearer {SHAPED}")

    store = wb.RunStore(":memory:")
    result = wb.Agent(model=wb.FunctionModel(leaky), store=store).run_sync("hi")
    assert result.status is wb.ExecutionStatus.FAILED and result.state.error is not None
    assert result.state.error.message == "upstream refused Authorization: Bearer [REDACTED]"
    stored = store.load(result.run_id)
    assert SHAPED not in stored.state.model_dump_json() + repr(stored.steps)


def test_a_key_in_a_message_a_strict_replay_compares_is_not_shown_cut_in_the_difference() -> None:
    """The difference is shown around where the texts differ: the cut must not leave a tail."""
    key = "sk-abcdefghijklmnopqrstuvwxyz123456"
    agent = wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("ok")]), store=False)
    recorded = agent.run_sync(f"use key {key} please")
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    result = wb.Agent(model=replay, store=False).run_sync(f"use key {key} now")
    assert result.error is not None and result.error.type == "ReplayDivergence"
    message = result.error.message
    assert "[REDACTED] please" in message and "[REDACTED] now" in message
    assert "123456" not in message and "nopqrstuvwxyz" not in message


# --- a one-letter key (what local servers are given) is scrubbed as a word, not inside words ----


@pytest.mark.parametrize("key", ["k", "x", "t"])
def test_a_one_letter_key_keeps_recorded_words_whole_and_is_still_scrubbed_alone(
    server: ModelServer, tmp_path: Path, key: str
) -> None:
    """A key scrubbed inside words turned a recorded ``"text"`` into ``"te[REDACTED]t"`` (key
    ``x``): the cassette refused its own recording and the run failed; with ``k`` the person's
    ``ok`` was recorded as ``o[REDACTED]``. Where the key stands alone, it is still replaced."""
    said = f"take the text, ok? the key is {key}."
    server.answer(reply(200, completion(said)), reply(200, completion(said)))
    path = tmp_path / "cassette.json"
    telemetry = wb.Telemetry(capture_content=True)
    recording = wb.cassette(path, openai(server, key), mode="record")
    result = wb.Agent(model=recording, telemetry=telemetry).run_sync(said)
    assert result.status is wb.ExecutionStatus.COMPLETED, result.state.error
    scrubbed = said.replace(f"is {key}.", "is [REDACTED].")
    assert result.output == said  # what the run itself holds is the model's answer as sent
    recorded = path.read_text()
    assert recorded.count(scrubbed) == 2 and f"is {key}." not in recorded  # request and answer
    spans = "\n".join(span.to_json() for span in telemetry.spans)
    assert scrubbed in spans and f"is {key}." not in spans

    replayed = wb.Agent(model=wb.cassette(path, mode="replay")).run_sync(scrubbed)
    assert replayed.status is wb.ExecutionStatus.COMPLETED, replayed.state.error
    assert replayed.output == scrubbed
