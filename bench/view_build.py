"""How long the notebook views take to build for big runs (issue 7).

Runs are real: a `FunctionModel` that asks for two tool calls per step (so a step makes six spans:
step, prepare, chat, two execute_tool, continuation) until the step count is reached, with
in-memory `wb.Telemetry`. Then, for traces of about 100, 1,000 and 10,000 spans:

- **figures**: `trace_figures(wb.trace_of(result, telemetry=...))`: the span table of this run
  from ``spans_df()``, the step table, the waterfall, the timing breakdown and tokens per step;
- **figures, no telemetry**: the same from the step records alone (spans rebuilt from timings);
- **widget**: the whole `TraceView` (the figures plus their JSON for the page).

And ``Telemetry.spans_df()`` over 100,000 spans (several runs into one telemetry, as a long
notebook session collects them). Targets: a 1,000-step run's view in under a second; 100,000
spans to a DataFrame in under two. Figures are the median of the repetitions, in seconds.

Then the trace explorer (issue 17) on runs of about 1,000, 10,000 and 50,000 spans (content
captured), side by side with the plotly waterfall `TraceView` draws of the same spans:

- **open**: seconds to construct `TraceExplorer(result, telemetry=...)`, and the bytes of the
  widget state the page gets when it opens (the ES module and CSS included);
- **click**: kernel seconds to answer the page selecting a span, and the bytes sent back (the
  comm messages, counted as the kernel sends them); the median over spans across the trace;
- **search**: kernel seconds and bytes to answer a search typed in the box;
- **waterfall**: seconds to build the figure and the bytes of its JSON (what `TraceView` sends).

Targets: 10,000 spans open in < 1 s with < 1 MB sent; a click answered in < 50 ms of kernel
time; 50,000 spans open in < 5 s.

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
from workbench.notebook import TraceExplorer, TraceView, trace_figures
from workbench.notebook._output import figure_output
from workbench.notebook.spans import waterfall_figure

SPANS_PER_STEP = 6
SPAN_SIZES = (100, 1_000, 10_000)
EXPLORER_SIZES = (1_000, 10_000, 50_000)
TARGET_OPEN_S = 1.0
TARGET_OPEN_BYTES = 1_000_000
TARGET_CLICK_S = 0.05
TARGET_BIG_OPEN_S = 5.0
CLICKS = 25
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
        "figures_s": timed(lambda: trace_figures(wb.trace_of(result, telemetry=telemetry)), repeat),
        "figures_no_telemetry_s": timed(lambda: trace_figures(wb.trace_of(result)), repeat),
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


class _CountingExplorer(TraceExplorer):
    """The explorer, counting the bytes of every comm message the kernel would send the page."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[int] = []
        super().__init__(*args, **kwargs)

    def _send(self, msg: Any, buffers: Any = None) -> None:
        self.sent.append(len(json.dumps(msg)) + sum(len(b) for b in buffers or ()))


def _answer(widget: _CountingExplorer, state: dict[str, Any]) -> tuple[float, int]:
    """Kernel seconds and bytes sent to answer the page setting ``state`` (as a comm update)."""
    widget.sent.clear()
    started = time.perf_counter()
    widget.set_state(state)  # what ipywidgets does with a comm update from the page
    return time.perf_counter() - started, sum(widget.sent)


def _explorer_row(steps: int, repeat: int) -> dict[str, Any]:
    telemetry = wb.Telemetry(capture_content=True)
    result = make_run(steps, telemetry)
    trace = wb.trace_of(result, telemetry=telemetry)
    open_s = timed(lambda: _CountingExplorer(result, telemetry=telemetry), repeat)
    widget = _CountingExplorer(result, telemetry=telemetry)
    open_bytes = len(json.dumps(widget.get_state()))
    ids = [s.span_id for s in widget.view.tree.spans]
    picks = ids[:: max(len(ids) // CLICKS, 1)][:CLICKS]
    clicks = [_answer(widget, {"selected": span_id}) for span_id in picks]
    searches = [
        _answer(widget, {"query": q}) for q in ("add", "execute_tool", "nothing-like-it", "")
    ]
    figure_s = timed(lambda: waterfall_figure(trace), max(repeat - 1, 1))
    figure = waterfall_figure(trace)
    return {
        "spans": len(ids),
        "open_s": open_s,
        "open_bytes": open_bytes,
        "click_s": statistics.median(c[0] for c in clicks),
        "click_max_s": max(c[0] for c in clicks),
        "click_bytes": statistics.median(c[1] for c in clicks),
        "search_s": statistics.median(s[0] for s in searches),
        "search_bytes": statistics.median(s[1] for s in searches),
        "waterfall_s": figure_s,
        "waterfall_bytes": len(json.dumps(figure_output(figure))),
    }


def bench_explorer(sizes: Sequence[int], repeat: int) -> list[dict[str, Any]]:
    """The explorer and the waterfall on runs of about each number of spans."""
    rows = []
    for size in sizes:
        row = _explorer_row(max(size // SPANS_PER_STEP, 1), repeat)
        rows.append(row)
        print(
            f"{row['spans']:>7,} spans  explorer: open {row['open_s']:.3f} s, "
            f"{row['open_bytes'] / 1e3:,.1f} kB; click {row['click_s'] * 1e3:.2f} ms "
            f"(max {row['click_max_s'] * 1e3:.2f}), {row['click_bytes'] / 1e3:,.1f} kB; "
            f"search {row['search_s'] * 1e3:.1f} ms, {row['search_bytes'] / 1e3:,.1f} kB  |  "
            f"waterfall: {row['waterfall_s']:.3f} s, {row['waterfall_bytes'] / 1e3:,.0f} kB  |  "
            f"waterfall/explorer: time {row['waterfall_s'] / row['open_s']:.1f}x, "
            f"bytes {row['waterfall_bytes'] / row['open_bytes']:.0f}x",
            flush=True,
        )
    return rows


def _row(row: dict[str, Any]) -> str:
    return (
        f"{row['run']:>16}  {row['steps']:>6,} steps  {row['spans']:>7,} spans  "
        f"figures {row['figures_s']:.3f} s  (no telemetry {row['figures_no_telemetry_s']:.3f} s)  "
        f"TraceView {row['widget_s']:.3f} s"
    )


def _explorer_checks(rows: list[dict[str, Any]]) -> dict[str, bool]:
    checks = {}
    for row in rows:
        if 9_000 <= row["spans"] <= 11_000:
            checks[f"explorer: {row['spans']:,} spans open < {TARGET_OPEN_S} s"] = (
                row["open_s"] < TARGET_OPEN_S
            )
            checks[f"explorer: {row['spans']:,} spans send < 1 MB at open"] = (
                row["open_bytes"] < TARGET_OPEN_BYTES
            )
        if row["spans"] >= 45_000:
            checks[f"explorer: {row['spans']:,} spans open < {TARGET_BIG_OPEN_S} s"] = (
                row["open_s"] < TARGET_BIG_OPEN_S
            )
        checks[f"explorer: a click on {row['spans']:,} spans < 50 ms of kernel time"] = (
            row["click_max_s"] < TARGET_CLICK_S
        )
    return checks


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
    print("the trace explorer beside the plotly waterfall (kernel time, bytes sent to the page)")
    explorer = bench_explorer((1_000, 5_000) if args.quick else EXPLORER_SIZES, repeat)
    view = next(r for r in views if r["steps"] == TARGET_STEPS)
    checks = _explorer_checks(explorer)
    checks |= {
        f"{TARGET_STEPS:,}-step run's view < {TARGET_VIEW_S} s": view["widget_s"] < TARGET_VIEW_S,
        f"{DF_SPANS:,} spans to a DataFrame < {TARGET_DF_S} s": frame["spans_df_s"] < TARGET_DF_S,
    }
    for what, ok in checks.items():
        print(f"target {what}: {'met' if ok else 'MISSED'}")
    if args.json:
        with open(args.json, "w") as out:
            figures = {"views": views, "spans_df": frame, "explorer": explorer, "targets": checks}
            json.dump(figures, out, indent=2)
    return 0 if all(checks.values()) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
