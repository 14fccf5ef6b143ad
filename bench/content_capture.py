"""What content capture costs as runs grow: memory and CPU per step at 50, 500 and 2,000 steps.

The workload is ``telemetry_overhead.py``'s (the model calls ``add`` N-1 times, then answers), so
every chat span's ``gen_ai.input.messages`` is the whole conversation so far. Side by side, in the
same process:

- **ours, no capture**: ``wb.Telemetry()``;
- **ours, capture**: ``wb.Telemetry(capture_content=True)``: each message encoded once and kept
  once (`ContentStore`); a chat span refers to a prefix of its conversation and the attribute is
  built when spans are read or exported;
- **ours, capture as text**: the same with a tracer provider passed in, where each chat span holds
  its own copy of the history as text (what every span held before the store; a provider passed
  in may feed other processors, which get the text);
- **pydantic-ai, capture**: its ``Instrumentation`` capability with ``include_content=True`` into
  an in-memory exporter.

Memory is what the run leaves held (its spans, and our content store) once it has ended, measured
with ``tracemalloc`` in a run of its own; CPU is ``time.process_time`` of separate runs without
``tracemalloc``, divided by N: ``--repeat`` runs of each (three by default), the configurations
taking turns so that the machine's load hits them alike, reported as the median and the spread
(lowest-highest). A 50-step run is short, so it is made five times as often. Each timed run is
made in a fresh interpreter, after one untimed run of the same configuration and size there:
in one process, the heap a run leaves behind (454 MB for "capture as text" at 2,000 steps) slows
whatever runs next, and a process's first large run pays for growing its heap. Every run is checked;
the spans of ours are read back (expanded) once to check what leaves is the text. Targets (issue
18): with capture, memory at most 2x the run without it; CPU per step flat (2,000 vs 50 steps at
most 1.5x, medians).

    .venv/bin/python bench/content_capture.py                      # a few minutes
    .venv/bin/python bench/content_capture.py --pydantic-max 2000  # + pydantic-ai at 2,000 (slow)
    .venv/bin/python bench/content_capture.py --quick              # smoke run

pydantic-ai's per-step cost grows with the run (each span re-encodes the history), so by default
it runs up to 500 steps; each figure is printed as soon as it is measured.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from _workload import PROMPT, our_agent, ours_ok
from opentelemetry.sdk.trace import TracerProvider
from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
from telemetry_overhead import pydantic_ai

import workbench as wb
from workbench.telemetry import names

CONFIGS = ("ours, no capture", "ours, capture", "ours, capture as text", "pydantic-ai, capture")


def _ours(kind: str, n: int, loop: asyncio.AbstractEventLoop) -> Callable[[], Any]:
    """A function making one run of ours; it returns what the run leaves held."""

    def run() -> Any:
        if kind == CONFIGS[0]:
            telemetry = wb.Telemetry()
        elif kind == CONFIGS[1]:
            telemetry = wb.Telemetry(capture_content=True)
        else:
            telemetry = wb.Telemetry(TracerProvider(), capture_content=True)
        result = loop.run_until_complete(our_agent(n, telemetry=telemetry).run(PROMPT))
        if not ours_ok(result, n):
            raise SystemExit(f"{kind}: the run did not do what it should ({result.status})")
        return telemetry

    return run


def _pydantic(n: int, loop: asyncio.AbstractEventLoop) -> Callable[[], Any]:
    def run() -> Any:
        exporter = InMemorySpanExporter()
        pydantic_ai(n, loop, exporter).run()
        return exporter

    return run


def _runner(kind: str, n: int, loop: asyncio.AbstractEventLoop) -> Callable[[], Any]:
    return _pydantic(n, loop) if kind == CONFIGS[3] else _ours(kind, n, loop)


def held_mb(run: Callable[[], Any]) -> float:
    """Megabytes a run leaves held (its spans and content) after it ended."""
    gc.collect()
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = run()
    gc.collect()
    after = tracemalloc.get_traced_memory()[0]
    tracemalloc.stop()
    del kept
    return (after - before) / 1e6


def cpu_per_step_us(run: Callable[[], Any], n: int) -> float:
    gc.collect()
    started = time.process_time()
    kept = run()
    seconds = time.process_time() - started
    del kept
    return seconds / n * 1e6


def timed_apart(kind: str, n: int) -> float:
    """CPU µs per step of one run of ``kind`` at ``n`` steps, in a fresh interpreter, warmed up."""
    command = [sys.executable, __file__, "--one", str(CONFIGS.index(kind)), str(n)]
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


def one(kind: str, n: int) -> None:
    """The ``--one`` mode: an untimed run, then a timed one, whose µs per step is printed."""
    loop = asyncio.new_event_loop()
    _runner(kind, n, loop)()
    print(cpu_per_step_us(_runner(kind, n, loop), n))


def check_what_leaves(n: int, loop: asyncio.AbstractEventLoop) -> None:
    """The store's spans read back carry the same text as spans that hold it."""
    stored = _ours(CONFIGS[1], n, loop)()
    text = _ours(CONFIGS[2], n, loop)()
    ours = [(s.attributes or {}).get(names.INPUT_MESSAGES) for s in stored.spans]
    theirs = [(s.attributes or {}).get(names.INPUT_MESSAGES) for s in text.spans]
    if [json.loads(t) for t in ours if t] != [json.loads(t) for t in theirs if t]:
        raise SystemExit("the content read back differs from the content as text")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small runs, to check the bench")
    parser.add_argument(
        "--pydantic-max", type=int, default=500, help="largest run for pydantic-ai (steps)"
    )
    parser.add_argument("--repeat", type=int, default=3, help="timed runs of each (median)")
    parser.add_argument("--one", nargs=2, type=int, help=argparse.SUPPRESS)  # CONFIG STEPS
    args = parser.parse_args()
    if args.one:
        one(CONFIGS[args.one[0]], args.one[1])
        return
    sizes = (10, 40) if args.quick else (50, 500, 2000)
    loop = asyncio.new_event_loop()
    check_what_leaves(sizes[0], loop)
    for kind in CONFIGS:  # warm up every path once
        _runner(kind, 5, loop)()
    memory: dict[tuple[str, int], float] = {}
    samples: dict[tuple[str, int], list[float]] = {}
    for n in sizes:
        kinds = [k for k in CONFIGS if k != CONFIGS[3] or n <= args.pydantic_max]
        for kind in kinds:
            memory[kind, n] = held_mb(_runner(kind, n, loop))
        for _ in range(args.repeat):
            for kind in kinds:
                for _ in range(5 if n == sizes[0] else 1):
                    cpu = timed_apart(kind, n)
                    samples.setdefault((kind, n), []).append(cpu)
        for kind in kinds:
            runs = samples[kind, n]
            print(f"{n:>5} steps  {kind:<24} held {memory[kind, n]:8.1f} MB", end="  ")
            print(f"CPU {statistics.median(runs):8.1f} µs/step", end=" ")
            print(f"({min(runs):.0f}-{max(runs):.0f}, {len(runs)} runs)", flush=True)
    loop.close()
    cpu = {key: statistics.median(runs) for key, runs in samples.items()}
    last, first = sizes[-1], sizes[0]
    base = memory[CONFIGS[0], last]
    print(f"-- at {last} steps (ratios; CPU per step against {first} steps, medians)")
    for kind in CONFIGS:
        if (kind, last) in memory:
            flat = cpu[kind, last] / cpu[kind, first]
            print(f"{kind:<24} memory {memory[kind, last] / base:6.2f}x  CPU/step {flat:5.2f}x")
    ours_memory = memory[CONFIGS[1], last] / base
    ours_flat = cpu[CONFIGS[1], last] / cpu[CONFIGS[1], first]
    verdict = "met" if ours_memory <= 2 and ours_flat <= 1.5 else "NOT met"
    print(f"targets (memory <= 2x, CPU/step <= 1.5x): {verdict}")


if __name__ == "__main__":
    main()
