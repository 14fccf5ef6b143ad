"""A tiny OpenAI-compatible Chat Completions server on loopback, for tests that need a real one.

It answers like a calculator model: a user question "What is A + B?" gets a call of ``add``, a tool
result gets "A + B = R". With ``"stream": true`` the answer comes as server-sent events, the text
in several deltas. Every request body is kept in ``bodies`` and every Authorization header in
``authorizations``. Port 0: the system picks a free port.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any


class ChatServer:
    def __init__(self) -> None:
        self.bodies: list[dict[str, Any]] = []
        self.authorizations: list[str | None] = []
        server = self

        class Handler(BaseHTTPRequestHandler):
            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                server.bodies.append(body)
                server.authorizations.append(self.headers.get("Authorization"))
                message = answer(body["messages"])
                if body.get("stream"):
                    self._stream(message)
                else:
                    self._json(message)

            def _json(self, message: dict[str, Any]) -> None:
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                payload = {
                    "id": f"chatcmpl-{len(server.bodies)}",
                    "model": "calculator-1",
                    "choices": [{"index": 0, "message": message, "finish_reason": finish}],
                    "usage": {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25},
                }
                data = json.dumps(payload).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            def _stream(self, message: dict[str, Any]) -> None:
                self.send_response(200)
                self.send_header("Content-Type", "text/event-stream")
                self.end_headers()
                top = {"id": f"chatcmpl-{len(server.bodies)}", "model": "calculator-1"}
                for delta in deltas(message):
                    chunk = {**top, "choices": [{"index": 0, "delta": delta}]}
                    self.wfile.write(f"data: {json.dumps(chunk)}\n\n".encode())
                finish = "tool_calls" if message.get("tool_calls") else "stop"
                last = {**top, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]}
                usage = {"prompt_tokens": 20, "completion_tokens": 5, "total_tokens": 25}
                self.wfile.write(f"data: {json.dumps({**last, 'usage': usage})}\n\n".encode())
                self.wfile.write(b"data: [DONE]\n\n")

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.base_url = f"http://127.0.0.1:{self.httpd.server_address[1]}/v1"

    def __enter__(self) -> ChatServer:
        threading.Thread(target=self.httpd.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()


def answer(messages: list[dict[str, Any]]) -> dict[str, Any]:
    last = messages[-1]
    if last["role"] == "tool":
        question = next(m for m in reversed(messages) if m["role"] == "user")["content"]
        a, b = re.findall(r"\d+", question)[:2]
        return {"role": "assistant", "content": f"{a} + {b} = {last['content']}"}
    a, b = (int(n) for n in re.findall(r"\d+", last["content"])[:2])
    call = {
        "id": f"call_{a}_{b}",
        "type": "function",
        "function": {"name": "add", "arguments": json.dumps({"a": a, "b": b})},
    }
    return {"role": "assistant", "content": None, "tool_calls": [call]}


def deltas(message: dict[str, Any]) -> Iterator[dict[str, Any]]:
    if message.get("tool_calls"):
        (call,) = message["tool_calls"]
        yield {"role": "assistant", "tool_calls": [{"index": 0, **call}]}
        return
    text = message["content"]
    for i in range(0, len(text), 3):
        yield {"content": text[i : i + 3]}


@contextmanager
def chat_server() -> Iterator[ChatServer]:
    with ChatServer() as server:
        yield server


def closed_port_url() -> str:
    """A base URL nothing listens on: a port bound and released."""
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"
