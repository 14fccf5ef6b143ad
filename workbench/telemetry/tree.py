"""The span tree of a trace: start order, the depth-first order every view walks, sub-runs nested.

`SpanTree.of` orders the spans depth first once (children by start time) and records each
span's depth, parent and where its subtree ends, so folding a span in the explorer is skipping
a range and the waterfall's rows are the same walk. The same walk gives the start order a
`Trace` keeps its spans in. Orphans (a parent not in the trace) are roots and a loop of
parents (a damaged file) cannot make the walk go round.
"""

from __future__ import annotations

from collections.abc import Sequence

from workbench._record import Record
from workbench.telemetry import names as n
from workbench.telemetry.spandata import SpanData

__all__ = ["SpanTree", "nest_subruns"]


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
    """Spans in start order, and their depth-first order with depths, parents and subtree ends.

    ``spans`` are in start order, a parent before its children when they start at the same
    instant (a run, its first step and the step's first phase often start within the clock's
    resolution, and spans are exported children first: by time alone a run's first span would
    be its innermost phase). ``order[i]`` is the index in ``spans`` of the span at position
    ``i`` of the depth-first order; the span's subtree is the positions ``i + 1`` up to
    ``ends[i]`` (exclusive); ``parents[i]`` is the position of its parent (None for a root).
    Built once per trace; every view of it is a walk over these arrays.
    """

    spans: tuple[SpanData, ...]
    order: tuple[int, ...]
    depths: tuple[int, ...]
    parents: tuple[int | None, ...]
    ends: tuple[int, ...]
    positions: dict[str, int]
    """Position of each span id."""
    start_ns: int
    end_ns: int

    @classmethod
    def of(cls, spans: Sequence[SpanData]) -> SpanTree:
        """The tree of ``spans`` (any order).

        Each span is read once, into plain lists the rest of the work walks: in a big trace,
        going back to the spans (scattered in memory among their content) for each pass costs
        more than the passes themselves.
        """
        items = tuple(spans)
        ids: list[str] = []
        parent_ids: list[str | None] = []
        starts: list[int] = []
        ends: list[int] = []
        for span in items:
            ids.append(span.span_id)
            parent_ids.append(span.parent_id)
            starts.append(span.start_ns)
            ends.append(span.end_ns)
        order, depths, parents = _depth_first(ids, parent_ids, starts)
        # Start order: the depth-first order (every parent before its children) sorted by start
        # time, stably, so that a parent stays before the children starting with it.
        by_start = sorted(range(len(order)), key=lambda position: starts[order[position]])
        index_of = [0] * len(order)
        for index, position in enumerate(by_start):
            index_of[position] = index
        return cls(
            spans=tuple(items[order[position]] for position in by_start),
            order=tuple(index_of),
            depths=tuple(depths),
            parents=tuple(parents),
            ends=_subtree_ends(depths),
            positions={ids[index]: position for position, index in enumerate(order)},
            start_ns=min(starts, default=0),
            end_ns=max(ends, default=0),
        )

    def has_loose_subruns(self) -> bool:
        """Whether a sub-run's root span is a root here, not under its parent run's spans.

        A sub-run that telemetry recorded as a trace of its own (see `nest_subruns`).
        """
        return any(
            n.PARENT_RUN_ID in self.span_at(position).attributes
            for position, parent in enumerate(self.parents)
            if parent is None
        )

    def __len__(self) -> int:
        return len(self.order)

    def span_at(self, position: int) -> SpanData:
        """The span at a position of the depth-first order."""
        return self.spans[self.order[position]]

    def parent_of(self, position: int) -> int | None:
        """The position of the span's parent (None for a root)."""
        return self.parents[position]

    def ancestors(self, position: int) -> list[int]:
        """Positions of the span's ancestors, nearest first."""
        out: list[int] = []
        parent = self.parents[position]
        while parent is not None:
            out.append(parent)
            parent = self.parents[parent]
        return out

    def in_order(self) -> list[SpanData]:
        """The spans in depth-first order."""
        return [self.spans[i] for i in self.order]


def _depth_first(
    ids: Sequence[str], parent_ids: Sequence[str | None], starts: Sequence[int]
) -> tuple[list[int], list[int], list[int | None]]:
    """The depth-first order (indexes), children by start, with each position's depth and parent.

    Orphans (a parent not among the spans) are roots; a span a loop of parents kept from being
    reached becomes a root of its own, after the others.
    """
    known = set(ids)
    children: dict[str | None, list[int]] = {}
    by_start = sorted(range(len(ids)), key=starts.__getitem__)
    for index in by_start:
        parent = parent_ids[index]
        children.setdefault(parent if parent in known else None, []).append(index)
    order: list[int] = []
    depths: list[int] = []
    parents: list[int | None] = []
    seen = [False] * len(ids)
    for root in [*children.get(None, []), *by_start]:
        stack: list[tuple[int, int, int | None]] = [(root, 0, None)]
        while stack:
            index, depth, parent_position = stack.pop()
            if seen[index]:
                continue
            seen[index] = True
            position = len(order)
            order.append(index)
            depths.append(depth)
            parents.append(parent_position)
            below = children.get(ids[index], ())
            stack.extend((child, depth + 1, position) for child in reversed(below))
    return order, depths, parents


def _subtree_ends(depths: Sequence[int]) -> tuple[int, ...]:
    """For each position, the first later position that is not inside its subtree."""
    ends = [len(depths)] * len(depths)
    open_positions: list[int] = []
    for position, depth in enumerate(depths):
        while open_positions and depths[open_positions[-1]] >= depth:
            ends[open_positions.pop()] = position
        open_positions.append(position)
    return tuple(ends)
