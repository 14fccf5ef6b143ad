"""A streamed answer's usage is recorded even when the agent did not ask for it, unseen by it.

Real servers (OpenAI, vLLM) send a stream's usage only when asked (``stream_options``); the proxy
asks on the agent's behalf and takes the usage-only chunk out of what it relays.
"""

from __future__ import annotations

import json
from typing import Any

import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, chunks, fake_upstream
from workbench._proxy.usage import UsageHider, asking_usage

KEY = "sk-test-secret-4e1f9a"
USAGE_EVENT = b'data: {"id": "c", "choices": [], "usage": {"prompt_tokens": 5}}'


def usage_when_asked(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Streams ``hello world``; the usage chunk only when the request asks for it."""
    events = chunks("hello world")
    if not (body.get("stream_options") or {}).get("include_usage"):
        events = events[:-1]
    return Answer(chunks=events)


@pytest.mark.parametrize("asks", [False, True])
def test_a_stream_is_recorded_with_its_usage_and_the_agent_reads_what_it_asked_for(
    asks: bool,
) -> None:
    store = wb.RunStore(":memory:")
    extra: dict[str, Any] = {"stream_options": {"include_usage": True}} if asks else {}
    with (
        fake_upstream(usage_when_asked) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        stream = client.chat.completions.create(
            model="fake-model", messages=[{"role": "user", "content": "hi"}], stream=True, **extra
        )
        received = list(stream)
    # the agent gets a usage chunk only if it asked; every other chunk has its choice
    assert [c.usage is not None for c in received if not c.choices] == ([True] if asks else [])
    text = "".join(c.choices[0].delta.content or "" for c in received if c.choices)
    assert text == "hello world"
    ((sent, _),) = upstream.requests
    assert sent["stream_options"] == {"include_usage": True}
    (step,) = store.load(proxy.run_ids[0]).steps
    assert (step.usage.input_tokens, step.usage.output_tokens) == (5, 3)
    snapshot = store.load(proxy.run_ids[0]).snapshots[0]
    assert "stream_options" not in snapshot.model_settings  # how the answer travels: not a setting


def test_a_request_with_other_stream_options_keeps_them() -> None:
    request = {"model": "m", "stream": True, "stream_options": {"continuous_usage_stats": True}}
    asked = json.loads(asking_usage(json.dumps(request).encode(), request))
    assert asked["stream_options"] == {"continuous_usage_stats": True, "include_usage": True}
    assert asked["model"] == "m" and asked["stream"] is True


def test_a_request_without_stream_options_keeps_its_bytes_but_the_option() -> None:
    body = b'  {"model": "m", "messages": [], "stream": true}'
    asked = asking_usage(body, json.loads(body))
    assert json.loads(asked) == {**json.loads(body), "stream_options": {"include_usage": True}}
    assert asked.endswith(b'"model": "m", "messages": [], "stream": true}')


def _stream(end: bytes) -> tuple[bytes, bytes]:
    """A stream with ``end`` as its line end, and the same stream without the usage event."""
    events = [
        b'data: {"choices": [{"delta": {"content": "h\xc3\xa9"}}]}',
        USAGE_EVENT,
        b"data: [DONE]",
    ]
    comment = b": keep-alive" + end + end
    whole = comment + b"".join(e + end + end for e in events)
    kept = comment + b"".join(e + end + end for e in events if e is not USAGE_EVENT)
    return whole, kept


@pytest.mark.parametrize("end", [b"\n", b"\r\n", b"\r"])
def test_the_hider_takes_out_only_the_usage_event_wherever_the_pieces_are_cut(end: bytes) -> None:
    whole, kept = _stream(end)
    for cut in range(len(whole) + 1):
        hider = UsageHider()
        passed = hider.feed(whole[:cut]) + hider.feed(whole[cut:]) + hider.close()
        assert passed == kept, cut


def test_the_hider_passes_a_last_event_without_a_blank_line_and_anything_not_usage() -> None:
    hider = UsageHider()
    odd = b'data: {"choices": [], "usage": null}\n\ndata: not json "usage" "choices"\n\n'
    assert hider.feed(odd) == odd  # no usage object, and garbage: passed on as they are
    assert hider.feed(b"data: [DONE]") == b""
    assert hider.close() == b"data: [DONE]"
    unended = UsageHider()
    assert unended.feed(USAGE_EVENT) == b"" and unended.close() == b""
