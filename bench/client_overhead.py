"""Client overhead per request: each workbench client against its official SDK, same requests.

    .venv/bin/python bench/client_overhead.py [--requests 400] [--real http://127.0.0.1:8088/v1]

Three wires, each with its pair: `OpenAIModel` and the ``openai`` SDK's Chat Completions,
`AnthropicModel` and the ``anthropic`` SDK's Messages, `OpenAIResponsesModel` and the ``openai``
SDK's Responses (stateless: ``store: false``, the whole input each call). What is measured: both
clients of a pair send the same request (a short conversation with a tool call and its result,
and one tool) to the same server and turn the answer into objects: our `ModelResponse`, the SDK's
own (for a stream, the SDK's events with the text and tool-call pieces gathered, which is what a
caller has to do with them). Two servers:

- a fake server on loopback, in its own process, that answers each route instantly with a canned
  answer (JSON, or an SSE stream of 40 text pieces). What remains is the client: building the
  request, HTTP, parsing. Reported per request: wall time and the client process's CPU time.
- optionally (``--real``) a real server that speaks all three, e.g. ``scripts/llm-server start``
  (llama.cpp): there the model's own time dominates and the ratio should be close to 1.

Each client runs with its defaults (all retry connection errors). They take turns in small
rounds (ours, theirs, ours, ...) so that load from anything else on the machine falls on both
alike; medians are reported, with the ratio ours / theirs. The aim is at most 1.0x.
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

import anthropic
import openai

from workbench.messages import Message
from workbench.models import AnthropicModel, ModelRequest, OpenAIModel, OpenAIResponsesModel
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
ANTHROPIC_SYSTEM = "You add numbers with the add tool."
ANTHROPIC_MESSAGES: list[Any] = [
    {"role": "user", "content": [{"type": "text", "text": "What is 2 + 3?"}]},
    {
        "role": "assistant",
        "content": [{"type": "tool_use", "id": "c1", "name": "add", "input": {"a": 2, "b": 3}}],
    },
    {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "c1", "content": "5"}]},
    {"role": "assistant", "content": [{"type": "text", "text": "2 + 3 = 5"}]},
    {"role": "user", "content": [{"type": "text", "text": "What is 17 + 25?"}]},
]
ANTHROPIC_TOOLS: list[Any] = [
    {"name": ADD.name, "description": ADD.description, "input_schema": ADD.parameters}
]
RESPONSES_INPUT: list[Any] = [
    {"type": "message", "role": "system", "content": "You add numbers with the add tool."},
    {"type": "message", "role": "user", "content": "What is 2 + 3?"},
    {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 2, "b": 3}'},
    {"type": "function_call_output", "call_id": "c1", "output": "5"},
    {"type": "message", "role": "assistant", "content": "2 + 3 = 5"},
    {"type": "message", "role": "user", "content": "What is 17 + 25?"},
]
RESPONSES_TOOLS: list[Any] = [
    {
        "type": "function",
        "name": ADD.name,
        "description": ADD.description,
        "parameters": ADD.parameters,
        "strict": False,
    }
]


# --- the fake server ------------------------------------------------------------------------------

PIECES = 40
"""Text pieces in each canned stream."""


def _sse(events: list[dict[str, Any]], named: bool) -> bytes:
    """Events as SSE; ``named`` writes the ``event:`` line Anthropic and Responses send."""
    lines = [
        (f"event: {e['type']}\n" if named else "") + f"data: {json.dumps(e)}\n\n" for e in events
    ]
    return "".join(lines).encode()


def _chat() -> tuple[bytes, bytes]:
    call = {"id": "call_1", "type": "function"}
    call["function"] = {"name": "add", "arguments": '{"a": 17, "b": 25}'}  # type: ignore[assignment]
    message = {"role": "assistant", "content": "Let me add.", "tool_calls": [call]}
    top = {"id": "chatcmpl-1", "created": 1, "model": MODEL}
    whole = {
        **top,
        "object": "chat.completion",
        "choices": [{"index": 0, "message": message, "finish_reason": "tool_calls"}],
        "usage": {"prompt_tokens": 80, "completion_tokens": 20, "total_tokens": 100},
    }

    def chunk(delta: dict[str, Any], finish: str | None = None, **extra: Any) -> dict[str, Any]:
        choices = [{"index": 0, "delta": delta, "finish_reason": finish}] if delta or finish else []
        return {**top, "object": "chat.completion.chunk", "choices": choices, **extra}

    events = [chunk({"role": "assistant", "content": ""})]
    events += [chunk({"content": f"word{i} "}) for i in range(PIECES)]
    usage = {"prompt_tokens": 80, "completion_tokens": PIECES, "total_tokens": 80 + PIECES}
    events += [chunk({}, "stop"), chunk({}, None, usage=usage)]
    return json.dumps(whole).encode(), _sse(events, named=False) + b"data: [DONE]\n\n"


def _anthropic() -> tuple[bytes, bytes]:
    use = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 17, "b": 25}}
    whole = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": "claude-sonnet-4-5",
        "content": [{"type": "text", "text": "Let me add."}, use],
        "stop_reason": "tool_use",
        "stop_sequence": None,
        "usage": {"input_tokens": 80, "output_tokens": 20},
    }
    start = {**whole, "content": [], "stop_reason": None}
    block = {"type": "text", "text": ""}
    events: list[dict[str, Any]] = [
        {"type": "message_start", "message": start},
        {"type": "content_block_start", "index": 0, "content_block": block},
    ]
    events += [
        {
            "type": "content_block_delta",
            "index": 0,
            "delta": {"type": "text_delta", "text": f"word{i} "},
        }
        for i in range(PIECES)
    ]
    events += [
        {"type": "content_block_stop", "index": 0},
        {
            "type": "message_delta",
            "delta": {"stop_reason": "end_turn", "stop_sequence": None},
            "usage": {"output_tokens": PIECES},
        },
        {"type": "message_stop"},
    ]
    return json.dumps(whole).encode(), _sse(events, named=True)


def _responses() -> tuple[bytes, bytes]:
    said = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "Let me add.", "annotations": []}],
    }
    call = {
        "type": "function_call",
        "id": "fc_1",
        "call_id": "call_1",
        "name": "add",
        "arguments": '{"a": 17, "b": 25}',
        "status": "completed",
    }
    usage = {
        "input_tokens": 80,
        "input_tokens_details": {"cached_tokens": 0},
        "output_tokens": 20,
        "output_tokens_details": {"reasoning_tokens": 0},
        "total_tokens": 100,
    }
    top = {"id": "resp_1", "object": "response", "created_at": 1, "model": MODEL}
    whole = {**top, "status": "completed", "output": [said, call], "usage": usage}
    text = "".join(f"word{i} " for i in range(PIECES))
    streamed = {**said, "content": [{"type": "output_text", "text": text, "annotations": []}]}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": {**top, "status": "in_progress", "output": []}},
        {"type": "response.output_item.added", "output_index": 0, "item": {**said, "content": []}},
    ]
    events += [
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 0,
            "content_index": 0,
            "delta": f"word{i} ",
        }
        for i in range(PIECES)
    ]
    events += [
        {"type": "response.output_item.done", "output_index": 0, "item": streamed},
        {"type": "response.completed", "response": {**whole, "output": [streamed]}},
    ]
    return json.dumps(whole).encode(), _sse(events, named=True)


def _response(body: bytes, content_type: str) -> bytes:
    head = (
        f"HTTP/1.1 200 OK\r\ncontent-type: {content_type}\r\ncontent-length: {len(body)}\r\n"
        "connection: keep-alive\r\n\r\n"
    )
    return head.encode() + body


def _answers() -> dict[bytes, tuple[bytes, bytes]]:
    """Each route's two answers, whole and streamed, as whole HTTP responses."""
    routes = {
        b"/v1/chat/completions": _chat(),
        b"/v1/messages": _anthropic(),
        b"/v1/responses": _responses(),
    }
    return {
        path: (_response(whole, "application/json"), _response(stream, "text/event-stream"))
        for path, (whole, stream) in routes.items()
    }


async def _serve_connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
    answers = _answers()
    try:
        while True:
            head = await reader.readuntil(b"\r\n\r\n")
            path = head.split(b" ", 2)[1]
            length = 0
            for line in head.split(b"\r\n"):
                if line.lower().startswith(b"content-length:"):
                    length = int(line.split(b":", 1)[1])
            body = await reader.readexactly(length)
            whole, stream = answers[path]
            writer.write(stream if b'"stream":true' in body.replace(b" ", b"") else whole)
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


# --- the clients, in pairs --------------------------------------------------------------------


Call = Callable[[], Awaitable[object]]
Pair = Callable[[str, str, bool, dict[str, Any]], tuple[Call, Call]]
"""``(base_url, model, stream, settings)`` to the two calls: ours, then the SDK's."""


def _ours(client: Any, stream: bool, settings: dict[str, Any]) -> Call:
    request = ModelRequest(
        messages=MESSAGES,
        tools=[ADD],
        settings={**settings, "stream": stream},  # type: ignore[typeddict-item]
    )

    async def call() -> object:
        return await client.request(request)

    return call


def chat(base_url: str, model: str, stream: bool, settings: dict[str, Any]) -> tuple[Call, Call]:
    ours = _ours(OpenAIModel(model, base_url=base_url, api_key="sk-bench"), stream, settings)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench")

    async def theirs() -> object:
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

    return ours, theirs


def messages(
    base_url: str, model: str, stream: bool, settings: dict[str, Any]
) -> tuple[Call, Call]:
    root = base_url.removesuffix("/v1")
    ours = _ours(AnthropicModel(model, base_url=root, api_key="sk-bench"), stream, settings)
    client = anthropic.AsyncAnthropic(base_url=root, api_key="sk-bench")
    options = {
        "model": model,
        "max_tokens": settings.get("max_tokens", 4096),
        "system": ANTHROPIC_SYSTEM,
        "messages": ANTHROPIC_MESSAGES,
        "tools": ANTHROPIC_TOOLS,
        **{k: v for k, v in settings.items() if k != "max_tokens"},
    }

    async def theirs() -> object:
        if not stream:
            return await client.messages.create(**options)
        events = await client.messages.create(**options, stream=True)
        pieces: dict[int, list[str]] = {}
        async for event in events:
            if event.type == "content_block_delta":
                delta = event.delta
                text = getattr(delta, "text", None) or getattr(delta, "partial_json", "")
                pieces.setdefault(event.index, []).append(text)
        return pieces

    return ours, theirs


def responses(
    base_url: str, model: str, stream: bool, settings: dict[str, Any]
) -> tuple[Call, Call]:
    model_ = OpenAIResponsesModel(model, base_url=base_url, api_key="sk-bench")
    ours = _ours(model_, stream, settings)
    client = openai.AsyncOpenAI(base_url=base_url, api_key="sk-bench")
    options = {
        "model": model,
        "input": RESPONSES_INPUT,
        "tools": RESPONSES_TOOLS,
        "store": False,
        "include": ["reasoning.encrypted_content"],
    }
    if "max_tokens" in settings:
        options["max_output_tokens"] = settings["max_tokens"]
    if "temperature" in settings:
        options["temperature"] = settings["temperature"]

    async def theirs() -> object:
        if not stream:
            return await client.responses.create(**options)
        events = await client.responses.create(**options, stream=True)
        text: list[str] = []
        arguments: list[str] = []
        async for event in events:
            if event.type == "response.output_text.delta":
                text.append(event.delta)
            elif event.type == "response.function_call_arguments.delta":
                arguments.append(event.delta)
        return "".join(text), arguments

    return ours, theirs


PAIRS: dict[str, tuple[str, Pair]] = {
    "chat completions": ("openai", chat),
    "anthropic messages": ("anthropic", messages),
    "responses": ("openai", responses),
}


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
    (ours_name, a), (theirs_name, b) = result.items()
    print(f"\n{title} ({n} requests each, medians)")
    print(f"  {'client':<10} {'wall µs':>10} {'cpu µs':>10}")
    for name, figures in result.items():
        print(f"  {name:<10} {figures['wall'] * 1e6:>10.0f} {figures['cpu'] * 1e6:>10.0f}")
    wall, cpu = a["wall"] / b["wall"], a["cpu"] / b["cpu"]
    print(f"  ratio {ours_name}/{theirs_name}: wall {wall:.2f}x, cpu {cpu:.2f}x")


async def bench(
    base_url: str, model: str, requests: int, settings: dict[str, Any], label: str, rounds: int
) -> None:
    for wire, (sdk, pair) in PAIRS.items():
        for stream in (False, True):
            ours, theirs = pair(base_url, model, stream, settings)
            result = await compare({"workbench": ours, sdk: theirs}, requests, rounds)
            kind = "SSE stream" if stream else "JSON"
            report(f"{wire}, {label}, {kind}", result, requests)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=400, help="per client, wire and mode")
    parser.add_argument("--real", metavar="BASE_URL", help="also against this real server")
    parser.add_argument("--real-model", default="gemma-3-270m")
    parser.add_argument("--real-requests", type=int, default=40)
    args = parser.parse_args()

    versions = f"openai {openai.__version__}, anthropic {anthropic.__version__}"
    print(f"python {sys.version.split()[0]}, {versions}, pid {os.getpid()}")
    base_url, server = start_fake_server()
    try:
        asyncio.run(bench(base_url, MODEL, args.requests, {}, "fake server on loopback", 10))
    finally:
        server.terminate()
    if args.real:
        settings = {"temperature": 0, "max_tokens": 8}
        label = f"real server {args.real} ({args.real_model}, max_tokens 8)"
        # one request each in turn: the model's speed swings with the machine's load
        asyncio.run(bench(args.real, args.real_model, args.real_requests, settings, label, 1))


if __name__ == "__main__":
    main()
