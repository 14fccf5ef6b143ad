"""`load_trace`: a trace from a file, a JSON string or a backend, as a `Trace`.

Sources:

- an OTLP/JSON document (``{"resourceSpans": ...}``: our ``write_otlp_json``, a collector's file
  exporter, whose JSON lines hold one such document per batch), as a path or a string; ids in
  hex or in base64 (protobuf's JSON mapping);
- a Jaeger JSON document (``{"data": [{"traceID", "spans", "processes"}]}``: the UI's upload
  format and query API v1/v2);
- ``jaeger+http://host:16686/TRACE_ID``: Jaeger's query API v3 (``/api/v3/traces/{id}``, OTLP
  JSON under ``result``, in one chunk or several);
- ``phoenix+http://host:6006/PROJECT/TRACE_ID``: Phoenix's REST API
  (``/v1/projects/{project}/spans/otlpv1?trace_id=...``, paged).

Epoch times written in seconds, milliseconds or microseconds where the format wants nano- (or,
for Jaeger, micro-) seconds are recognised by their size and read as nanoseconds (`_to_ns`).

String values (attributes, tags, status messages) are redacted as everything the workbench writes
is: a key a foreign tracer recorded shows in no view, repr or report.

Whatever cannot be read raises `TraceLoadError` saying what and where: a truncated file, a shape
that is none of these, ids of the wrong length, a backend that is down, slow, or has no such trace.
"""

from __future__ import annotations

import base64
import binascii
import contextlib
import functools
import gc
import json
import math
import re
import warnings
from collections.abc import Callable, Iterator, Mapping
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workbench.errors import TraceLoadError
from workbench.redact import redacted
from workbench.telemetry.recover import read_json
from workbench.telemetry.trace import SpanData, SpanEvent, SpanLink, Trace, dumps
from workbench.traceids import valid_trace_id

__all__ = ["load_trace", "spans_from_jaeger", "spans_from_otlp"]

_HEX = re.compile(r"[0-9a-f]+")
_BACKEND = re.compile(r"(jaeger|phoenix)\+(https?://[^/]+)/(.+)")
_OTLP_KINDS = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "unset", 1: "ok", 2: "error"}
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


def load_trace(source: str | Path, *, trace_id: str | None = None, timeout: float = 10.0) -> Trace:
    """Load a trace from a file, a JSON string, or a backend URL (see the module's docstring).

    ``trace_id`` keeps only that trace of a document holding several. ``timeout`` bounds a
    backend request, in seconds.
    """
    try:
        return _load(source, trace_id, timeout)
    except TraceLoadError as exc:
        # Errors quote what could not be read (an id, a time, a key, a path): a key there stays out
        message = redacted(str(exc))
        if message == str(exc):
            raise
        raise TraceLoadError(message) from None


def _load(source: str | Path, trace_id: str | None, timeout: float) -> Trace:
    if isinstance(source, str) and (match := _BACKEND.fullmatch(source.strip())):
        backend, base, rest = match.groups()
        fetch = _from_jaeger if backend == "jaeger" else _from_phoenix
        spans = fetch(base, rest, timeout)
    else:
        with _bulk():
            spans = spans_from_document(_document(source))
    if trace_id is not None:
        spans = [s for s in spans if s.trace_id == trace_id.lower()]
    if not spans:
        raise TraceLoadError(
            f"no spans{f' of trace {trace_id}' if trace_id else ''} in {_name(source)}"
        )
    return Trace.of(spans)


def spans_from_document(document: Any) -> list[SpanData]:
    """The spans of an OTLP/JSON or Jaeger JSON document (already parsed)."""
    if isinstance(document, dict) and isinstance(document.get("result"), dict):
        document = document["result"]  # Jaeger's API v3 wraps OTLP in "result"
    if isinstance(document, dict) and ("resourceSpans" in document or "resource_spans" in document):
        return spans_from_otlp(document)
    if isinstance(document, dict) and isinstance(document.get("data"), list):
        return spans_from_jaeger(document)
    if isinstance(document, list) and document and all(type(d) is dict for d in document):
        return [s for part in document for s in spans_from_document(part)]  # chunks, JSON lines
    keys = sorted(document)[:5] if isinstance(document, dict) else type(document).__name__
    raise TraceLoadError(f"not an OTLP/JSON or Jaeger JSON trace (found {keys})")


# -- reading the source ------------------------------------------------------------------------


@contextlib.contextmanager
def _bulk() -> Iterator[None]:
    """No cyclic garbage collection while a document is read into spans.

    Reading makes hundreds of thousands of objects that all stay alive; every collection of the
    oldest generation would walk all of them again (quadratic in the trace). Nothing read makes
    a reference cycle, so the collector has nothing to find until the reading is done.
    """
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _name(source: str | Path) -> str:
    text = str(source)
    return text if len(text) < 80 and "\n" not in text else "the JSON text"


def _document(source: str | Path) -> Any:
    if isinstance(source, str) and not source.strip():  # Path("") is the current directory
        raise TraceLoadError("the source is empty: give a file, a JSON text or a backend URL")
    if isinstance(source, Path) or not source.lstrip().startswith(("{", "[")):
        path = Path(source)
        try:
            text = _text(path.read_bytes(), path)
        except OSError as exc:
            raise TraceLoadError(f"cannot read trace file {path}: {exc}") from None
    else:
        text = source
    try:
        return _json_values(text)
    except ValueError as exc:
        raise TraceLoadError(f"{_name(source)} is not valid JSON (truncated?): {exc}") from None


def _json_values(text: str) -> Any:
    """One JSON value, or a list of the values written one after another.

    The OpenTelemetry Collector's file exporter writes a request per batch, one a line; Jaeger's
    API v3 streams its answer as ``{"result": ...}`` chunks. Only a text that is not one value
    is read a second time, value by value.
    """
    try:
        return read_json(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := _after_space(text, at)) < len(text):
        _, end = decoder.raw_decode(text, at)
        values.append(read_json(text[at:end]))  # read again for its lone surrogates
        at = end
    return values


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _text(data: bytes, path: Path) -> str:
    """A file's text; bytes that are not UTF-8 (a latin-1 writer, a cut character) replaced.

    One bad byte in one attribute value should cost that byte, not the whole trace.
    """
    try:
        return data.decode("utf-8-sig")  # with a BOM (Windows tools write one) or without
    except UnicodeDecodeError as exc:
        warnings.warn(
            f"{path}: bytes that are not UTF-8 (the first at byte {exc.start}) were replaced "
            "by U+FFFD",
            stacklevel=5,  # _text, _document, _load, load_trace, its caller
        )
        return data.decode("utf-8-sig", errors="replace")


def _get(url: str, timeout: float, params: Mapping[str, Any] | None = None) -> Any:
    import httpx

    try:
        response = httpx.get(url, params=params, timeout=timeout)
    except httpx.TimeoutException:
        raise TraceLoadError(f"{url} did not answer within {timeout}s") from None
    except httpx.HTTPError as exc:
        raise TraceLoadError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from None
    if response.status_code == 404:
        raise TraceLoadError(f"{url}: not found (404): {response.text[:200]}")
    if response.status_code >= 400:
        raise TraceLoadError(f"{url} answered {response.status_code}: {response.text[:200]}")
    try:
        return _json_values(response.text)
    except ValueError:
        raise TraceLoadError(f"{url} did not answer with JSON: {response.text[:80]!r}") from None


def _checked_trace_id(text: str) -> str:
    trace_id = text.strip().lower()
    if not valid_trace_id(trace_id):
        raise TraceLoadError(f"{text!r} is not a trace id (32 hex digits, not all zero)")
    return trace_id


def _from_jaeger(base: str, rest: str, timeout: float) -> list[SpanData]:
    trace_id = _checked_trace_id(rest)
    return spans_from_document(_get(f"{base}/api/v3/traces/{trace_id}", timeout))


def _from_phoenix(base: str, rest: str, timeout: float) -> list[SpanData]:
    project, _, raw_id = rest.rpartition("/")
    if not project:
        raise TraceLoadError("a Phoenix source is phoenix+http://host:port/PROJECT/TRACE_ID")
    trace_id = _checked_trace_id(raw_id)
    url = f"{base}/v1/projects/{quote(project, safe='')}/spans/otlpv1"
    spans: list[SpanData] = []
    cursor: str | None = None
    seen: set[str] = set()  # a server answering the same cursor again would be paged forever
    while True:
        params: dict[str, Any] = {"trace_id": trace_id, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = _get(url, timeout, params)
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise TraceLoadError(f"{url} answered in an unknown shape")
        spans += [_otlp_span(s, {}, "", _refold) for s in page["data"]]
        cursor = page.get("next_cursor")
        if not cursor:
            return spans
        if cursor in seen:
            raise TraceLoadError(f"{url} answered the same page cursor {cursor!r} twice")
        seen.add(cursor)


# -- OTLP/JSON ---------------------------------------------------------------------------------


def spans_from_otlp(document: Mapping[str, Any]) -> list[SpanData]:
    """Spans of an OTLP/JSON ``ExportTraceServiceRequest`` (camelCase or snake_case keys)."""
    spans = []
    for resource_spans in _list(document, "resourceSpans", "resource_spans"):
        resource = _attributes(_field(resource_spans, "resource", default={}).get("attributes"))
        scopes = _list(resource_spans, "scopeSpans", "scope_spans")
        scopes += _list(
            resource_spans, "instrumentationLibrarySpans", "instrumentation_library_spans"
        )
        for scope_spans in scopes:
            scope = _field(scope_spans, "scope", "instrumentationLibrary", default={}) or {}
            for span in _list(scope_spans, "spans"):
                spans.append(_otlp_span(span, resource, str(scope.get("name", "")), _keep))
    return spans


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
    start = _int(start or 0)
    ns = _to_ns(start)
    return SpanData(
        trace_id=_id(trace_id, 16, "trace"),
        span_id=_id(span_id, 8, "span"),
        parent_id=_id(parent, 8, "parent span") if parent else None,
        name=str(name or ""),
        kind=_otlp_kind(kind or 0),
        start_ns=ns(start),
        end_ns=ns(max(start, _int(end or start))),
        attributes=shape(_attributes(attributes)),
        events=tuple(_otlp_event(e, start, ns, shape) for e in _checked_list(events, "events")),
        links=tuple(_otlp_link(link) for link in _checked_list(links, "links")),
        status=_status(_field(status, "code", default=0) if status else 0),
        status_message=_text_value(_field(status, "message", default="") or "") if status else "",
        resource=resource,
        scope=scope,
    )


def _otlp_event(
    event: Any,
    start: int,
    ns: Callable[[int], int],
    shape: Callable[[dict[str, Any]], dict[str, Any]],
) -> SpanEvent:
    return SpanEvent(
        name=str(_field(event, "name", default="")),
        time_ns=ns(_int(_field(event, "timeUnixNano", default=start) or start)),
        attributes=shape(_attributes(_field(event, "attributes"))),
    )


def _otlp_link(link: Any) -> SpanLink:
    return SpanLink(
        trace_id=_id(_field(link, "traceId"), 16, "link trace"),
        span_id=_id(_field(link, "spanId"), 8, "link span"),
        attributes=_attributes(_field(link, "attributes")),
    )


def _id(value: Any, size: int, what: str) -> str:
    """A hex id from hex or base64 text, checked for its length (``size`` bytes)."""
    if type(value) is not str or not value:
        raise TraceLoadError(f"a span has no {what} id")
    hex_id = _hex_id(value, size)
    if hex_id is None:
        raise TraceLoadError(
            f"{what} id {value!r} is not {size} bytes ({2 * size} hex digits or base64)"
        )
    if not hex_id.strip("0"):
        raise TraceLoadError(f"{what} id {value!r} is all zero")
    return hex_id


@functools.lru_cache(maxsize=4096)
def _hex_id(value: str, size: int) -> str | None:
    """``value`` as ``size`` bytes in lowercase hex, from hex or base64; None if it is not.

    Cached: a trace's id is on every span and a parent's on each of its children.
    """
    text = value.lower()
    if len(text) == 2 * size and _HEX.fullmatch(text):
        return text
    try:
        raw = base64.b64decode(value, validate=True)
    except (binascii.Error, ValueError):
        return None
    return raw.hex() if len(raw) == size else None


def _keep_ns(time: int) -> int:
    return time


@functools.cache
def _scaled(factor: int, divide: bool) -> Callable[[int], int]:
    return (lambda time: time // factor) if divide else (lambda time: time * factor)


def _to_ns(start: int) -> Callable[[int], int]:
    """What turns a span's times (judged by its start) into epoch nanoseconds.

    OTLP times are nanoseconds and Jaeger's microseconds, but exporters written by hand use the
    unit they had, and a time off by a factor of 1000 puts a 2024 span in January 1970 (or
    millennia ahead) and every duration 1000 times off. Epoch times from 1973 to 2286 fall in
    separate decades in each unit (seconds 1e8..1e10, ms 1e11..1e13, µs 1e14..1e16, ns
    1e17..1e19), so the start says the unit. Times below 1e8 are relative (a clock from zero, a
    test's) and kept.
    """
    if start < 10**8 or 10**17 <= start < 10**20:
        return _keep_ns
    if start >= 10**20:
        return _scaled(1000, divide=True)
    factor = 10**9 if start < 10**11 else 10**6 if start < 10**14 else 10**3
    return _scaled(factor, divide=False)


def _int(value: Any) -> int:
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TraceLoadError(f"{value!r} is not an integer time") from None


def _integer(value: Any) -> int:
    """An integer attribute value (big ones come as text)."""
    try:
        return int(value)
    except (TypeError, ValueError):
        raise TraceLoadError(f"{value!r} is not an integer") from None


def _otlp_kind(value: Any) -> str:
    if isinstance(value, str):
        name = value.removeprefix("SPAN_KIND_").upper()
        return name if name in _OTLP_KINDS.values() else "INTERNAL"
    return _OTLP_KINDS.get(_int(value), "INTERNAL")


def _status(code: Any) -> Any:
    if isinstance(code, str):
        name = code.removeprefix("STATUS_CODE_").lower()
        return name if name in _STATUS.values() else "unset"
    return _STATUS.get(_int(code), "unset")


def _attributes(items: Any) -> dict[str, Any]:
    if not items:
        return {}
    if type(items) is not list:
        raise TraceLoadError(
            f"attributes should be a list of key/values, found {type(items).__name__}"
        )
    return {
        str(kv["key"]) if type(kv) is dict and "key" in kv else str(_field(kv, "key")): _value(
            kv["value"] if type(kv) is dict and "value" in kv else _field(kv, "value")
        )
        for kv in items
    }


def _value(value: Any) -> Any:
    """An OTLP ``AnyValue`` as a Python value (arrays as tuples, key/value lists as JSON)."""
    if type(value) is not dict:
        return None
    if len(value) == 1:
        ((kind, inner),) = value.items()
    else:  # some servers write every field, the unused ones as null
        kind, inner = next(((k, v) for k, v in value.items() if v is not None), ("", None))
    read = _VALUES.get(kind)
    return None if read is None or inner is None else read(inner)


def _array(inner: Any) -> tuple[Any, ...]:
    return tuple(_value(v) for v in _field(inner, "values", default=[]) or [])


def _kvlist(inner: Any) -> str:
    return dumps(_attributes(_field(inner, "values", default=[])))


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""How protobuf's JSON mapping writes NaN and the infinities."""


def _float(value: Any) -> float:
    if isinstance(value, str) and value in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TraceLoadError(f"{value!r} is not a number") from None


def _text_value(value: Any) -> str:
    """A string attribute, redacted.

    A foreign tracer may have recorded a key (a header, an error message), and no view, repr or
    report of the workbench shows one.
    """
    return redacted(str(value))


_VALUES: dict[str, Callable[[Any], Any]] = {
    "stringValue": _text_value,
    "boolValue": bool,
    "intValue": _integer,
    "doubleValue": _float,
    "arrayValue": _array,
    "kvlistValue": _kvlist,
    "bytesValue": str,
}
"""How each kind of ``AnyValue`` is read, by its camelCase name."""
_VALUES.update({_snake(kind): read for kind, read in list(_VALUES.items())})


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
    for trace in document["data"]:
        processes = _field(trace, "processes", default={}) or {}
        for span in _list(trace, "spans"):
            spans.append(_jaeger_span(span, processes))
    return spans


def _jaeger_span(span: Any, processes: Mapping[str, Any]) -> SpanData:
    trace_id = _id(_jaeger_hex(_field(span, "traceID"), 32), 16, "trace")
    tags = _jaeger_tags(_field(span, "tags"))
    process = processes.get(str(_field(span, "processID", default="")), {}) or {}
    resource = _jaeger_tags(process.get("tags"))
    if "serviceName" in process:
        resource.setdefault("service.name", process["serviceName"])
    parent, links = None, []
    for ref in _list(span, "references"):
        ref_trace = _id(_jaeger_hex(_field(ref, "traceID"), 32), 16, "reference trace")
        ref_span = _id(_jaeger_hex(_field(ref, "spanID"), 16), 8, "reference span")
        if _field(ref, "refType") == "CHILD_OF" and parent is None and ref_trace == trace_id:
            parent = ref_span
        else:
            links.append(SpanLink(trace_id=ref_trace, span_id=ref_span))
    status = str(tags.get("otel.status_code", "")).lower()
    if status not in ("ok", "error"):
        status = "error" if tags.get("error") is True else "unset"
    start = _int(_field(span, "startTime", default=0)) * 1000
    ns = _to_ns(start)
    return SpanData(
        trace_id=trace_id,
        span_id=_id(_jaeger_hex(_field(span, "spanID"), 16), 8, "span"),
        parent_id=parent,
        name=str(_field(span, "operationName", default="")),
        kind=_otlp_kind(str(tags.get("span.kind", "internal"))),
        start_ns=ns(start),
        end_ns=ns(start + _int(_field(span, "duration", default=0)) * 1000),
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
        return _integer(value)  # big ints come as strings
    if kind == "float64":
        return _float(value)
    if kind == "bool":
        return value if isinstance(value, bool) else str(value).lower() == "true"
    return _text_value(value if isinstance(value, str) else dumps(value))


def _jaeger_log(log: Any, ns: Callable[[int], int]) -> SpanEvent:
    fields = _jaeger_tags(_field(log, "fields"))
    name = str(fields.pop("event", "log"))
    time = ns(_int(_field(log, "timestamp", default=0)) * 1000)
    return SpanEvent(name=name, time_ns=time, attributes=fields)
