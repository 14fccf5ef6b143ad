"""A real OpenAI-compatible Chat Completions server on loopback, told per test how to misbehave.

`ModelServer` listens on 127.0.0.1 on a free port and answers each ``POST /chat/completions`` with
the next `Answer` in its queue (the last one repeats). An answer is a function of the request
handler: it may send a good completion, an HTTP error, an HTML page, a stream that drips, lies or
breaks off, or nothing at all. Every request is kept (headers and JSON body) for the test to read.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

Answer = Callable[["_Handler"], None]


@dataclass(frozen=True)
class Seen:
    """One request as the server saw it."""

    headers: dict[str, str]
    body: Any


class _Handler(BaseHTTPRequestHandler):
    server: _Server
    protocol_version = "HTTP/1.0"  # every response ends by closing: no keep-alive surprises

    def do_POST(self) -> None:
        length = int(self.headers.get("content-length") or 0)
        raw = self.rfile.read(length)
        body = json.loads(raw) if raw else None
        self.server.owner.record(Seen(dict(self.headers.items()), body))
        self.server.owner.next_answer()(self)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet: the tests read what was sent, not a log."""

    def send(self, status: int, payload: bytes, content_type: str) -> None:
        self.send_response(status)
        self.send_header("content-type", content_type)
        self.send_header("content-length", str(len(payload)))
        self.end_headers()
        self.wfile.write(payload)


class _Server(ThreadingHTTPServer):
    daemon_threads = True
    owner: ModelServer


class ModelServer:
    """The server; use `serving()` to start it and stop it with the test."""

    def __init__(self) -> None:
        self._server = _Server(("127.0.0.1", 0), _Handler)
        self._server.owner = self
        self._answers: list[Answer] = []
        self._lock = threading.Lock()
        self.requests: list[Seen] = []
        self.released = threading.Event()
        """Set at shutdown: answers that hang or drip stop at once."""

    @property
    def url(self) -> str:
        """The base URL an `OpenAIModel` takes (``.../v1``)."""
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1"

    def answer(self, *answers: Answer) -> ModelServer:
        """Queue answers for the next requests; the last one is repeated after the queue ends."""
        with self._lock:
            self._answers.extend(answers)
        return self

    def record(self, seen: Seen) -> None:
        with self._lock:
            self.requests.append(seen)

    def next_answer(self) -> Answer:
        with self._lock:
            if not self._answers:
                return reply(500, {"error": {"message": "the test queued no answer"}})
            return self._answers.pop(0) if len(self._answers) > 1 else self._answers[0]


@contextmanager
def serving() -> Iterator[ModelServer]:
    """Run a `ModelServer` on a daemon thread for the block."""
    server = ModelServer()
    thread = threading.Thread(target=server._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.released.set()
        server._server.shutdown()
        server._server.server_close()
        thread.join(5)


# --- answers -------------------------------------------------------------------------------------


def completion(content: str | None = "Hello!", **message: Any) -> dict[str, Any]:
    """A well-formed chat completion with one choice."""
    return {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "model": "fault-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content, **message},
                "finish_reason": "tool_calls" if message.get("tool_calls") else "stop",
            }
        ],
        "usage": {"prompt_tokens": 10, "completion_tokens": 5, "total_tokens": 15},
    }


def tool_call(name: str, arguments: str, call_id: str | None = "call_1") -> dict[str, Any]:
    """One wire tool call (``arguments`` is the JSON string a server sends)."""
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def reply(status: int, body: dict[str, Any] | str, content_type: str | None = None) -> Answer:
    """Answer once, whole: JSON for a dict, the text as given otherwise."""
    payload = json.dumps(body) if isinstance(body, dict) else body
    kind = content_type or ("application/json" if isinstance(body, dict) else "text/html")
    return lambda handler: handler.send(status, payload.encode(), kind)


def sse(*events: dict[str, Any] | str) -> bytes:
    """Server-sent events: dicts as ``data:`` JSON, strings as given (``"data: [DONE]"``)."""
    lines = [e if isinstance(e, str) else f"data: {json.dumps(e)}" for e in events]
    return "".join(f"{line}\n\n" for line in lines).encode()


def chunk(content: str | None = None, finish: str | None = None, **top: Any) -> dict[str, Any]:
    """One stream chunk with a text delta."""
    delta = {} if content is None else {"content": content}
    return {
        "id": "chatcmpl-s",
        "choices": [{"index": 0, "delta": delta, "finish_reason": finish}],
        **top,
    }


def stream(payload: bytes, *, every: float = 0.0, piece: int = 0) -> Answer:
    """A 200 ``text/event-stream`` with no length, sent in ``piece``-byte pieces ``every`` seconds.

    ``piece=0`` sends it all at once. The stream stops early when the server is released.
    """

    def send(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "text/event-stream")
        handler.end_headers()
        size = piece or len(payload) or 1
        for start in range(0, len(payload), size):
            handler.wfile.write(payload[start : start + size])
            handler.wfile.flush()
            if every and handler.server.owner.released.wait(every):
                return

    return send


def hang(seconds: float = 30.0) -> Answer:
    """Read the request and say nothing (until released)."""
    return lambda handler: _wait(handler, seconds)


def _wait(handler: _Handler, seconds: float) -> None:
    handler.server.owner.released.wait(seconds)


def drop() -> Answer:
    """Close the connection without a word."""

    def close(handler: _Handler) -> None:
        handler.close_connection = True
        handler.connection.shutdown(2)

    return close


def headers_then_drop(length: int, sent: bytes) -> Answer:
    """Promise ``length`` bytes, send ``sent`` (fewer), and close: a truncated body."""

    def send(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(length))
        handler.end_headers()
        handler.wfile.write(sent)
        handler.wfile.flush()
        handler.connection.shutdown(2)

    return send


def drip(payload: bytes) -> Answer:
    """A complete JSON body, its length promised, sent one byte every 0.2 s (until released)."""

    def send(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-length", str(len(payload)))
        handler.end_headers()
        for byte in payload:
            handler.wfile.write(bytes([byte]))
            handler.wfile.flush()
            if handler.server.owner.released.wait(0.2):
                return

    return send


def false_gzip() -> Answer:
    """A 200 that says its body is gzip, and it is not."""

    def send(handler: _Handler) -> None:
        handler.send_response(200)
        handler.send_header("content-type", "application/json")
        handler.send_header("content-encoding", "gzip")
        handler.send_header("content-length", "10")
        handler.end_headers()
        handler.wfile.write(b"not gzip!!")

    return send


def elapsed(since: float) -> float:
    """Seconds since a ``time.monotonic()`` reading."""
    return time.monotonic() - since


# --- a trace endpoint ----------------------------------------------------------------------------


class _TraceHandler(BaseHTTPRequestHandler):
    server: _TraceServer
    protocol_version = "HTTP/1.0"

    def do_POST(self) -> None:
        receiver = self.server.receiver
        raw = self.rfile.read(int(self.headers.get("content-length") or 0))
        receiver.bodies.append(raw)
        receiver.hit.set()
        receiver.released.wait(receiver.delay)
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceResponse,
        )

        answer = ExportTraceServiceResponse().SerializeToString()
        status = receiver.status
        self.send_response(status)
        self.send_header("content-type", "application/x-protobuf")
        self.send_header("content-length", str(len(answer)))
        self.end_headers()
        self.wfile.write(answer)

    def log_message(self, format: str, *args: Any) -> None:
        """Quiet."""


class _TraceServer(ThreadingHTTPServer):
    daemon_threads = True
    receiver: TraceReceiver


class TraceReceiver:
    """An OTLP/HTTP trace endpoint on loopback that keeps each request's raw bytes.

    ``status`` is what it answers (200, or an error to play a failing backend); ``delay`` is how
    long it holds each request before answering (a slow backend), cut short at shutdown.
    """

    def __init__(self, status: int = 200, delay: float = 0.0, port: int = 0) -> None:
        self.status = status
        self.delay = delay
        self.bodies: list[bytes] = []
        self.hit = threading.Event()
        self.released = threading.Event()
        self._server = _TraceServer(("127.0.0.1", port), _TraceHandler)
        self._server.receiver = self

    @property
    def url(self) -> str:
        host, port = self._server.server_address[:2]
        return f"http://{host!s}:{port}/v1/traces"

    def span_names(self) -> list[str]:
        """The names of every span received."""
        from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
            ExportTraceServiceRequest,
        )

        names = []
        for body in self.bodies:
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    names += [span.name for span in scope.spans]
        return names


@contextmanager
def receiving(status: int = 200, delay: float = 0.0, port: int = 0) -> Iterator[TraceReceiver]:
    """Run a `TraceReceiver` for the block (on ``port``, or a free one)."""
    receiver = TraceReceiver(status, delay, port)
    thread = threading.Thread(target=receiver._server.serve_forever, daemon=True)
    thread.start()
    try:
        yield receiver
    finally:
        receiver.released.set()
        receiver._server.shutdown()
        receiver._server.server_close()
        thread.join(5)
