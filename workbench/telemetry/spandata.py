"""`SpanData`: the one span shape beside the OpenTelemetry SDK's, whatever the span came from.

A span in a file, a backend's answer, the SDK's memory or a run still under way becomes one
`SpanData` (with its `SpanEvent`s and `SpanLink`s), which every view reads: ids as lowercase hex
(32 digits for a trace, 16 for a span), times as integer nanoseconds since the epoch, ``kind``
the OTel span kind's name (``INTERNAL``, ``CLIENT``, ``SERVER``, ``PRODUCER``, ``CONSUMER``),
``status`` one of ``unset``, ``ok``, ``error``. A span still open when the trace was taken
(a stopped run's step under way) is ``in_progress``, its end the time it was taken.

`span_data` is the one conversion of an SDK span; the readers of files and backends build
`SpanData` themselves. What kind of work a span is (`SpanData.category`) is read here once, from
the GenAI conventions' operation name first and the span name after, so every view and table
agrees on which spans are model calls, tools and agents, ours or another framework's.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, Literal

from pydantic import Field

from workbench._record import Record
from workbench.telemetry import names as n

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["CATEGORIES", "SpanData", "SpanEvent", "SpanLink", "Status", "span_data"]

Status = Literal["unset", "ok", "error"]
_KIND_NAMES = ("INTERNAL", "SERVER", "CLIENT", "PRODUCER", "CONSUMER")
_STATUS_NAMES: tuple[Status, ...] = ("unset", "ok", "error")

CATEGORIES = ("agent", "step", "phase", "model", "tool", "hook", "other")
"""What a span can be in the views: an agent run, a step, a phase, a model call, a tool call, a
hook, or anything else."""

_BY_OPERATION = {
    n.OP_INVOKE_AGENT: "agent",
    n.OP_CHAT: "model",
    "text_completion": "model",
    "generate_content": "model",
    n.OP_EXECUTE_TOOL: "tool",
}
"""The conventions' ``gen_ai.operation.name`` values and what they are."""
_BY_OPENINFERENCE = {"AGENT": "agent", "LLM": "model", "TOOL": "tool"}
"""OpenInference's ``openinference.span.kind`` values."""
_BY_REQUEST_TYPE = {"chat": "model", "completion": "model"}
"""OpenLLMetry's ``llm.request.type`` (its spans of mid-2025 have no operation name)."""
_BY_NAME = {
    n.SPAN_RUN: "agent",
    n.SPAN_STEP: "step",
    n.SPAN_PREPARE: "phase",
    n.SPAN_CONTINUATION: "phase",
    n.SPAN_CHAT: "model",
    n.SPAN_TOOL: "tool",
    n.SPAN_HOOK: "hook",
}
"""The first word of a span's name, for spans that say nothing else (ours say both)."""


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
    """One span, as any backend, file or run gives it."""

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
    status: Status = "unset"
    status_message: str = ""
    resource: dict[str, Any] = Field(default_factory=dict)
    scope: str = ""
    in_progress: bool = False
    """Still open when the trace was taken (a stopped run's step): ``end_ns`` is that moment."""

    @property
    def duration_ns(self) -> int:
        """End minus start (never negative: a damaged file's end before its start is zero)."""
        return max(self.end_ns - self.start_ns, 0)

    @property
    def is_error(self) -> bool:
        """Error status, or an ``error.type`` attribute (a denied or retried tool call)."""
        return self.status == "error" or n.ERROR_TYPE in self.attributes

    @property
    def category(self) -> str:
        """What the span is (one of `CATEGORIES`), read the same way for every tracer.

        >>> SpanData(trace_id="1", span_id="2", name="openai.chat", start_ns=0, end_ns=1,
        ...          attributes={"llm.request.type": "chat"}).category
        'model'
        """
        return category_of(self.name, self.attributes)


def category_of(name: str, attributes: dict[str, Any]) -> str:
    """The category of a span with this name and these attributes (see `SpanData.category`)."""
    first = name.split(" ", 1)[0]
    if first in _BY_NAME and first not in (n.SPAN_RUN, n.SPAN_CHAT, n.SPAN_TOOL):
        return _BY_NAME[first]  # our own step, phase and hook spans: the name is the category
    found = (
        _BY_OPERATION.get(str(attributes.get(n.OPERATION)))
        or _BY_OPENINFERENCE.get(str(attributes.get(n.OI_SPAN_KIND)))
        or _BY_REQUEST_TYPE.get(str(attributes.get(n.LLM_REQUEST_TYPE)))
    )
    return found or _BY_NAME.get(first, "other")


def span_data(span: ReadableSpan, resources: dict[int, dict[str, Any]] | None = None) -> SpanData:
    """One SDK span as `SpanData` (a span not yet ended is `in_progress`, ending at its start).

    ``resources`` keeps each resource's attributes read once when many spans are converted
    (every span of a provider shares one, and reading the SDK's mappings key by key is slow).
    """
    context = span.context
    assert context is not None
    start = span.start_time or 0
    scope = span.instrumentation_scope
    resource = span.resource
    if resources is None:
        resources = {}
    if id(resource) not in resources:
        resources[id(resource)] = _plain(resource.attributes)
    return SpanData(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_id=format(span.parent.span_id, "016x") if span.parent is not None else None,
        name=span.name,
        kind=_KIND_NAMES[int(span.kind.value)],
        start_ns=start,
        end_ns=span.end_time or start,
        attributes=_plain(span.attributes),
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
        status=_STATUS_NAMES[int(span.status.status_code.value)],
        status_message=span.status.description or "",
        resource=resources[id(resource)],
        scope=scope.name if scope is not None else "",
        in_progress=span.end_time is None,
    )


def _plain(attributes: Any) -> dict[str, Any]:
    """Attributes as a plain dict (sequences as tuples, as the SDK keeps them)."""
    return {
        k: tuple(v) if isinstance(v, (list, tuple)) else v for k, v in (attributes or {}).items()
    }
