"""pandas DataFrames of collected spans: spans, steps, and where the time went.

Columns (times are UTC ``datetime64``; durations are milliseconds):

``spans_df``  (`SPAN_COLUMNS`)
    trace_id, span_id, parent_span_id, name, kind, operation (``gen_ai.operation.name``),
    start, end, duration_ms, status (UNSET / OK / ERROR), error_type, run_id, execution_id,
    step, snapshot_id, model, tool, input_tokens, output_tokens, attributes (dict of all);
    model and tokens also from OpenInference's ``llm.model_name`` and ``llm.token_count.*``.
``steps_df``  (`STEP_COLUMNS`), one row per ``workbench.step`` span (per model call without any)
    trace_id, run_id, execution_id, step, snapshot_id, status, stop_reason, start, duration_ms,
    prepare_ms, inference_ms, tools_ms, hooks_ms, continuation_ms, telemetry_ms, ttft_ms,
    input_tokens, output_tokens, tool_calls.
``timing_df`` (`TIMING_COLUMNS`), one row per timed part of a step, ready to stack
    trace_id, run_id, execution_id, step, component (prepare / inference / tool / hook /
    continuation / telemetry), name (span name, or ``telemetry``), start, duration_ms.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from operator import attrgetter
from typing import TYPE_CHECKING, Any

from workbench.telemetry import names as n
from workbench.telemetry.spandata import SpanData, span_outline

if TYPE_CHECKING:
    import pandas as pd
    from opentelemetry.sdk.trace import ReadableSpan


__all__ = [
    "SPAN_COLUMNS",
    "STEP_COLUMNS",
    "TIMING_COLUMNS",
    "in_start_order",
    "model_calls",
    "spans_frame",
    "steps_frame",
    "timing_frame",
]

SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "operation",
    "start",
    "end",
    "duration_ms",
    "status",
    "error_type",
    "run_id",
    "execution_id",
    "step",
    "snapshot_id",
    "model",
    "tool",
    "input_tokens",
    "output_tokens",
    "attributes",
)
STEP_COLUMNS = (
    "trace_id",
    "run_id",
    "execution_id",
    "step",
    "snapshot_id",
    "status",
    "stop_reason",
    "start",
    "duration_ms",
    "prepare_ms",
    "inference_ms",
    "tools_ms",
    "hooks_ms",
    "continuation_ms",
    "telemetry_ms",
    "ttft_ms",
    "input_tokens",
    "output_tokens",
    "tool_calls",
)
TIMING_COLUMNS = (
    "trace_id",
    "run_id",
    "execution_id",
    "step",
    "component",
    "name",
    "start",
    "duration_ms",
)
_COMPONENTS = {
    n.SPAN_PREPARE: "prepare",
    n.SPAN_CHAT: "inference",
    n.SPAN_TOOL: "tool",
    n.SPAN_HOOK: "hook",
    n.SPAN_CONTINUATION: "continuation",
}


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("DataFrames need pandas: pip install 'workbench[notebook]'") from exc
    return pandas


def _frame(rows: list[dict[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    pandas = _pandas()
    frame = pandas.DataFrame(rows, columns=list(columns))
    for column in ("start", "end"):
        if column in frame:
            frame[column] = pandas.to_datetime(frame[column], unit="ns", utc=True)
    return frame


def _ms(ns: int) -> float:
    return ns / 1e6


def _seconds_ms(value: Any) -> float | None:
    return None if value is None else float(value) * 1e3


def _common(span: SpanData) -> dict[str, Any]:
    attributes = span.attributes
    return {
        "trace_id": span.trace_id,
        "run_id": attributes.get(n.RUN_ID),
        "execution_id": attributes.get(n.EXECUTION_ID),
        "step": attributes.get(n.STEP_INDEX),
    }


Spans = Sequence["ReadableSpan"] | Sequence["SpanData"]
"""SDK spans (a `Telemetry`'s) or `SpanData` (a `Trace`'s): every frame reads either."""


def _data(spans: Spans) -> list[SpanData]:
    """The spans as `SpanData`; SDK spans in outline, since no frame shows events or resources."""
    return [s if isinstance(s, SpanData) else span_outline(s) for s in spans]


def in_start_order(spans: Sequence[SpanData]) -> list[SpanData]:
    """The spans by start time, a parent before the children that start at the same instant.

    A run, its first step and the step's first phase often start within the clock's
    resolution, and spans are finished (so exported) children first: by time alone a run's
    first span would be its innermost phase.
    """
    ordered = sorted(spans, key=attrgetter("start_ns"))
    starts = [s.start_ns for s in ordered]
    if len(set(starts)) == len(starts):  # no two start together: nothing to reorder
        return ordered
    grouped = groupby(ordered, key=attrgetter("start_ns"))
    return [s for _, group in grouped for s in _parents_first(list(group))]


def _parents_first(group: list[SpanData]) -> list[SpanData]:
    """Spans starting together, each after its ancestors among them.

    A loop of parents (a damaged file) stops the walk up at a span it has seen.
    """
    if len(group) == 1:
        return group
    parent = {s.span_id: s.parent_id for s in group}

    def depth(span_id: str) -> int:
        seen = {span_id}
        while (up := parent.get(span_id)) is not None and up in parent and up not in seen:
            seen.add(up)
            span_id = up
        return len(seen)

    return sorted(group, key=lambda s: depth(s.span_id))


def spans_frame(spans: Spans) -> pd.DataFrame:
    """One row per span, in start order (SDK spans, or `SpanData` of a loaded trace).

    Built column by column (one list per column, filled in one pass) rather than from a dict per
    row: pandas makes a frame from lists several times faster, which is what keeps 100,000 spans
    within a notebook's patience.
    """
    ordered = in_start_order(_data(spans))
    columns: dict[str, list[Any]] = {name: [] for name in SPAN_COLUMNS}
    (trace_ids, span_ids, parent_ids, names, kinds, operations, starts, ends, durations, statuses,
     error_types, run_ids, execution_ids, steps, snapshot_ids, models, tools, input_tokens,
     output_tokens, attribute_dicts) = columns.values()  # fmt: skip
    for span in ordered:
        attributes = dict(span.attributes)
        get = attributes.get
        start, end = span.start_ns, span.end_ns
        trace_ids.append(span.trace_id)
        span_ids.append(span.span_id)
        parent_ids.append(span.parent_id)
        names.append(span.name)
        kinds.append(span.kind)
        operations.append(get(n.OPERATION))
        starts.append(start)
        ends.append(end)
        durations.append((end - start) / 1e6)
        statuses.append(span.status.upper())
        error_types.append(get(n.ERROR_TYPE))
        run_ids.append(get(n.RUN_ID))
        execution_ids.append(get(n.EXECUTION_ID))
        steps.append(get(n.STEP_INDEX))
        snapshot_ids.append(get(n.SNAPSHOT_ID))
        models.append(get(n.RESPONSE_MODEL) or get(n.REQUEST_MODEL) or get(n.OI_MODEL))
        tools.append(get(n.TOOL_NAME))
        tokens_in, tokens_out = n.tokens_of(attributes)
        input_tokens.append(tokens_in)
        output_tokens.append(tokens_out)
        attribute_dicts.append(attributes)
    pandas = _pandas()
    frame = pandas.DataFrame(columns)
    for column in ("start", "end"):
        frame[column] = pandas.to_datetime(frame[column], unit="ns", utc=True)
    return frame


def _is_step(span: SpanData) -> bool:
    return span.name.startswith(n.SPAN_STEP + " ")


def _step_row(span: SpanData) -> dict[str, Any]:
    a = span.attributes
    start, end = span.start_ns, span.end_ns
    return {
        **_common(span),
        "snapshot_id": a.get(n.SNAPSHOT_ID),
        "status": a.get(n.STEP_STATUS),
        "stop_reason": a.get(n.STEP_STOP_REASON),
        "start": start,
        "duration_ms": _ms(end - start),
        "prepare_ms": _seconds_ms(a.get(n.TIMING_PREPARE)),
        "inference_ms": _seconds_ms(a.get(n.TIMING_INFERENCE)),
        "tools_ms": _seconds_ms(a.get(n.TIMING_TOOLS)),
        "hooks_ms": _seconds_ms(a.get(n.TIMING_HOOKS)),
        "continuation_ms": _seconds_ms(a.get(n.TIMING_CONTINUATION)),
        "telemetry_ms": _seconds_ms(a.get(n.TIMING_TELEMETRY)),
        "ttft_ms": _seconds_ms(a.get(n.TIMING_TTFT)),
        "input_tokens": a.get(n.STEP_INPUT_TOKENS),
        "output_tokens": a.get(n.STEP_OUTPUT_TOKENS),
        "tool_calls": a.get(n.STEP_TOOL_CALLS),
    }


def model_calls(spans: Sequence[SpanData]) -> list[SpanData]:
    """The model call spans, in the order given.

    Spans with ``gen_ai.operation.name`` = ``chat`` (the conventions), or OpenInference's
    ``openinference.span.kind`` = ``LLM`` for a trace with no GenAI operation names.
    """
    chats = [s for s in spans if s.attributes.get(n.OPERATION) == n.OP_CHAT]
    if chats:
        return chats
    return [s for s in spans if s.attributes.get(n.OI_SPAN_KIND) == "LLM"]


def _model_call_row(span: SpanData, number: int) -> dict[str, Any]:
    tokens_in, tokens_out = n.tokens_of(span.attributes)
    duration = _ms(span.end_ns - span.start_ns)
    return {
        **{column: None for column in STEP_COLUMNS},
        **_common(span),
        "step": number,
        "start": span.start_ns,
        "duration_ms": duration,
        "inference_ms": duration,
        "input_tokens": tokens_in,
        "output_tokens": tokens_out,
    }


def steps_frame(spans: Spans) -> pd.DataFrame:
    """One row per step span, in start order, with the step's timing breakdown.

    A trace with no step spans (another framework's) has a row per model call, numbered as
    `Trace.messages` and `Agent.rerun_from_trace` number its steps.
    """
    ordered = in_start_order(_data(spans))
    rows = [_step_row(s) for s in ordered if _is_step(s)]
    if not rows:
        rows = [_model_call_row(c, i) for i, c in enumerate(model_calls(ordered), start=1)]
    return _frame(rows, STEP_COLUMNS)


def _timing_rows(span: SpanData) -> list[dict[str, Any]]:
    start, end = span.start_ns, span.end_ns
    if _is_step(span):
        overhead = span.attributes.get(n.TIMING_TELEMETRY)
        if overhead is None:
            return []
        row = {"component": "telemetry", "name": "telemetry", "start": start}
        return [{**_common(span), **row, "duration_ms": _seconds_ms(overhead)}]
    component = _COMPONENTS.get(span.name.split(" ", 1)[0])
    if component is None:
        return []
    row = {"component": component, "name": span.name, "start": start}
    return [{**_common(span), **row, "duration_ms": _ms(end - start)}]


def timing_frame(spans: Spans) -> pd.DataFrame:
    """The timed parts of every step (phases, model calls, tools, hooks, telemetry overhead)."""
    rows = [r for s in in_start_order(_data(spans)) for r in _timing_rows(s)]
    return _frame(rows, TIMING_COLUMNS)
