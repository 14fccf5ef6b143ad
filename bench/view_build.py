"""How long the notebook views take to build for big runs (issue 7).

Runs are real: a `FunctionModel` that asks for two tool calls per step (so a step makes six spans:
step, prepare, chat, two execute_tool, continuation) until the step count is reached, with
in-memory `wb.Telemetry`. Then, for traces of about 100, 1,000 and 10,000 spans:

- **figures**: `trace_figures(run_view_data(result, telemetry=...))`: the span table of this run
  from ``spans_df()``, the step table, the waterfall, the timing breakdown and tokens per step;
- **figures, no telemetry**: the same from the step records alone (spans rebuilt from timings);
- **widget**: the whole `TraceView` (the figures plus their JSON for the page).

And ``Telemetry.spans_df()`` over 100,000 spans (several runs into one telemetry, as a long
notebook session collects them). Targets: a 1,000-step run's view in under a second; 100,000
spans to a DataFrame in under two. Figures are the median of the repetitions, in seconds.

    .venv/bin/python bench/view_build.py            # full run (about a minute)
    .venv/bin/python bench/view_build.py --quick    # smoke run (a few seconds)
"""

from __future__ import annotations

import argparse
import gc
import json
import statistics
import sys
import time
from collections.abc import Callable, Sequence
from typing import Any

import workbench as wb
from workbench.notebook import TraceView, run_view_data, trace_figures

SPANS_PER_STEP = 6
SPAN_SIZES = (100, 1_000, 10_000)
TARGET_STEPS = 1_000
TARGET_VIEW_S = 1.0
DF_SPANS = 100_000
TARGET_DF_S = 2.0
RUN_STEPS = 1_000
"""Steps per run when many runs fill one telemetry (bounds each run's message history)."""


@wb.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def _model(steps: int) -> wb.FunctionModel:
    calls = 0

    async def answer(messages: Sequence[wb.Message], request: Any) -> wb.ModelResponse:
        nonlocal calls
        calls += 1
        if calls >= steps:
            return wb.ModelResponse.text("done", usage=wb.Usage(input_tokens=10, output_tokens=2))
        return wb.ModelResponse.tool_calls(
            [("add", {"a": 1, "b": 2}), ("add", {"a": 3, "b": 4})],
            usage=wb.Usage(input_tokens=10, output_tokens=5, cost=0.00001),
        )

    return wb.FunctionModel(answer, name="bench")


def make_run(steps: int, telemetry: wb.Telemetry) -> wb.RunResult:
    """A real run of ``steps`` steps recorded by ``telemetry``."""
    agent = wb.Agent(
        model=_model(steps),
        tools=[add],
        stop=wb.MaxSteps(steps + 1),
        wrap_up_message=None,
        history_processors=[wb.KeepLast(8)],
        telemetry=telemetry,
        store=False,
    )
    result = agent.run_sync("add")
    assert len(result.steps) == steps, result.status
    assert result.output == "done", result.output
    return result


def timed(work: Callable[[], object], repeat: int) -> float:
    """Median seconds of ``repeat`` calls (after one warm-up), each after a collection."""
    work()
    times = []
    for _ in range(repeat):
        gc.collect()
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def bench_views(sizes: Sequence[int], repeat: int) -> list[dict[str, Any]]:
    """View build times for runs of about each number of spans (and the 1,000-step run)."""
    rows = []
    plan = [(max(size // SPANS_PER_STEP, 1), f"~{size:,} spans") for size in sizes]
    plan.append((TARGET_STEPS, f"{TARGET_STEPS:,}-step run"))
    for steps, label in plan:
        rows.append(_view_row(steps, label, repeat))
        print(_row(rows[-1]), flush=True)
    return rows


def _view_row(steps: int, label: str, repeat: int) -> dict[str, Any]:
    telemetry = wb.Telemetry()
    result = make_run(steps, telemetry)
    return {
        "run": label,
        "steps": steps,
        "spans": len(telemetry.spans),
        "figures_s": timed(
            lambda: trace_figures(run_view_data(result, telemetry=telemetry)), repeat
        ),
        "figures_no_telemetry_s": timed(lambda: trace_figures(run_view_data(result)), repeat),
        "widget_s": timed(lambda: TraceView(result, telemetry=telemetry), repeat),
    }


def bench_spans_df(total: int, repeat: int) -> dict[str, Any]:
    """``spans_df()`` over about ``total`` spans collected from several runs."""
    telemetry = wb.Telemetry()
    while len(telemetry.spans) < total:
        make_run(RUN_STEPS, telemetry)
    spans = len(telemetry.spans)
    seconds = timed(telemetry.spans_df, repeat)
    frame = telemetry.spans_df()
    assert len(frame) == spans
    return {"spans": spans, "spans_df_s": seconds}


def _row(row: dict[str, Any]) -> str:
    return (
        f"{row['run']:>16}  {row['steps']:>6,} steps  {row['spans']:>7,} spans  "
        f"figures {row['figures_s']:.3f} s  (no telemetry {row['figures_no_telemetry_s']:.3f} s)  "
        f"TraceView {row['widget_s']:.3f} s"
    )


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the figures and whether the targets are met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one repetition")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    args = parser.parse_args(argv)
    sizes = (100, 1_000) if args.quick else SPAN_SIZES
    repeat = 1 if args.quick else 3
    total = 10_000 if args.quick else DF_SPANS
    print("building the views (median seconds)")
    views = bench_views(sizes, repeat)
    frame = bench_spans_df(total, repeat)
    print(f"spans_df(): {frame['spans']:,} spans in {frame['spans_df_s']:.3f} s")
    view = next(r for r in views if r["steps"] == TARGET_STEPS)
    checks = {
        f"{TARGET_STEPS:,}-step run's view < {TARGET_VIEW_S} s": view["widget_s"] < TARGET_VIEW_S,
        f"{DF_SPANS:,} spans to a DataFrame < {TARGET_DF_S} s": frame["spans_df_s"] < TARGET_DF_S,
    }
    for what, ok in checks.items():
        print(f"target {what}: {'met' if ok else 'MISSED'}")
    if args.json:
        with open(args.json, "w") as out:
            json.dump({"views": views, "spans_df": frame, "targets": checks}, out, indent=2)
    return 0 if all(checks.values()) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
