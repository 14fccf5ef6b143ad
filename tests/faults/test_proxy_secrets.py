"""Fault table: secrets and trust at the recording proxy (issue 31, items 1-4).

The proxy passes the client's credentials upstream and records what comes back, so anything the
upstream echoes must be scrubbed before it is stored: a key in any credential header (not only
``Authorization``), a key an error quotes where the quote is cut short, and the credentials the
proxy sends itself (those in ``--upstream http://user:pw@host``). Headers that belong to one hop
(RFC 9110 §7.6.1) go no further, either way.

Already covered elsewhere: a ``Bearer`` key echoed in an answer's text, a tool call's arguments
and the next request (`test_proxy_recording.py`); the upstream URL's credentials kept out of the
run's metadata (`test_proxy.py`).
"""

from __future__ import annotations

import base64
import json
import socket
from pathlib import Path
from typing import Any

import httpx
import pytest

import workbench as wb
from tests.fake_upstream import Answer, chunks, completion, fake_upstream
from tests.wires import (
    anthropic_error,
    anthropic_error_event,
    message,
    message_events,
    response,
    responses_error_event,
)

pytestmark = pytest.mark.timeout(120)

KEY = "Zq81-local-token-abcdef"
"""A key of no known shape: only knowing it catches it."""
ASK = {"model": "m", "messages": [{"role": "user", "content": "what is my key?"}]}


def text_of(got: httpx.Response) -> str:
    """What the agent read: the body, or a stream's deltas joined."""
    if not got.headers["content-type"].startswith("text/event-stream"):
        return got.text
    pieces = [json.loads(line[6:]) for line in got.text.splitlines() if line.startswith("data: {")]
    return "".join(c["delta"].get("content") or "" for piece in pieces for c in piece["choices"])


def stored(tmp_path: Path) -> str:
    """Everything the store wrote (the database and its WAL), as text."""
    return "".join(f.read_bytes().decode("utf-8", "replace") for f in tmp_path.iterdir())


def assert_no_piece(secret: str, text: str) -> None:
    """Not the secret, and no piece of it that a cut could leave (its first or last 6 chars)."""
    for piece in (secret, secret[:6], secret[-6:]):
        assert piece not in text, f"{piece!r} of the secret is in what was stored"


def said_back(headers: dict[str, str]) -> str:
    """What an echoing upstream says: every header it got that may hold a credential."""
    names = ("authorization", "api-key", "x-api-key", "x-goog-api-key")
    return "; ".join(f"{n}={headers[n]}" for n in names if n in headers)


def echoing(stream: bool, status: int = 200) -> Any:
    def answer(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        text = f"you sent {said_back(headers)}"
        if status != 200:
            return Answer(status=status, body={"error": {"message": text}})
        return Answer(chunks=chunks(text)) if stream else Answer(body=completion(text))

    return answer


@pytest.mark.parametrize("header", ["api-key", "x-api-key", "x-goog-api-key"])
@pytest.mark.parametrize(("stream", "status"), [(False, 200), (True, 200), (False, 401)])
def test_a_key_in_any_credential_header_echoed_back_is_not_stored(
    tmp_path: Path, header: str, stream: bool, status: int
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    with (
        fake_upstream(echoing(stream, status)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        got = httpx.post(
            f"{proxy.url}/chat/completions", json={**ASK, "stream": stream}, headers={header: KEY}
        )
    assert got.status_code == status and KEY in text_of(got)  # the agent gets what was said
    assert upstream.requests[0][1][header] == KEY  # and the key went upstream
    run = store.load(proxy.run_ids[0])
    store.close()
    if status == 200:
        assert run.output is not None and f"{header}=[redacted]" in run.output
    assert_no_piece(KEY, stored(tmp_path))


@pytest.mark.parametrize("pad", [490, 495, 499])
@pytest.mark.parametrize("how", ["an error status", "a stream's error event"])
def test_an_error_quoting_the_key_is_scrubbed_before_it_is_cut(
    tmp_path: Path, pad: int, how: str
) -> None:
    """A key that straddles where the quote is cut leaves no first characters in the store."""
    page = f"{'x' * pad}{KEY} and more"

    def failing(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if how == "an error status":
            return Answer(status=500, body=page.encode())
        return Answer(events=f"event: error\ndata: {page}\n\n".encode())

    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(failing) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = {**ASK, "stream": how != "an error status"}
        httpx.post(f"{proxy.url}/chat/completions", json=body, headers={"x-api-key": KEY})
    run = store.load(proxy.run_ids[0])
    store.close()
    assert run.error is not None
    cut = run.error.message.rsplit("x", 1)[1]  # the quote after the padding: cut once scrubbed
    assert "[redacted] and more".startswith(cut) and cut, run.error.message[-40:]
    assert_no_piece(KEY, stored(tmp_path))


def test_credentials_in_the_upstream_url_echoed_back_are_not_stored(tmp_path: Path) -> None:
    """The proxy sends them as Basic authorization: the scrubber knows what the proxy sends."""
    password = "gate-pw-7Yq2"
    basic = base64.b64encode(f"gate:{password}".encode()).decode()

    def echo(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        text = f"you sent {said_back(headers)}, that is gate:{password}"
        return Answer(body=completion(text))

    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(echo) as upstream:
        gateway = upstream.url.replace("http://", f"http://gate:{password}@")
        with wb.proxy(gateway, store=store) as proxy:
            got = httpx.post(f"{proxy.url}/chat/completions", json=ASK)
    assert basic in got.text and upstream.requests[0][1]["authorization"] == f"Basic {basic}"
    store.close()
    text = stored(tmp_path)
    assert_no_piece(basic, text)
    assert_no_piece(password, text)


def raw_request(url: str, head: str, body: bytes) -> bytes:
    """Send a request exactly as written (a client library would add or drop headers)."""
    parsed = httpx.URL(url)
    with socket.create_connection((parsed.host, parsed.port), timeout=30) as sock:
        sock.sendall(head.replace("\n", "\r\n").encode() + b"\r\n" + body)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    return answer


HOP_BY_HOP = {  # sent by the client; none may reach the upstream
    "connection": "close, x-hop-secret",
    "x-hop-secret": "for the proxy only",
    "keep-alive": "timeout=5",
    "te": "trailers",
    "trailer": "x-checksum",
    "upgrade": "h2c",
    "proxy-connection": "keep-alive",
    "proxy-authorization": "Basic cHJveHk6cHJveHktcHc=",
}


def test_hop_by_hop_headers_go_no_further_either_way() -> None:
    def answering(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        back = {"connection": "x-hop-back", "x-hop-back": "for the proxy only"}
        return Answer(body=completion("hi"), headers=back | {"proxy-authenticate": "Basic"})

    store = wb.RunStore(":memory:")
    with fake_upstream(answering) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = b'{"model": "m", "messages": [{"role": "user", "content": "hi"}]}'
        head = (
            f"POST /v1/chat/completions HTTP/1.1\nHost: {proxy.host}:{proxy.port}\n"
            f"Content-Type: application/json\nContent-Length: {len(body)}\n"
            + "".join(f"{name}: {value}\n" for name, value in HOP_BY_HOP.items())
        )
        answer = raw_request(proxy.url, head, body).decode("latin-1").lower()
    sent = upstream.requests[0][1]
    assert not set(HOP_BY_HOP) - {"connection"} & set(sent), sorted(sent)
    assert "x-hop-secret" not in sent.get("connection", "")
    status, _, rest = answer.partition("\r\n")
    assert status.startswith("http/1.1 200")
    head_back = rest.partition("\r\n\r\n")[0]
    assert "x-hop-back" not in head_back and "proxy-authenticate" not in head_back


# --- the same on the other wires: their key headers, their error shapes, their streams -------


@pytest.mark.parametrize("how", ["an answer", "a streamed answer", "an error event", "a 401"])
def test_an_anthropic_key_echoed_back_on_the_messages_wire_is_not_stored(
    tmp_path: Path, how: str
) -> None:
    def echo(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        said = f"you sent {said_back(headers)}"
        if how == "an answer":
            return Answer(body=message(said))
        if how == "a streamed answer":
            return Answer(events=message_events(said))
        if how == "an error event":
            return Answer(events=anthropic_error_event("authentication_error", said))
        return Answer(status=401, body=anthropic_error("authentication_error", said))

    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(echo) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = {**ASK, "max_tokens": 16, "stream": how != "an answer"}
        got = httpx.post(f"{proxy.url}/messages", json=body, headers={"x-api-key": KEY})
    assert got.status_code in (200, 401) and upstream.requests[0][1]["x-api-key"] == KEY
    run = store.load(proxy.run_ids[0])
    store.close()
    what = run.output if run.error is None else run.error.message
    assert what is not None and "x-api-key=[redacted]" in what, what
    assert_no_piece(KEY, stored(tmp_path))


@pytest.mark.parametrize("how", ["an error event", "a failed response", "a 400"])
def test_a_key_echoed_back_on_the_responses_wire_is_not_stored(tmp_path: Path, how: str) -> None:
    def echo(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        said = f"you sent {said_back(headers)}"
        if how == "an error event":
            return Answer(events=responses_error_event("invalid_api_key", said))
        if how == "a failed response":
            failed = response() | {"status": "failed", "error": {"code": "x", "message": said}}
            event = json.dumps({"type": "response.failed", "response": failed})
            return Answer(events=f"event: response.failed\ndata: {event}\n\n".encode())
        return Answer(status=400, body={"error": {"message": said, "type": "invalid_request"}})

    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(echo) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        body = {"model": "m", "input": "what is my key?", "stream": how != "a 400"}
        httpx.post(f"{proxy.url}/responses", json=body, headers={"api-key": KEY})
    run = store.load(proxy.run_ids[0])
    store.close()
    assert run.error is not None and "api-key=[redacted]" in run.error.message, run.error
    assert_no_piece(KEY, stored(tmp_path))
