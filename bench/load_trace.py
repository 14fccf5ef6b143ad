"""How long ``wb.load_trace`` takes on a trace of 100,000 spans (issue 18: under 3 s).

The trace (`write_trace`, which ``tests/test_load_trace.py`` loads too) is an OTLP/JSON file of
100,000 ``execute_tool`` spans under one root, each with two attributes (about 42 MB). Side by side,
in the same process and in turns:

- **parse**: ``json.loads`` of the file's text, read from disk: the floor, what any loader
  written in Python pays before it reads a single span;
- **load**: ``wb.load_trace(path)``: read, parse, check and convert every span, and sort them
  into a ``wb.Trace``.

Each is run ``--repeat`` times (five by default); wall time (``time.perf_counter``) and CPU time
(``time.process_time``, which other processes' load does not count) are reported as the median
and the spread (lowest-highest), with the load average, since wall time on a shared machine
depends on it. The ratio is load over parse (CPU, medians).

    .venv/bin/python bench/load_trace.py            # about half a minute
    .venv/bin/python bench/load_trace.py --repeat 1
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import workbench as wb
from workbench.telemetry import names as n

SPANS = 100_000
TARGET_SECONDS = 3.0


TRACE_ID = "5b8efff798038103d269b633813fc60c"


def write_trace(path: Path) -> None:
    """The 100,000-span OTLP/JSON file (``tests/test_load_trace.py`` loads it too)."""
    spans = [
        {
            "traceId": TRACE_ID,
            "spanId": format(i + 1, "016x"),
            **({"parentSpanId": format(1, "016x")} if i else {}),
            "name": f"execute_tool t{i % 7}",
            "kind": 1,
            "startTimeUnixNano": str(1_700_000_000_000_000_000 + i * 1000),
            "endTimeUnixNano": str(1_700_000_000_000_000_000 + i * 1000 + 500),
            "attributes": [
                {"key": n.OPERATION, "value": {"stringValue": "execute_tool"}},
                {"key": n.STEP_INDEX, "value": {"intValue": str(i // 10)}},
            ],
            "status": {"code": 0},
        }
        for i in range(SPANS)
    ]
    path.write_text(json.dumps({"resourceSpans": [{"scopeSpans": [{"spans": spans}]}]}))


def timed(work: Callable[[], Any]) -> tuple[float, float]:
    """Wall and CPU seconds of one call; what it made is freed outside the timing."""
    gc.collect()
    wall, cpu = time.perf_counter(), time.process_time()
    made = work()
    timing = time.perf_counter() - wall, time.process_time() - cpu
    del made
    return timing


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5, help="timed runs of each (median)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "big.json"
        write_trace(path)

        def load() -> wb.Trace:
            trace = wb.load_trace(path)
            if len(trace.spans) != SPANS:
                raise SystemExit(f"loaded {len(trace.spans)} spans, expected {SPANS}")
            return trace

        cases: dict[str, Callable[[], Any]] = {
            "parse": lambda: json.loads(path.read_text(encoding="utf-8")),
            "load": load,
        }
        load()  # warm up: imports, pydantic's validators
        samples: dict[str, list[tuple[float, float]]] = {name: [] for name in cases}
        before = os.getloadavg()
        for _ in range(args.repeat):
            for name, work in cases.items():
                samples[name].append(timed(work))
        after = os.getloadavg()
    print(
        f"{SPANS:,} spans, {args.repeat} runs each; load average {before[0]:.1f} -> {after[0]:.1f}"
    )
    medians = {}
    for name, runs in samples.items():
        walls, cpus = [w for w, _ in runs], [c for _, c in runs]
        medians[name] = statistics.median(walls), statistics.median(cpus)
        print(
            f"{name:<6} wall {medians[name][0]:5.2f} s ({min(walls):.2f}-{max(walls):.2f})"
            f"  CPU {medians[name][1]:5.2f} s ({min(cpus):.2f}-{max(cpus):.2f})"
        )
    print(f"load / parse (CPU): {medians['load'][1] / medians['parse'][1]:.2f}x")
    verdict = "met" if medians["load"][0] < TARGET_SECONDS else "NOT met"
    print(f"target (load under {TARGET_SECONDS:.0f} s wall, median): {verdict}")


if __name__ == "__main__":
    main()
