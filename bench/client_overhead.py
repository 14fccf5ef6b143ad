"""Client overhead per request: workbench's OpenAIModel against the `openai` SDK, same requests.

    .venv/bin/python bench/client_overhead.py [--requests 400] [--real http://127.0.0.1:8088/v1]

What is measured: both clients send the same chat completion (a short conversation and one tool)
to the same server and turn the answer into objects: our `ModelResponse`, the SDK's
`ChatCompletion` (for a stream, the SDK's chunks with the text and tool-call pieces gathered, which
is what a caller has to do with it). Two servers:

- a fake OpenAI server on loopback, in its own process, that answers instantly with a canned
  completion (JSON, or an SSE stream of 40 chunks). What remains is the client: building the
  request, HTTP, parsing. Reported per request: wall time and the client process's CPU time.
- optionally (``--real``) a real OpenAI-compatible server, e.g. ``scripts/llm-server start``:
  there the model's own time dominates and the ratio should be close to 1.

Each client runs with its defaults (both retry connection errors). They take turns in small
rounds (ours, theirs, ours, ...) so that load from anything else on the machine falls on both
alike; medians are reported, with the ratio ours / openai.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import os
import socket
import statistics
import sys
import time
from collections.abc import Awaitable, Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import openai

from workbench.messages import Message
from workbench.models import ModelRequest, OpenAIModel
from workbench.tools import ToolDefinition

MODEL = "gpt-4o-mini"
ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)
MESSAGES = [
    Message.system("You add numbers with the add tool."),
    Message.user("What is 2 + 3?"),
    Message.assistant_tool_call("add", {"a": 2, "b": 3}, call_id="c1"),
    Message.tool_result("c1", "5"),
    Message.assistant("2 + 3 = 5"),
    Message.user("What is 17 + 25?"),
]
SDK_MESSAGES: list[Any] = [
    {"role": "system", "content": "You add numbers with the add tool."},
    {"role": "user", "content": "What is 2 + 3?"},
    {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c1",
                "type": "function",
                "function": {"name": "add", "arguments": '{"a": 2, "b": 3}'},
            }
        ],
    },
    {"role": "tool", "tool_call_id": "c1", "content": "5"},
    {"role": "assistant", "content": "2 + 3 = 5"},
    {"role": "user", "content": "What is 17 + 25?"},
]
SDK_TOOLS: list[Any] = [
    {
        "type": "function",
        "function": {
            "name": ADD.name,
            "description": ADD.description,
            "parameters": ADD.parameters,
        },
    }
]

# --- the fake server ------------------------------------------------------------------------------


def _completion() -> bytes:
    call = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "add", "arguments": '{"a": 17, "b": 25}'}  # type: ignore[assignment]
    message = {"role": "assistant", "content": "Let me add.", "tool_calls": [call]}
    return json.dumps(
        {
            "id": "chatcmpl-1",
            "object": "chat.completion",
            "created": 1,
            "model": MODEL,
            "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
            "usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100},
        }
    ).encode()


def _stream(chunks: int = 40) -> bytes:
    def event(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> str:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else []
        body = {
            "id": "chatcmpl-1",
            "object": "chat.completion.chunk",
            "created": 1,
            "model": MODEL,
            "choices": choices,
            **extra,
        }
        return f"data: {json.dumps(body)}\n\n"

    events = [event({"role": "assistant", "content": ""})]
    events += [event({"content": f"word{i} "}) for i in range(chunks)]
    events.append(event({}, "stop"))
    usage = {"prompt_tokens": 80, "completion_tokens": chunks, "total_tokens": 80 + chunks}
    events.append(event({}, None, usage=usage))
    events.append("data: [DONE]\n\n")
    return "".join(events).encode()


def _response(body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        "connection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    json_answer = _response(_completion(), "application/json")
    sse_answer = _response(_stream(), "text/event-stream")
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            writer.write(sse_answer if b'"stream":true' in body.replace(b" ", b"") else json_answer)
            await writer.drain()
    except (asyncio.IncompleteReadError, ConnectionError):
        writer.close()


def _run_fake_server(port: int) -> None:
    async def main() -> None:
        server = await asyncio.start_server(_serve_connection, "127.0.0.1", port)
        async with server:
            await server.serve_forever()

    asyncio.run(main())


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
        return port


def start_fake_server() -> tuple[str, multiprocessing.Process]:
    port = _free_port()
    process = multiprocessing.Process(target=_run_fake_server, args=(port,), daemon=True)
    process.start()
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return f"http://127.0.0.1:{port}/v1", process
        except OSError:
            time.sleep(0.05)
    raise RuntimeError("the fake server did not start")


# --- the two clients --------------------------------------------------------------------------


Call = Callable[[], Awaitable[object]]


def ours(base_url: str, model: str, stream: bool, settings: dict[str, Any]) -> Call:
    client = OpenAIModel(model, base_url=base_url, api_key="sk-bench")
    request = ModelRequest(
        messages=MESSAGES,
        tools=[ADD],
        settings={**settings, "stream": stream},  # type: ignore[typeddict-item]
    )

    async def call() -> object:
        return await client.request(request)

    return call


def theirs(base_url: str, model: str, stream: bool, settings: dict[str, Any]) -> Call:
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench")

    async def call() -> object:
        if not stream:
            return await client.chat.completions.create(
                model=model, messages=SDK_MESSAGES, tools=SDK_TOOLS, **settings
            )
        chunks = await client.chat.completions.create(
            model=model,
            messages=SDK_MESSAGES,
            tools=SDK_TOOLS,
            stream=True,
            stream_options={"include_usage": True},
            **settings,
        )
        text: list[str] = []
        calls: dict[int, list[str]] = {}
        async for chunk in chunks:
            for choice in chunk.choices:
                text.append(choice.delta.content or "")
                for piece in choice.delta.tool_calls or ():
                    calls.setdefault(piece.index, []).append(piece.function.arguments or "")  # type: ignore[union-attr]
        return "".join(text), calls

    return call


# --- measuring ------------------------------------------------------------------------------------


async def _timed(call: Call, times: list[float], cpu: list[float]) -> None:
    wall0, cpu0 = time.perf_counter(), time.process_time()
    await call()
    cpu.append(time.process_time() - cpu0)
    times.append(time.perf_counter() - wall0)


async def compare(clients: dict[str, Call], requests: int, round_size: int = 10) -> dict[str, Any]:
    wall: dict[str, list[float]] = {name: [] for name in clients}
    cpu: dict[str, list[float]] = {name: [] for name in clients}
    for call in clients.values():  # warm up: connections, imports, caches
        for _ in range(5):
            await call()
    for _ in range(max(1, requests // round_size)):
        for name, call in clients.items():
            for _ in range(round_size):
                await _timed(call, wall[name], cpu[name])
    return {
        name: {"wall": statistics.median(wall[name]), "cpu": statistics.median(cpu[name])}
        for name in clients
    }


def report(title: str, result: dict[str, Any], n: int) -> None:
    a, b = result["workbench"], result["openai"]
    print(f"\n{title} ({n} requests each, medians)")
    print(f"  {'client':<10} {'wall µs':>10} {'cpu µs':>10}")
    for name, figures in result.items():
        print(f"  {name:<10} {figures['wall'] * 1e6:>10.0f} {figures['cpu'] * 1e6:>10.0f}")
    wall, cpu = a["wall"] / b["wall"], a["cpu"] / b["cpu"]
    print(f"  ratio workbench/openai: wall {wall:.2f}x, cpu {cpu:.2f}x")


async def bench(
    base_url: str, model: str, requests: int, settings: dict[str, Any], label: str, rounds: int
) -> None:
    for stream in (False, True):
        clients = {
            "workbench": ours(base_url, model, stream, settings),
            "openai": theirs(base_url, model, stream, settings),
        }
        result = await compare(clients, requests, rounds)
        kind = "SSE stream" if stream else "JSON"
        report(f"{label}, {kind}", result, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="per client and mode")
    parser.add_argument("--real", metavar="BASE_URL", help="also against this real server")
    parser.add_argument("--real-model", default="gemma-3-270m")
    parser.add_argument("--real-requests", type=int, default=40)
    args = parser.parse_args()

    print(f"python {sys.version.split()[0]}, openai {openai.__version__}, pid {os.getpid()}")
    base_url, server = start_fake_server()
    try:
        asyncio.run(bench(base_url, MODEL, args.requests, {}, "fake server on loopback", 10))
    finally:
        server.terminate()
    if args.real:
        settings = {"temperature": 0, "seed": 1, "max_tokens": 8}
        label = f"real server {args.real} ({args.real_model}, max_tokens 8)"
        # one request each in turn: the model's speed swings with the machine's load
        asyncio.run(bench(args.real, args.real_model, args.real_requests, settings, label, 1))


if __name__ == "__main__":
    main()
