"""Trace files: the Jaeger UI upload format and OTLP/JSON, from finished spans.

Jaeger's UI model (what "Upload JSON" reads)::

    {"data": [{"traceID": hex, "spans": [{"traceID", "spanID", "operationName",
      "references": [{"refType": "CHILD_OF" | "FOLLOWS_FROM", "traceID", "spanID"}],
      "startTime": µs, "duration": µs, "tags": [{"key", "type", "value"}],
      "logs": [{"timestamp": µs, "fields": [tag, ...]}], "processID": "p1", ...}],
      "processes": {"p1": {"serviceName", "tags"}}}]}

Span events become logs, span links become ``FOLLOWS_FROM`` references, kind and status become
the tags Jaeger shows (``span.kind``, ``otel.status_code``, ``error``). OTLP/JSON follows the
protobuf JSON mapping of ``ExportTraceServiceRequest`` (hex ids, nanoseconds as strings). Every
string value passes through the redactor on the way out.
"""

from __future__ import annotations

import json
import math
from collections.abc import Callable, Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from workbench.redact import Redactor

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["jaeger_json", "otlp_json", "write_jaeger_json", "write_otlp_json"]

_KINDS = {0: "internal", 1: "server", 2: "client", 3: "producer", 4: "consumer"}
_OTLP_KINDS = {0: 1, 1: 2, 2: 3, 3: 4, 4: 5}  # SDK SpanKind value -> OTLP enum
_STATUS = {0: "UNSET", 1: "OK", 2: "ERROR"}


def _hex32(value: int) -> str:
    return format(value, "032x")


def _hex16(value: int) -> str:
    return format(value, "016x")


def _kind_value(span: ReadableSpan) -> int:
    return int(span.kind.value)


def _status_value(span: ReadableSpan) -> int:
    return int(span.status.status_code.value)


# -- Jaeger -------------------------------------------------------------------------------------


_SAFE_INT = 2**53
"""JSON readers in JavaScript (Jaeger's UI) lose integers beyond this: they go out as text."""


def _finite(value: float) -> float | str:
    """A float JSON can hold; NaN and the infinities as protobuf's JSON mapping writes them."""
    if math.isfinite(value):
        return value
    return "NaN" if math.isnan(value) else ("Infinity" if value > 0 else "-Infinity")


def _jaeger_tag(key: str, value: Any, text: Callable[[str], str]) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"key": key, "type": "bool", "value": value}
    if isinstance(value, int):
        big = not -_SAFE_INT < value < _SAFE_INT
        return {"key": key, "type": "int64", "value": str(value) if big else value}
    if isinstance(value, float):
        return {"key": key, "type": "float64", "value": _finite(value)}
    if isinstance(value, str):
        return {"key": key, "type": "string", "value": text(value)}
    return {"key": key, "type": "string", "value": text(json.dumps(list(value), default=str))}


def _jaeger_tags(attributes: Mapping[str, Any] | None, text: Callable[[str], str]) -> list[Any]:
    return [_jaeger_tag(k, v, text) for k, v in (attributes or {}).items()]


def _jaeger_span(span: ReadableSpan, process_id: str, text: Callable[[str], str]) -> dict[str, Any]:
    context = span.context
    assert context is not None
    references = []
    if span.parent is not None:
        references.append(
            {
                "refType": "CHILD_OF",
                "traceID": _hex32(span.parent.trace_id),
                "spanID": _hex16(span.parent.span_id),
            }
        )
    for link in span.links:
        references.append(
            {
                "refType": "FOLLOWS_FROM",
                "traceID": _hex32(link.context.trace_id),
                "spanID": _hex16(link.context.span_id),
            }
        )
    tags = _jaeger_tags(span.attributes, text)
    tags.append({"key": "span.kind", "type": "string", "value": _KINDS[_kind_value(span)]})
    scope = span.instrumentation_scope
    if scope is not None:
        tags.append({"key": "otel.scope.name", "type": "string", "value": scope.name})
        if scope.version:
            tags.append({"key": "otel.scope.version", "type": "string", "value": scope.version})
    status = _status_value(span)
    if status:
        tags.append({"key": "otel.status_code", "type": "string", "value": _STATUS[status]})
    if status == 2:
        tags.append({"key": "error", "type": "bool", "value": True})
        if span.status.description:
            description = text(span.status.description)
            tags.append({"key": "otel.status_description", "type": "string", "value": description})
    start = span.start_time or 0
    return {
        "traceID": _hex32(context.trace_id),
        "spanID": _hex16(context.span_id),
        "flags": 1,
        "operationName": span.name,
        "references": references,
        "startTime": start // 1000,
        "duration": max(0, (span.end_time or start) - start) // 1000,
        "tags": tags,
        "logs": [
            {
                "timestamp": event.timestamp // 1000,
                "fields": [
                    {"key": "event", "type": "string", "value": event.name},
                    *_jaeger_tags(event.attributes, text),
                ],
            }
            for event in span.events
        ],
        "processID": process_id,
        "warnings": None,
    }


def jaeger_json(spans: Iterable[ReadableSpan], redactor: Redactor | None = None) -> dict[str, Any]:
    """The Jaeger UI model of the spans: one entry of ``data`` per trace."""
    text = (redactor or Redactor()).text
    traces: dict[int, list[ReadableSpan]] = {}
    for span in spans:
        if span.context is not None:
            traces.setdefault(span.context.trace_id, []).append(span)
    data = []
    for trace_id, members in traces.items():
        processes: dict[str, Any] = {}
        keys: dict[tuple[tuple[str, Any], ...], str] = {}
        rendered = []
        for span in sorted(members, key=lambda s: s.start_time or 0):
            resource = tuple(sorted(span.resource.attributes.items()))
            process_id = keys.setdefault(resource, f"p{len(keys) + 1}")
            if process_id not in processes:
                attributes = dict(resource)
                service = str(attributes.pop("service.name", "workbench"))
                processes[process_id] = {
                    "serviceName": service,  # not repeated among the tags
                    "tags": _jaeger_tags(attributes, text),
                }
            rendered.append(_jaeger_span(span, process_id, text))
        data.append(
            {
                "traceID": _hex32(trace_id),
                "spans": rendered,
                "processes": processes,
                "warnings": None,
            }
        )
    return {"data": data, "total": 0, "limit": 0, "offset": 0, "errors": None}


# -- OTLP/JSON ----------------------------------------------------------------------------------


def _any_value(value: Any, text: Callable[[str], str]) -> dict[str, Any]:
    if isinstance(value, bool):
        return {"boolValue": value}
    if isinstance(value, int):
        return {"intValue": str(value)}
    if isinstance(value, float):
        return {"doubleValue": _finite(value)}
    if isinstance(value, str):
        return {"stringValue": text(value)}
    return {"arrayValue": {"values": [_any_value(v, text) for v in value]}}


def _key_values(attributes: Mapping[str, Any] | None, text: Callable[[str], str]) -> list[Any]:
    return [{"key": k, "value": _any_value(v, text)} for k, v in (attributes or {}).items()]


def _flags(parent: Any) -> int:
    """OTLP span flags: the W3C trace flags (sampled) and whether the parent is remote."""
    remote = 0x300 if parent is not None and parent.is_remote else 0x100
    return remote | 0x01


def _otlp_span(span: ReadableSpan, text: Callable[[str], str]) -> dict[str, Any]:
    context = span.context
    assert context is not None
    encoded: dict[str, Any] = {
        "traceId": _hex32(context.trace_id),
        "spanId": _hex16(context.span_id),
        "name": span.name,
        "kind": _OTLP_KINDS[_kind_value(span)],
        "startTimeUnixNano": str(span.start_time or 0),
        "endTimeUnixNano": str(span.end_time or span.start_time or 0),
        "attributes": _key_values(span.attributes, text),
        "events": [
            {
                "timeUnixNano": str(e.timestamp),
                "name": e.name,
                "attributes": _key_values(e.attributes, text),
            }
            for e in span.events
        ],
        "links": [
            {
                "traceId": _hex32(link.context.trace_id),
                "spanId": _hex16(link.context.span_id),
                "attributes": _key_values(link.attributes, text),
            }
            for link in span.links
        ],
        "status": {"code": _status_value(span)},
        "flags": _flags(span.parent),
        "droppedAttributesCount": span.dropped_attributes,
        "droppedEventsCount": span.dropped_events,
        "droppedLinksCount": span.dropped_links,
    }
    if span.parent is not None:
        encoded["parentSpanId"] = _hex16(span.parent.span_id)
    if span.status.description:
        encoded["status"]["message"] = text(span.status.description)
    return encoded


def otlp_json(spans: Iterable[ReadableSpan], redactor: Redactor | None = None) -> dict[str, Any]:
    """The spans as an OTLP/JSON ``ExportTraceServiceRequest``, grouped by resource and scope."""
    text = (redactor or Redactor()).text
    groups: dict[Any, dict[Any, list[ReadableSpan]]] = {}
    for span in spans:
        scope = span.instrumentation_scope
        scope_key = (scope.name, scope.version) if scope is not None else ("", None)
        groups.setdefault(span.resource, {}).setdefault(scope_key, []).append(span)
    resource_spans = []
    for resource, scopes in groups.items():
        resource_spans.append(
            {
                "resource": {"attributes": _key_values(resource.attributes, text)},
                "scopeSpans": [
                    {
                        "scope": {"name": name, **({"version": version} if version else {})},
                        "spans": [_otlp_span(s, text) for s in members],
                    }
                    for (name, version), members in scopes.items()
                ],
            }
        )
    return {"resourceSpans": resource_spans}


# -- files --------------------------------------------------------------------------------------


def _write(document: dict[str, Any], path: str | Path) -> Path:
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    text = json.dumps(document, ensure_ascii=False, indent=1, allow_nan=False)
    target.write_text(text + "\n", encoding="utf-8")
    return target


def write_jaeger_json(
    spans: Sequence[ReadableSpan], path: str | Path, redactor: Redactor | None = None
) -> Path:
    """Write a Jaeger UI upload file; returns its path."""
    return _write(jaeger_json(spans, redactor), path)


def write_otlp_json(
    spans: Sequence[ReadableSpan], path: str | Path, redactor: Redactor | None = None
) -> Path:
    """Write an OTLP/JSON file (``ExportTraceServiceRequest``); returns its path."""
    return _write(otlp_json(spans, redactor), path)
