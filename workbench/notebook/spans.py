"""The span waterfall of a trace: one bar per span, children under their parent, by category.

Drawn from a `Trace` (`workbench.trace_of` makes one of any run or trace): its span tree's
depth-first order is the rows, each span's category its colour. A span still in progress (a
stopped run's step under way) is drawn to the moment the trace was taken, hatched, and says so
in its hover.
"""

from __future__ import annotations

import bisect
from html import escape
from typing import Any

import numpy as np
import plotly.graph_objects as go

from workbench.notebook._style import TEMPLATE
from workbench.notebook.explorer_data import agents_named, span_label
from workbench.notebook.html import FAILED_COLOUR
from workbench.notebook.tables import trace_heading
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.trace import Trace

__all__ = ["CATEGORY_COLOURS", "idle_closed", "waterfall_figure"]

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
_HOVER_ATTRIBUTES = 14
_HOVER_VALUE_CHARS = 90


_HOVER_SKIP = frozenset({"workbench.run.id", "workbench.execution.id"})
"""Attributes left out of hovers: the same on every span of a run."""


def _hover(span: SpanData, category: str, start_ms: float, duration_ms: float) -> str:
    """A span's hover label, in which only our own ``<b>`` and ``<br>`` are markup.

    Plotly renders ``<a href>``, ``<b>`` and friends in hovers, so every piece of run data is
    escaped (after any cut, so that no entity is cut in half).
    """
    head = f"<b>{escape(span.name, quote=False)}</b> ({category})"
    state = " · failed" if span.is_error else ""
    state += " · in progress" if span.in_progress else ""
    lines = [f"{head}{state}<br>start {start_ms:.2f} ms, {duration_ms:.3f} ms"]
    shown = 0
    for key, value in span.attributes.items():
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
    trace: Trace,
    *,
    title: str = "Spans",
    max_labels: int = 300,
    axis: str = "ms since the first span",
) -> go.Figure:
    """A nested waterfall of the trace's spans, coloured by category, attributes on hover.

    One bar per span, children under their parent (a label's dots say how deep it is; a model
    call names its agent, as in the explorer, when the trace has several); a failed span is
    red whatever its category (the legend's "failed"), a span in progress hatched.

    Rows are labelled with indented span names while there are at most ``max_labels`` of them;
    a bigger trace keeps its bars and hovers but drops the labels, which would be unreadable.
    """
    tree = trace.tree
    spans = tree.in_order()
    origin = tree.start_ns
    rows = np.arange(len(spans))
    kinds = trace.category_at
    categories = np.array(  # a failed span is drawn as failed, not as its category
        ["failed" if s.is_error else c for s, c in zip(spans, kinds, strict=True)], dtype=object
    )
    starts = np.array([(s.start_ns - origin) / 1e6 for s in spans], dtype=float)
    durations = np.array([s.duration_ns / 1e6 for s in spans], dtype=float)
    traces: list[dict[str, Any]] = []
    for category, colour in {**CATEGORY_COLOURS, "failed": FAILED_COLOUR}.items():
        chosen = np.flatnonzero(categories == category)
        if not len(chosen):
            continue
        picked = [spans[i] for i in chosen]
        hover = [
            _hover(s, kinds[i], starts[i], durations[i])
            for s, i in zip(picked, chosen, strict=True)
        ]
        traces.append(
            {
                "type": "bar",
                "name": category,
                "orientation": "h",
                "y": rows[chosen],
                "x": durations[chosen],
                "base": starts[chosen],
                "width": 0.75,
                "marker": {
                    "color": colour,
                    "pattern": {"shape": ["/" if s.in_progress else "" for s in picked]},
                },
                "hovertext": hover,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    labelled = len(spans) <= max_labels
    agents = agents_named(trace)
    labels = [  # escaped: plotly renders markup in tick labels too
        "·" * d + " " + escape(span_label(s, agents[p] if agents else ""), quote=False)
        for p, (d, s) in enumerate(zip(tree.depths, spans, strict=True))
    ]
    layout = dict(
        title=title,
        barmode="overlay",
        bargap=0.25,
        height=min(max(260, 22 * len(spans) + 120), 1400),
        xaxis={"title": axis, "zeroline": False},
        yaxis={
            "range": [len(spans) - 0.5, -0.5],  # first span on top
            "tickmode": "array" if labelled else "auto",
            "tickvals": rows if labelled else None,
            "ticktext": np.array(labels, dtype=object) if labelled else None,
            "showticklabels": labelled,
            "title": None if labelled else f"{len(spans):,} spans",
        },
        legend={"orientation": "h", "y": 1.0, "yanchor": "bottom", "x": 1, "xanchor": "right"},
        margin={"l": 10, "r": 10, "t": 70, "b": 40},
        template=TEMPLATE,
    )
    # The traces go in unvalidated: plotly's checks and copies of thousands of hover texts cost
    # more than the rest of the view (the browser test proves they render); the layout is checked.
    return go.Figure(data=traces, layout=go.Layout(layout), _validate=False)


def idle_closed(trace: Trace) -> tuple[Trace, float]:
    """The trace with the time nothing ran cut out, and how many seconds that was.

    A run stepped by hand waits between its phases for as long as the person reads, approves or
    looks away; drawn as it happened, its phases are slivers between long empty stretches, and
    a parent's TOOLS phase spans every pause inside the sub-run stepped into. Here only what
    worked counts: the spans with nothing under them (a phase, a model call, a tool, a hook)
    mark the busy stretches, each gap between stretches is closed, and every span's start and
    end move back by the gaps before them, so a container shrinks to the work inside it. A run
    stopped for now (its open containers end "now") ends with the work done so far: the time
    since is the person reading too.
    """
    parents = {s.parent_id for s in trace.spans}
    busy = sorted((s.start_ns, s.end_ns) for s in trace.spans if s.span_id not in parents)
    now = max((s.end_ns for s in trace.spans if s.in_progress), default=None)
    gap_ends: list[int] = []  # where each gap ends, and the total length up to there
    gap_totals: list[int] = []
    reached: int | None = None
    for start, end in [*busy, *([(now, now)] if now is not None else [])]:
        if reached is not None and start > reached:
            gap_ends.append(start)
            gap_totals.append((gap_totals[-1] if gap_totals else 0) + start - reached)
        reached = end if reached is None else max(reached, end)
    if not gap_ends:
        return trace, 0.0

    def moved(at: int) -> int:
        i = bisect.bisect_right(gap_ends, at)  # gaps that ended at or before ``at``
        before = gap_totals[i - 1] if i else 0
        if i < len(gap_ends):  # inside the next gap: the part of it before ``at`` goes too
            gap_start = gap_ends[i] - (gap_totals[i] - before)
            before += max(0, at - gap_start)
        return at - before

    spans = [
        s.model_copy(update={"start_ns": moved(s.start_ns), "end_ns": moved(s.end_ns)})
        for s in trace.spans
    ]
    closed = Trace.of(spans, steps=trace.steps, trace_id=trace.trace_id)
    return closed, gap_totals[-1] / 1e9


def timeline_figure(trace: Trace, *, so_far: bool = False) -> go.Figure | None:
    """The Stepper's timeline of a run: its waterfall, idle time left out as the axis says.

    None when the trace has no spans yet (`idle_closed`; ``so_far``: the run goes on).
    """
    if not trace.spans:
        return None
    trace, idle = idle_closed(trace)
    left_out = f" ({idle:.1f} s idle between phases left out)" if idle >= 0.05 else ""
    title = f"Timeline: {trace_heading(trace)}" + (", so far" if so_far else "")
    return waterfall_figure(trace, title=title, axis=f"ms running{left_out}")
