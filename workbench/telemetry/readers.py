"""OTLP/JSON, Jaeger JSON and Phoenix's spans, already parsed, read into `SpanData`.

The formats `load_trace` reads, whatever the source (a file, a JSON text, a backend's answer);
`workbench.telemetry.load` gets the document, this module walks its shape: where the spans,
their resource and scope are, and where in the document a span that cannot be read is. What
each of a span's fields becomes (ids, times in their unit, kind, status, redacted values) is
`workbench.telemetry.span_fields`, which the typed OTLP decoder (`otlp_decode`) uses too.

A shape that cannot be read raises `TraceLoadError` saying what and where: ids of the wrong
length, a time that is not a number, a list that is not one.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable, Mapping
from typing import Any

from workbench.errors import TraceLoadError
from workbench.telemetry.span_fields import (
    checked_id,
    double_value,
    integer_time,
    integer_value,
    otlp_span_data,
    span_kind,
    text_value,
    time_ns,
    to_ns,
)
from workbench.telemetry.trace import SpanData, SpanEvent, SpanLink, dumps

__all__ = [
    "phoenix_spans",
    "spans_from_document",
    "spans_from_jaeger",
    "spans_from_otlp",
]

_Kinds = Mapping[str, Callable[[Any], Any]]
"""How each kind of OTLP ``AnyValue`` is read (`_VALUES`, `_PLAIN`)."""
_JAEGER_SPECIAL = {
    "span.kind",
    "otel.status_code",
    "otel.status_description",
    "error",
    "otel.scope.name",
    "otel.scope.version",
    "otel.library.name",
    "otel.library.version",
}


def spans_from_document(document: Any) -> list[SpanData]:
    """The spans of an OTLP/JSON or Jaeger JSON document (already parsed)."""
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]  # Jaeger's API v3 wraps OTLP in "result"
    if isinstance(document, dict) and ("resourceSpans" in document or "resource_spans" in document):
        return spans_from_otlp(document)
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return spans_from_jaeger(document)
    if isinstance(document, list) and document and all(type(d) is dict for d in document):
        return _spans_of_parts(document)
    keys = sorted(document)[:5] if isinstance(document, dict) else type(document).__name__
    raise TraceLoadError(f"not an OTLP/JSON or Jaeger JSON trace (found {keys})")


def _spans_of_parts(parts: list[dict[str, Any]]) -> list[SpanData]:
    """The spans of several documents: an array of them, chunks, JSON lines (a collector's file).

    A part that cannot be read is placed by its index: ``[2]`` is the third line of a
    collector's file, whose requests each start again at ``resourceSpans[0]``.
    """
    spans = []
    for i, part in enumerate(parts):
        try:
            spans += spans_from_document(part)
        except TraceLoadError as exc:
            raise _placed(exc, f"[{i}]") from None
    return spans


# -- OTLP/JSON ---------------------------------------------------------------------------------


def spans_from_otlp(document: Mapping[str, Any]) -> list[SpanData]:
    """Spans of an OTLP/JSON ``ExportTraceServiceRequest`` (camelCase or snake_case keys)."""
    spans = []
    for i, resource_spans in enumerate(_list(document, "resourceSpans", "resource_spans")):
        where = f"resourceSpans[{i}]"
        try:
            resource = _attributes(_field(_object(resource_spans, "resource"), "attributes"))
            scopes = _list(resource_spans, "scopeSpans", "scope_spans")
            scopes += _list(
                resource_spans, "instrumentationLibrarySpans", "instrumentation_library_spans"
            )
        except TraceLoadError as exc:
            raise _placed(exc, where) from None
        for j, scope_spans in enumerate(scopes):
            try:
                scope_of = _object(scope_spans, "scope", "instrumentationLibrary")
                scope = str(_field(scope_of, "name") or "")
                listed = _list(scope_spans, "spans")
            except TraceLoadError as exc:
                raise _placed(exc, f"{where}.scopeSpans[{j}]") from None
            for k, span in enumerate(listed):
                try:
                    spans.append(_otlp_span(span, resource, scope, _keep))
                except TraceLoadError as exc:
                    raise _placed(exc, f"{where}.scopeSpans[{j}].spans[{k}]", span) from None
    return spans


def phoenix_spans(spans: list[Any]) -> list[SpanData]:
    """Spans of one page of Phoenix's ``spans/otlpv1`` answer.

    OTLP spans without a resource or scope, whose lists Phoenix flattened into ``key.0``,
    ``key.1`` (folded back, `_refold`).
    """
    read = []
    for k, span in enumerate(spans):
        try:
            read.append(_otlp_span(span, {}, "", _refold))
        except TraceLoadError as exc:
            raise _placed(exc, f"data[{k}]", span) from None
    return read


def _placed(exc: TraceLoadError, where: str, span: Any = None) -> TraceLoadError:
    """``exc`` saying where in the document it happened (and which span, when it has an id).

    Each loop adds its place around what the inner ones said, so the message reads outside in:
    ``resourceSpans[0].scopeSpans[1].spans[3] (span 'b7ad6b7169203331'): ...``.
    """
    named = ""
    if type(span) is dict:
        span_id = span.get("spanId", span.get("span_id", span.get("spanID")))
        if type(span_id) is str:
            named = f" (span {span_id[:40]!r})"
    return TraceLoadError(f"{where}{named}: {exc}")


def _object(mapping: Any, *names: str) -> dict[str, Any]:
    """A field that must be an object (``{}`` when absent or null): a resource, a scope."""
    value = _field(mapping, *names)
    if value is None:
        return {}
    if type(value) is not dict:
        raise TraceLoadError(f"{names[0]} should be an object, found {type(value).__name__}")
    return value


def _field(mapping: Any, *names: str, default: Any = None) -> Any:
    """A field by its camelCase name or its snake_case one (both are valid OTLP/JSON)."""
    if type(mapping) is not dict:  # JSON objects are dicts; an ABC check would cost 5x
        raise TraceLoadError(f"expected an object, found {type(mapping).__name__}")
    for name in names:
        if name in mapping:
            return mapping[name]
        snake = _snake(name)
        if snake in mapping:
            return mapping[snake]
    return default


@functools.cache
def _snake(name: str) -> str:
    return re.sub(r"(?<!^)([A-Z])", r"_\1", name).lower()


def _list(mapping: Any, *names: str) -> list[Any]:
    return _checked_list(_field(mapping, *names, default=[]), names[0])


def _checked_list(value: Any, name: str) -> list[Any]:
    if not value:
        return []
    if type(value) is not list:
        raise TraceLoadError(f"{name} should be a list, found {type(value).__name__}")
    return value


_SPAN_FIELDS = (
    "traceId",
    "spanId",
    "parentSpanId",
    "name",
    "kind",
    "startTimeUnixNano",
    "endTimeUnixNano",
    "attributes",
    "events",
    "links",
    "status",
)


def _fields(mapping: Any, names: tuple[str, ...]) -> list[Any]:
    """Several fields of one object at once, as `_field` reads each (None when absent).

    A span has a dozen fields and a trace can have a hundred thousand spans: read in one pass,
    not one call each.
    """
    if type(mapping) is not dict:
        raise TraceLoadError(f"expected an object, found {type(mapping).__name__}")
    return [mapping[k] if k in mapping else mapping.get(_snake(k)) for k in names]


def _otlp_span(
    span: Any,
    resource: dict[str, Any],
    scope: str,
    shape: Callable[[dict[str, Any]], dict[str, Any]],
) -> SpanData:
    trace_id, span_id, parent, name, kind, start, end, attributes, events, links, status = _fields(
        span, _SPAN_FIELDS
    )
    return otlp_span_data(
        ids=(trace_id, span_id, parent),
        name=name,
        kind=kind,
        times=(start, end),
        attributes=shape(_attributes(attributes)),
        events=[
            (
                _field(e, "name", default=""),
                _field(e, "timeUnixNano"),
                shape(_attributes(_field(e, "attributes"))),
            )
            for e in _checked_list(events, "events")
        ],
        links=[
            (_field(k, "traceId"), _field(k, "spanId"), _attributes(_field(k, "attributes")))
            for k in _checked_list(links, "links")
        ],
        status=(_field(status, "code", default=0), _field(status, "message", default=""))
        if status
        else (0, ""),
        resource=resource,
        scope=scope,
    )


def _attributes(items: Any, kinds: _Kinds | None = None) -> dict[str, Any]:
    """Key/values as a dict, each value read as `_value` reads it with ``kinds``."""
    if not items:
        return {}
    if type(items) is not list:
        raise TraceLoadError(
            f"attributes should be a list of key/values, found {type(items).__name__}"
        )
    attributes = {}
    for kv in items:
        if type(kv) is dict and "key" in kv and "value" in kv:
            key, value = kv["key"], kv["value"]
        else:
            key, value = _field(kv, "key"), _field(kv, "value")
        attributes[str(key)] = _value(value, kinds)
    return attributes


def _value(value: Any, kinds: _Kinds | None = None) -> Any:
    """An OTLP ``AnyValue`` as an attribute keeps it: arrays as tuples, key/value lists as JSON.

    ``kinds`` reads each kind (`_VALUES` by default; `_PLAIN` inside arrays and key/value lists).
    """
    if type(value) is not dict:
        return None
    kinds = kinds or _VALUES
    if len(value) == 1:
        ((kind, inner),) = value.items()
    else:  # some servers write every field, the unused ones as null; a second kind set (a
        # oneof has one) loses to the first in `_VALUES`' order, as `otlp_decode` reads it
        kind = next((k for k in kinds if value.get(k) is not None), "")
        inner = value.get(kind)
    read = kinds.get(kind)
    return None if read is None or inner is None else read(inner)


def _plain(value: Any) -> Any:
    """An ``AnyValue`` inside an array or a key/value list, as plain JSON (lists, dicts)."""
    return _value(value, _PLAIN)


def _array(inner: Any) -> tuple[Any, ...]:
    return tuple(_kept(_plain(v)) for v in _field(inner, "values", default=[]) or [])


def _kvlist(inner: Any) -> str:
    """A key/value list read whole into plain values, then encoded once.

    Encoding each nested list as it was read, and that text again in the list around it,
    doubled the text at every level: a 2 kB file nested 40 levels deep grew past 20 GB.
    """
    return dumps(_attributes(_field(inner, "values", default=[]), _PLAIN))


def _kept(plain: Any) -> Any:
    """A plain value as an attribute holds it: a dict as JSON text, a list as a tuple."""
    if type(plain) is dict:
        return dumps(plain)
    if type(plain) is list:
        return tuple(_kept(v) for v in plain)
    return plain


_VALUES: dict[str, Callable[[Any], Any]] = {
    "stringValue": text_value,
    "boolValue": bool,
    "intValue": integer_value,
    "doubleValue": double_value,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
    "bytesValue": str,
}
"""How each kind of ``AnyValue`` is read, by its camelCase name."""
_VALUES.update({_snake(kind): read for kind, read in list(_VALUES.items())})
_PLAIN: dict[str, Callable[[Any], Any]] = {
    **_VALUES,
    "arrayValue": lambda inner: [_plain(v) for v in _field(inner, "values", default=[]) or []],
    "kvlistValue": lambda inner: _attributes(_field(inner, "values", default=[]), _PLAIN),
}
"""The same inside an array or a key/value list: plain lists and dicts, encoded once above."""
_PLAIN.update({_snake(kind): _PLAIN[kind] for kind in ("arrayValue", "kvlistValue")})


def _keep(attributes: dict[str, Any]) -> dict[str, Any]:
    return attributes


def _refold(attributes: dict[str, Any]) -> dict[str, Any]:
    """Phoenix flattens lists into ``key.0``, ``key.1``: fold them back into tuples."""
    folded: dict[str, Any] = {}
    lists: dict[str, dict[int, Any]] = {}
    for key, value in attributes.items():
        head, _, last = key.rpartition(".")
        if head and last.isdigit():
            lists.setdefault(head, {})[int(last)] = value
        else:
            folded[key] = value
    for head, items in lists.items():
        if sorted(items) == list(range(len(items))):
            folded[head] = tuple(items[i] for i in range(len(items)))
        else:
            folded.update({f"{head}.{i}": v for i, v in items.items()})
    return folded


# -- Jaeger JSON -------------------------------------------------------------------------------


def spans_from_jaeger(document: Mapping[str, Any]) -> list[SpanData]:
    """Spans of a Jaeger JSON document (the UI's upload format, query API v1/v2)."""
    spans = []
    for i, trace in enumerate(document["data"]):
        try:
            processes = _object(trace, "processes")
            listed = _list(trace, "spans")
        except TraceLoadError as exc:
            raise _placed(exc, f"data[{i}]") from None
        for k, span in enumerate(listed):
            try:
                spans.append(_jaeger_span(span, processes))
            except TraceLoadError as exc:
                raise _placed(exc, f"data[{i}].spans[{k}]", span) from None
    return spans


def _jaeger_span(span: Any, processes: Mapping[str, Any]) -> SpanData:
    trace_id = checked_id(_jaeger_hex(_field(span, "traceID"), 32), 16, "trace")
    tags = _jaeger_tags(_field(span, "tags"))
    process_id = str(_field(span, "processID", default=""))
    process = processes.get(process_id) or {}
    if type(process) is not dict:
        raise TraceLoadError(f"process {process_id!r} should be an object")
    resource = _jaeger_tags(process.get("tags"))
    if "serviceName" in process:
        resource.setdefault("service.name", text_value(process["serviceName"]))
    parent, links = None, []
    for ref in _list(span, "references"):
        ref_trace = checked_id(_jaeger_hex(_field(ref, "traceID"), 32), 16, "reference trace")
        ref_span = checked_id(_jaeger_hex(_field(ref, "spanID"), 16), 8, "reference span")
        if _field(ref, "refType") == "CHILD_OF" and parent is None and ref_trace == trace_id:
            parent = ref_span
        else:
            links.append(SpanLink(trace_id=ref_trace, span_id=ref_span))
    status = str(tags.get("otel.status_code", "")).lower()
    if status not in ("ok", "error"):
        status = "error" if tags.get("error") is True else "unset"
    start = integer_time(_field(span, "startTime", default=0)) * 1000
    ns = to_ns(start)
    return SpanData(
        trace_id=trace_id,
        span_id=checked_id(_jaeger_hex(_field(span, "spanID"), 16), 8, "span"),
        parent_id=parent,
        name=text_value(_field(span, "operationName", default="")),
        kind=span_kind(str(tags.get("span.kind", "internal"))),
        start_ns=time_ns(ns, start),
        end_ns=time_ns(ns, start + integer_time(_field(span, "duration", default=0)) * 1000),
        attributes={k: v for k, v in tags.items() if k not in _JAEGER_SPECIAL},
        events=tuple(_jaeger_log(log, ns) for log in _list(span, "logs")),
        links=tuple(links),
        status=status,
        status_message=str(tags.get("otel.status_description", "")),
        resource=resource,
        scope=str(tags.get("otel.scope.name", tags.get("otel.library.name", ""))),
    )


def _jaeger_hex(value: Any, digits: int) -> Any:
    """Jaeger drops leading zeros of ids: pad them back."""
    if isinstance(value, str) and re.fullmatch(f"[0-9a-fA-F]{{1,{digits}}}", value):
        return value.rjust(digits, "0")
    return value


def _jaeger_tags(tags: Any) -> dict[str, Any]:
    if not tags:
        return {}
    if not isinstance(tags, list):
        raise TraceLoadError(f"tags should be a list, found {type(tags).__name__}")
    return {str(_field(t, "key")): _jaeger_value(t) for t in tags}


def _jaeger_value(tag: Mapping[str, Any]) -> Any:
    kind, value = tag.get("type", "string"), tag.get("value")
    if kind == "int64":
        return integer_value(value)  # big ints come as strings
    if kind == "float64":
        return double_value(value)
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return text_value(value if isinstance(value, str) else dumps(value))


def _jaeger_log(log: Any, ns: Callable[[int], int]) -> SpanEvent:
    fields = _jaeger_tags(_field(log, "fields"))
    name = str(fields.pop("event", "log"))
    time = time_ns(ns, integer_time(_field(log, "timestamp", default=0)) * 1000)
    return SpanEvent(name=name, time_ns=time, attributes=fields)
