"""A small fake OpenAI-compatible server on loopback, for testing the proxy without a model.

It is a real HTTP server (the stdlib's, in a thread) on a free port. What it answers is decided
per request by ``behaviour(body, headers)``, which returns an `Answer`: a JSON completion, an SSE
stream, an error status, garbage, a delay, or a stream cut off half-way. Every request it gets is
kept in ``requests`` (body and headers), so a test can see exactly what the proxy forwarded.
"""

from __future__ import annotations

import json
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


@dataclass
class Answer:
    """What the fake answers one request with."""

    status: int = 200
    body: Any = None
    """A dict (sent as JSON) or bytes (sent as they are)."""
    chunks: list[dict[str, Any]] | None = None
    """When set, the answer is an SSE stream of these chunks, then ``[DONE]`` unless ``cut``."""
    delay: float = 0.0
    cut: bool = False
    """Close the connection after half of the chunks, without ``[DONE]``."""
    gap: float = 0.0
    """Seconds between chunks."""
    linger: float = 0.0
    """Seconds the connection stays open after ``[DONE]`` or ``events`` (a server slow to end
    the body)."""
    headers: dict[str, str] = field(default_factory=dict)
    """More headers for the answer (a redirect's ``location``)."""
    events: bytes | None = None
    """When set, the answer is an SSE stream of exactly these bytes (events of any shape)."""
    drop: bool = False
    """Close the connection without answering, as a server does to a kept-alive connection it
    has just timed out: the client finds it closed when it sends its request on it."""


def completion(text: str = "", calls: list[tuple[str, str, dict[str, Any]]] = ()) -> dict[str, Any]:  # type: ignore[assignment]
    """A chat completion answering ``text`` and/or ``calls`` ``(call_id, name, arguments)``."""
    message: dict[str, Any] = {"role": "assistant", "content": text or None}
    if calls:
        message["tool_calls"] = [
            {"id": i, "type": "function", "function": {"name": n, "arguments": json.dumps(a)}}
            for i, n, a in calls
        ]
    return {
        "id": "chatcmpl-fake",
        "object": "chat.completion",
        "created": 1,
        "model": "fake-model",
        "choices": [
            {"index": 0, "message": message, "finish_reason": "tool_calls" if calls else "stop"}
        ],
        "usage": {"prompt_tokens": 11, "completion_tokens": 7, "total_tokens": 18},
    }


def chunks(text: str, pieces: int = 4) -> list[dict[str, Any]]:
    """A streamed answer of ``text`` in ``pieces`` deltas, a finish chunk and a usage chunk."""
    size = max(1, len(text) // pieces)
    parts = [text[i : i + size] for i in range(0, len(text), size)]
    head = {"id": "chatcmpl-fake", "object": "chat.completion.chunk", "model": "fake-model"}
    out = [{**head, "choices": [{"index": 0, "delta": {"content": p}}]} for p in parts]
    out.append({**head, "choices": [{"index": 0, "delta": {}, "finish_reason": "stop"}]})
    out.append({**head, "choices": [], "usage": {"prompt_tokens": 5, "completion_tokens": 3}})
    return out


Behaviour = Callable[[dict[str, Any], dict[str, str]], Answer]


@dataclass
class FakeUpstream:
    """The running fake: its ``url`` (``.../v1``) and the requests it got."""

    url: str
    requests: list[tuple[dict[str, Any], dict[str, str]]] = field(default_factory=list)
    behaviour: Behaviour = field(default=lambda body, headers: Answer(body=completion("hi")))
    hung_up: threading.Event = field(default_factory=threading.Event)
    """Set when a client closed the connection before a stream was all sent."""
    paths: list[str] = field(default_factory=list)
    """The path (and query) of every request, GET and POST, in order."""


def _write_head(handler: BaseHTTPRequestHandler, status: int, headers: dict[str, str]) -> None:
    handler.send_response(status)
    for name, value in headers.items():
        handler.send_header(name, value)
    handler.end_headers()


def _write_events(handler: BaseHTTPRequestHandler, answer: Answer) -> None:
    if answer.events is not None:
        handler.wfile.write(answer.events)
        handler.wfile.flush()
        time.sleep(answer.linger)
        return
    events = answer.chunks or []
    if answer.cut:
        events = events[: len(events) // 2]
    for chunk in events:
        handler.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
        handler.wfile.flush()
        time.sleep(answer.gap)
    if not answer.cut:
        handler.wfile.write(b"data: [DONE]\n\n")
        handler.wfile.flush()
        time.sleep(answer.linger)


def _handler(fake: FakeUpstream) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:
            pass

        def do_GET(self) -> None:
            fake.paths.append(self.path)
            self._json(200, {"object": "list", "data": [{"id": "fake-model", "object": "model"}]})

        def do_POST(self) -> None:
            length = int(self.headers.get("content-length", "0"))
            body = json.loads(self.rfile.read(length) or b"{}")
            headers = {k.lower(): v for k, v in self.headers.items()}
            fake.paths.append(self.path)
            fake.requests.append((body, headers))
            answer = fake.behaviour(body, headers)
            if answer.drop:
                self.close_connection = True
                return
            time.sleep(answer.delay)
            if answer.chunks is not None or answer.events is not None:
                self._stream(answer)
            elif isinstance(answer.body, bytes):
                self._send(answer.status, answer.body, "text/plain", answer.headers)
            else:
                self._json(answer.status, answer.body, answer.headers)

        def _json(self, status: int, body: Any, headers: dict[str, str] | None = None) -> None:
            self._send(status, json.dumps(body).encode(), "application/json", headers)

        def _send(
            self, status: int, data: bytes, kind: str, headers: dict[str, str] | None = None
        ) -> None:
            sent = {"content-type": kind, "content-length": str(len(data))} | (headers or {})
            _write_head(self, status, sent)
            self.wfile.write(data)

        def _stream(self, answer: Answer) -> None:
            self.send_response(answer.status)
            self.send_header("content-type", "text/event-stream")
            self.send_header("connection", "close")
            for name, value in answer.headers.items():
                self.send_header(name, value)
            self.end_headers()
            self.close_connection = True
            try:
                _write_events(self, answer)
            except (BrokenPipeError, ConnectionResetError):
                fake.hung_up.set()

    return Handler


class _Server(ThreadingHTTPServer):
    def handle_error(self, request: Any, client_address: Any) -> None:
        """Nothing to say of a request the proxy dropped (its client hung up): a traceback else."""
        if not isinstance(sys.exc_info()[1], BrokenPipeError | ConnectionResetError):
            super().handle_error(request, client_address)


@contextmanager
def fake_upstream(behaviour: Behaviour | None = None) -> Iterator[FakeUpstream]:
    """A fake server on a free loopback port, for the duration of the block."""
    server = _Server(("127.0.0.1", 0), BaseHTTPRequestHandler)
    fake = FakeUpstream(url=f"http://127.0.0.1:{server.server_address[1]}/v1")
    if behaviour is not None:
        fake.behaviour = behaviour
    server.RequestHandlerClass = _handler(fake)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield fake
    finally:
        server.shutdown()
        server.server_close()
