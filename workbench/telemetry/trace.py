"""`Trace` and `SpanData`: a trace as plain frozen data, whatever it came from.

A live run's in-memory spans (`Trace.from_spans`), an OTLP or Jaeger JSON file and a trace pulled
from a backend (`workbench.telemetry.load.load_trace`) all become the same value, which the
DataFrame helpers, `TraceView` and the trace explorer read. It needs neither OpenTelemetry nor
pandas until a DataFrame is asked for.

Ids are lowercase hex (32 digits for a trace, 16 for a span), times integer nanoseconds since
the epoch, ``kind`` the OTel span kind's name (``INTERNAL``, ``CLIENT``, ``SERVER``, ``PRODUCER``,
``CONSUMER``), ``status`` one of ``unset``, ``ok``, ``error``.
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from workbench._record import Record
from workbench.errors import StepNotInTrace, TraceLoadError
from workbench.messages import Message
from workbench.telemetry import names as n
from workbench.telemetry.frames import (
    in_start_order,
    model_calls,
    spans_frame,
    steps_frame,
    timing_frame,
)
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.spandata import SpanData, SpanEvent, SpanLink, span_data

if TYPE_CHECKING:
    import pandas as pd
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["SpanData", "SpanEvent", "SpanLink", "Trace", "conversation_chats", "no_step"]


class Trace(Record):
    """The spans of one trace (a file holding several keeps them all; ``trace_id`` is the first's).

    ``spans`` are in start order.
    """

    trace_id: str
    spans: tuple[SpanData, ...]

    def __repr__(self) -> str:
        return f"Trace(trace_id={self.trace_id!r}, spans={len(self.spans)})"

    @classmethod
    def of(cls, spans: Iterable[SpanData]) -> Trace:
        """A trace of these spans, in start order (a parent before children starting with it).

        Its id is the earliest root's trace id.
        """
        ordered = tuple(in_start_order(list(spans)))
        if not ordered:
            raise ValueError("a trace needs at least one span")
        roots = [s for s in ordered if s.parent_id is None] or list(ordered)
        return cls(trace_id=roots[0].trace_id, spans=ordered)

    @classmethod
    def from_spans(cls, spans: Sequence[ReadableSpan]) -> Trace:
        """A trace of OpenTelemetry SDK spans (what `Telemetry.spans` holds)."""
        return cls.of(span_data(s) for s in spans)

    def spans_df(self) -> pd.DataFrame:
        """One row per span, the columns of `Telemetry.spans_df` (``frames.SPAN_COLUMNS``)."""
        return spans_frame(self.spans)

    def steps_df(self) -> pd.DataFrame:
        """One row per ``workbench.step`` span (``frames.STEP_COLUMNS``), as in `Telemetry`."""
        return steps_frame(self.spans)

    def timing_df(self) -> pd.DataFrame:
        """Where the time went (``frames.TIMING_COLUMNS``), as `Telemetry.timing_df`."""
        return timing_frame(self.spans)

    def chat_spans(self) -> list[SpanData]:
        """The model calls, in start order.

        Spans with ``gen_ai.operation.name`` = ``chat`` (the conventions), or OpenInference's
        ``openinference.span.kind`` = ``LLM`` for a trace with no GenAI operation names.
        """
        return model_calls(self.spans)

    def messages(self, step: int | None = None) -> tuple[Message, ...]:
        """The conversation recovered from captured content, at ``step``.

        What the model was sent at ``step`` (a ``workbench.step.index``, or the n-th model call
        of a foreign trace), and its answer; without ``step``, the last model call's. Empty
        without captured content.
        """
        chats = conversation_chats(self)
        if not chats:
            return ()
        if step is None:
            return messages_of_chat(chats[-1].attributes)
        for number, chat in enumerate(chats, start=1):
            if chat.attributes.get(n.STEP_INDEX, number) == step:
                return messages_of_chat(chat.attributes)
        raise StepNotInTrace(no_step(chats, step))


def conversation_chats(trace: Trace) -> list[SpanData]:
    """The model calls of the trace's one conversation, in start order.

    A file can hold several traces. Steps numbered by the workbench (``workbench.step.index``)
    start at 1 in each run, so in the traces of unrelated runs "step 2" would be whichever
    trace's came first: that raises `TraceLoadError` saying how to pick one trace. The traces
    of one run's executions (a paused run and its resumption share a ``workbench.run.id``) are
    one conversation, and another framework's model calls (each often a trace of its own) are
    numbered across the file.
    """
    chats = trace.chat_spans()
    if not any(n.STEP_INDEX in c.attributes for c in chats):
        return chats
    runs: dict[str, set[Any]] = {}
    for chat in chats:
        runs.setdefault(chat.trace_id, set()).add(chat.attributes.get(n.RUN_ID))
    ids = list(runs)
    if len(ids) > 1 and not set.intersection(*runs.values()) - {None}:
        raise TraceLoadError(
            f"the trace holds the model calls of {len(ids)} traces ({', '.join(ids)}): "
            "load one with load_trace(source, trace_id=...)"
        )
    return chats


def no_step(chats: list[SpanData], step: int) -> str:
    """What to say when ``step`` is none of the model calls' steps: which steps there are."""
    steps = [c.attributes.get(n.STEP_INDEX, i) for i, c in enumerate(chats, start=1)]
    shown = ", ".join(map(str, steps[:20])) + (", ..." if len(steps) > 20 else "")
    return f"the trace has no model call at step {step} (its steps: {shown or 'none'})"


def dumps(value: Any) -> str:
    """JSON for an attribute value that is a structure (kept as text, as OTel attributes are)."""
    return json.dumps(value, ensure_ascii=False, separators=(",", ":"), default=str)
