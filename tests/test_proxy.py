"""The recording proxy against a fake upstream on loopback: recording, replay, bad input, CLI.

Every test talks HTTP to a real proxy (uvicorn in its thread) in front of a real fake server
(tests/fake_upstream.py); the agent side is the `openai` SDK or httpx.
"""

from __future__ import annotations

import asyncio
import json
import os
import signal
import socket
import sqlite3
import subprocess
import sys
import threading
from collections.abc import Iterator
from concurrent.futures import ThreadPoolExecutor
from contextlib import closing
from pathlib import Path
from typing import Any

import aiohttp
import httpx
import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, chunks, completion, fake_upstream
from workbench.notebook.html import step_html

KEY = "sk-test-secret-4e1f9a"
ADD = {
    "type": "function",
    "function": {
        "name": "add",
        "description": "Add two integers.",
        "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    },
}


def adder(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Calls add once, then answers with the tool's result."""
    last = body["messages"][-1]
    if last["role"] == "tool":
        return Answer(body=completion(f"the sum is {last['content']}"))
    return Answer(body=completion(calls=[("call_1", "add", {"a": 1, "b": 2})]))


def tool_loop(client: openai.OpenAI, prompt: str = "add 1 and 2") -> str:
    """A plain SDK agent loop: call the model, run the tool, until it answers."""
    messages: list[Any] = [
        {"role": "system", "content": "You add."},
        {"role": "user", "content": prompt},
    ]
    for _ in range(4):
        answer = client.chat.completions.create(model="fake-model", messages=messages, tools=[ADD])
        message = answer.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        if not message.tool_calls:
            return message.content or ""
        for call in message.tool_calls:
            args = json.loads(call.function.arguments)
            messages.append(
                {"role": "tool", "tool_call_id": call.id, "content": str(args["a"] + args["b"])}
            )
    raise AssertionError("the loop did not end")


CLIENTS: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Every SDK client a test made is closed after it, passed or failed (no stray sockets)."""
    yield
    while CLIENTS:
        CLIENTS.pop().close()


def client_for(handle: wb.ProxyHandle | str, **headers: str) -> openai.OpenAI:
    url = handle if isinstance(handle, str) else handle.url
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, default_headers=headers)
    CLIENTS.append(client)
    return client


def test_a_tool_loop_becomes_a_run_with_steps_tool_outcomes_and_no_key(tmp_path: Path) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(adder) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        assert tool_loop(client_for(proxy)) == "the sum is 3"
    assert upstream.requests[0][1]["authorization"] == f"Bearer {KEY}"  # passed through
    (run_id,) = proxy.run_ids
    run = store.load(run_id)
    assert run.status is wb.ExecutionStatus.COMPLETED
    assert run.stop_reason is wb.StopReason.COMPLETED
    assert run.output == "the sum is 3"
    first, second = run.steps
    assert [m.role for m in first.messages_in] == ["system", "user"]
    assert first.tools_offered == ("add",)
    assert first.tool_calls[0].arguments == {"a": 1, "b": 2}
    assert [(o.name, o.status, o.content) for o in first.tool_outcomes] == [("add", "ok", "3")]
    assert [m.role for m in first.new_messages] == ["assistant", "tool"]
    assert second.messages_in == first.messages_in + first.new_messages
    assert second.response is not None and second.response.text_content == "the sum is 3"
    assert run.usage.input_tokens == 22 and run.usage.requests == 2
    assert run.snapshots[0].tool_definitions[0].name == "add"
    assert run.snapshots[0].model_name == "fake-model"
    assert run.snapshots[0].model_settings == {}  # the model is not a setting, as in our runs
    assert "the sum is 3" in step_html(second, run.steps)
    store.close()
    for path in tmp_path.iterdir():  # the database and its WAL
        assert KEY.encode() not in path.read_bytes()


@pytest.mark.parametrize("gap", [0.0, 0.02])  # all in a piece or so; an event a piece
def test_a_stream_is_relayed_as_sent_and_recorded_with_time_to_first_token(gap: float) -> None:
    store = wb.RunStore(":memory:")

    def streaming(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(chunks=chunks("streamed hello"), gap=gap)

    with fake_upstream(streaming) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        stream = client_for(proxy).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        text = "".join(c.choices[0].delta.content or "" for c in stream if c.choices)
    assert text == "streamed hello"
    (step,) = store.load(proxy.run_ids[0]).steps
    assert step.response is not None and step.response.text_content == "streamed hello"
    assert step.timing.time_to_first_token is not None
    assert step.usage.output_tokens == 3


def test_an_agent_that_hangs_up_once_it_has_done_gets_its_answer_recorded() -> None:
    """The openai SDK stops at ``[DONE]`` and closes the stream before the body's end comes."""
    store = wb.RunStore(":memory:")

    def slow_to_end(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(chunks=chunks("all here"), linger=3.0)

    with fake_upstream(slow_to_end) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        stream = client_for(proxy).chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True
        )
        assert "".join(c.choices[0].delta.content or "" for c in stream if c.choices) == "all here"
        stream.close()
    (step,) = store.load(proxy.run_ids[0]).steps
    assert step.response is not None and step.response.text_content == "all here"
    assert step.status is wb.ExecutionStatus.COMPLETED


def test_a_stream_is_read_into_the_recording_whatever_its_pieces() -> None:
    """Cut anywhere (mid-line, between CR and LF, inside a character), it reads the same."""
    from workbench._proxy.chat import CHAT
    from workbench._proxy.relay import StreamReading

    def reading() -> StreamReading:
        return StreamReading(CHAT.reading(str))

    text = "héllo wörld ✓"
    events = [f"data: {json.dumps(c, ensure_ascii=False)}" for c in chunks(text, pieces=5)]
    body = "\r\n\r\n".join([*events, "data: [DONE]"]).encode()
    for cut in range(len(body) + 1):
        whole = reading()
        whole.take(body[:cut])
        whole.take(body[cut:])
        whole.close()
        response = whole.response("m", None)
        assert whole.problem is None and response is not None, cut
        assert response.text_content == text, cut
    cut_short = reading()  # no [DONE], no finish: the stream ended early
    cut_short.take("\n\n".join(events[:2]).encode())
    cut_short.close()
    assert cut_short.response("m", None) is None
    assert cut_short.problem == ("MalformedResponseError", "the upstream's stream ended early")
    # The first bad event is the problem; nothing after it is read.
    garbage = reading()
    garbage.take(f"{events[0]}\n\ndata: not json\n\n{events[1]}\n\n".encode())
    garbage.close()
    assert garbage.problem is not None and "not a chat completion chunk" in garbage.problem[1]
    first = chunks(text, pieces=5)[0]["choices"][0]["delta"]["content"]
    assert "".join(garbage.reading.assembler.text) == first  # type: ignore[attr-defined]


def test_the_proxy_serves_on_uvloop_which_the_extra_installs() -> None:
    """The proxy's own loop is uvloop's (its time is transport work, taken from the agent's)."""
    import uvloop  # the proxy extra installs it on this platform

    with (
        fake_upstream(adder) as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        assert tool_loop(client_for(proxy)) == "the sum is 3"
        assert proxy.app.client is not None
        assert isinstance(proxy.app.client._loop, uvloop.Loop)


def test_interleaved_conversations_are_separate_runs_and_a_header_names_one() -> None:
    store = wb.RunStore(":memory:")
    with fake_upstream(adder) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        client = client_for(proxy)
        a = [{"role": "user", "content": "conversation a"}]
        b = [{"role": "user", "content": "conversation b"}]
        answers = {}
        for name, messages in (("a", a), ("b", b)):  # both first calls, then both second calls
            answers[name] = client.chat.completions.create(
                model="m", messages=messages, tools=[ADD]
            )
        for name, messages in (("b", b), ("a", a)):
            message = answers[name].choices[0].message
            messages += [
                message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_1", "content": name},
            ]
            client.chat.completions.create(model="m", messages=messages, tools=[ADD])
        named = client_for(proxy, **{"X-Workbench-Run": "mine"})
        named.chat.completions.create(model="m", messages=[{"role": "user", "content": "one"}])
        named.chat.completions.create(model="m", messages=[{"role": "user", "content": "other"}])
    runs = [store.load(r) for r in proxy.run_ids]
    assert [len(r.steps) for r in runs] == [2, 2, 2]
    assert [r.steps[0].tool_outcomes[0].content for r in runs[:2]] == ["a", "b"]
    assert runs[2].state.metadata["conversation"] == "mine"


def test_tools_that_change_mid_conversation_are_recorded_per_step_and_stored_once_each(
    tmp_path: Path,
) -> None:
    mul = {"type": "function", "function": {**ADD["function"], "name": "mul"}}
    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(adder) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        client = client_for(proxy)
        messages: list[Any] = [{"role": "user", "content": "add, then more"}]
        for tools in ([ADD], [ADD], [ADD, mul]):
            answer = client.chat.completions.create(model="m", messages=messages, tools=tools)
            messages += [
                answer.choices[0].message.model_dump(exclude_none=True),
                {"role": "tool", "tool_call_id": "call_1", "content": "3"},
            ]
    (run,) = [store.load(r) for r in proxy.run_ids]
    named = [[d.name for d in s.tool_definitions] for s in run.snapshots]
    assert named == [["add"], ["add"], ["add", "mul"]]
    hashes = [s.tool_schema_hash for s in run.snapshots]
    assert hashes[0] == hashes[1] != hashes[2]
    store.close()
    with closing(sqlite3.connect(tmp_path / "runs.sqlite")) as db:
        assert db.execute("SELECT count(*) FROM tool_sets").fetchone() == (2,)


def closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def test_an_upstream_that_is_down_is_a_502_for_the_agent_and_a_failed_run() -> None:
    store = wb.RunStore(":memory:")
    down = f"http://user:{KEY}@127.0.0.1:{closed_port()}/v1"  # credentials in the URL stay out
    with wb.proxy(down, store=store) as proxy, pytest.raises(openai.InternalServerError) as caught:
        client_for(proxy).chat.completions.create(
            model="m", messages=[{"role": "user", "content": "x"}]
        )
    assert caught.value.status_code == 502
    assert "cannot reach the upstream" in str(caught.value)
    assert len(caught.value.response.headers.get_list("date")) == 1  # an answer the proxy made
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.FAILED and run.stop_reason is wb.StopReason.ERROR
    assert run.error is not None and run.error.type == "ModelConnectionError"
    assert run.steps[0].response is None
    assert KEY not in run.state.to_json() and KEY not in str(caught.value)


def test_a_kept_alive_connection_the_upstream_closed_is_asked_again_on_a_new_one() -> None:
    """llama.cpp closes idle connections after a few seconds: that is no failure of the call."""
    store = wb.RunStore(":memory:")
    answers = iter(
        [Answer(body=completion("one")), Answer(drop=True), Answer(body=completion("two"))]
    )
    with (
        fake_upstream(lambda body, headers: next(answers)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        client = client_for(proxy)
        said = [
            client.chat.completions.create(model="m", messages=[{"role": "user", "content": p}])
            .choices[0]
            .message.content
            for p in ("first", "second")
        ]
    assert said == ["one", "two"] and len(upstream.requests) == 3
    assert [store.load(r).status for r in proxy.run_ids] == [wb.ExecutionStatus.COMPLETED] * 2


def test_credentials_in_the_upstream_url_authenticate_the_proxy_and_are_not_recorded() -> None:
    store = wb.RunStore(":memory:")
    with fake_upstream() as upstream:
        gateway = upstream.url.replace("http://", "http://gate:p%40ss@")
        with wb.proxy(gateway, store=store) as proxy:
            client_for(proxy).chat.completions.create(
                model="m", messages=[{"role": "user", "content": "x"}]
            )
    assert upstream.requests[0][1]["authorization"] == "Basic Z2F0ZTpwQHNz"  # gate:p@ss
    run = store.load(proxy.run_ids[0])
    assert "p%40ss" not in run.state.to_json() and "p@ss" not in run.state.to_json()
    assert run.state.metadata["proxy"] == {"upstream": upstream.url, "wire": "chat"}


def test_a_redirect_from_the_upstream_comes_back_as_it_was_not_followed() -> None:
    store = wb.RunStore(":memory:")
    moved = lambda body, headers: Answer(  # noqa: E731
        status=307, body={"moved": True}, headers={"location": "/v1/elsewhere"}
    )
    with fake_upstream(moved) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}]}
        got = httpx.post(f"{proxy.url}/chat/completions", json=body)
    assert got.status_code == 307 and got.headers["location"] == "/v1/elsewhere"
    assert len(upstream.requests) == 1  # the proxy did not follow it
    run = store.load(proxy.run_ids[0])
    assert run.error is not None and run.error.message.startswith("307 from the upstream")


def test_a_proxy_whose_server_fails_refuses_connections_instead_of_hanging(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    def broken(*args: object, **kwargs: object) -> None:
        raise RuntimeError("no HTTP client today")

    monkeypatch.setattr(aiohttp, "ClientSession", broken)
    proxy = wb.proxy("http://127.0.0.1:9/v1", store=wb.RunStore(":memory:"))
    proxy.wait()  # the server's thread ends at once
    with pytest.raises(httpx.ConnectError):
        httpx.post(f"{proxy.url}/chat/completions", json={"model": "m"}, timeout=5)
    with pytest.raises(RuntimeError, match="no HTTP client today"):
        proxy.close()  # the failure is not lost


def test_a_slow_upstream_times_out_with_a_504_recorded() -> None:
    store = wb.RunStore(":memory:")
    slow = lambda body, headers: Answer(body=completion("late"), delay=1.0)  # noqa: E731
    with fake_upstream(slow) as upstream, wb.proxy(upstream.url, store=store, timeout=0.2) as proxy:
        answer = httpx.post(f"{proxy.url}/chat/completions", json={"model": "m", "messages": []})
    assert answer.status_code == 504
    assert answer.json()["error"]["type"] == "ModelTimeoutError"
    assert store.load(proxy.run_ids[0]).error.type == "ModelTimeoutError"  # type: ignore[union-attr]


@pytest.mark.parametrize(
    ("answer", "kind"),
    [
        (Answer(body=b"<html>not json</html>"), "MalformedResponseError"),
        (Answer(status=500, body={"error": {"message": f"boom, key {KEY}"}}), "APIError"),
    ],
)
def test_the_agent_gets_the_upstreams_garbage_or_error_as_sent_and_the_store_records_it(
    answer: Answer, kind: str
) -> None:
    store = wb.RunStore(":memory:")
    with (
        fake_upstream(lambda b, h: answer) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        got = httpx.post(
            f"{proxy.url}/chat/completions",
            json={"model": "m", "messages": [{"role": "user", "content": "x"}]},
            headers={"Authorization": f"Bearer {KEY}"},
        )
    assert got.status_code == answer.status
    assert got.content == (
        answer.body if isinstance(answer.body, bytes) else json.dumps(answer.body).encode()
    )
    error = store.load(proxy.run_ids[0]).error
    assert error is not None and error.type == kind
    assert KEY not in error.message


def test_a_stream_that_breaks_off_or_sends_garbage_is_relayed_and_recorded() -> None:
    store = wb.RunStore(":memory:")
    garbage = [{"choices": "not a list"}]

    def behaviour(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        text = body["messages"][0]["content"]
        return (
            Answer(chunks=chunks("cut short", pieces=6), cut=True)
            if text == "cut"
            else Answer(chunks=garbage)
        )

    with fake_upstream(behaviour) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        for text in ("cut", "garbage"):
            body = {"model": "m", "messages": [{"role": "user", "content": text}], "stream": True}
            with httpx.stream("POST", f"{proxy.url}/chat/completions", json=body) as got:
                relayed = got.read().decode()
            assert relayed.startswith("data: ")
    errors = [store.load(r).error for r in proxy.run_ids]
    assert [e.type for e in errors if e] == ["MalformedResponseError", "MalformedResponseError"]
    assert "ended early" in errors[0].message  # type: ignore[union-attr]


@pytest.mark.parametrize("stream", [True, False])
def test_an_answer_comes_back_with_the_upstreams_status_and_header_bytes(stream: bool) -> None:
    """Header values that are not ASCII come back as the upstream sent their bytes."""
    events = chunks("hello")
    note = {"x-note": "café"}  # the fake sends it as latin-1: b"caf\xe9"
    answer = (
        Answer(chunks=events, status=203, headers=note)
        if stream
        else Answer(body=completion("hello"), status=203, headers=note)
    )
    with fake_upstream(lambda b, h: answer) as upstream, wb.proxy(upstream.url) as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": stream}
        if stream:  # asking for the usage chunk itself: the stream comes back whole, as sent
            body["stream_options"] = {"include_usage": True}
        with httpx.stream("POST", f"{proxy.url}/chat/completions", json=body) as got:
            relayed = got.read().decode()
    assert got.status_code == 203
    assert (b"x-note", b"caf\xe9") in got.headers.raw
    names = [name.lower() for name, _ in got.headers.raw]  # the upstream's, and no second one
    assert names.count(b"date") == 1 and names.count(b"server") == 1
    assert got.headers["server"].startswith("BaseHTTP/")
    if stream:
        assert relayed.count("data: ") == len(events) + 1  # each event as sent, then [DONE]
    else:
        assert json.loads(relayed) == completion("hello")


def test_a_client_that_disconnects_mid_stream_is_recorded() -> None:
    store = wb.RunStore(":memory:")
    slow_stream = lambda b, h: Answer(chunks=chunks("a long answer " * 20, pieces=40), gap=0.05)  # noqa: E731
    with fake_upstream(slow_stream) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = {"model": "m", "messages": [{"role": "user", "content": "x"}], "stream": True}
        with httpx.stream("POST", f"{proxy.url}/chat/completions", json=body) as got:
            next(got.iter_lines())  # the first event arrived; hang up
        # the proxy hangs up on the upstream too, long before its 2 s of stream are all sent
        assert upstream.hung_up.wait(timeout=10)
    run = store.load(proxy.run_ids[0])
    assert run.error is not None and run.error.type == "ClientDisconnected"
    assert run.steps[0].response is None


class _Pieces:
    """An upstream body at the unit level: its pieces, and whether its end came with the last."""

    def __init__(self, pieces: list[bytes], end_with_last: bool) -> None:
        self.pieces, self.end_with_last = pieces, end_with_last

    async def readany(self) -> bytes:
        return self.pieces.pop(0) if self.pieces else b""

    def iter_any(self) -> aiohttp.streams.AsyncStreamIterator[bytes]:
        return aiohttp.streams.AsyncStreamIterator(self.readany)

    def at_eof(self) -> bool:
        return not self.pieces and self.end_with_last


class _Answer:
    def __init__(self, content: _Pieces) -> None:
        self.status, self.headers, self.content = (
            200,
            {"content-type": "text/event-stream"},
            content,
        )
        self.released = False

    def release(self) -> None:
        self.released = True


@pytest.mark.parametrize("end_with_last", [True, False])
def test_a_relayed_stream_ends_once_with_the_last_piece_when_the_upstream_ended_with_it(
    end_with_last: bool,
) -> None:
    from workbench._proxy.chat import CHAT
    from workbench._proxy.relay import Relay, StreamReading

    sent: list[dict[str, Any]] = []
    recorded: list[Relay] = []

    async def relay() -> None:
        async def send(message: dict[str, Any]) -> None:
            sent.append(message)

        async def receive() -> dict[str, Any]:
            await asyncio.Event().wait()  # the client stays
            raise AssertionError

        answer = _Answer(_Pieces([b"data: 1\n\n", b"data: [DONE]\n\n"], end_with_last))
        reading = StreamReading(CHAT.reading(str))
        await Relay(answer, reading, recorded.append)({}, receive, send)  # type: ignore[arg-type]
        assert answer.released

    asyncio.run(relay())
    assert sent[0]["type"] == "http.response.start" and sent[0]["status"] == 200
    bodies = [(m["body"], m["more_body"]) for m in sent[1:]]
    if end_with_last:  # one write for the agent to read, not a last piece and then an end
        assert bodies == [(b"data: 1\n\n", True), (b"data: [DONE]\n\n", False)]
    else:
        assert bodies == [(b"data: 1\n\n", True), (b"data: [DONE]\n\n", True), (b"", False)]
    assert [r.outcome for r in recorded] == ["ended"]


def test_a_request_that_is_not_chat_completions_is_a_400() -> None:
    with (
        fake_upstream() as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        got = httpx.post(f"{proxy.url}/chat/completions", content=b"{not json")
        models = httpx.get(f"{proxy.url}/models")
    assert (
        got.status_code == 400 and "not a chat completion request" in got.json()["error"]["message"]
    )
    assert models.json()["data"][0]["id"] == "fake-model"  # passed through
    assert upstream.requests == []


def record_adder(store: wb.RunStore) -> str:
    with fake_upstream(adder) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        tool_loop(client_for(proxy))
    return proxy.run_ids[0]


def test_replay_answers_offline_from_the_recording_and_says_how_a_request_departs() -> None:
    store = wb.RunStore(":memory:")
    recorded = record_adder(store)
    with wb.proxy(replay=recorded, store=store) as proxy:  # no upstream at all
        assert tool_loop(client_for(proxy)) == "the sum is 3"
        with pytest.raises(openai.BadRequestError) as departed:
            tool_loop(client_for(proxy), prompt="add 5 and 6")
        stream = client_for(proxy).chat.completions.create(
            model="fake-model",
            messages=[
                {"role": "system", "content": "You add."},
                {"role": "user", "content": "add 1 and 2"},
            ],
            tools=[ADD],
            stream=True,
        )
        calls = [
            c.choices[0].delta.tool_calls
            for c in stream
            if c.choices and c.choices[0].delta.tool_calls
        ]
    assert calls[0][0].function.name == "add"
    assert "message 1 (user)" in str(departed.value) and "add 5 and 6" in str(departed.value)
    replayed = store.load(proxy.run_ids[0])
    assert replayed.state.metadata["proxy"]["replay_of"] == recorded
    assert replayed.output == "the sum is 3"


@pytest.mark.parametrize(
    ("change", "named"),
    [
        ({"tools": [ADD, {**ADD, "function": {**ADD["function"], "name": "mul"}}]}, "mul"),
        (
            {"tools": [{**ADD, "function": {**ADD["function"], "description": "Sum."}}]},
            "tool 'add' (description)",
        ),
        ({"temperature": 0.9}, "setting 'temperature'"),
        ({"model": "other-model"}, "setting 'model'"),
    ],
    ids=["added tool", "edited tool description", "changed setting", "other model"],
)
def test_replay_is_strict_about_tools_and_settings(change: dict[str, Any], named: str) -> None:
    store = wb.RunStore(":memory:")
    recorded = record_adder(store)
    request: dict[str, Any] = {
        "model": "fake-model",
        "messages": [
            {"role": "system", "content": "You add."},
            {"role": "user", "content": "add 1 and 2"},
        ],
        "tools": [ADD],
    }
    with wb.proxy(replay=recorded, store=store) as proxy:
        same = client_for(proxy).chat.completions.create(**request, stream=True)
        assert any(c.choices and c.choices[0].delta.tool_calls for c in same)  # stream: transport
    with (
        wb.proxy(replay=recorded, store=store) as proxy,
        pytest.raises(openai.BadRequestError) as departed,
    ):
        client_for(proxy).chat.completions.create(**{**request, **change})
    assert departed.value.type == "replay_divergence"
    assert "at step 1" in str(departed.value) and named in str(departed.value)


def test_replay_until_a_step_then_live_and_beyond_the_recording_is_an_error() -> None:
    store = wb.RunStore(":memory:")
    recorded = record_adder(store)
    live = lambda b, h: Answer(body=completion("live answer"))  # noqa: E731
    with fake_upstream(live) as upstream:
        with wb.proxy(upstream.url, replay=recorded, until_step=1, store=store) as proxy:
            assert tool_loop(client_for(proxy)) == "live answer"
        assert len(upstream.requests) == 1  # only step 2 went to the model
    with wb.proxy(replay=recorded, store=store) as proxy:
        client = client_for(proxy)
        tool_loop(client)
        run = store.load(recorded)
        with pytest.raises(openai.BadRequestError, match="replay"):
            client.chat.completions.create(
                model="m",
                messages=[*(_wire(m) for m in run.messages), {"role": "user", "content": "more"}],
                tools=[ADD],
            )


def _wire(message: wb.Message) -> dict[str, Any]:
    from workbench.models._openai_wire import to_wire_messages

    return dict(to_wire_messages([message])[0])


def test_a_replay_run_that_is_missing_empty_or_damaged_is_refused(tmp_path: Path) -> None:
    store = wb.RunStore(":memory:")
    with pytest.raises(wb.RunNotFound):
        wb.proxy(replay="run_nope", store=store)
    with wb.proxy("http://127.0.0.1:9/v1", store=store) as proxy:
        pass  # no conversation: nothing recorded
    empty = wb.Agent(model=wb.ScriptedModel([]), store=store)
    failed = empty.run_sync("x")
    with pytest.raises(wb.UsageError, match="no recorded model response"):
        wb.proxy(replay=failed.run_id, store=store)
    damaged = tmp_path / "damaged.sqlite"
    damaged.write_bytes(b"this is not a database" * 100)
    with pytest.raises(wb.StoreError):
        wb.proxy(replay="last", store=wb.RunStore(damaged))
    with pytest.raises(wb.UsageError, match="until_step"):
        wb.proxy(replay=record_adder(store), until_step=1, store=store)
    assert proxy.run_ids == []


def test_the_command_records_until_interrupted(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with fake_upstream(adder) as upstream:
        command = [
            sys.executable,
            "-m",
            "workbench.cli",
            "proxy",
            "--upstream",
            upstream.url,
            "--port",
            "0",
            "--store",
            str(path),
        ]
        env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
        with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
            assert process.stdout is not None
            first = process.stdout.readline()
            url = first.split(" on ")[1].split(" ")[0]
            tool_loop(client_for(url))
            process.send_signal(signal.SIGINT)
            out = process.stdout.read()
            assert process.wait() == 0
    assert "forwarding to" in first
    (run_id,) = [line.split()[-1] for line in out.splitlines() if line.startswith("recorded")]
    run = wb.RunStore(path).load(run_id)
    assert run.output == "the sum is 3" and len(run.steps) == 2
    assert KEY.encode() not in path.read_bytes()


def test_conversations_in_flight_at_once_are_kept_apart() -> None:
    """Two agents start the same conversation at the same moment: two runs, not one."""
    store = wb.RunStore(":memory:")
    both_arrived = threading.Barrier(2, timeout=10)

    def held(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if len(body["messages"]) == 2:  # the first request: system and user
            both_arrived.wait()  # each answer waits until both requests are in flight
        return adder(body, headers)

    with fake_upstream(held) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        client = client_for(proxy)
        with ThreadPoolExecutor(2) as pool:
            answers = list(pool.map(lambda _: tool_loop(client), range(2)))
    assert answers == ["the sum is 3", "the sum is 3"]
    runs = [store.load(r) for r in proxy.run_ids]
    assert [len(r.steps) for r in runs] == [2, 2]
    assert [r.output for r in runs] == ["the sum is 3", "the sum is 3"]


def test_the_command_replays_a_recorded_run_offline(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    recorded = record_adder(wb.RunStore(path))
    command = [sys.executable, "-m", "workbench.cli", "proxy", "--replay", recorded[:12]]
    command += ["--port", "0", "--store", str(path)]
    env = {**os.environ, "PYTHONPATH": str(Path(__file__).parents[1])}
    with subprocess.Popen(command, stdout=subprocess.PIPE, text=True, env=env) as process:
        assert process.stdout is not None
        first = process.stdout.readline()
        url = first.split(" on ")[1].split(" ")[0]
        answer = tool_loop(client_for(url))
        process.send_signal(signal.SIGINT)
        process.stdout.read()
        assert process.wait() == 0
    assert f"replaying {recorded[:12]}" in first
    assert answer == "the sum is 3"


def test_the_command_needs_an_upstream_or_a_replay(capsys: pytest.CaptureFixture[str]) -> None:
    from workbench.cli import main

    assert main(["proxy", "--store", ":memory:"]) == 2
    assert "proxy needs --upstream URL, or --replay RUN" in capsys.readouterr().err
