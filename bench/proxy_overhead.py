"""Latency the recording proxy adds per request, per wire: the same requests, direct and proxied.

    .venv/bin/python bench/proxy_overhead.py [--requests 300] [--wire chat|messages|responses]

What is measured: a client (httpx, as an SDK would send it) posts the same request, a short
conversation with one tool, on each wire the proxy speaks (Chat Completions, Anthropic Messages,
the Responses API) to a fake server on loopback in its own process (the one of
bench/client_overhead.py, which answers at once on all three routes: JSON, or an SSE stream of 40
text pieces in the wire's own events), either directly or through the proxy in front of it,
recording. The proxy runs two ways: in this process
(`wb.proxy`, a thread, as in a notebook, where it shares the interpreter with the client) and as
the command (`workbench proxy`, its own process, recording into a store file). Direct and proxied
take turns in small rounds so that other load on the machine falls on both alike. Reported, as
medians: the time of a whole request (non-streamed and streamed) and the time to the first
streamed event, direct and proxied, the milliseconds the proxy adds and the ratio.

What the proxy records: a request that repeats one that was answered starts a run of its own, so
each request here is a new single-call run, as an eval's samples are (some 600 runs by the end).
That is the proxy's heavier path (a run's row, then its first snapshot with its messages and
tools), and the one whose cost could grow with the runs seen: a request looks only at the
conversations it could continue, so it does not.

Targets (issue 20): at most 2 ms added per request at the median; time to first token within 5 ms.

What earlier runs found, side by side in one process: a bare relay (uvicorn and aiohttp on uvloop,
nothing recorded) adds 0.5–0.75 ms; reading the stream into the recording 0.4–0.65 ms; the store
writes 0.4–0.55 ms; asking for a Chat Completions stream's usage (and hiding it from an agent that
did not ask) about 0.1 ms; httpx for the hop instead of aiohttp about 0.6 ms more. On this 2-core
machine the figures move with everyone else's load (a load average of 12 doubles them): compare
the ratios of one run, not runs of different days.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable, Iterator
from contextlib import contextmanager
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import httpx

import workbench as wb
from bench.client_overhead import (
    ANTHROPIC_MESSAGES,
    ANTHROPIC_SYSTEM,
    ANTHROPIC_TOOLS,
    MODEL,
    RESPONSES_INPUT,
    RESPONSES_TOOLS,
    SDK_MESSAGES,
    SDK_TOOLS,
    start_fake_server,
)

Measure = Callable[[], Awaitable[tuple[float, float]]]


WIRES = ("chat", "messages", "responses")


def body_of(wire: str, stream: bool) -> tuple[str, bytes, dict[str, str]]:
    """The path, body and headers of one request on ``wire``, as its SDK sends them."""
    if wire == "messages":
        request = {"model": "claude-sonnet-4-5", "max_tokens": 256, "system": ANTHROPIC_SYSTEM}
        request |= {"messages": ANTHROPIC_MESSAGES, "tools": ANTHROPIC_TOOLS, "stream": stream}
        headers = {"x-api-key": "sk-bench", "anthropic-version": "2023-06-01"}
        return "/messages", json.dumps(request).encode(), headers
    if wire == "responses":
        request = {"model": MODEL, "input": RESPONSES_INPUT, "tools": RESPONSES_TOOLS}
        request |= {"stream": stream, "store": False}
        return "/responses", json.dumps(request).encode(), {"authorization": "Bearer sk-bench"}
    request = {"model": MODEL, "messages": SDK_MESSAGES, "tools": SDK_TOOLS, "stream": stream}
    return "/chat/completions", json.dumps(request).encode(), {"authorization": "Bearer sk-bench"}


def request(client: httpx.AsyncClient, base_url: str, wire: str, *, stream: bool) -> Measure:
    """One request: ``(seconds to the whole answer, seconds to its first byte of body)``."""
    path, body, headers = body_of(wire, stream)
    headers = {**headers, "content-type": "application/json"}

    async def measure() -> tuple[float, float]:
        started = time.perf_counter()
        first = None
        async with client.stream(
            "POST", f"{base_url}{path}", content=body, headers=headers
        ) as answer:
            async for _ in answer.aiter_raw():
                first = first or time.perf_counter()
        assert answer.status_code == 200, answer.status_code
        end = time.perf_counter()
        return end - started, (first or end) - started

    return measure


async def compare(
    measures: dict[str, Measure], requests: int, round_size: int = 10
) -> dict[str, tuple[float, float]]:
    """Median ``(whole, first byte)`` per measure, taking turns in rounds after a warm-up."""
    seen: dict[str, list[tuple[float, float]]] = {name: [] for name in measures}
    for measure in measures.values():
        for _ in range(5):
            await measure()
    for _ in range(max(1, requests // round_size)):
        for name, measure in measures.items():
            for _ in range(round_size):
                seen[name].append(await measure())
    return {
        name: (statistics.median(w for w, _ in s), statistics.median(f for _, f in s))
        for name, s in seen.items()
    }


async def measure_against(
    upstream: str, proxied: str, requests: int, where: str, wires: tuple[str, ...]
) -> None:
    """Direct and through ``proxied``, complete and streamed answers, on each wire."""
    async with httpx.AsyncClient(timeout=30) as client:
        for wire in wires:
            for stream in (False, True):
                measures = {
                    "direct": request(client, upstream, wire, stream=stream),
                    "proxy": request(client, proxied, wire, stream=stream),
                }
                kind = f"{wire}: {'streamed' if stream else 'complete'} answers"
                result = await compare(measures, requests)
                report(f"{kind}, proxy {where}", result, stream)


@contextmanager
def command_proxy(upstream: str) -> Iterator[str]:
    """``workbench proxy`` in its own process, recording into a temporary store file."""
    with tempfile.TemporaryDirectory() as folder:
        command = [sys.executable, "-m", "workbench.cli", "proxy", "--upstream", upstream]
        command += ["--port", "0", "--store", f"{folder}/runs.sqlite"]
        process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert process.stdout is not None
        try:
            yield process.stdout.readline().split(" on ")[1].split(" ")[0]
        finally:
            process.send_signal(signal.SIGINT)
            recorded = [line for line in process.stdout.read().splitlines() if "recorded" in line]
            print(f"  the command {recorded[-1] if recorded else 'recorded nothing'}")
            process.wait()


async def main(requests: int, wires: tuple[str, ...]) -> None:
    upstream, server = start_fake_server()
    store = wb.RunStore(":memory:")
    try:
        with wb.proxy(upstream, store=store) as proxy:
            here = "in this process (a thread)"
            await measure_against(upstream, proxy.url, requests, here, wires)
        steps = sum(len(store.load(r).steps) for r in proxy.run_ids)
        print(f"  the proxy recorded {steps} steps in {len(proxy.run_ids)} run(s)")
        with command_proxy(upstream) as url:
            await measure_against(upstream, url, requests, "as the command (own process)", wires)
    finally:
        server.terminate()


def report(kind: str, result: dict[str, tuple[float, float]], stream: bool) -> None:
    (direct, direct_first), (proxied, proxied_first) = result["direct"], result["proxy"]
    added = (proxied - direct) * 1e3
    print(f"\n{kind}, median of each")
    print(f"  {'':22}{'direct':>10}{'proxy':>10}{'added':>10}{'ratio':>8}")
    print(
        f"  {'whole request (ms)':22}{direct * 1e3:10.3f}{proxied * 1e3:10.3f}"
        f"{added:10.3f}{proxied / direct:8.2f}   target: added <= 2 ms"
    )
    if stream:
        first_added = (proxied_first - direct_first) * 1e3
        print(
            f"  {'first event (ms)':22}{direct_first * 1e3:10.3f}{proxied_first * 1e3:10.3f}"
            f"{first_added:10.3f}{proxied_first / direct_first:8.2f}   target: within 5 ms"
        )


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--requests", type=int, default=300)
    parser.add_argument("--wire", choices=WIRES, action="append", help="only these (default: all)")
    arguments = parser.parse_args()
    asyncio.run(main(arguments.requests, tuple(arguments.wire or WIRES)))
