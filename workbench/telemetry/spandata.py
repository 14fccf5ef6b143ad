"""One finished span as plain data: what a file, a backend or the SDK gives, made the same.

`SpanData` (with its `SpanEvent`s and `SpanLink`s) is below both the DataFrames and `Trace`, so
every frame reads SDK spans and loaded spans alike without the two modules importing each other.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal, TypedDict

from pydantic import Field

from workbench._record import Record

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["SpanData", "SpanEvent", "SpanLink", "span_data", "span_outline"]

_KIND_NAMES = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_NAMES: tuple[Literal["unset", "ok", "error"], ...] = ("unset", "ok", "error")


class SpanEvent(Record):
    """Something that happened at one instant of a span (an exception, the first token)."""

    name: str
    time_ns: int
    attributes: dict[str, Any] = Field(default_factory=dict)


class SpanLink(Record):
    """A span this one points to in another trace (a resumed or re-run execution's origin)."""

    trace_id: str
    span_id: str
    attributes: dict[str, Any] = Field(default_factory=dict)


class SpanData(Record):
    """One finished span, as any backend or file gives it."""

    trace_id: str
    span_id: str
    parent_id: str | None = None
    name: str
    kind: str = "INTERNAL"
    start_ns: int
    end_ns: int
    attributes: dict[str, Any] = Field(default_factory=dict)
    events: tuple[SpanEvent, ...] = ()
    links: tuple[SpanLink, ...] = ()
    status: Literal["unset", "ok", "error"] = "unset"
    status_message: str = ""
    resource: dict[str, Any] = Field(default_factory=dict)
    scope: str = ""


def span_data(span: ReadableSpan) -> SpanData:
    """One SDK span as `SpanData`."""
    scope = span.instrumentation_scope
    return SpanData(
        **_outline(span),
        events=tuple(
            SpanEvent(name=e.name, time_ns=e.timestamp, attributes=_plain(e.attributes))
            for e in span.events
        ),
        links=tuple(
            SpanLink(
                trace_id=format(link.context.trace_id, "032x"),
                span_id=format(link.context.span_id, "016x"),
                attributes=_plain(link.attributes),
            )
            for link in span.links
        ),
        status_message=span.status.description or "",
        resource=_plain(span.resource.attributes),
        scope=scope.name if scope is not None else "",
    )


def span_outline(span: ReadableSpan) -> SpanData:
    """One SDK span as `SpanData` without its events, links, status message, resource and scope.

    What the DataFrames read of a span: they convert every span they are given, and those parts,
    which no table shows, were most of that work.
    """
    return SpanData(**_outline(span))


class _Outline(TypedDict):
    """The fields of `SpanData` that every conversion of an SDK span fills."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: str
    start_ns: int
    end_ns: int
    attributes: dict[str, Any]
    status: Literal["unset", "ok", "error"]


def _outline(span: ReadableSpan) -> _Outline:
    context = span.context
    assert context is not None
    start = span.start_time or 0
    return _Outline(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_id=format(span.parent.span_id, "016x") if span.parent is not None else None,
        name=span.name,
        kind=_KIND_NAMES[int(span.kind.value)],
        start_ns=start,
        end_ns=span.end_time or start,
        attributes=_plain(span.attributes),
        status=_STATUS_NAMES[int(span.status.status_code.value)],
    )


def _plain(attributes: Any) -> dict[str, Any]:
    """Attributes as a plain dict (sequences as tuples, as the SDK keeps them)."""
    return {
        k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in (attributes or {}).items()
    }
