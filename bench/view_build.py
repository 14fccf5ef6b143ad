"""The views of big traces, side by side with the code before the one trace model (8d5357f).

For traces of about 1,000, 10,000, 50,000 and 100,000 spans, each from one real run (a
`FunctionModel` asking for two tool calls a step, so six spans a step, content captured) written
as an OTLP/JSON file, the same file is measured by this code and by the code at ``--baseline``
(8d5357f by default: `git archive` of its ``workbench/`` into a temporary folder, imported first
on the path), each in a fresh process of its own, in the same run:

- **load**: ``wb.load_trace(file)``;
- **spans_df**: ``trace.spans_df()`` of the loaded trace;
- **open**: constructing ``TraceExplorer(trace)``, and the bytes of the state the page gets;
- **click**: kernel time to answer the page selecting a span (25 spans across the trace; the
  median and the slowest), and the bytes sent back;
- **report**: ``report_html(trace)``: seconds and megabytes.

This code alone, on the run itself (``wb.Telemetry``'s spans): ``telemetry.spans_df()`` and
``TraceExplorer(result, telemetry=...)``, the first time (every span read from the SDK) and
again (each span is read once). Then the report of runs of 50, 200 and 800 steps, by both code
bases: its size per step should not grow with the run.

Targets at 100,000 spans: load < 2 s; the explorer open < 1 s with < 1 MB sent; ``spans_df``
< 1 s; a click < 50 ms; the report < 30 MB (it opens in chromium: ``--browser``). Timers on a
shared 2-core machine vary with its load: compare the two columns of one run (the ratio), and
read the load average printed with them. Figures of past runs: ``bench/README.md``.

    .venv/bin/python bench/view_build.py          # all sizes (the 100,000-span run takes minutes)
    .venv/bin/python bench/view_build.py --quick      # 1,000 and 10,000 spans, once
    .venv/bin/python bench/view_build.py --repeat 1   # all sizes, each measure once
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import workbench as wb
from workbench.notebook import TraceExplorer
from workbench.report import report_html

SIZES = (1_000, 10_000, 50_000, 100_000)
SPANS_PER_STEP = 6
BASELINE = "8d5357f"
CLICKS = 25
REPORT_STEPS = (50, 200, 800)
TARGETS = {"load_s": 2.0, "open_s": 1.0, "open_bytes": 1e6, "spans_df_s": 1.0}
TARGET_CLICK_S = 0.05
TARGET_REPORT_BYTES = 30e6
ROOT = Path(__file__).resolve().parent.parent


@wb.tool
async def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def make_run(steps: int, telemetry: wb.Telemetry | None) -> wb.RunResult:
    """A real run of ``steps`` steps (two tool calls each), recorded by ``telemetry``."""
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

    agent = wb.Agent(
        model=wb.FunctionModel(answer, name="bench"),
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


def fresh(make: Callable[[], Any], work: Callable[[Any], object], repeat: int) -> float:
    """Median seconds of ``work(make())``, timing the work only, each on a fresh ``make()``.

    A trace keeps what it derives (its tree, its step table): timing a view twice on one trace
    would time the second one without them.
    """
    times = []
    for _ in range(repeat):
        made = make()
        gc.collect()
        started = time.perf_counter()
        work(made)
        times.append(time.perf_counter() - started)
    return statistics.median(times)


def once(work: Callable[[], object]) -> float:
    gc.collect()
    started = time.perf_counter()
    work()
    return time.perf_counter() - started


class _CountingExplorer(TraceExplorer):
    """The explorer, counting the bytes of every comm message the kernel would send the page."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.sent: list[int] = []
        super().__init__(*args, **kwargs)

    def _send(self, msg: Any, buffers: Any = None) -> None:
        self.sent.append(len(json.dumps(msg)) + sum(len(b) for b in buffers or ()))


def _click(widget: _CountingExplorer, span_id: str) -> tuple[float, int]:
    """Kernel seconds and bytes sent to answer the page selecting ``span_id`` (a comm update)."""
    widget.sent.clear()
    started = time.perf_counter()
    widget.set_state({"selected": span_id})  # what ipywidgets does with the page's update
    return time.perf_counter() - started, sum(widget.sent)


def measure_file(path: Path, repeat: int) -> dict[str, Any]:
    """The views of the trace in ``path``, with whichever workbench is imported."""
    trace = wb.load_trace(path)
    widget = _CountingExplorer(trace)
    ids = [s.span_id for s in widget.view.tree.spans]
    clicks = [_click(widget, i) for i in ids[:: max(len(ids) // CLICKS, 1)][:CLICKS]]
    html = report_html(trace)
    return {
        "spans": len(trace.spans),
        "load_s": timed(lambda: wb.load_trace(path), repeat),
        "spans_df_s": fresh(lambda: wb.load_trace(path), lambda t: t.spans_df(), repeat),
        "open_s": fresh(lambda: wb.load_trace(path), TraceExplorer, repeat),
        "open_bytes": len(json.dumps(widget.get_state(), default=str)),
        "click_s": statistics.median(c[0] for c in clicks),
        "click_max_s": max(c[0] for c in clicks),
        "click_bytes": statistics.median(c[1] for c in clicks),
        "report_s": fresh(lambda: wb.load_trace(path), report_html, max(repeat - 1, 1)),
        "report_bytes": len(html.encode()),
    }


def open_in_chromium(path: Path) -> float | None:
    """Seconds until chromium shows the report's explorer and a clicked span's detail.

    None when chromium or Playwright is not installed (``scripts/install-browser``).
    """
    chromium = Path("/usr/bin/chromium")
    try:
        from playwright.sync_api import sync_playwright
    except ImportError:
        return None
    if not chromium.exists():
        return None
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=str(chromium), args=["--no-sandbox"])
        page = browser.new_page()
        started = time.perf_counter()
        page.goto(path.as_uri(), timeout=300_000)
        page.locator("#wb-explorer .wbx-count").filter(has_text="spans shown").wait_for(
            timeout=300_000
        )
        page.locator("#wb-explorer .wbx-row").nth(3).click()
        page.locator("#wb-explorer .wbx-detail .wb-span-detail").wait_for(timeout=60_000)
        seconds = time.perf_counter() - started
        browser.close()
    return seconds


def measure_report(steps: int) -> dict[str, Any]:
    """The report of a run of ``steps`` steps with content captured."""
    telemetry = wb.Telemetry(capture_content=True)
    result = make_run(steps, telemetry)
    return {"steps": steps, "report_bytes": len(report_html(result, telemetry=telemetry).encode())}


def measure_live(result: wb.RunResult, telemetry: wb.Telemetry, repeat: int) -> dict[str, Any]:
    """This code on the run itself: the first read of the telemetry's spans, and again."""
    return {
        "spans_df_first_s": once(telemetry.spans_df),
        "spans_df_s": timed(telemetry.spans_df, repeat),
        "open_s": timed(lambda: TraceExplorer(result, telemetry=telemetry), repeat),
    }


def code_at(commit: str, folder: Path) -> dict[str, str]:
    """The environment of a process that imports the ``workbench/`` of ``commit`` (put in
    ``folder``) before this one."""
    archive = subprocess.run(
        ["git", "-C", str(ROOT), "archive", commit, "workbench"], check=True, capture_output=True
    ).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return {**os.environ, "PYTHONPATH": str(folder)}


def in_subprocess(work: list[str], repeat: int, commit: str | None = None) -> list[dict[str, Any]]:
    """The measures of ``work`` in a fresh process: this code, or the code at ``commit``.

    Both code bases are measured the same way, each in a process of its own that holds only the
    trace measured (the parent holds the live run, whose objects the collector would walk too).
    """
    with tempfile.TemporaryDirectory() as folder:
        env = code_at(commit, Path(folder)) if commit is not None else dict(os.environ)
        done = subprocess.run(
            [sys.executable, __file__, "--repeat", str(repeat), "--worker", *work],
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
    answers: list[dict[str, Any]] = json.loads(done.stdout.strip().splitlines()[-1])
    return answers


def _worker(work: Sequence[str], repeat: int) -> None:
    """Measure each item (a trace file, or ``steps:N`` for a report) and print them as JSON."""
    found = []
    for item in work:
        if item.startswith("steps:"):
            found.append(measure_report(int(item.removeprefix("steps:"))))
        else:
            found.append(measure_file(Path(item), repeat))
    print(json.dumps(found))


def _ratio(old: float, new: float) -> str:
    return f"{old / new:5.1f}x" if new else "  -  "


def _line(size: int, new: dict[str, Any], old: dict[str, Any]) -> str:
    parts = [f"{new['spans']:>8,} spans"]
    for key, unit, scale in (
        ("load_s", "s", 1),
        ("spans_df_s", "s", 1),
        ("open_s", "s", 1),
        ("open_bytes", "kB", 1e-3),
        ("click_max_s", "ms", 1e3),
        ("report_s", "s", 1),
        ("report_bytes", "MB", 1e-6),
    ):
        parts.append(
            f"{key.removesuffix('_s').removesuffix('_bytes')} {new[key] * scale:,.2f}{unit}"
            f" (was {old[key] * scale:,.2f}, {_ratio(old[key], new[key])})"
        )
    return "  ".join(parts)


def checks(new: dict[str, Any], live: dict[str, Any]) -> dict[str, bool]:
    """The targets at this size (meant for 100,000 spans)."""
    spans = f"{new['spans']:,} spans"
    found = {f"{spans}: {key} < {limit:g}": new[key] < limit for key, limit in TARGETS.items()}
    found[f"{spans}: telemetry.spans_df (again) < 1 s"] = live["spans_df_s"] < 1.0
    found[f"{spans}: explorer of the run open < 1 s"] = live["open_s"] < 1.0
    found[f"{spans}: a click < 50 ms"] = new["click_max_s"] < TARGET_CLICK_S
    found[f"{spans}: report < 30 MB"] = new["report_bytes"] < TARGET_REPORT_BYTES
    return found


def main(argv: Sequence[str] | None = None) -> int:
    """Run the benchmark, print the figures side by side and whether the targets are met."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="1,000 and 10,000 spans, once")
    parser.add_argument("--baseline", default=BASELINE, help="the commit to compare with")
    parser.add_argument("--json", metavar="FILE", help="also write the figures as JSON")
    parser.add_argument("--repeat", type=int, help="times each measure is taken (3; --quick: 1)")
    parser.add_argument("--worker", nargs="+", help=argparse.SUPPRESS)
    args = parser.parse_args(argv)
    repeat = args.repeat or (1 if args.quick else 3)
    if args.worker:
        _worker(args.worker, repeat)
        return 0
    sizes = SIZES[:2] if args.quick else SIZES
    figures: dict[str, Any] = {"load_average": os.getloadavg(), "sizes": []}
    found: dict[str, bool] = {}
    print(
        f"load average {os.getloadavg()[0]:.1f}; this code, and (was) the code at {args.baseline}"
    )
    with tempfile.TemporaryDirectory() as folder:
        for size in sizes:
            telemetry = wb.Telemetry(capture_content=True)
            result = make_run(max(size // SPANS_PER_STEP, 1), telemetry)
            path = telemetry.write_otlp_json(Path(folder) / f"{size}.otlp.json")
            live = measure_live(result, telemetry, repeat)
            (new,) = in_subprocess([str(path)], repeat)
            (old,) = in_subprocess([str(path)], repeat, args.baseline)
            print(_line(size, new, old), flush=True)
            print(
                f"{'':>14}the run's telemetry: spans_df {live['spans_df_first_s']:.2f} s the first "
                f"time, {live['spans_df_s']:.2f} s again; explorer open {live['open_s']:.2f} s",
                flush=True,
            )
            figures["sizes"].append({"size": size, "new": new, "was": old, "live": live})
            if size == SIZES[-1]:
                found = checks(new, live)
                report = Path(folder) / "report.html"
                report.write_text(report_html(wb.load_trace(path)), encoding="utf-8")
                opened = open_in_chromium(report)
                said = "no chromium here" if opened is None else f"{opened:.1f} s"
                print(f"{'':>14}the report opens in chromium: {said}")
                found[f"{new['spans']:,} spans: the report opens in chromium"] = opened is not None
    steps = REPORT_STEPS[:2] if args.quick else REPORT_STEPS
    reports = in_subprocess([f"steps:{s}" for s in steps], repeat)
    old_reports = in_subprocess([f"steps:{s}" for s in steps], repeat, args.baseline)
    for new_r, old_r in zip(reports, old_reports, strict=True):
        per, was = new_r["report_bytes"] / new_r["steps"], old_r["report_bytes"] / old_r["steps"]
        steps_n = new_r["steps"]
        print(f"report of {steps_n:>4} steps: {per / 1e3:,.1f} kB a step (was {was / 1e3:,.1f})")
    figures["reports"] = {"new": reports, "was": old_reports}
    for what, ok in found.items():
        print(f"target {what}: {'met' if ok else 'MISSED'}")
    if args.json:
        Path(args.json).write_text(json.dumps({**figures, "targets": found}, indent=2))
    return 0 if all(found.values()) or args.quick else 1


if __name__ == "__main__":
    sys.exit(main())
