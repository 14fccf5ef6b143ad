"""The ``workbench`` command.

Each verb is a small function registered in `_VERBS` with its argument setup; ``main`` only parses
and dispatches.
"""

from __future__ import annotations

import argparse
import sys
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbench._runs_cli import run_replay, run_runs, run_show, setup_replay, setup_runs, setup_show
from workbench.agent import RunResult
from workbench.records import StepRecord
from workbench.report import run_report, setup_report
from workbench.store import RunStore
from workbench.telemetry.commands import run_export, run_push, setup_export, setup_push

if TYPE_CHECKING:
    from workbench.telemetry import Telemetry

__all__ = ["DEMO_DIR", "main", "step_table"]

DEMO_DIR = Path("workbench-demo")
"""Where ``workbench demo`` writes its files."""


def step_table(steps: Sequence[StepRecord]) -> str:
    """A plain-text table of steps: timings (ms), tool calls, tokens, status, stop reason."""
    header = (
        "step",
        "prepare ms",
        "infer ms",
        "tools ms",
        "hooks ms",
        "calls",
        "tokens in/out",
        "status",
        "stop",
    )
    rows = [header]
    for s in steps:
        calls = ", ".join(f"{o.name}:{o.status}" for o in s.tool_outcomes) or "-"
        t = s.timing
        rows.append(
            (
                str(s.index),
                f"{t.prepare * 1e3:.2f}",
                f"{t.inference * 1e3:.2f}",
                f"{t.tools * 1e3:.2f}",
                f"{t.hooks * 1e3:.2f}",
                calls,
                f"{s.usage.input_tokens}/{s.usage.output_tokens}",
                s.status.value,
                s.stop_reason.value if s.stop_reason else "-",
            )
        )
    widths = [max(len(r[i]) for r in rows) for i in range(len(header))]
    lines = ["  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)) for r in rows]
    lines.insert(1, "  ".join("-" * w for w in widths))
    return "\n".join(lines)


def _demo(args: argparse.Namespace) -> int:
    from workbench.demo import demo_agent, run_demo

    telemetry = _demo_telemetry()
    results = run_demo(demo_agent(telemetry=telemetry) if telemetry is not None else None)
    steps = [s for r in results for s in r.steps]
    final: RunResult = results[-1]
    print(step_table(steps))
    print()
    paused = len(results) - 1
    print(f"run {final.run_id}: {final.status.value}, stop reason {final.stop_reason}")
    print(f"approvals granted: {paused}; tokens: {final.usage.total_tokens}")
    print(f"output: {final.output}")
    store = RunStore.default()  # the demo agent records to the default store
    if store is not None:
        print(f"recorded in {store.path}: workbench show {final.run_id}")
    if telemetry is not None:
        from workbench.telemetry.commands import write_demo_traces

        written = write_demo_traces(telemetry, DEMO_DIR)
        print(f"traces: {', '.join(str(p) for p in written)} (trace {final.trace_id})")
    print(_demo_report(results, telemetry))
    return 0 if final.status.value == "completed" else 1


def _demo_report(results: Sequence[RunResult], telemetry: Telemetry | None) -> str:
    """Write the demo's standalone HTML report; says where, or why there is none."""
    try:
        from workbench.report import write_report

        path = write_report(results, DEMO_DIR / "report.html", telemetry=telemetry)
    except ImportError as exc:
        return f"(no HTML report: {exc}; pip install 'workbench[notebook]')"
    return f"report: {path} (opens offline in a browser)"


def _demo_telemetry() -> Telemetry | None:
    """In-memory telemetry for the demo, or None when OpenTelemetry is not installed."""
    try:
        from workbench.telemetry import Telemetry

        return Telemetry(capture_content=True)
    except ImportError as exc:
        print(f"(no trace files: {exc})")
        return None


_VERBS: dict[str, tuple[str, Callable[[argparse.ArgumentParser], None], Callable[..., int]]] = {
    "demo": ("run the built-in scripted agent offline", lambda p: None, _demo),
    "export": ("write a stored run's trace as Jaeger or OTLP JSON", setup_export, run_export),
    "push": ("send a stored run's trace to an OTLP/HTTP endpoint", setup_push, run_push),
    "runs": ("list the runs in the run store", setup_runs, run_runs),
    "show": ("show a stored run: steps, timing, output", setup_show, run_show),
    "report": ("write a stored run as one standalone HTML file", setup_report, run_report),
    "replay": ("re-run a stored run exactly from a step (--from-step N)", setup_replay, run_replay),
}


def main(argv: Sequence[str] | None = None) -> int:
    """Entry point of the ``workbench`` command."""
    parser = argparse.ArgumentParser(prog="workbench", description=__doc__.splitlines()[0])
    verbs = parser.add_subparsers(dest="verb", required=True)
    for name, (help_text, setup, _) in _VERBS.items():
        setup(verbs.add_parser(name, help=help_text))
    args = parser.parse_args(argv)
    return _VERBS[args.verb][2](args)


if __name__ == "__main__":
    sys.exit(main())
