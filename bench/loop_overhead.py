"""Per-step cost of the workbench loop against pydantic-ai and LangGraph.

Each framework does the same run: the model calls one trivial tool (``add(a, b)``) N-1 times, then
answers ``"done"``; N is 25, 50, 200 and 400. The cost of a run divided by N is the loop's cost per
step, since the model and the tool do (almost) nothing.

- **ours**: ``wb.Agent`` with ``wb.FunctionModel`` (fixed ``Usage(input_tokens=10,
  output_tokens=5)``, so nothing estimates tokens), ``stop=wb.MaxSteps(N + 10)`` (no wrap-up turn),
  no telemetry, no observers, no hooks, no history processors, and no run store: the agent is
  built with ``store=False`` (``store=None`` or no keyword means the default store) and checked to
  have none.
- **pydantic-ai**: ``Agent(FunctionModel(fn))`` with ``add`` registered by ``tool_plain``, run
  with ``UsageLimits(request_limit=None)``; the response carries a fixed ``RequestUsage`` (else its
  ``FunctionModel`` estimates tokens over the whole history on every request).
- **ours+store**: the same agent with the snapshot store users get by default, in memory
  (``store=wb.RunStore(":memory:")``): every step's snapshot and record are written.
- **LangGraph+saver**: the LangGraph graph below compiled with its ``InMemorySaver`` checkpointer
  (a fresh ``thread_id`` per run), the comparison a user meets by default when state is kept.
- **LangGraph**: the canonical ReAct graph: ``StateGraph(MessagesState)`` with a model node (a plain
  function answering ``AIMessage`` with ``tool_calls``), the prebuilt ``ToolNode`` and
  ``tools_condition``; ``recursion_limit`` 2N + 10 (each step is two supersteps).

The model functions are ``async def`` for ours and pydantic-ai (pydantic-ai runs a sync one in a
worker thread). The tool is ``async def`` by default, which measures the loop alone; with
``--sync-tool`` it is a plain ``def`` and ours and pydantic-ai hand each call to a worker thread,
as they do for users' sync tools. LangGraph's nodes are sync and run with ``graph.invoke`` (a
LangChain tool with only an async body cannot run under ``invoke``); its ToolNode uses a thread pool
either way. Ours and pydantic-ai run on one event loop with ``loop.run_until_complete``.

Method: warm-up runs first; then for each repetition, for each size, each framework runs once, in
an order rotated every repetition, so machine noise hits all of them alike. A size gets at least
the given repetitions (5), and smaller sizes more, so that every size is timed over about as many
steps (``repetitions × 200`` for 25 and 50 steps: 40 and 20 runs): a run of 25 steps is short, and
five of them made a noisy median exactly where the per-run part weighs most. Every timed run starts
after ``gc.collect()`` (the collector stays on: its cost is part of the loop's). Every run is
checked (N steps, answer ``"done"``). Figures are medians of the repetitions, in µs per step, of
wall time and of the process's CPU time (steadier when other work shares the machine; the load
average is printed and written with the figures).

Targets: ours at most 0.25× LangGraph and 0.25× pydantic-ai per step at every size, ours+store at
most 0.5× LangGraph+saver, and flat: our per-step cost at 400 steps within 1.5× of that at 50.
The report also splits ours, from the two smallest sizes, into µs per extra step and µs per run:
at 25 steps the per-run part (a run's set-up, and the cold caches each timed run starts with after
the collection and the peers' runs) is a large share of the per-step figure.

    .venv/bin/python bench/loop_overhead.py                  # full run (a couple of minutes)
    .venv/bin/python bench/loop_overhead.py --quick          # smoke run (a few seconds)
    .venv/bin/python bench/loop_overhead.py --json out.json  # also write the figures
    .venv/bin/python bench/loop_overhead.py --profile 400    # cProfile of our loop at 400 steps
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import gc
import json
import os
import platform
import pstats
import statistics
import subprocess
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from importlib import metadata
from typing import Any

from _workload import ANSWER, IN_TOKENS, OUT_TOKENS, PROMPT, our_agent, ours_ok, step_of

import workbench as wb

SIZES = (25, 50, 200, 400)
QUICK_SIZES = (25, 50, 100)
TARGET_VS_PEERS = 0.25
TARGET_WITH_STORE = 0.5
TARGET_FLAT = 1.5
FLAT_BASE, FLAT_TOP = 50, 400

OURS, LANGGRAPH, PYDANTIC_AI = "ours", "langgraph", "pydantic-ai"
OURS_STORE, LANGGRAPH_SAVER = "ours+store", "langgraph+saver"
FRAMEWORKS = (OURS, OURS_STORE, LANGGRAPH, LANGGRAPH_SAVER, PYDANTIC_AI)
RATIOS = (  # (key, ours, peer, target)
    ("ours_vs_langgraph", OURS, LANGGRAPH, TARGET_VS_PEERS),
    ("ours_vs_pydantic_ai", OURS, PYDANTIC_AI, TARGET_VS_PEERS),
    ("store_vs_saver", OURS_STORE, LANGGRAPH_SAVER, TARGET_WITH_STORE),
)

Runner = Callable[[], None]
"""Runs one whole agent run and checks it did what it should."""


# -- ours -----------------------------------------------------------------------------------------


def ours(
    n: int, loop: asyncio.AbstractEventLoop, *, sync_tool: bool, store: bool = False
) -> Runner:
    agent = our_agent(n, sync_tool=sync_tool, store=wb.RunStore(":memory:") if store else False)

    def run() -> None:
        result = loop.run_until_complete(agent.run(PROMPT))
        _check(ours_ok(result, n), OURS, n, result.status)

    return run


def ours_store(n: int, loop: asyncio.AbstractEventLoop, *, sync_tool: bool) -> Runner:
    return ours(n, loop, sync_tool=sync_tool, store=True)


# -- pydantic-ai ----------------------------------------------------------------------------------


def pydantic_ai(n: int, loop: asyncio.AbstractEventLoop, *, sync_tool: bool) -> Runner:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage, UsageLimits

    async def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        step = step_of(len(messages))
        usage = RequestUsage(input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS)
        if step < n:
            call = ToolCallPart("add", {"a": step, "b": 1}, tool_call_id=f"c{step}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart(ANSWER)], usage=usage)

    def add_sync(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    agent = Agent(FunctionModel(respond))
    agent.tool_plain(name="add")(add_sync if sync_tool else add_async)
    limits = UsageLimits(request_limit=None)

    def run() -> None:
        result = loop.run_until_complete(agent.run(PROMPT, usage_limits=limits))
        usage = result.usage
        if not hasattr(usage, "requests"):  # a method before pydantic-ai 2
            usage = usage()
        _check(result.output == ANSWER and usage.requests == n, PYDANTIC_AI, n, usage)

    return run


# -- LangGraph ------------------------------------------------------------------------------------


def langgraph(
    n: int, loop: asyncio.AbstractEventLoop, *, sync_tool: bool, saver: bool = False
) -> Runner:
    from langchain_core.messages import AIMessage, HumanMessage
    from langchain_core.tools import tool
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    usage = {"input_tokens": IN_TOKENS, "output_tokens": OUT_TOKENS, "total_tokens": 15}

    def model(state: MessagesState) -> dict[str, list[AIMessage]]:
        step = step_of(len(state["messages"]))
        if step < n:
            call = {"name": "add", "args": {"a": step, "b": 1}, "id": f"c{step}"}
            return {"messages": [AIMessage("", tool_calls=[call], usage_metadata=usage)]}
        return {"messages": [AIMessage(ANSWER, usage_metadata=usage)]}

    @tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_node("tools", ToolNode([add]))
    graph.add_edge(START, "model")
    graph.add_conditional_edges("model", tools_condition)
    graph.add_edge("tools", "model")
    if saver:
        from langgraph.checkpoint.memory import InMemorySaver

        app = graph.compile(checkpointer=InMemorySaver())
    else:
        app = graph.compile()
    runs = iter(range(1_000_000))

    def run() -> None:
        config = {"recursion_limit": 2 * n + 10, "configurable": {"thread_id": f"t{next(runs)}"}}
        messages = app.invoke({"messages": [HumanMessage(PROMPT)]}, config)["messages"]
        ok = len(messages) == 2 * n and messages[-1].content == ANSWER
        _check(ok, LANGGRAPH, n, messages[-1])

    return run


def langgraph_saver(n: int, loop: asyncio.AbstractEventLoop, *, sync_tool: bool) -> Runner:
    return langgraph(n, loop, sync_tool=sync_tool, saver=True)


BUILDERS = {
    OURS: ours,
    OURS_STORE: ours_store,
    LANGGRAPH: langgraph,
    LANGGRAPH_SAVER: langgraph_saver,
    PYDANTIC_AI: pydantic_ai,
}
PACKAGES = {
    OURS: "workbench",
    OURS_STORE: "workbench",
    LANGGRAPH: "langgraph",
    LANGGRAPH_SAVER: "langgraph",
    PYDANTIC_AI: "pydantic-ai-slim",
}


def _check(ok: bool, framework: str, n: int, detail: object) -> None:
    if not ok:
        raise RuntimeError(f"{framework} did not do the {n}-step run as scripted: {detail!r}")


# -- measuring ------------------------------------------------------------------------------------


@dataclass
class Series:
    """The per-step times (µs) of one framework at one size, one per repetition."""

    samples: list[float] = field(default_factory=list)

    @property
    def median(self) -> float:
        return statistics.median(self.samples)


Results = dict[str, dict[int, Series]]
"""Per framework, per size."""

CLOCKS = ("wall", "cpu")
"""Wall time (`time.perf_counter_ns`) is what a user waits. CPU time (`time.process_time_ns`, all
threads of the process) is steadier when other work shares the machine: time spent waiting for a
core does not count."""


def _time_once(run: Runner, n: int) -> dict[str, float]:
    gc.collect()
    wall, cpu = time.perf_counter_ns(), time.process_time_ns()
    run()
    wall, cpu = time.perf_counter_ns() - wall, time.process_time_ns() - cpu
    return {"wall": wall / 1000 / n, "cpu": cpu / 1000 / n}


STEPS_PER_SIZE = 200
"""Repetitions are added at small sizes until each size is timed over this many steps times the
repetitions asked for."""


def repetitions_at(n: int, repetitions: int) -> int:
    """Timed runs at size ``n``: at least ``repetitions``, and as many steps as the large sizes.

    >>> [repetitions_at(n, 5) for n in (25, 50, 200, 400)]
    [40, 20, 5, 5]
    """
    return max(repetitions, repetitions * STEPS_PER_SIZE // n)


def measure(
    runners: dict[tuple[str, int], Runner],
    frameworks: list[str],
    sizes: tuple[int, ...],
    repetitions: int,
    warmup: int,
) -> dict[str, Results]:
    """Warm up, then time every (framework, size) once per repetition, interleaved."""
    for framework in frameworks:
        for _ in range(warmup):
            runners[framework, sizes[0]]()
        runners[framework, max(sizes)]()
    results = {c: {f: {n: Series() for n in sizes} for f in frameworks} for c in CLOCKS}
    runs = {n: repetitions_at(n, repetitions) for n in sizes}
    for repetition in range(max(runs.values())):
        shift = repetition % len(frameworks)
        order = frameworks[shift:] + frameworks[:shift]
        for n in sizes:
            if repetition >= runs[n]:
                continue
            for framework in order:
                for clock, value in _time_once(runners[framework, n], n).items():
                    results[clock][framework][n].samples.append(value)
        print(f"  repetition {repetition + 1}/{max(runs.values())} done", file=sys.stderr)
    return results


# -- reporting ------------------------------------------------------------------------------------


def _ratio(a: float | None, b: float | None) -> float | None:
    return None if a is None or b is None or b == 0 else a / b


def _fmt(value: float | None, spec: str, suffix: str = "") -> str:
    return "—" if value is None else f"{value:{spec}}{suffix}"


def summarize(results: Results, sizes: tuple[int, ...]) -> dict[str, Any]:
    """Medians, ratios and the verdict on each target."""

    def median(framework: str, n: int) -> float | None:
        series = results.get(framework, {}).get(n)
        return series.median if series else None

    base = FLAT_BASE if FLAT_BASE in sizes else sizes[0]
    top = FLAT_TOP if FLAT_TOP in sizes else max(sizes)
    rows = [
        {
            "steps": n,
            "us_per_step": {f: median(f, n) for f in FRAMEWORKS},
            **{key: _ratio(median(a, n), median(b, n)) for key, a, b, _ in RATIOS},
        }
        for n in sizes
    ]
    flat = {f: _ratio(median(f, top), median(f, base)) for f in FRAMEWORKS}
    small, next_up = sorted(sizes)[:2] if len(sizes) > 1 else (sizes[0], sizes[0])
    split = _split(median(OURS, small), small, median(OURS, next_up), next_up)

    def target(key: str, limit: float) -> dict[str, Any]:
        values = [(r[key], r["steps"]) for r in rows if r[key] is not None]
        if not values:
            return {"limit": limit, "worst": None, "at_steps": None, "met": None}
        worst, at = max(values)
        return {"limit": limit, "worst": worst, "at_steps": at, "met": worst <= limit}

    flat_ours = flat[OURS]
    return {
        "rows": rows,
        "flatness": {"top": top, "base": base, "ratios": flat},
        "ours_split": {"sizes": [small, next_up], "parts": split},
        "targets": {
            **{key: target(key, limit) for key, _, _, limit in RATIOS},
            "ours_flat": {
                "limit": TARGET_FLAT,
                "worst": flat_ours,
                "at_steps": top,
                "met": None if flat_ours is None else flat_ours <= TARGET_FLAT,
            },
        },
    }


def _split(
    per_step_a: float | None, a: int, per_step_b: float | None, b: int
) -> dict[str, float] | None:
    """A run's cost as a fixed part per run plus a marginal part per step, from two sizes.

    At few steps the fixed part (setting up a run, and the cold caches every timed run starts
    with) weighs on the per-step figure; the marginal part is what one more step costs. (Only
    for ours: the peers' per-step cost grows with the history, which this split does not model.)
    """
    if per_step_a is None or per_step_b is None or a == b:
        return None
    marginal = (per_step_b * b - per_step_a * a) / (b - a)
    return {"per_step_us": marginal, "per_run_us": per_step_a * a - marginal * a}


def print_report(clock: str, summary: dict[str, Any], results: Results) -> None:
    print()
    print(f"{clock} µs per step (median; ± (max - min) / median over the repetitions)")
    header = f"{'steps':>6}  " + "  ".join(f"{f:>16}" for f in FRAMEWORKS)
    print(header + "".join(f"  {key:>20}" for key, *_ in RATIOS))
    for row in summary["rows"]:
        n = row["steps"]
        cells = []
        for framework in FRAMEWORKS:
            series = results.get(framework, {}).get(n)
            if series is None:
                cells.append(f"{'—':>16}")
                continue
            spread = (max(series.samples) - min(series.samples)) / series.median
            cells.append(f"{series.median:>9.1f} ±{spread:>4.0%}")
        ratios = "".join(f"  {_fmt(row[key], '.3f', '×'):>20}" for key, *_ in RATIOS)
        print(f"{n:>6}  {'  '.join(cells)}{ratios}")
    flat = summary["flatness"]
    ratios = "  ".join(
        f"{f} {_fmt(r, '.2f', '×')}" for f, r in flat["ratios"].items() if r is not None
    )
    print(f"\nper step at {flat['top']} / at {flat['base']} steps: {ratios}")
    split = summary["ours_split"]
    if split["parts"] is not None:
        small, next_up = split["sizes"]
        step, run = split["parts"]["per_step_us"], split["parts"]["per_run_us"]
        print(
            f"ours from the {small}- and {next_up}-step runs: {step:.1f} µs per extra step "
            f"+ {run:.0f} µs per run"
        )
    print("\ntargets:")
    labels = {
        "ours_vs_langgraph": "ours / LangGraph per step, every size",
        "ours_vs_pydantic_ai": "ours / pydantic-ai per step, every size",
        "store_vs_saver": "ours+store / LangGraph+saver, every size",
        "ours_flat": f"ours per step at {flat['top']} / at {flat['base']}",
    }
    for key, verdict in summary["targets"].items():
        met = {True: "MET", False: "MISSED", None: "not measured"}[verdict["met"]]
        worst = _fmt(verdict["worst"], ".3f", "×")
        where = f" (worst at {verdict['at_steps']} steps)" if key != "ours_flat" else ""
        print(f"  {labels[key]:<42} ≤ {verdict['limit']}×: {worst}{where}  {met}")


def _version(package: str) -> str | None:
    try:
        return metadata.version(package)
    except metadata.PackageNotFoundError:
        return None


def _source() -> dict[str, str | None]:
    """Where ``workbench`` was imported from, and its git commit (``+dirty`` with local edits)."""
    path = os.path.dirname(os.path.dirname(os.path.abspath(wb.__file__)))
    try:
        git = ["git", "-C", path]
        commit = subprocess.run([*git, "rev-parse", "--short", "HEAD"], **_QUIET).stdout.strip()
        dirty = subprocess.run([*git, "status", "--porcelain", "workbench"], **_QUIET).stdout
    except (OSError, subprocess.CalledProcessError):
        return {"path": path, "commit": None}
    return {"path": path, "commit": commit + ("+dirty" if dirty.strip() else "")}


_QUIET: dict[str, Any] = {"capture_output": True, "text": True, "check": True, "timeout": 10}


def environment(sync_tool: bool) -> dict[str, Any]:
    """What the figures depend on: versions, machine, load, the tool kind and the store keyword."""
    return {
        "workbench_source": _source(),
        "python": platform.python_version(),
        "platform": platform.platform(),
        "cpus": os.cpu_count(),
        "load_average": [round(x, 2) for x in os.getloadavg()],
        "versions": {p: _version(p) for p in (*PACKAGES.values(), "pydantic")},
        "tool": "sync def (worker thread)" if sync_tool else "async def",
        "ours_store_kwarg": {"store": "False"},
    }


# -- profiling ------------------------------------------------------------------------------------


def profile(n: int, *, sync_tool: bool, top: int) -> None:
    """CProfile one run of our loop at ``n`` steps (after a warm-up) and print the top functions."""
    loop = asyncio.new_event_loop()
    run = ours(n, loop, sync_tool=sync_tool)
    run()
    gc.collect()
    profiler = cProfile.Profile()
    profiler.enable()
    run()
    profiler.disable()
    loop.close()
    stats = pstats.Stats(profiler)
    print(f"cProfile of our loop, {n} steps (per-step cost = cumtime / {n}):")
    stats.sort_stats("tottime").print_stats(top)
    stats.sort_stats("cumulative").print_stats(top)


# -- main -----------------------------------------------------------------------------------------


def _available(frameworks: list[str]) -> list[str]:
    present = []
    for framework in frameworks:
        if _version(PACKAGES[framework]) is None:
            print(f"{framework} is not installed (pip install -e '.[bench]'): skipped")
        else:
            present.append(framework)
    return present


def parse_args(argv: list[str] | None) -> argparse.Namespace:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: small sizes, 2 runs each")
    parser.add_argument("--sizes", type=lambda s: tuple(int(x) for x in s.split(",")))
    runs = "timed runs at the largest sizes, more at small ones (default 5)"
    parser.add_argument("--repetitions", type=int, help=runs)
    warmup = "warm-up runs at the smallest size (and one at the largest)"
    parser.add_argument("--warmup", type=int, default=2, help=warmup)
    parser.add_argument("--sync-tool", action="store_true", help="a plain def tool, not async def")
    parser.add_argument("--frameworks", default=",".join(FRAMEWORKS), help="comma-separated")
    parser.add_argument("--json", metavar="PATH", help="also write the figures as JSON")
    parser.add_argument("--check", action="store_true", help="exit 1 if a wall target is missed")
    parser.add_argument("--profile", type=int, metavar="STEPS", help="only profile our loop")
    parser.add_argument("--profile-top", type=int, default=30)
    return parser.parse_args(argv)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args.profile:
        profile(args.profile, sync_tool=args.sync_tool, top=args.profile_top)
        return 0
    sizes = args.sizes or (QUICK_SIZES if args.quick else SIZES)
    repetitions = args.repetitions or (2 if args.quick else 5)
    frameworks = _available([f for f in args.frameworks.split(",") if f])
    env = environment(args.sync_tool)
    print(
        f"loop overhead: {', '.join(frameworks)}; sizes {sizes}; "
        f"{', '.join(str(repetitions_at(n, repetitions)) for n in sizes)} repetitions; "
        f"tool {env['tool']}; load {env['load_average']} on {env['cpus']} CPUs"
    )
    source = env["workbench_source"]
    print(f"workbench from {source['path']} at {source['commit']}; versions {env['versions']}")
    print(f"our agent: {env['ours_store_kwarg'] or 'no store keyword'}")
    loop = asyncio.new_event_loop()
    runners = {
        (f, n): BUILDERS[f](n, loop, sync_tool=args.sync_tool) for f in frameworks for n in sizes
    }
    started = time.perf_counter()
    results = measure(runners, frameworks, sizes, repetitions, args.warmup)
    loop.close()
    env["load_average_after"] = [round(x, 2) for x in os.getloadavg()]
    env["seconds"] = round(time.perf_counter() - started, 1)
    summary = {clock: summarize(results[clock], sizes) for clock in CLOCKS}
    for clock in CLOCKS:
        print_report(clock, summary[clock], results[clock])
    print(f"\nload average after: {env['load_average_after']}; took {env['seconds']} s")
    if args.json:
        figures = {
            "environment": env,
            "sizes": list(sizes),
            "repetitions": {str(n): repetitions_at(n, repetitions) for n in sizes},
            "samples_us_per_step": {
                clock: {
                    f: {str(n): s.samples for n, s in by_size.items()}
                    for f, by_size in by_framework.items()
                }
                for clock, by_framework in results.items()
            },
            "summary": summary,
        }
        with open(args.json, "w", encoding="utf-8") as out:
            json.dump(figures, out, indent=2)
            out.write("\n")
        print(f"figures written to {args.json}")
    missed = any(t["met"] is False for t in summary["wall"]["targets"].values())
    return 1 if args.check and missed else 0


if __name__ == "__main__":
    sys.exit(main())
