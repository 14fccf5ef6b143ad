"""The span tree of a trace: start order, the depth-first order every view walks, sub-runs nested.

`SpanTree.of` orders the spans depth first once (children by start time) and records each
span's depth and where its subtree ends, so folding a span in the explorer is skipping a range
and the waterfall's rows are the same walk. Orphans (a parent not in the trace) are roots and a
loop of parents (a damaged file) cannot make the walk go round.
"""

from __future__ import annotations

from collections.abc import Sequence
from itertools import groupby
from operator import attrgetter

from workbench._record import Record
from workbench.telemetry import names as n
from workbench.telemetry.spandata import SpanData

__all__ = ["SpanTree", "in_start_order", "nest_subruns"]


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


def nest_subruns(spans: Sequence[SpanData]) -> list[SpanData]:
    """Put each sub-run's root span under the tool call of its parent run that ran it.

    A sub-run that telemetry recorded as a trace of its own (a root span with a
    ``workbench.parent_run.id``) is placed under the parent run's ``execute_tool`` span whose
    time contains the sub-run's start, so every view shows one run tree either way; spans
    that already have their parent in the trace are left as they are.
    """
    known = {s.span_id for s in spans}
    tools: dict[str, list[SpanData]] = {}
    for span in spans:
        if span.name.startswith(n.SPAN_TOOL) and n.RUN_ID in span.attributes:
            tools.setdefault(str(span.attributes[n.RUN_ID]), []).append(span)
    out = []
    for span in spans:
        parent_run = span.attributes.get(n.PARENT_RUN_ID)
        if parent_run is not None and span.parent_id not in known:
            calls = [
                t for t in tools.get(str(parent_run), []) if t.start_ns <= span.start_ns <= t.end_ns
            ]
            if calls:
                span = span.model_copy(update={"parent_id": calls[-1].span_id})
        out.append(span)
    return out


class SpanTree(Record):
    """Spans in depth-first order with each one's depth and the end of its subtree.

    ``order[i]`` is the index in ``spans`` of the span at position ``i``; the span's subtree is
    the positions ``i + 1`` up to ``ends[i]`` (exclusive). Built once per trace; every view of
    it is a walk over these arrays.
    """

    spans: tuple[SpanData, ...]
    order: tuple[int, ...]
    depths: tuple[int, ...]
    ends: tuple[int, ...]
    positions: dict[str, int]
    """Position of each span id."""
    start_ns: int
    end_ns: int

    @classmethod
    def of(cls, spans: Sequence[SpanData]) -> SpanTree:
        """The tree of ``spans`` (any order)."""
        items = tuple(spans)
        known = {s.span_id for s in items}
        children: dict[str | None, list[int]] = {}
        by_start = sorted(range(len(items)), key=lambda i: items[i].start_ns)
        for index in by_start:
            parent = items[index].parent_id
            children.setdefault(parent if parent in known else None, []).append(index)
        order: list[int] = []
        depths: list[int] = []
        seen: set[int] = set()
        # Roots first; then anything a parent cycle kept from being reached, as a root of its own.
        for root in [*children.get(None, []), *by_start]:
            stack = [(root, 0)]
            while stack:
                index, depth = stack.pop()
                if index in seen:
                    continue
                seen.add(index)
                order.append(index)
                depths.append(depth)
                below = children.get(items[index].span_id, ())
                stack.extend((child, depth + 1) for child in reversed(below))
        return cls(
            spans=items,
            order=tuple(order),
            depths=tuple(depths),
            ends=_subtree_ends(depths),
            positions={items[index].span_id: pos for pos, index in enumerate(order)},
            start_ns=min((s.start_ns for s in items), default=0),
            end_ns=max((s.end_ns for s in items), default=0),
        )

    def __len__(self) -> int:
        return len(self.order)

    def span_at(self, position: int) -> SpanData:
        """The span at a position of the depth-first order."""
        return self.spans[self.order[position]]

    def parent_of(self, position: int) -> int | None:
        """The position of the span's parent (None for a root)."""
        if self.depths[position] == 0:
            return None
        parent = self.span_at(position).parent_id
        return self.positions.get(parent) if parent is not None else None

    def ancestors(self, position: int) -> list[int]:
        """Positions of the span's ancestors, nearest first.

        A span's depth bounds the walk up: a span a parent loop made a root has none.
        """
        out: list[int] = []
        parent = self.span_at(position).parent_id
        while parent is not None and parent in self.positions and len(out) < self.depths[position]:
            out.append(self.positions[parent])
            parent = self.span_at(out[-1]).parent_id
        return out

    def in_order(self) -> list[SpanData]:
        """The spans in depth-first order."""
        return [self.spans[i] for i in self.order]


def _subtree_ends(depths: Sequence[int]) -> tuple[int, ...]:
    """For each position, the first later position that is not inside its subtree."""
    ends = [len(depths)] * len(depths)
    open_positions: list[int] = []
    for position, depth in enumerate(depths):
        while open_positions and depths[open_positions[-1]] >= depth:
            ends[open_positions.pop()] = position
        open_positions.append(position)
    return tuple(ends)
