"""Long runs: memory and CPU per step at 500, 2,000 and 5,000 steps, against LangGraph.

The workload is every loop benchmark's (`_workload.py`: the model calls ``add`` N-1 times, then
answers), so the loop's own cost is all there is to see. Side by side, in the same run:

- **ours**: ``wb.Agent`` with no store;
- **ours+store**: with the snapshot store users get by default, in memory
  (``wb.RunStore(":memory:")``): every step's snapshot and record written;
- **LangGraph+saver**: ``loop_overhead.py``'s ReAct graph compiled with ``InMemorySaver``, the
  checkpointer a LangGraph user keeps state with (a fresh ``thread_id`` per run).

Each figure comes from a run of its own in a fresh interpreter, after an untimed run of the same
configuration and size there (so imports and a process's first large allocations are not the
run's): **CPU µs per step** is ``time.process_time`` over the run divided by N (``--repeat``
runs, three by default, the configurations taking turns so the machine's load hits them alike;
the median, and the spread); **kB held per step** is what the finished run leaves held, divided
by N, from one more run: what ``tracemalloc`` sees after a collection (the result with its
states, records and snapshots, the checkpointer's memory, the store's Python side) plus the
in-memory store's SQLite pages (``page_count`` × ``page_size``), which SQLite allocates itself.
Every run is checked (N steps, the answer).

Targets (issue 31 #12): ours, with and without the store, flat from 500 to 5,000 steps: late /
early at most 1.2x, in memory and in CPU per step. A run whose memory per step grows with N holds
its history once per step (what this replaced: each state copied the conversation, each snapshot
kept its state). LangGraph's checkpointer keeps every checkpoint's messages, so its memory per
step grows with N; a size whose memory, projected from the size before, would pass ``--max-mb``
(2,500 MB) is not run, and says so.

    .venv/bin/python bench/long_run.py            # a few minutes
    .venv/bin/python bench/long_run.py --quick    # smoke run (100, 200, 400 steps)

Figures of past runs are in bench/README.md.
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import json
import os
import statistics
import subprocess
import sys
import time
import tracemalloc
from collections.abc import Callable
from typing import Any

from _workload import PROMPT, our_agent, ours_ok
from loop_overhead import langgraph

import workbench as wb

SIZES = (500, 2_000, 5_000)
QUICK_SIZES = (100, 200, 400)
CONFIGS = ("ours", "ours+store", "langgraph+saver")
TARGET_FLAT = 1.2
COLLECTOR = [True]
"""Whether the runs keep Python's cyclic garbage collector on (``--no-collector`` turns it off)."""


def runner(config: str, n: int, loop: asyncio.AbstractEventLoop) -> Callable[[], Any]:
    """A function making one run of ``config`` at ``n`` steps; it returns what the run keeps."""
    if config == "langgraph+saver":
        run_graph = langgraph(n, loop, sync_tool=False, saver=True)
        return run_graph  # the graph and its checkpointer hold the run; nothing else is kept
    store = wb.RunStore(":memory:") if config == "ours+store" else False

    def run() -> Any:
        agent = our_agent(n, store=store)
        result = loop.run_until_complete(agent.run(PROMPT))
        if not ours_ok(result, n):
            raise SystemExit(f"{config}: the {n}-step run did not do what it should")
        return result, store

    return run


def one(config: str, n: int, what: str, collector: bool = True) -> float:
    """In a fresh interpreter: an untimed run, then the measured one."""
    if not collector:
        gc.disable()  # `--no-collector`: the loop's own cost, without the collector's passes
    loop = asyncio.new_event_loop()
    run = runner(config, n, loop)
    run()
    run = runner(config, n, loop)  # a fresh checkpointer or store: the run's own memory only
    gc.collect()
    if what == "cpu":
        started = time.process_time()
        kept = run()
        return (time.process_time() - started) / n * 1e6
    tracemalloc.start()
    before = tracemalloc.get_traced_memory()[0]
    kept = run()
    gc.collect()
    held = tracemalloc.get_traced_memory()[0] - before + store_bytes(kept)
    tracemalloc.stop()
    return held / n / 1e3


def store_bytes(kept: Any) -> int:
    """The in-memory SQLite store's pages, which ``tracemalloc`` does not see (SQLite's own)."""
    store = kept[1] if isinstance(kept, tuple) else None
    if not store:
        return 0
    with store._reading() as conn:  # the bench reads the store's size the way SQLite tells it
        pages = conn.execute("PRAGMA page_count").fetchone()[0]
        size = conn.execute("PRAGMA page_size").fetchone()[0]
    return int(pages) * int(size)


def apart(config: str, n: int, what: str) -> float:
    command = [sys.executable, __file__, "--one", config, str(n), what]
    if not COLLECTOR[0]:
        command.append("--no-collector")
    done = subprocess.run(command, capture_output=True, text=True, check=True)
    return float(done.stdout.split()[-1])


Figures = dict[str, dict[int, dict[str, Any]]]


def measure(
    sizes: tuple[int, ...], repeat: int, max_mb: float, configs: tuple[str, ...]
) -> Figures:
    figures: Figures = {c: {} for c in configs}
    for n in sizes:
        for config in configs:
            skip = _projected_over(figures[config], n, max_mb)
            figures[config][n] = {"cpu": [], "kb": None, "skipped": skip}
            if skip is None:
                figures[config][n]["kb"] = apart(config, n, "mem")
                print(f"  {config:16s} {n:>5} steps: {figures[config][n]['kb']:8.1f} kB/step held")
        for rep in range(repeat):
            turn = configs[rep % len(configs) :] + configs[: rep % len(configs)]
            for config in turn:
                if figures[config][n]["skipped"] is None:
                    figures[config][n]["cpu"].append(apart(config, n, "cpu"))
        for config in configs:
            cpu = figures[config][n]["cpu"]
            if cpu:
                print(f"  {config:16s} {n:>5} steps: {statistics.median(cpu):8.0f} µs CPU/step")
    return figures


def _projected_over(done: dict[int, dict[str, Any]], n: int, max_mb: float) -> str | None:
    """Why ``n`` steps are not run: memory per step grows with N (quadratic in all)."""
    measured = [(size, f["kb"]) for size, f in done.items() if f["kb"] is not None]
    if len(measured) < 2:
        return None
    (a, ka), (b, kb) = measured[-2], measured[-1]
    growth = (kb - ka) / (b - a)  # kB per step more, per step of run length
    projected_mb = (kb + growth * (n - b)) * n / 1e3
    if projected_mb <= max_mb:
        return None
    return f"projected {projected_mb:,.0f} MB held, over --max-mb {max_mb:,.0f}"


def _row(config: str, what: str, figures: Figures, sizes: tuple[int, ...]) -> tuple[str, Any]:
    """One line of the table (the figure at each size, with the CPU spread), and late/early."""
    cells, values = [], {}
    for n in sizes:
        f = figures[config][n]
        value = statistics.median(f["cpu"]) if what == "cpu" and f["cpu"] else f["kb"]
        if f["skipped"] is not None or value is None:
            cells.append(f"{'not run':>22s}")
            continue
        values[n] = value
        spread = ""
        if what == "cpu" and len(f["cpu"]) > 1:
            spread = f" ({min(f['cpu']):.0f}-{max(f['cpu']):.0f})"
        cells.append(f"{value:>10.{1 if what == 'kb' else 0}f}{spread:>12s}")
    early, late = sizes[0], sizes[-1]
    ratio = values[late] / values[early] if early in values and late in values else None
    return "".join(cells), ratio


def report(figures: Figures, sizes: tuple[int, ...]) -> dict[str, Any]:
    configs = tuple(figures)
    print(f"\n{'':28s}" + "".join(f"{n:>16,} steps" for n in sizes) + f"{'late/early':>12s}")
    verdicts: dict[str, Any] = {}
    for config in configs:
        for what, unit in (("cpu", "µs CPU/step"), ("kb", "kB held/step")):
            cells, ratio = _row(config, what, figures, sizes)
            shown = f"{ratio:.2f}x" if ratio is not None else "-"
            print(f"{config + ' ' + unit:28s}{cells}{shown:>10s}")
            if config.startswith("ours"):
                verdicts[f"{config} {what} late/early"] = ratio
    for config in configs:
        for n in sizes:
            if figures[config][n]["skipped"]:
                print(f"{config} at {n:,} steps not run: {figures[config][n]['skipped']}")
    for n in sizes if {"ours+store", "langgraph+saver"} <= set(configs) else ():
        ours, theirs = figures["ours+store"][n], figures["langgraph+saver"][n]
        if ours["cpu"] and theirs["cpu"]:
            cpu = statistics.median(ours["cpu"]) / statistics.median(theirs["cpu"])
            kb = ours["kb"] / theirs["kb"]
            print(f"ours+store / LangGraph+saver at {n:,} steps: CPU {cpu:.2f}x, memory {kb:.2f}x")
    print()
    for name, ratio in verdicts.items():
        met = "not measured" if ratio is None else "MET" if ratio <= TARGET_FLAT else "MISSED"
        print(f"target {name} <= {TARGET_FLAT}x: {met}")
    return verdicts


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    parser.add_argument("--repeat", type=int, default=3, help="timed runs per figure")
    parser.add_argument("--max-mb", type=float, default=2_500, help="skip runs projected past")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument(
        "--no-collector",
        action="store_true",
        help="run with the cyclic garbage collector off: what the loop itself costs per step",
    )
    parser.add_argument("--configs", default=",".join(CONFIGS), help="which, comma-separated")
    parser.add_argument("--one", nargs=3, help=argparse.SUPPRESS)  # CONFIG STEPS cpu|mem
    args = parser.parse_args()
    if args.one:
        config, n, what = args.one
        print(one(config, int(n), what, collector=not args.no_collector))
        return
    COLLECTOR[0] = not args.no_collector
    sizes = QUICK_SIZES if args.quick else SIZES
    repeat = 1 if args.quick else args.repeat
    configs = tuple(c for c in CONFIGS if c in args.configs.split(","))
    print(f"long runs: {', '.join(configs)} at {', '.join(map(str, sizes))} steps")
    collector = "off (--no-collector)" if args.no_collector else "on"
    print(
        f"load average {os.getloadavg()[0]:.2f}; each figure from a fresh interpreter; "
        f"the garbage collector {collector}"
    )
    figures = measure(sizes, repeat, args.max_mb, configs)
    verdicts = report(figures, sizes)
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"figures": figures, "verdicts": verdicts}, out, indent=2)


if __name__ == "__main__":
    main()
