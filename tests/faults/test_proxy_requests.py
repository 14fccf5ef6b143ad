"""Fault table: big request bodies at the recording proxy, on every wire.

The proxy reads a model call's body whole (to record it and to forward it as it came), so a
client that sends without end could make it hold gigabytes, in a notebook inside the agent's own
interpreter. A body over `MAX_BODY` (64 MiB, twice what Anthropic's Messages API takes) is
refused with a 413 in the wire's own error shape, after it has come (a client that is cut off
mid-send sees a broken connection, not the reason), without being held, sent upstream or
recorded. The same holds on a route passed through (``count_tokens``). Below the bound, a long
conversation (a few MiB) goes upstream whole, with its length: handed bytes over 1 MiB, aiohttp
warns, and where warnings are errors the proxy answered such a request with a 500.

A body that is not JSON, or not the wire's request, is a 400 in the wire's shape that says what
is wrong and where (``messages: Field required``), on every wire. Already covered elsewhere: a huge
tool result inside a run (`faults/test_tools.py`).
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import anthropic
import httpx
import pytest

import workbench as wb
from tests.fake_upstream import Answer, completion, fake_upstream
from tests.wires import message, response
from workbench._proxy import server

pytestmark = pytest.mark.timeout(180)

ANSWERS = {
    "/chat/completions": completion("hi"),
    "/responses": response("hi"),
    "/messages": message("hi"),
}
REQUESTS: dict[str, dict[str, Any]] = {
    "/chat/completions": {"model": "m", "messages": [{"role": "user", "content": "hi"}]},
    "/responses": {"model": "m", "input": "hi"},
    "/messages": {"model": "m", "max_tokens": 8, "messages": [{"role": "user", "content": "hi"}]},
}


def padded(path: str, size: int) -> bytes:
    """The wire's request, ``size`` bytes long (a long user text)."""
    body = json.dumps(REQUESTS[path]).encode()
    if size <= len(body):
        return body
    pad = size - len(body) - len(', "metadata_pad": ""')
    request = {**REQUESTS[path], "metadata_pad": "x" * pad}
    sized = json.dumps(request).encode()
    assert len(sized) == size
    return sized


def refused_in_its_wire(path: str, got: httpx.Response) -> None:
    """A 413 in the shape the wire's SDKs read, saying why."""
    assert got.status_code == 413, got.text
    error = got.json()["error"]
    if path.startswith("/messages"):
        assert got.json()["type"] == "error" and error["type"] == "request_too_large"
    else:
        assert error["type"] == "request_too_large" and error["code"] == 413
    assert "over the workbench proxy's 64 MiB limit" in error["message"]


def by_pieces(body: bytes, size: int = 2**20) -> Iterator[bytes]:
    """The body sent chunked, with no ``Content-Length`` to go by."""
    for start in range(0, len(body), size):
        yield body[start : start + size]


@pytest.mark.parametrize("path", ["/chat/completions", "/responses", "/messages"])
def test_a_body_over_the_bound_is_a_413_in_its_wire_and_goes_nowhere(path: str) -> None:
    store = wb.RunStore(":memory:")
    huge = padded(path, server.MAX_BODY + 1)
    with (
        fake_upstream(lambda b, h: Answer(body=ANSWERS[path])) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        declared = httpx.post(f"{proxy.url}{path}", content=huge, timeout=120)
        chunked = httpx.post(f"{proxy.url}{path}", content=by_pieces(huge), timeout=120)
        fine = httpx.post(f"{proxy.url}{path}", json=REQUESTS[path], timeout=30)
    refused_in_its_wire(path, declared)
    refused_in_its_wire(path, chunked)
    assert fine.status_code == 200  # the proxy goes on serving
    assert len(upstream.requests) == 1 and len(proxy.run_ids) == 1  # only the fine one


@pytest.mark.parametrize("over", [0, 1])
def test_the_bound_is_the_body_s_size_exactly(over: int, monkeypatch: pytest.MonkeyPatch) -> None:
    path = "/messages"
    body = padded(path, 4096)
    monkeypatch.setattr(server, "MAX_BODY", len(body) - over)
    with (
        fake_upstream(lambda b, h: Answer(body=ANSWERS[path])) as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        got = httpx.post(f"{proxy.url}{path}", content=body, timeout=30)
    assert got.status_code == (413 if over else 200)
    assert len(upstream.requests) == (0 if over else 1)


def test_a_count_tokens_over_the_bound_is_an_error_the_anthropic_sdk_raises(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(server, "MAX_BODY", 1024)
    with (
        fake_upstream(lambda b, h: Answer(body={"input_tokens": 3})) as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        client = anthropic.Anthropic(base_url=proxy.url.removesuffix("/v1"), api_key="k" * 12)
        with pytest.raises(anthropic.APIStatusError, match="over the workbench proxy's") as raised:
            client.messages.count_tokens(
                model="m", messages=[{"role": "user", "content": "x" * 2048}]
            )
        client.close()
    assert raised.value.status_code == 413
    assert upstream.requests == []


@pytest.mark.parametrize("path", ["/chat/completions", "/responses", "/messages"])
def test_a_long_conversation_is_forwarded_whole_with_its_length(path: str) -> None:
    """A body of a few MiB (a conversation with images) goes upstream as it came.

    aiohttp warns about a bytes body over 1 MiB (a `ResourceWarning`); where warnings are errors,
    as in this suite, the proxy answered such a request with a 500.
    """
    body = padded(path, 3 * 2**20)
    with (
        fake_upstream(lambda b, h: Answer(body=ANSWERS[path])) as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        got = httpx.post(f"{proxy.url}{path}", content=body, timeout=60)
    assert got.status_code == 200, got.text
    (forwarded,) = upstream.requests
    assert forwarded[1]["content-length"] == str(len(body))
    assert forwarded[0] == json.loads(body)


SENT_WRONG = [  # (a body, where its problem is and what, as the 400 says)
    (b"{not json", "<root>: Invalid JSON: key must be a string at line 1 column 2"),
    (b"[1, 2]", "<root>: Input should be an object"),
    (b"", "<root>: Invalid JSON: EOF while parsing a value at line 1 column 0"),
]
MISSING = {"/chat/completions": "messages", "/responses": "input", "/messages": "messages"}


@pytest.mark.parametrize("path", ["/chat/completions", "/responses", "/messages"])
def test_a_body_that_is_not_the_wire_s_request_is_a_400_saying_what_is_wrong_where(
    path: str,
) -> None:
    """It said '(1 problems): ' and quoted the body back, leaving the client to find what was
    wrong in it; now the places and problems, in the wire's own error shape."""
    wrong_shape = {"model": "m", "max_tokens": 8, MISSING[path]: 5}
    cases = [*SENT_WRONG, (json.dumps({"model": "m"}).encode(), f"{MISSING[path]}: Field required")]
    with (
        fake_upstream(lambda b, h: Answer(body=ANSWERS[path])) as upstream,
        wb.proxy(upstream.url, store=wb.RunStore(":memory:")) as proxy,
    ):
        for body, said in [*cases, (json.dumps(wrong_shape).encode(), f"{MISSING[path]}")]:
            got = httpx.post(f"{proxy.url}{path}", content=body, timeout=30)
            assert got.status_code == 400, got.text
            error = got.json()["error"]
            assert error["type"] == "invalid_request_error"
            assert error["message"].startswith("the request is not ")
            assert f": {said}" in error["message"], error["message"]
            assert "problems" not in error["message"]
        fine = httpx.post(f"{proxy.url}{path}", json=REQUESTS[path], timeout=30)
    assert fine.status_code == 200 and len(upstream.requests) == 1  # nothing else went up
    assert len(proxy.run_ids) == 1
