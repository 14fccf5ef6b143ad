"""The usual OTLP/JSON document, decoded straight into the types of its protobuf mapping.

Most traces `load_trace` reads are OTLP/JSON files: ours, a collector's. Parsed into dicts and
walked in Python, a 100,000-span file spent most of its load building millions of small dicts and
reading them back. Decoded by msgspec into the mapping's own types (`_Request` and below), in C,
those dicts never exist; what is left in Python is reading each attribute once into the span.

The types are strict: exactly the fields of ``trace.proto`` in camelCase, each value of the type
the mapping writes, arrays that hold plain values. A document that is anything else is not an
error here: snake_case keys, the old ``instrumentationLibrarySpans``, NaN, a lone surrogate, a
wrong shape, a bad id or time, a nested array or key/value list. `spans` answers None and
`workbench.telemetry.readers` reads the document, leniently, with errors that say where. Both
build every span through `span_fields.otlp_span_data` and read values in one order, so a document
either can read gives the same spans (tests/test_otlp_decode.py checks it on made-up documents).

Its depth needs no check of its own: the fields nest a fixed dozen levels and an array here holds
no array, so anything deeper is the other reader's, which checks every document's depth
(`workbench._json`); msgspec refuses one too deep for it to decode with `RecursionError`.
"""

from __future__ import annotations

from typing import Any

import msgspec

from workbench.errors import TraceLoadError
from workbench.telemetry.span_fields import (
    double_value,
    integer_value,
    otlp_span_data,
    text_value,
)
from workbench.telemetry.trace import SpanData

__all__ = ["spans"]


class _Strict(msgspec.Struct, rename="camel", forbid_unknown_fields=True, gc=False):
    """A message of the mapping: its fields by their camelCase names, no other.

    Not tracked by the cyclic garbage collector (``gc=False``): a decoded document is a tree of
    millions of these, none in a cycle, so tracking them would only slow making and freeing them.
    """


class _ArrayValue(_Strict):
    values: list[_AnyValue] = []


class _KeyValueList(_Strict):
    values: list[_KeyValue] = []


class _AnyValue(_Strict):
    string_value: str | None = None
    bool_value: bool | None = None
    int_value: int | str | None = None  # int64 is text in the mapping; readers write numbers too
    double_value: float | str | None = None  # "NaN", "Infinity" as text
    array_value: _ArrayValue | None = None
    kvlist_value: _KeyValueList | None = None
    bytes_value: str | None = None


class _KeyValue(_Strict):
    key: str
    value: _AnyValue


class _Status(_Strict):
    code: int | str = 0
    message: str = ""


class _Event(_Strict):
    name: str = ""
    time_unix_nano: int | str = 0
    attributes: list[_KeyValue] = []
    dropped_attributes_count: int = 0


class _Link(_Strict):
    trace_id: str
    span_id: str
    trace_state: str = ""
    flags: int = 0
    attributes: list[_KeyValue] = []
    dropped_attributes_count: int = 0


class _Span(_Strict):
    trace_id: str
    span_id: str
    parent_span_id: str = ""
    trace_state: str = ""
    flags: int = 0
    name: str = ""
    kind: int | str = 0
    start_time_unix_nano: int | str = 0
    end_time_unix_nano: int | str = 0
    attributes: list[_KeyValue] = []
    dropped_attributes_count: int = 0
    events: list[_Event] = []
    dropped_events_count: int = 0
    links: list[_Link] = []
    dropped_links_count: int = 0
    status: _Status | None = None


class _Scope(_Strict):
    name: str = ""
    version: str = ""
    attributes: list[_KeyValue] = []
    dropped_attributes_count: int = 0


class _ScopeSpans(_Strict):
    scope: _Scope | None = None
    spans: list[_Span] = []
    schema_url: str = ""


class _Resource(_Strict):
    attributes: list[_KeyValue] = []
    dropped_attributes_count: int = 0


class _ResourceSpans(_Strict):
    resource: _Resource | None = None
    scope_spans: list[_ScopeSpans] = []
    schema_url: str = ""


class _Request(_Strict):
    """An ``ExportTraceServiceRequest``."""

    resource_spans: list[_ResourceSpans]


_DECODER = msgspec.json.Decoder(_Request)
_BOM = b"\xef\xbb\xbf"


class _NotPlain(Exception):
    """A value this reader leaves to `readers` (a nested array, a key/value list)."""


def spans(data: bytes | str) -> list[SpanData] | None:
    """The spans of an OTLP/JSON document, or None when it is not one these types read.

    None leaves the document to `readers`, which reads what it can and says what it cannot.
    """
    try:  # one request, or several one after another (a collector's file: one a line)
        requests = _DECODER.decode_lines(
            data.removeprefix(_BOM) if isinstance(data, bytes) else data
        )
    except (msgspec.DecodeError, UnicodeDecodeError, RecursionError):  # ValidationError too
        return None
    if not requests:  # no JSON at all: `readers` says so
        return None
    read: list[SpanData] = []
    try:
        for resource_spans in (r for request in requests for r in request.resource_spans):
            of = resource_spans.resource
            resource = _attributes(of.attributes) if of else {}
            for scope_spans in resource_spans.scope_spans:
                scope = scope_spans.scope.name if scope_spans.scope else ""
                read += [_span(span, resource, scope) for span in scope_spans.spans]
    except (TraceLoadError, _NotPlain):
        return None
    return read


def _span(span: _Span, resource: dict[str, Any], scope: str) -> SpanData:
    status = span.status
    return otlp_span_data(
        ids=(span.trace_id, span.span_id, span.parent_span_id),
        name=span.name,
        kind=span.kind,
        times=(span.start_time_unix_nano, span.end_time_unix_nano),
        attributes=_attributes(span.attributes),
        events=[(e.name, e.time_unix_nano, _attributes(e.attributes)) for e in span.events],
        links=[(k.trace_id, k.span_id, _attributes(k.attributes)) for k in span.links],
        status=(status.code, status.message) if status else (0, ""),
        resource=resource,
        scope=scope,
    )


def _attributes(pairs: list[_KeyValue]) -> dict[str, Any]:
    """Key/values as `readers` reads them; text, the most of them, first."""
    return {
        kv.key: _other(kv.value) if (text := kv.value.string_value) is None else text_value(text)
        for kv in pairs
    }


def _other(value: _AnyValue) -> Any:
    """A value that is not text, in `readers`' order of the kinds (a oneof has one set)."""
    if value.bool_value is not None:
        return value.bool_value
    if value.int_value is not None:
        return integer_value(value.int_value)
    if value.double_value is not None:
        return double_value(value.double_value)
    if value.array_value is not None:
        return tuple(_plain(v) for v in value.array_value.values)
    if value.kvlist_value is not None:
        raise _NotPlain
    return value.bytes_value


def _plain(value: _AnyValue) -> Any:
    if value.string_value is not None:
        return text_value(value.string_value)
    if value.array_value is not None:
        raise _NotPlain
    return _other(value)
