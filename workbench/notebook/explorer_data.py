"""The trace explorer's data: filters, the visible rows of a folded tree, the page window.

The explorer reads one `Trace` (`workbench.trace_of` makes it of any source) and walks its span
tree (`Trace.tree`: depth-first order, depths, subtree ends). Everything it shows is computed
here by plain functions, tested without a browser:

- `visible_positions` applies the folds and a `SpanFilter` (search, status, errors only, slowest
  N); a filter keeps the ancestors of every match, so a match is always seen in its place;
- `page_rows` is the window of those rows the page draws: the only rows ever sent.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Sequence
from typing import Any, Literal

from workbench._record import Record
from workbench.telemetry.names import MODEL_TRY
from workbench.telemetry.spandata import SpanData, Status
from workbench.telemetry.trace import Trace
from workbench.telemetry.tree import SpanTree

__all__ = [
    "SpanFilter",
    "SpanStatus",
    "matching_positions",
    "open_words",
    "page_rows",
    "search_text",
    "visible_positions",
]

SpanStatus = Status


class SpanFilter(Record):
    """What the explorer shows: a search, a status, errors only, the slowest N (0: all)."""

    query: str = ""
    """Case-insensitive text found in the span's name, an attribute key or value, or its id."""
    status: SpanStatus | Literal[""] = ""
    errors_only: bool = False
    slowest: int = 0

    @property
    def active(self) -> bool:
        """True when anything is filtered out."""
        return bool(self.query or self.status or self.errors_only or self.slowest > 0)


def open_words(trace: Trace, span: SpanData) -> str:
    """What the time of a span that has not ended is: "so far", or "cut off"; "" if it ended.

    So far while its run goes on (a run stopped anywhere); cut off when it never will, its
    process having ended while it ran (`Trace.interrupted`): its time is up to where it stopped.
    """
    if not span.in_progress:
        return ""
    return "cut off" if trace.interrupted else "so far"


SEARCHED_CHARS = 200
"""How much of each attribute's value a search looks through."""


def search_text(span: SpanData) -> str:
    """What a search looks through: name, id, status, every attribute key and value, lowercased.

    Each value up to `SEARCHED_CHARS`: a model call's whole conversation in every span's text
    made a long run's report grow with the square of its steps, and a search finds a span by
    what it is, not by a message deep in what it was sent.
    """
    attributes = " ".join(f"{k}={str(v)[:SEARCHED_CHARS]}" for k, v in span.attributes.items())
    events = " ".join(e.name for e in span.events)
    head = f"{span.name} {span.span_id} {span.status} {span.status_message}"
    return f"{head} {attributes} {events}".lower()


def matching_positions(tree: SpanTree, spec: SpanFilter, texts: Sequence[str]) -> set[int]:
    """Positions of the spans ``spec`` keeps (``texts[i]``: `search_text` of position ``i``)."""
    candidates: Iterable[int] = range(len(tree.order))
    query = spec.query.strip().lower()
    if query:
        candidates = [p for p in candidates if query in texts[p]]
    if spec.status:
        candidates = [p for p in candidates if tree.span_at(p).status == spec.status]
    if spec.errors_only:
        candidates = [p for p in candidates if tree.span_at(p).is_error]
    if spec.slowest > 0:
        candidates = heapq.nlargest(
            spec.slowest, candidates, key=lambda p: tree.span_at(p).duration_ns
        )
    return set(candidates)


def visible_positions(
    tree: SpanTree,
    collapsed: Iterable[str] = (),
    matches: set[int] | None = None,
) -> list[int]:
    """Positions shown, in tree order: folded subtrees skipped, only matches and their ancestors.

    ``matches`` is None when nothing is filtered. A match inside a folded span stays hidden until
    the span is opened (the fold is the user's choice; the row count says how many matched).
    """
    folded = {tree.positions[s] for s in collapsed if s in tree.positions}
    keep: set[int] | None = None
    if matches is not None:
        keep = set(matches)
        for position in matches:
            keep.update(tree.ancestors(position))
    out: list[int] = []
    position, n = 0, len(tree.order)
    while position < n:
        if keep is not None and position not in keep:
            # Not kept, so no descendant is either (a kept span's ancestors are all kept).
            position = tree.ends[position]
            continue
        out.append(position)
        position = tree.ends[position] if position in folded else position + 1
    return out


def page_rows(
    tree: SpanTree,
    positions: Sequence[int],
    offset: int,
    size: int,
    *,
    collapsed: Iterable[str] = (),
    matches: set[int] | None = None,
    agents: Sequence[str] = (),
) -> list[dict[str, Any]]:
    """Rows ``offset`` to ``offset + size`` of the visible ``positions``, as the page draws them.

    Times are milliseconds from the trace's start, so the page places bars without knowing the
    epoch; ``children`` says whether the row can fold, ``folded`` whether it is. ``agents``
    (the agent of each position, for a trace of several) names the agent beside each model
    call: ``chat gpt-4o`` reads the same for every agent.
    """
    folded = set(collapsed)
    origin = tree.start_ns
    rows = []
    for position in positions[offset : offset + size]:
        span = tree.span_at(position)
        rows.append(
            {
                "id": span.span_id,
                "name": span_label(span, agents[position] if agents else ""),
                "depth": tree.depths[position],
                "start": (span.start_ns - origin) / 1e6,
                "duration": span.duration_ns / 1e6,
                "category": span.category,
                "status": "error" if span.is_error else span.status,
                "in_progress": span.in_progress,
                "children": tree.ends[position] - position - 1,
                "folded": span.span_id in folded,
                "match": matches is not None and position in matches,
            }
        )
    return rows


def agents_named(trace: Trace) -> Sequence[str]:
    """The agent of each position of ``trace.tree`` when the trace has several, else ().

    With one agent, naming it beside every model call says nothing new.
    """
    several = len({a for a in trace.agent_at if a}) > 1
    return trace.agent_at if several else ()


def span_label(span: SpanData, agent: str) -> str:
    """The name a row shows: a model call's with its agent (``chat gpt-4o · digger``).

    Every agent's model calls are named ``chat <model>``: in a team of agents on one model
    they would all read the same. So would the tries of a step's call a client asked again:
    each says which it is (``chat gpt-4o · try 2``).
    """
    if span.category != "model":
        return span.name
    number = span.attributes.get(MODEL_TRY)
    parts = [span.name, agent, f"try {number}" if number is not None else ""]
    return " · ".join(p for p in parts if p)
