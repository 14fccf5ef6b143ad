"""A span's fields as trace formats write them, read into `SpanData`: ids, times, kind, values.

Every reader of traces builds its spans with these (`readers`: OTLP/JSON walked as parsed JSON,
Phoenix's pages, Jaeger JSON; `otlp_decode`: OTLP/JSON decoded into its types), so a span reads
the same whichever way it came. Ids come as hex or base64 and are checked for their length.
Epoch times written in seconds, milliseconds or microseconds where the format wants nano- (or,
for Jaeger, micro-) seconds are recognised by their size and read as nanoseconds (`to_ns`).
String values (attributes, tags, status messages) are redacted as everything the workbench
writes is: a key a foreign tracer recorded shows in no view, repr or report. A value that cannot
be read raises `TraceLoadError` saying what.
"""

from __future__ import annotations

import base64
import binascii
import functools
import math
import re
from collections.abc import Callable
from typing import Any

from workbench.errors import TraceLoadError
from workbench.redact import redacted
from workbench.telemetry.trace import SpanData, SpanEvent, SpanLink

__all__ = [
    "checked_id",
    "double_value",
    "integer_time",
    "integer_value",
    "otlp_span_data",
    "span_kind",
    "span_status",
    "text_value",
    "time_ns",
    "to_ns",
]

_HEX = re.compile(r"[0-9a-f]+")
_OTLP_KINDS = {0: "INTERNAL", 1: "INTERNAL", 2: "SERVER", 3: "CLIENT", 4: "PRODUCER", 5: "CONSUMER"}
_STATUS = {0: "unset", 1: "ok", 2: "error"}

_Read = dict[str, Any]
"""Attributes as read (by `readers` from parsed JSON, or `otlp_decode` from its types)."""


def otlp_span_data(
    *,
    ids: tuple[Any, Any, Any],
    name: Any,
    kind: Any,
    times: tuple[Any, Any],
    attributes: _Read,
    events: list[tuple[Any, Any, _Read]],
    links: list[tuple[Any, Any, _Read]],
    status: tuple[Any, Any],
    resource: _Read,
    scope: str,
) -> SpanData:
    """An OTLP span's `SpanData` from its fields as written, its attributes already read.

    ``ids`` are the trace's, the span's and its parent's (None or "" for a root), ``times`` its
    start and end, ``events`` (name, time, attributes), ``links`` (trace id, span id,
    attributes), ``status`` (code, message). Both ways of reading OTLP/JSON build their spans
    here (`readers`' and `otlp_decode`'s), so the same document gives the same spans.
    """
    trace_id, span_id, parent = ids
    start = integer_time(times[0] or 0)
    ns = to_ns(start)
    code, message = status
    return SpanData(
        trace_id=checked_id(trace_id, 16, "trace"),
        span_id=checked_id(span_id, 8, "span"),
        parent_id=checked_id(parent, 8, "parent span") if parent else None,
        name=text_value(name or ""),  # a URL in a span's name may hold a key too
        kind=span_kind(kind or 0),
        start_ns=time_ns(ns, start),
        end_ns=time_ns(ns, max(start, integer_time(times[1] or start))),
        attributes=attributes,
        events=tuple(
            SpanEvent(
                name=text_value(event),
                time_ns=time_ns(ns, integer_time(time or start)),
                attributes=read,
            )
            for event, time, read in events
        ),
        links=tuple(
            SpanLink(
                trace_id=checked_id(link_trace, 16, "link trace"),
                span_id=checked_id(link_span, 8, "link span"),
                attributes=read,
            )
            for link_trace, link_span, read in links
        ),
        status=span_status(code or 0),
        status_message=text_value(message or ""),
        resource=resource,
        scope=text_value(scope) if scope else "",
    )


def checked_id(value: Any, size: int, what: str) -> str:
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


def to_ns(start: int) -> Callable[[int], int]:
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


def time_ns(ns: Callable[[int], int], time: int) -> int:
    """A time in epoch nanoseconds, refused outside what OTLP can hold (unsigned 64 bits)."""
    value = ns(time)
    if not 0 <= value < 2**64:
        raise TraceLoadError(f"the time {time} is out of range (0 to 2**64 ns since the epoch)")
    return value


def integer_time(value: Any) -> int:
    """A time field as an integer (in whatever unit it was written: `to_ns` says which)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):  # OverflowError: 1e999 is read as infinity
        raise TraceLoadError(f"{_shown(value)} is not an integer time") from None


def integer_value(value: Any) -> int:
    """An integer attribute value (big ones come as text)."""
    try:
        return int(value)
    except (TypeError, ValueError, OverflowError):
        raise TraceLoadError(f"{_shown(value)} is not an integer") from None


def _shown(value: Any) -> str:
    """A value quoted in an error: its start, not a whole document."""
    text = repr(value)
    return text if len(text) <= 80 else text[:80] + "…"


def span_kind(value: Any) -> str:
    """A span kind by its OTLP number or name (``SPAN_KIND_CLIENT``, ``client``); INTERNAL else."""
    if isinstance(value, str):
        name = value.removeprefix("SPAN_KIND_").upper()
        return name if name in _OTLP_KINDS.values() else "INTERNAL"
    return _OTLP_KINDS.get(integer_time(value), "INTERNAL")


def span_status(code: Any) -> Any:
    """A status code by its OTLP number or name (``STATUS_CODE_ERROR``); ``unset`` else."""
    if isinstance(code, str):
        name = code.removeprefix("STATUS_CODE_").lower()
        return name if name in _STATUS.values() else "unset"
    return _STATUS.get(integer_time(code), "unset")


_SPECIAL_FLOATS = {"NaN": math.nan, "Infinity": math.inf, "-Infinity": -math.inf}
"""How protobuf's JSON mapping writes NaN and the infinities."""


def double_value(value: Any) -> float:
    """A double attribute value (NaN and the infinities come as text)."""
    if isinstance(value, str) and value in _SPECIAL_FLOATS:
        return _SPECIAL_FLOATS[value]
    try:
        return float(value)
    except (TypeError, ValueError):
        raise TraceLoadError(f"{value!r} is not a number") from None


def text_value(value: Any) -> str:
    """A string attribute, redacted.

    A foreign tracer may have recorded a key (a header, an error message), and no view, repr or
    report of the workbench shows one. A short string redaction leaves as it is, is remembered
    (`_CLEAN`): names, ids and models repeat on every span.
    """
    if type(value) is not str:
        return redacted(str(value))
    short = len(value) <= _SHORT
    if short and value in _CLEAN:
        return value
    shown = redacted(value)
    if short and shown == value:
        if len(_CLEAN) >= _CLEAN_KEPT:
            _CLEAN.clear()
        _CLEAN[value] = None
    return shown


_SHORT = 256
_CLEAN: dict[str, None] = {}
"""Short strings seen lately that redaction leaves as they are (at most `_CLEAN_KEPT`).

A 100,000-span trace holds about a million string values and a tenth as many distinct ones;
long ones (messages) are mostly distinct and are not kept. A string redaction changes is never
kept: the process would hold the key it hid after the trace is gone.
"""
_CLEAN_KEPT = 8192
