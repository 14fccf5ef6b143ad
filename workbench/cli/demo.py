"""``workbench demo``: run the built-in scripted agent offline and show what the workbench records.

The agent and its run are library code (`workbench.demo`); this verb prints the step table,
writes the traces (Jaeger and OTLP JSON) and the standalone HTML report under `DEMO_DIR`, and says
where each went. Without the ``otlp`` or ``notebook`` extra it says which file it could not write.
"""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.agent import RunResult
from workbench.cli._common import echo, step_table
from workbench.demo import DEMO_PROMPT, demo_agent, run_demo
from workbench.store import RunStore

if TYPE_CHECKING:
    from workbench.telemetry import Telemetry

__all__ = ["DEMO_DIR", "run_demo_verb"]

DEMO_DIR = Path("workbench-demo")
"""Where ``workbench demo`` writes its files."""


INTRODUCTION = f"""\
The demo: a calculator agent on a scripted model, offline, asked
  {DEMO_PROMPT!r}
Its model sends a bad argument once (the tool asks it to retry), and save_result needs approval:
the run pauses, the demo approves the call, and the same run resumes. Its steps:
"""


def run_demo_verb(args: argparse.Namespace) -> int:
    """Run the demo, print its steps and outcome, write its traces and report."""
    telemetry = _demo_telemetry()
    results = run_demo(demo_agent(telemetry=telemetry) if telemetry is not None else None)
    final: RunResult = results[-1]  # the resumed run: every step, the paused part's too
    echo(INTRODUCTION)
    echo(step_table(final.steps))
    echo()
    paused = len(results) - 1
    approvals = f"{paused} approval{'s' * (paused != 1)} granted"
    echo(
        f"run {final.run_id} ({final.state.agent_name}): {final.summary}; stop reason "
        f"{final.stop_reason.value if final.stop_reason else '-'}; {approvals}; "
        f"{final.usage.total_tokens} tokens"
    )
    echo(f"output: {final.output}")
    echo("\nWhat it wrote:")
    store = RunStore.default()  # the demo agent records to the default store
    if store is not None:
        echo(f"  the run, in the store {store.path}: workbench show {final.run_id}")
    if telemetry is not None:
        written = [
            telemetry.write_jaeger_json(DEMO_DIR / "run.jaeger.json"),
            telemetry.write_otlp_json(DEMO_DIR / "run.otlp.json"),
        ]
        echo(f"  its traces (trace {final.trace_id}): {', '.join(str(p) for p in written)}")
    echo(f"  {_demo_report(results, telemetry)}")
    if telemetry is not None:  # $OTEL_EXPORTER_OTLP_ENDPOINT set: delivered, or said, now
        telemetry.shutdown()  # (at exit, a failure would miss the verb's one-line warnings)
    return 0 if final.status.value == "completed" else 1


def _demo_report(results: Sequence[RunResult], telemetry: Telemetry | None) -> str:
    """Write the demo's standalone HTML report; says where, or why there is none."""
    try:
        from workbench.report import write_report

        path = write_report(results, DEMO_DIR / "report.html", telemetry=telemetry)
    except ImportError as exc:
        return f"(no HTML report: {exc}; pip install 'workbench[notebook]')"
    return f"a report that opens offline in a browser: {path}"


def _demo_telemetry() -> Telemetry | None:
    """In-memory telemetry for the demo, or None when OpenTelemetry is not installed."""
    try:
        from workbench.telemetry import Telemetry

        return Telemetry(capture_content=True)
    except ImportError as exc:
        echo(f"(no trace files: {exc})")
        return None
