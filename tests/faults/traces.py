"""Small trace documents for the fault tests: one good span, changed where a test needs it."""

from __future__ import annotations

import json
from typing import Any

TRACE_ID = "0af7651916cd43dd8448eb211c80319c"
SPAN_ID = "b7ad6b7169203331"


def otlp_span(**changes: Any) -> dict[str, Any]:
    """An OTLP/JSON span of one second, with ``changes`` to its fields."""
    span = {
        "traceId": TRACE_ID,
        "spanId": SPAN_ID,
        "name": "chat",
        "startTimeUnixNano": "1700000000000000000",
        "endTimeUnixNano": "1700000001000000000",
    }
    return {**span, **changes}


def attribute(value: Any) -> dict[str, Any]:
    """A span whose one attribute, ``deep``, has the OTLP ``AnyValue`` ``value``."""
    return otlp_span(attributes=[{"key": "deep", "value": value}])


def otlp(*spans: dict[str, Any], **changes: Any) -> str:
    """An OTLP/JSON document of ``spans`` (one good span by default) as text; ``changes`` to
    its one ``resourceSpans`` entry."""
    scope = {"scope": {"name": "s"}, "spans": list(spans) or [otlp_span()]}
    resource_spans = {"resource": {}, "scopeSpans": [scope], **changes}
    return json.dumps({"resourceSpans": [resource_spans]})


def jaeger(processes: Any = None, **changes: Any) -> str:
    """A Jaeger JSON document of one span (with ``changes``) of process ``p1``, as text."""
    span = {
        "traceID": TRACE_ID,
        "spanID": SPAN_ID,
        "operationName": "chat",
        "startTime": 1700000000000000,
        "duration": 1,
        "processID": "p1",
        **changes,
    }
    trace = {"traceID": TRACE_ID, "spans": [span], "processes": processes or {"p1": {}}}
    return json.dumps({"data": [trace]})


def tagged(value: Any) -> str:
    """A Jaeger document whose span has one string tag, ``deep``, holding ``value``."""
    return jaeger(tags=[{"key": "deep", "type": "string", "value": value}])
