"""The span waterfall of a trace: one bar per span, children under their parent, by category.

Drawn from a `Trace` (`workbench.trace_of` makes one of any run or trace): its span tree's
depth-first order is the rows, each span's category its colour. A span still in progress (a
stopped run's step under way) is drawn to the moment the trace was taken, hatched, and says so
in its hover; one that never will end (its process ended while it ran, `Trace.interrupted`) is
drawn to where it stopped, not hatched, a red stroke there (the legend's "cut off").
"""

from __future__ import annotations

from html import escape
from typing import Any

import numpy as np
import plotly.graph_objects as go

from workbench.notebook._style import TEMPLATE
from workbench.notebook.explorer_data import agents_named, open_words, span_label
from workbench.notebook.html import FAILED_COLOUR
from workbench.notebook.tables import trace_heading, waited_note
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.trace import Trace

__all__ = ["CATEGORY_COLOURS", "timeline_figure", "waterfall_figure"]

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


def _hover(span: SpanData, category: str, start_ms: float, duration_ms: float, open_: str) -> str:
    """A span's hover label, in which only our own ``<b>`` and ``<br>`` are markup.

    ``open_`` is what its time is if it has not ended (`open_words`).

    Plotly renders ``<a href>``, ``<b>`` and friends in hovers, so every piece of run data is
    escaped (after any cut, so that no entity is cut in half).
    """
    head = f"<b>{escape(span.name, quote=False)}</b> ({category})"
    state = " · failed" if span.is_error else ""
    state += {"so far": " · in progress", "cut off": " · cut off: its process ended"}.get(open_, "")
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

    A run stepped by hand is drawn in the time it worked (`Trace.waits`), as its axis says
    (unless the title says it already).

    One bar per span, children under their parent (a label's dots say how deep it is; a model
    call names its agent, as in the explorer, when the trace has several); a failed span is
    red whatever its category (the legend's "failed"), a span in progress hatched (not one cut
    off: it will not go on).

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
        open_ = [open_words(trace, s) for s in picked]
        hover = [
            _hover(s, kinds[i], starts[i], durations[i], words)
            for s, i, words in zip(picked, chosen, open_, strict=True)
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
                    "pattern": {"shape": ["/" if words == "so far" else "" for words in open_]},
                },
                "hovertext": hover,
                "hovertemplate": "%{hovertext}<extra></extra>",
            }
        )
    traces += _cut_off_marks(trace, spans, starts + durations)
    labelled = len(spans) <= max_labels
    note = waited_note(trace)
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
        xaxis={"title": axis if note in title else axis + f" · {note}", "zeroline": False},
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


def _cut_off_marks(trace: Trace, spans: list[SpanData], ends: np.ndarray) -> list[dict[str, Any]]:
    """A red stroke where each span cut off stopped, as the explorer's bar ends in one.

    Not hatched (it will not go on), such a bar alone would read as a span that ended.
    """
    cut = [i for i, span in enumerate(spans) if open_words(trace, span) == "cut off"]
    if not cut:
        return []
    mark = {"symbol": "line-ns-open", "size": 16, "color": FAILED_COLOUR, "line": {"width": 3}}
    return [
        {
            "type": "scatter",
            "mode": "markers",
            "name": "cut off",
            "x": ends[cut],
            "y": cut,
            "marker": mark,
            "hovertext": ["cut off here: its process ended"] * len(cut),
            "hovertemplate": "%{hovertext}<extra></extra>",
        }
    ]


def timeline_figure(trace: Trace, *, so_far: bool = False) -> go.Figure | None:
    """The Stepper's timeline of a run: its waterfall in the time it worked, as its title says.

    None when the trace has no spans yet (``so_far``: the run goes on).
    """
    if not trace.spans:
        return None
    title = f"Timeline: {trace_heading(trace)}" + (", so far" if so_far else "")
    return waterfall_figure(trace, title=title, axis="ms running")
