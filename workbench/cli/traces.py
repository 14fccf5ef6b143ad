"""``workbench export`` and ``workbench push``: a stored run's trace, to a file or a backend.

Stored runs keep their records, not their spans; both verbs rebuild the spans from the records
(`workbench.telemetry.rebuild_telemetry`), with the live run's trace id when it had telemetry.
"""

from __future__ import annotations

import argparse
from pathlib import Path

from workbench.cli._common import echo, load_run, run_argument, store_option
from workbench.telemetry import otlp_traces_endpoint, rebuild_telemetry

__all__ = ["run_export", "run_push", "setup_export", "setup_push"]


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
        default=None,
        help="OTLP/HTTP traces URL (default: $OTEL_EXPORTER_OTLP_(TRACES_)ENDPOINT, "
        "else http://localhost:4318/v1/traces)",
    )
    parser.add_argument("--timeout", type=float, default=10.0, help="seconds to wait for delivery")
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
    sent = f"{stats.exported} of {stats.queued} spans sent to {endpoint}"
    echo(f"run {run.run_id} (trace {trace}): {sent}")
    return 0 if stats.unconfirmed == 0 else 1
