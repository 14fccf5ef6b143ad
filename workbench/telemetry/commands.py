"""The telemetry verbs of the ``workbench`` command: ``export`` and ``push``, and the demo's traces.

Stored runs keep their records, not their spans; both verbs rebuild the spans from the records
(`workbench.telemetry.rebuild`), with the live run's trace id when it had telemetry.
"""

from __future__ import annotations

import argparse
from pathlib import Path
from typing import TYPE_CHECKING

from workbench._runs_cli import load_run, store_option

if TYPE_CHECKING:
    from workbench.telemetry.core import Telemetry

__all__ = ["run_export", "run_push", "setup_export", "setup_push", "write_demo_traces"]


def setup_export(parser: argparse.ArgumentParser) -> None:
    """``workbench export RUN --format jaeger|otlp -o FILE``."""
    parser.add_argument("run", help="run id, a unique prefix of one, or 'last'")
    parser.add_argument("--format", choices=("jaeger", "otlp"), default="jaeger")
    parser.add_argument("-o", "--output", default=None, help="file (default RUN.FORMAT.json)")
    parser.add_argument(
        "--content", action="store_true", help="include messages and tool arguments (redacted)"
    )
    store_option(parser)


def setup_push(parser: argparse.ArgumentParser) -> None:
    """``workbench push RUN --endpoint URL``."""
    parser.add_argument("run", help="run id, a unique prefix of one, or 'last'")
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
    from workbench.store import StoreError
    from workbench.telemetry.rebuild import rebuild_telemetry

    try:
        run = load_run(args)
    except StoreError as exc:
        print(f"workbench export: {exc}")
        return 2
    telemetry = rebuild_telemetry(run, capture_content=args.content)
    output = Path(args.output or f"{run.run_id}.{args.format}.json")
    if args.format == "jaeger":
        telemetry.write_jaeger_json(output)
    else:
        telemetry.write_otlp_json(output)
    print(f"{output}: {len(telemetry.spans)} spans of run {run.run_id}")
    return 0


def run_push(args: argparse.Namespace) -> int:
    """Send a stored run's trace to an OTLP/HTTP endpoint (Jaeger, Phoenix, a collector)."""
    from workbench.store import StoreError
    from workbench.telemetry.core import otlp_traces_endpoint
    from workbench.telemetry.rebuild import rebuild_telemetry

    try:
        run = load_run(args)
    except StoreError as exc:
        print(f"workbench push: {exc}")
        return 2
    endpoint = otlp_traces_endpoint(args.endpoint) or "http://localhost:4318/v1/traces"
    telemetry = rebuild_telemetry(run, capture_content=args.content, otlp_endpoint=endpoint)
    stats = telemetry.shutdown(timeout=args.timeout)
    assert stats is not None
    trace = run.trace_id or "-"
    sent = f"{stats.exported} of {stats.queued} spans sent to {endpoint}"
    print(f"run {run.run_id} (trace {trace}): {sent}")
    return 0 if stats.unconfirmed == 0 else 1


def write_demo_traces(telemetry: Telemetry, folder: Path) -> list[Path]:
    """Write the demo's traces (all its executions) as ``run.jaeger.json`` and ``run.otlp.json``."""
    return [
        telemetry.write_jaeger_json(folder / "run.jaeger.json"),
        telemetry.write_otlp_json(folder / "run.otlp.json"),
    ]
