"""Spans for the views: normalise a span table, rebuild a run's spans, draw the waterfall.

The views take spans as a pandas DataFrame or a list of dicts, with the columns a span naturally
has (``span_id``, ``parent_id``, ``name``, ``start``, ``end``, ``kind``, ``attributes``; common
aliases such as ``id``, ``parent``, ``start_time`` are accepted): `Telemetry.spans_df`, a file, or
`run_span_rows` for a run that had no telemetry at all.

A run without telemetry has no approximation of its own: its spans are the ones the live run
would have had, written from its step records by the telemetry's one `SpanWriter`
(`workbench.telemetry.spans_from_run`, as ``export`` does), so the same tree, names, attributes
and times, each tool call from its own start and each hook where it ran, with each sub-run under
the ``execute_tool`` span of its call in the execution that ran it.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from html import escape
from typing import TYPE_CHECKING, Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from workbench.notebook._style import TEMPLATE
from workbench.records import RecordedRun
from workbench.telemetry.frames import spans_frame
from workbench.telemetry.rebuild import spans_from_run

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = [
    "CATEGORY_COLOURS",
    "SPAN_VIEW_COLUMNS",
    "hook_phase",
    "normalize_spans",
    "rebuilt_spans",
    "run_span_rows",
    "span_category",
    "waterfall_figure",
]

SPAN_VIEW_COLUMNS = (
    "span_id",
    "parent_id",
    "name",
    "category",
    "start",
    "end",
    "duration",
    "attributes",
)
"""Columns of `normalize_spans`: times in seconds from the earliest span's start."""

CATEGORY_COLOURS: dict[str, str] = {
    "agent": "#6c5ce7",
    "step": "#a4b0be",
    "phase": "#dfe4ea",
    "model": "#0984e3",
    "tool": "#e17055",
    "hook": "#00b894",
    "other": "#636e72",
}
"""Waterfall colour of each span category (the legend names them)."""

_PREFIX_CATEGORY = {
    "invoke_agent": "agent",
    "workbench.step": "step",
    "workbench.prepare": "phase",
    "workbench.continuation": "phase",
    "chat": "model",
    "execute_tool": "tool",
    "workbench.hook": "hook",
}
_ALIASES = {
    "span_id": ("span_id", "id", "spanID", "context.span_id"),
    "parent_id": ("parent_id", "parent", "parent_span_id", "parentSpanId"),
    "name": ("name", "operation", "operationName"),
    "start": ("start", "start_time", "start_ns", "startTime"),
    "end": ("end", "end_time", "end_ns", "endTime"),
    "duration": ("duration", "duration_s"),
    "kind": ("kind", "span_kind"),
    "attributes": ("attributes", "attrs", "tags"),
}
_NS_THRESHOLD = 1e14
"""Times above this are nanoseconds (1e14 seconds is three million years)."""
_HOVER_ATTRIBUTES = 14
_HOVER_VALUE_CHARS = 90


def span_category(name: str) -> str:
    """The view category of a span, from its name: agent, step, phase, model, tool, hook, other.

    >>> span_category("execute_tool add"), span_category("chat gpt-4o")
    ('tool', 'model')
    """
    return _PREFIX_CATEGORY.get(name.split(" ", 1)[0], "other")


def normalize_spans(
    spans: pd.DataFrame | Iterable[Mapping[str, Any]], *, keep: Sequence[str] = ()
) -> pd.DataFrame:
    """Spans as a DataFrame with `SPAN_VIEW_COLUMNS`, sorted by start.

    Times become seconds from the earliest start, whatever they were (seconds, nanoseconds or
    timestamps). A span without an end gets its ``duration`` added to its start; a span without
    an id gets its row number. Columns named in ``keep`` come along as they are (None where the
    input has no such column).
    """
    frame = spans.copy() if isinstance(spans, pd.DataFrame) else pd.DataFrame(list(spans))
    frame = frame.rename(columns=_alias_map(frame.columns))
    if frame.empty:
        return pd.DataFrame({c: pd.Series(dtype=object) for c in (*SPAN_VIEW_COLUMNS, *keep)})
    n = len(frame)
    out = pd.DataFrame(index=range(n))
    out["span_id"] = _column(frame, "span_id", pd.Series(range(n))).astype(str).to_numpy()
    parent = _column(frame, "parent_id", pd.Series([None] * n))
    out["parent_id"] = pd.Series([None if _missing(p) else str(p) for p in parent], dtype=object)
    out["name"] = _column(frame, "name", pd.Series(["span"] * n)).astype(str).to_numpy()
    out["category"] = [span_category(name) for name in out["name"]]
    start, end = _relative_times(frame, n)
    out["start"] = start
    out["end"] = np.maximum(end, start)
    out["duration"] = out["end"] - out["start"]
    attributes = _column(frame, "attributes", pd.Series([None] * n))
    out["attributes"] = [dict(a) if isinstance(a, Mapping) else {} for a in attributes]
    for name in keep:
        out[name] = _column(frame, name, pd.Series([None] * n)).to_numpy()
    return out.sort_values("start", kind="stable").reset_index(drop=True)


def _alias_map(columns: Iterable[str]) -> dict[str, str]:
    present = set(columns)
    renames: dict[str, str] = {}
    for canonical, aliases in _ALIASES.items():
        if canonical in present:
            continue
        found = next((a for a in aliases if a in present), None)
        if found is not None:
            renames[found] = canonical
    return renames


def _column(frame: pd.DataFrame, name: str, default: pd.Series) -> pd.Series:
    return frame[name].reset_index(drop=True) if name in frame.columns else default


def _missing(value: object) -> bool:
    return value is None or value == "" or (isinstance(value, float) and np.isnan(value))


def _relative_times(frame: pd.DataFrame, n: int) -> tuple[np.ndarray, np.ndarray]:
    """Start and end in seconds from the earliest start.

    Timestamps and integer nanoseconds are subtracted as integers first: as floats, times since
    1970 in nanoseconds would lose everything under a quarter of a microsecond.
    """
    start_raw = _column(frame, "start", pd.Series(np.zeros(n)))
    end_raw = frame["end"].reset_index(drop=True) if "end" in frame.columns else None
    start_ns = _nanoseconds(start_raw)
    end_ns = _nanoseconds(end_raw) if end_raw is not None else None
    if start_ns is not None and (end_raw is None or end_ns is not None):
        origin = start_ns.min()
        start = (start_ns - origin) / 1e9
        end = (end_ns - origin) / 1e9 if end_ns is not None else None
    else:
        seconds = pd.to_numeric(start_raw, errors="coerce").astype(float).to_numpy()
        origin = np.nanmin(seconds)
        start = seconds - origin
        end = None
        if end_raw is not None:
            end = pd.to_numeric(end_raw, errors="coerce").astype(float).to_numpy() - origin
    if end is None:
        end = start + _column(frame, "duration", pd.Series(np.zeros(n))).astype(float).to_numpy()
    return start, end


def _nanoseconds(values: pd.Series) -> np.ndarray | None:
    """Times as int64 nanoseconds if they are timestamps or integer nanoseconds, else None."""
    if pd.api.types.is_datetime64_any_dtype(values):
        result: np.ndarray = values.dt.as_unit("ns").astype("int64").to_numpy()
        return result
    if pd.api.types.is_integer_dtype(values) and values.abs().max() > _NS_THRESHOLD:
        integers: np.ndarray = values.to_numpy(dtype=np.int64)
        return integers
    return None


def rebuilt_spans(runs: Iterable[RecordedRun]) -> list[ReadableSpan]:
    """The OpenTelemetry spans of ``runs`` (each with its sub-runs), written from their records.

    `workbench.telemetry.spans_from_run` for each run: the live trace's spans, kept in memory
    and sent nowhere. The records of a run still under way give the spans of its closed steps;
    its run span says RUNNING and ends with the last of them.
    """
    return [span for run in runs for span in spans_from_run(run)]


def run_span_rows(*runs: RecordedRun) -> list[dict[str, Any]]:
    """The spans of runs without telemetry, rebuilt exactly from their records, as view rows.

    `rebuilt_spans` read the way the views read `Telemetry.spans_df`: one row per span with
    `SPAN_VIEW_COLUMNS` (times in seconds from the earliest span's start), ``trace_id`` and
    ``status``. A result, a stored run or `AgentRun.result` is a run; so is each run of a session.
    """
    frame = spans_frame(rebuilt_spans(runs))
    rows: list[dict[str, Any]] = normalize_spans(frame, keep=("trace_id", "status")).to_dict(
        "records"
    )
    return rows


_HOOK_PHASES = {
    "PreToolUse": "tools",
    "PostToolUse": "tools",
    "PostToolUseFailure": "tools",
    "Notification": "tools",
    "SubagentStart": "tools",
    "SubagentStop": "tools",
    "Stop": "continuation",
    "PreCompact": "prepare",
}


def hook_phase(event: str) -> str:
    """The phase whose time includes a hook event's: prepare, tools, continuation or outside.

    SessionStart, UserPromptSubmit and SessionEnd run between phases ("outside").

    >>> hook_phase("PreToolUse"), hook_phase("SessionEnd")
    ('tools', 'outside')
    """
    return _HOOK_PHASES.get(event, "outside")


def _tree_order(frame: pd.DataFrame) -> tuple[list[int], list[int]]:
    """Row positions in depth-first order (children by start time) and each row's depth."""
    ids = frame["span_id"].tolist()
    known = set(ids)
    children: dict[str | None, list[int]] = {}
    for row, parent in enumerate(frame["parent_id"].tolist()):
        key = parent if parent in known else None
        children.setdefault(key, []).append(row)
    order: list[int] = []
    depths: list[int] = []
    stack = [(row, 0) for row in reversed(children.get(None, []))]
    while stack:
        row, depth = stack.pop()
        order.append(row)
        depths.append(depth)
        stack.extend((child, depth + 1) for child in reversed(children.get(ids[row], [])))
    return order, depths


_HOVER_SKIP = frozenset({"workbench.run.id", "workbench.execution.id"})
"""Attributes left out of hovers: the same on every span of a run."""


def _hover(name: str, category: str, start: float, duration: float, attrs: dict[str, Any]) -> str:
    """A span's hover label, in which only our own ``<b>`` and ``<br>`` are markup.

    Plotly renders ``<a href>``, ``<b>`` and friends in hovers, so every piece of run data is
    escaped (after any cut, so that no entity is cut in half).
    """
    head = f"<b>{escape(name, quote=False)}</b> ({category})"
    lines = [f"{head}<br>start {start * 1e3:.2f} ms, {duration * 1e3:.3f} ms"]
    shown = 0
    for key, value in attrs.items():
        if key in _HOVER_SKIP:
            continue
        if shown == _HOVER_ATTRIBUTES:
            lines.append("… more attributes")
            break
        text = value if isinstance(value, str) else str(value)
        if len(text) > _HOVER_VALUE_CHARS:
            text = text[:_HOVER_VALUE_CHARS] + "…"
        lines.append(f"{escape(key, quote=False)} = {escape(text, quote=False)}")
        shown += 1
    return "<br>".join(lines)


def waterfall_figure(
    spans: pd.DataFrame | Iterable[Mapping[str, Any]],
    *,
    title: str = "Spans",
    max_labels: int = 300,
) -> go.Figure:
    """A nested waterfall of spans, coloured by category, attributes on hover.

    One bar per span, children under their parent (a label's dots say how deep it is); the
    categories are agent, step, phase, model, tool and hook.

    Rows are labelled with indented span names while there are at most ``max_labels`` of them;
    a bigger trace keeps its bars and hovers but drops the labels, which would be unreadable.
    """
    frame = normalize_spans(spans)
    order, depths = _tree_order(frame)
    frame = frame.iloc[order].reset_index(drop=True)
    frame["row"] = np.arange(len(frame))
    frame["depth"] = depths
    traces: list[dict[str, Any]] = []
    for category, colour in CATEGORY_COLOURS.items():
        part = frame[frame["category"] == category]
        if part.empty:
            continue
        columns = (part["name"], part["start"], part["duration"], part["attributes"])
        hover = [
            _hover(n, category, s, d, a)
            for n, s, d, a in zip(*(c.tolist() for c in columns), strict=True)
        ]
        traces.append(
            {
                "type": "bar",
                "name": category,
                "orientation": "h",
                "y": part["row"].to_numpy(),
                "x": part["duration"].to_numpy() * 1e3,
                "base": part["start"].to_numpy() * 1e3,
                "width": 0.75,
                "marker": {"color": colour, "line": {"width": 0}},
                "hovertext": hover,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    labelled = len(frame) <= max_labels
    labels = [  # escaped: plotly renders markup in tick labels too
        "·" * d + " " + escape(n, quote=False)
        for d, n in zip(frame["depth"].tolist(), frame["name"].tolist(), strict=True)
    ]
    layout = dict(
        title=title,
        barmode="overlay",
        bargap=0.25,
        height=min(max(260, 22 * len(frame) + 120), 1400),
        xaxis={"title": "ms since the first span", "zeroline": False},
        yaxis={
            "range": [len(frame) - 0.5, -0.5],  # first span on top
            "tickmode": "array" if labelled else "auto",
            "tickvals": frame["row"].to_numpy() if labelled else None,
            "ticktext": np.array(labels, dtype=object) if labelled else None,
            "showticklabels": labelled,
            "title": None if labelled else f"{len(frame):,} spans",
        },
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
        template=TEMPLATE,
    )
    # The traces go in unvalidated: plotly's checks and copies of thousands of hover texts cost
    # more than the rest of the view (the browser test proves they render); the layout is checked.
    return go.Figure(data=traces, layout=go.Layout(layout), _validate=False)
