"""Traces: ``workbench export`` and ``push`` send a stored run's out; ``trace`` reads one in.

Stored runs keep their records, not their spans; ``export`` and ``push`` rebuild the spans from
the records (`workbench.telemetry.rebuild_telemetry`), with the live run's trace id when it had
telemetry. ``trace`` reads a trace with `load_trace` (a file from us, Jaeger or another
framework, or a backend) and shows it from its spans alone: no store, no step records.
"""

from __future__ import annotations

import argparse
import math
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.cli._common import (
    STEP_HEADER,
    call_legend,
    echo,
    errors_text,
    http_url,
    load_run,
    message_line,
    run_argument,
    seconds,
    store_option,
    text_table,
    tried,
    wrote_report,
)
from workbench.errors import TraceLoadError
from workbench.report import trace_summary, write_report
from workbench.telemetry import otlp_traces_endpoint, rebuild_telemetry
from workbench.telemetry.load import load_trace

if TYPE_CHECKING:
    import pandas as pd

    from workbench.telemetry.trace import Trace

__all__ = ["run_export", "run_push", "run_trace", "setup_export", "setup_push", "setup_trace"]


def setup_export(parser: argparse.ArgumentParser) -> None:
    """``workbench export RUN --format jaeger|otlp -o FILE``."""
    run_argument(parser)
    parser.add_argument(
        "--format",
        choices=("jaeger", "otlp"),
        default="jaeger",
        help="jaeger: a file the Jaeger UI uploads; otlp: OTLP/JSON (default: jaeger)",
    )
    parser.add_argument("-o", "--output", default=None, help="file (default RUN.FORMAT.json)")
    parser.add_argument(
        "--content", action="store_true", help="include messages and tool arguments (redacted)"
    )
    store_option(parser)


def setup_push(parser: argparse.ArgumentParser) -> None:
    """``workbench push RUN --endpoint URL``."""
    run_argument(parser)
    parser.add_argument(
        "--endpoint",
        type=http_url,
        default=None,
        help="OTLP/HTTP traces URL (default: $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, "
        "else http://localhost:4318/v1/traces)",
    )
    parser.add_argument(
        "--timeout", type=seconds, default=10.0, help="seconds to wait for delivery"
    )
    parser.add_argument("--content", action="store_true", help="include messages (redacted)")
    store_option(parser)


def run_export(args: argparse.Namespace) -> int:
    """Write a stored run's trace as a Jaeger UI upload file or an OTLP/JSON file."""
    run = load_run(args)
    telemetry = rebuild_telemetry(run, capture_content=args.content)
    output = Path(args.output or f"{run.run_id}.{args.format}.json")
    if args.format == "jaeger":
        telemetry.write_jaeger_json(output)
    else:
        telemetry.write_otlp_json(output)
    echo(f"{output}: {len(telemetry.spans)} spans of run {run.run_id}")
    return 0


def run_push(args: argparse.Namespace) -> int:
    """Send a stored run's trace to an OTLP/HTTP endpoint (Jaeger, Phoenix, a collector)."""
    run = load_run(args)
    endpoint = otlp_traces_endpoint(args.endpoint) or "http://localhost:4318/v1/traces"
    telemetry = rebuild_telemetry(run, capture_content=args.content, otlp_endpoint=endpoint)
    stats = telemetry.shutdown(timeout=args.timeout)
    assert stats is not None
    trace = run.trace_id or "-"
    sent = f"{stats.exported} of {stats.queued} spans sent to {stats.endpoint}"  # redacted
    echo(f"run {run.run_id} (trace {trace}): {sent}")
    return 0 if stats.unconfirmed == 0 else 1


def setup_trace(parser: argparse.ArgumentParser) -> None:
    """``workbench trace SOURCE [--trace-id ID] [-o FILE.html] [--messages]``."""
    parser.add_argument(
        "source",
        metavar="SOURCE",
        help="an OTLP/JSON or Jaeger JSON file (ours or another framework's), or a backend: "
        "jaeger+http://HOST:16686/TRACE_ID or phoenix+http://HOST:6006/PROJECT/TRACE_ID",
    )
    parser.add_argument("--trace-id", default=None, help="keep only this trace of the source")
    parser.add_argument(
        "-o", "--output", default=None, metavar="FILE.html", help="also write its HTML report"
    )
    parser.add_argument(
        "--messages", action="store_true", help="print the last model call's conversation too"
    )
    parser.add_argument(
        "--timeout", type=seconds, default=10.0, help="seconds to wait for a backend"
    )


def run_trace(args: argparse.Namespace) -> int:
    """Show a loaded trace: what it holds, its steps, its conversation; write its report."""
    trace = load_trace(args.source, trace_id=args.trace_id, timeout=args.timeout)
    echo(trace.summary())  # what went wrong, first
    for key, value in trace_summary(trace).items():
        if key != "errors":  # said with their tracebacks below
            echo(f"{key}: {value}")
    errors = trace.errors()
    if errors:
        echo()
        echo(errors_text(errors))
    table = trace.steps_df()
    echo()
    echo(_step_rows(table) if len(table) else "(no steps and no model calls)")
    problems = trace.problems()
    if problems:  # shown as missing above; say which values they were
        echo(f"\n{len(problems)} value(s) could not be read:")
        for line in problems[:20]:
            echo(f"  {line}")
    if args.messages:
        echo()
        _print_messages(trace)
    if args.output:
        path = write_report(trace, args.output)
        echo()
        echo(wrote_report(path))
    return 0


def _print_messages(trace: Trace) -> None:
    try:
        messages = trace.messages()
    except TraceLoadError as exc:  # content a tracer wrote in a shape that is not messages
        echo(f"(the last model call's messages cannot be read: {exc})")
        return
    for i, message in enumerate(messages):
        echo(message_line(i, message))
    if not messages:
        echo("(no message content in the trace)")


def _step_rows(table: pd.DataFrame) -> str:
    """The steps of a trace's ``steps_df()`` as `step_table` prints a stored run's.

    A trace of several agents has an agent column (the step column is then the step's number
    in its agent's run); the calls column names each tool call, with what happened to it.
    """
    agents = table["agent"].nunique() > 1
    rows: list[Sequence[str]] = [("agent", *STEP_HEADER) if agents else STEP_HEADER]
    for row in table.itertuples(index=False):
        cells = (
            _step_cell(row, agents),
            _ms(row.prepare_ms),
            tried(_ms(row.inference_ms), int(row.tries)),
            _ms(row.tools_ms),
            _ms(row.hooks_ms),
            row.tools or "-",
            f"{_count(row.input_tokens)}/{_count(row.output_tokens)}",
            _text(row.status),
            _text(row.stop_reason),
        )
        rows.append((str(row.agent), *cells) if agents else cells)
    calls = (row.tools or "" for row in table.itertuples(index=False))
    return "\n".join([text_table(rows), *call_legend(calls)])


def _step_cell(row: Any, agents: bool) -> str:
    """The step's label; with an agent column, without the agent the label repeats."""
    label = str(row.label)
    return label.replace(f" · {row.agent}", "", 1) if agents else label


def _missing(value: Any) -> bool:
    """A cell the trace has no value for (another framework's trace has no phases)."""
    return value is None or (isinstance(value, float) and math.isnan(value))


def _ms(value: Any) -> str:
    return "-" if _missing(value) else f"{float(value):.2f}"


def _count(value: Any) -> str:
    return "-" if _missing(value) else str(int(value))


def _text(value: Any) -> str:
    return "-" if _missing(value) else str(value)
