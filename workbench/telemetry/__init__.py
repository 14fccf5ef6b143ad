"""Telemetry: OpenTelemetry spans of every run, their timing, and where they can be sent.

``Telemetry`` makes the spans (through a per-execution `SpanObserver` the `Agent` installs), keeps
them in memory, optionally sends them over OTLP/HTTP, and writes them as Jaeger or OTLP JSON files
and pandas DataFrames. Span names and attribute keys are in `workbench.telemetry.names`.

Nothing here imports OpenTelemetry or pandas until it is used: ``import workbench`` works without
the ``otlp`` and ``notebook`` extras.
"""

from workbench.redact import REDACTED, Redactor
from workbench.telemetry.core import (
    RunLike,
    Telemetry,
    TelemetryExportWarning,
    otlp_traces_endpoint,
)
from workbench.telemetry.rebuild import rebuild_telemetry, spans_from_run

__all__ = [
    "REDACTED",
    "Redactor",
    "RunLike",
    "Telemetry",
    "TelemetryExportWarning",
    "otlp_traces_endpoint",
    "rebuild_telemetry",
    "spans_from_run",
]
