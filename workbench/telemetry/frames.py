"""pandas DataFrames of a trace: spans, steps, and where the time went.

`Trace.spans_df`, `steps_df` and `timing_df` build these (and `Telemetry`'s are the same
tables of its trace); the rows come from `workbench.telemetry.derive`. Times are UTC
datetimes, to the nanosecond (to the microsecond in a trace whose times nanoseconds cannot
hold: a clock set to the year 2500 still shows); durations are milliseconds; a number a tracer
wrote as something else is NaN (`Trace.problems` names it).

``spans_df``  (`SPAN_COLUMNS`), one row per span in start order
    trace_id, span_id, parent_span_id, name, kind, category, operation
    (``gen_ai.operation.name``), agent, start, end, duration_ms, status (UNSET / OK / ERROR),
    error_type, run_id, execution_id, step, snapshot_id, model, tool, input_tokens,
    output_tokens, in_progress, attributes (dict of all); model, tool and tokens under any of
    the names tracers write them (the conventions', their older ones, OpenInference's).
``steps_df``  (`STEP_COLUMNS`), one row per step (per model call in another framework's trace)
    trace_id, span_id (the step's span), run_id, agent, execution_id, step, label (unique: the
    step, and whose, which run, resumed), snapshot_id, status, stop_reason, start,
    duration_ms, prepare_ms, inference_ms, tools_ms, hooks_ms, continuation_ms, telemetry_ms,
    ttft_ms, tries (how many times the model call was made: more than 1 when the client asked
    again after a failed try), input_tokens, output_tokens, cost, tool_calls (how many), tools
    (``name:status, ...``), errors (failed spans in the step), in_progress, resumed (the part
    of a step that ran after its run was resumed from a pause).
``timing_df`` (`TIMING_COLUMNS`), one row per timed part of a step, ready to stack
    trace_id, run_id, agent, execution_id, step, component (prepare / inference / tool / hook /
    continuation / telemetry), name (span name, or ``telemetry``), start, duration_ms.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from workbench.telemetry import names as n
from workbench.telemetry.derive import number
from workbench.telemetry.spandata import SpanData

if TYPE_CHECKING:
    import pandas as pd


__all__ = [
    "SPAN_COLUMNS",
    "STEP_COLUMNS",
    "TIMING_COLUMNS",
    "rows_frame",
    "spans_frame",
]

SPAN_COLUMNS = (
    "trace_id",
    "span_id",
    "parent_span_id",
    "name",
    "kind",
    "category",
    "operation",
    "agent",
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
    "in_progress",
    "attributes",
)
STEP_COLUMNS = (
    "trace_id",
    "span_id",
    "run_id",
    "agent",
    "execution_id",
    "step",
    "label",
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
    "tries",
    "input_tokens",
    "output_tokens",
    "cost",
    "tool_calls",
    "tools",
    "errors",
    "in_progress",
    "resumed",
)
TIMING_COLUMNS = (
    "trace_id",
    "run_id",
    "agent",
    "execution_id",
    "step",
    "component",
    "name",
    "start",
    "duration_ms",
)
_NUMBERS = (
    "input_tokens",
    "output_tokens",
    "cost",
    *(c for c in STEP_COLUMNS if c.endswith("_ms")),
)
"""Columns of numbers: a value a tracer wrote as something else is NaN there."""
_STATUS_COLUMN = {"unset": "UNSET", "ok": "OK", "error": "ERROR"}
"""The status as the column shows it: OpenTelemetry's names (one string each, not one a row)."""


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError("DataFrames need pandas: pip install 'workbench[notebook]'") from exc
    return pandas


def _times(values: Sequence[int]) -> Any:
    """Epoch nanoseconds as UTC datetimes: nanoseconds when they fit, else microseconds."""
    pandas = _pandas()
    try:
        nanos = pandas.Series(values, dtype="int64")
    except OverflowError:  # past April 2262, which nanoseconds cannot hold: microseconds can
        micro = pandas.Series([v // 1000 for v in values], dtype="int64")
        return micro.astype("datetime64[us]").dt.tz_localize("UTC")
    return pandas.to_datetime(nanos, unit="ns", utc=True)


def _frame(columns: Mapping[str, Sequence[Any]], order: Sequence[str]) -> pd.DataFrame:
    pandas = _pandas()
    data = {name: columns[name] for name in order}
    for name in ("start", "end"):
        if name in data:
            data[name] = _times(data[name])
    frame = pandas.DataFrame(data, columns=list(order))
    for name in _NUMBERS:
        if name in frame:
            frame[name] = pandas.to_numeric(frame[name], errors="coerce")
    return frame


def spans_frame(
    spans: Sequence[SpanData], agents: Sequence[str], span_categories: Sequence[str]
) -> pd.DataFrame:
    """One row per span, in the order given, with each one's agent and category (by position).

    Built column by column (one list per column, filled in one pass) rather than from a dict per
    row: pandas makes a frame from lists several times faster.
    """
    columns: dict[str, list[Any]] = {name: [] for name in SPAN_COLUMNS}
    (trace_ids, span_ids, parent_ids, names, kinds, categories, operations, agent_names, starts,
     ends, durations, statuses, error_types, run_ids, execution_ids, steps, snapshot_ids, models,
     tools, input_tokens, output_tokens, in_progress, attribute_dicts,
     ) = columns.values()  # fmt: skip
    for span, agent, category in zip(spans, agents, span_categories, strict=True):
        attributes = span.attributes
        get = attributes.get
        trace_ids.append(span.trace_id)
        span_ids.append(span.span_id)
        parent_ids.append(span.parent_id)
        names.append(span.name)
        kinds.append(span.kind)
        categories.append(category)
        operations.append(get(n.OPERATION))
        agent_names.append(agent)
        starts.append(span.start_ns)
        ends.append(span.end_ns)
        durations.append(span.duration_ns / 1e6)
        statuses.append(_STATUS_COLUMN[span.status])
        error_types.append(get(n.ERROR_TYPE))
        run_ids.append(get(n.RUN_ID))
        execution_ids.append(get(n.EXECUTION_ID))
        steps.append(get(n.STEP_INDEX))
        snapshot_ids.append(get(n.SNAPSHOT_ID))
        models.append(get(n.RESPONSE_MODEL) or get(n.REQUEST_MODEL) or get(n.OI_MODEL))
        tools.append(get(n.TOOL_NAME, get(n.OI_TOOL_NAME)) if category == "tool" else None)
        tokens_in, tokens_out = n.tokens_of(attributes)
        input_tokens.append(number(tokens_in))
        output_tokens.append(number(tokens_out))
        in_progress.append(span.in_progress)
        attribute_dicts.append(dict(attributes))
    return _frame(columns, SPAN_COLUMNS)


def rows_frame(rows: Sequence[Mapping[str, Any]], columns: Sequence[str]) -> pd.DataFrame:
    """The table of ``rows`` (the step or the timing table's: `derive`), with ``columns``."""
    return _frame({name: [row.get(name) for row in rows] for name in columns}, columns)
