"""The trace explorer's data: spans from any source, the folded tree, filters and the page window.

Everything the `TraceExplorer` widget and the report's explorer show is computed here by plain
functions, tested without a browser:

- `explorer_spans` turns whatever the user has (a `wb.Trace`-like object, OpenTelemetry spans,
  a `Telemetry`, a span DataFrame or list of dicts, a run result with or without telemetry) into
  `ExplorerSpan` records; a run without telemetry gets the spans its records make through the
  telemetry's own writer (`rebuilt_spans`), read like a live run's;
- `SpanTree.of` orders them depth first once (children by start time) and records each span's
  depth and where its subtree ends, so folding a span is skipping a range;
- `visible_positions` applies the folds and a `SpanFilter` (search, status, errors only, slowest
  N); a filter keeps the ancestors of every match, so a match is always seen in its place;
- `page_rows` is the window of those rows the page draws: the only rows ever sent.
"""

from __future__ import annotations

import heapq
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal, Protocol, TypeVar, runtime_checkable

from workbench._record import Record
from workbench.notebook.spans import normalize_spans, rebuilt_spans, span_category
from workbench.notebook.tree import walk
from workbench.records import RunResult, StepRecord
from workbench.state import AgentState
from workbench.telemetry.spandata import SpanData, SpanEvent, SpanLink

__all__ = [
    "ExplorerSpan",
    "RunRecords",
    "SpanEvent",
    "SpanFilter",
    "SpanLike",
    "SpanLink",
    "SpanStatus",
    "SpanTree",
    "TraceLike",
    "combine_results",
    "explorer_spans",
    "matching_positions",
    "nest_subruns",
    "page_rows",
    "run_records",
    "run_tree_ids",
    "search_text",
    "visible_positions",
]

SpanStatus = Literal["unset", "ok", "error"]


class ExplorerSpan(SpanData):
    """One span as the explorer reads it, whatever it was made from.

    A `SpanData` that may lack a trace id and a kind: a span table or a list of dicts is still
    a trace to explore.
    """

    trace_id: str = ""
    kind: str = ""

    @property
    def duration_ns(self) -> int:
        """End minus start (never negative)."""
        return max(self.end_ns - self.start_ns, 0)

    @property
    def is_error(self) -> bool:
        """Error status, or an ``error.type`` attribute (a denied or retried tool call)."""
        return self.status == "error" or "error.type" in self.attributes


@runtime_checkable
class SpanLike(Protocol):
    """What the explorer reads of a span: the attribute names of `wb.Trace`'s ``SpanData``."""

    trace_id: str
    span_id: str
    parent_id: str | None
    name: str
    kind: Any
    start_ns: int
    end_ns: int
    attributes: Mapping[str, Any]
    events: Sequence[Any]
    links: Sequence[Any]
    status: str
    status_message: str | None
    resource: Mapping[str, Any]
    scope: str


@runtime_checkable
class TraceLike(Protocol):
    """Anything with a ``spans`` sequence of `SpanLike` objects: `wb.Trace`, a loaded trace."""

    @property
    def spans(self) -> Sequence[Any]:
        """The spans of the trace."""
        ...


def _from_span_like(span: Any) -> ExplorerSpan:
    status = str(span.status or "unset").lower()
    return ExplorerSpan(
        trace_id=str(span.trace_id or ""),
        span_id=str(span.span_id),
        parent_id=None if span.parent_id in (None, "") else str(span.parent_id),
        name=str(span.name),
        kind=str(getattr(span.kind, "name", span.kind) or ""),
        start_ns=int(span.start_ns),
        end_ns=int(span.end_ns),
        attributes=dict(span.attributes or {}),
        events=tuple(
            SpanEvent(name=e.name, time_ns=int(e.time_ns), attributes=dict(e.attributes or {}))
            for e in span.events
        ),
        links=tuple(
            SpanLink(trace_id=k.trace_id, span_id=k.span_id, attributes=dict(k.attributes or {}))
            for k in span.links
        ),
        status=status if status in ("ok", "error") else "unset",
        status_message=str(span.status_message or ""),
        resource=dict(span.resource or {}),
        scope=str(span.scope or ""),
    )


def _from_otel(span: Any, resources: dict[int, dict[str, Any]]) -> ExplorerSpan:
    """An OpenTelemetry SDK ``ReadableSpan`` (what `Telemetry.spans` holds).

    ``resources`` keeps each resource's attributes read once (every span of a provider shares
    one resource, and reading OpenTelemetry's attribute mappings key by key is slow).
    """
    context, parent = span.context, span.parent
    resource = span.resource
    if resource is not None and id(resource) not in resources:
        resources[id(resource)] = dict(resource.attributes)
    start = span.start_time or 0
    scope = span.instrumentation_scope
    return ExplorerSpan(
        trace_id=format(context.trace_id, "032x"),
        span_id=format(context.span_id, "016x"),
        parent_id=format(parent.span_id, "016x") if parent is not None else None,
        name=span.name,
        kind=span.kind.name,
        start_ns=start,
        end_ns=span.end_time or start,
        attributes=dict(span.attributes or {}),
        events=tuple(
            SpanEvent(name=e.name, time_ns=e.timestamp, attributes=dict(e.attributes or {}))
            for e in span.events
        ),
        links=tuple(
            SpanLink(
                trace_id=format(k.context.trace_id, "032x"),
                span_id=format(k.context.span_id, "016x"),
                attributes=dict(k.attributes or {}),
            )
            for k in span.links
        ),
        status=span.status.status_code.name.lower(),
        status_message=span.status.description or "",
        resource=resources[id(resource)] if resource is not None else {},
        scope=scope.name if scope is not None else "",
    )


def _from_rows(rows: Any) -> list[ExplorerSpan]:
    """A span DataFrame or list of dicts (any column names `normalize_spans` knows)."""
    frame = normalize_spans(rows, keep=("status", "trace_id"))
    return [
        ExplorerSpan(
            trace_id=str(trace_id or ""),
            span_id=span_id,
            parent_id=parent,
            name=name,
            start_ns=round(start * 1e9),
            end_ns=round(end * 1e9),
            attributes=attributes,
            status=_status(status),
        )
        for span_id, parent, name, start, end, attributes, status, trace_id in zip(
            *(frame[c] for c in ("span_id", "parent_id", "name", "start", "end", "attributes")),
            frame["status"],
            frame["trace_id"],
            strict=True,
        )
    ]


def _status(value: object) -> SpanStatus:
    text = str(value or "").lower()
    return "ok" if text == "ok" else "error" if text == "error" else "unset"


def explorer_spans(source: Any, *, telemetry: Any = None) -> list[ExplorerSpan]:
    """The spans of ``source``, as `ExplorerSpan` records.

    ``source`` is a `wb.Trace` (anything `TraceLike`), a sequence of `SpanLike` or OpenTelemetry
    spans, a `Telemetry` (or anything with ``spans``), a span DataFrame or list of dicts, or a run
    (a result, stepped run, stored run or step records): with ``telemetry`` its real spans (this
    run's only), without them the spans its records make (`rebuilt_spans`): the same spans.
    """
    if telemetry is not None:
        records = run_records(source)
        runs = records.steps if records is not None else ()
        items = _items(telemetry)
        if not _are_rows(items):  # keep only this run tree's before converting: a long session
            items = _run_tree_spans(items, runs)  # collects many runs in one telemetry
        return nest_subruns(_run_tree_spans(_convert_all(items), runs))
    records = run_records(source)
    items = rebuilt_spans(records.runs) if records is not None else _items(source)
    return nest_subruns(_convert_all(items))


def _items(source: Any) -> Any:
    """The spans of a trace, a telemetry, or a sequence or frame of spans."""
    spans = source.spans if isinstance(source, TraceLike) else source
    if callable(spans):
        spans = spans()
    return spans if _is_frame(spans) else list(spans)


def _are_rows(items: Any) -> bool:
    return _is_frame(items) or bool(items and isinstance(items[0], Mapping))


def _convert_all(items: Any) -> list[ExplorerSpan]:
    if _are_rows(items):
        return _from_rows(items)
    resources: dict[int, dict[str, Any]] = {}
    return [_convert(span, resources) for span in items]


class _Attributed(Protocol):
    @property
    def attributes(self) -> Mapping[str, Any] | None: ...


_Span = TypeVar("_Span", bound=_Attributed)
_RUN = "workbench.run.id"
_PARENT_RUN = "workbench.parent_run.id"


def _run_tree_spans(spans: list[_Span], steps: Sequence[StepRecord]) -> list[_Span]:
    """The spans of the runs of ``steps`` and of every sub-run below them.

    Works on any span with an ``attributes`` mapping: `ExplorerSpan` or OpenTelemetry's.
    """
    attributes = [s.attributes or {} for s in spans]
    runs = run_tree_ids(attributes, steps)
    return [s for s, a in zip(spans, attributes, strict=True) if a.get(_RUN) in runs]


def run_tree_ids(attributes: Sequence[Mapping[str, Any]], steps: Sequence[StepRecord]) -> set[str]:
    """The ids of the runs of ``steps`` and of every sub-run below them, given spans' attributes.

    A sub-run is known by its spans' ``workbench.parent_run.id``; the explorer and `TraceView`
    both pick a run's spans out of a telemetry this way.
    """
    runs = {step.run_id for step in steps}
    while True:
        below = {str(a.get(_RUN)) for a in attributes if a.get(_PARENT_RUN) in runs}
        if below <= runs:
            return runs
        runs |= below


def nest_subruns(spans: list[ExplorerSpan]) -> list[ExplorerSpan]:
    """Put each sub-run's root span under the tool call of its parent run that ran it.

    A sub-run that telemetry recorded as a trace of its own (a root span with a
    ``workbench.parent_run.id``) is placed under the parent run's ``execute_tool`` span whose
    time contains the sub-run's start, so the explorer shows one run tree either way; spans
    that already have their parent in the trace are left as they are.
    """
    known = {s.span_id for s in spans}
    tools: dict[str, list[ExplorerSpan]] = {}
    for span in spans:
        if span.name.startswith("execute_tool") and _RUN in span.attributes:
            tools.setdefault(str(span.attributes[_RUN]), []).append(span)
    out = []
    for span in spans:
        parent_run = span.attributes.get(_PARENT_RUN)
        if parent_run is not None and span.parent_id not in known:
            calls = [
                t for t in tools.get(str(parent_run), []) if t.start_ns <= span.start_ns <= t.end_ns
            ]
            if calls:
                span = span.model_copy(update={"parent_id": calls[-1].span_id})
        out.append(span)
    return out


def _convert(span: Any, resources: dict[int, dict[str, Any]]) -> ExplorerSpan:
    if isinstance(span, ExplorerSpan):
        return span
    if hasattr(span, "instrumentation_scope"):
        return _from_otel(span, resources)
    if isinstance(span, SpanLike):
        return _from_span_like(span)
    raise TypeError(
        "the trace explorer reads spans with trace_id, span_id, parent_id, name, kind, start_ns, "
        f"end_ns, attributes, events, links, status, status_message, resource and scope; got "
        f"{type(span).__name__}"
    )


def _is_frame(value: object) -> bool:
    return type(value).__name__ == "DataFrame"


@dataclass(frozen=True)
class RunRecords:
    """What the views read of a run: its step records, sub-runs, agent's name, and the run whole.

    ``runs`` are what the spans are rebuilt from (state, steps, snapshots, children): one run,
    or each run of a session, each execution of a run combined into one.
    """

    steps: tuple[StepRecord, ...]
    children: tuple[RunResult, ...] = ()
    agent: str = ""
    runs: tuple[RunResult, ...] = ()

    def tree_steps(self) -> tuple[StepRecord, ...]:
        """The step records of the run and of every sub-run below it (the run's first)."""
        below = (s for child in self.children for _, run in walk(child) for s in run.steps)
        return (*self.steps, *below)


def run_records(source: Any) -> RunRecords | None:
    """The records of a run-like source, or None for anything else.

    A result, a stored run, anything with a ``result`` (a stepped run, the `Stepper`), step
    records, or the results of several executions (paused and resumed, a session's): their
    steps in order, each sub-run once as it was last seen.
    """
    result = getattr(source, "result", None)
    if isinstance(result, RunResult):
        return _one_run(result)
    if hasattr(source, "steps") and not callable(source.steps):
        return _one_run(source)
    if not isinstance(source, Sequence) or not source:
        return None
    if all(isinstance(item, StepRecord) for item in source):
        steps = tuple(source)
        return RunRecords(steps, runs=tuple(_run_of_steps(group) for group in _by_run(steps)))
    if not all(hasattr(item, "steps") for item in source):
        return None
    runs = [_one_run(item) for item in source]
    children = {child.run_id: child for run in runs for child in run.children}
    whole = [combine_results(group) for group in _by_run([r for run in runs for r in run.runs])]
    return RunRecords(
        tuple(step for run in runs for step in run.steps),
        tuple(children.values()),
        runs[-1].agent,
        tuple(whole),
    )


def _one_run(run: Any) -> RunRecords:
    state = getattr(run, "state", None)
    steps = tuple(run.steps)
    children = tuple(getattr(run, "children", ()))
    if isinstance(run, RunResult):
        whole = run
    elif isinstance(state, AgentState):
        snapshots = tuple(getattr(run, "snapshots", ()))
        whole = RunResult(state=state, steps=steps, snapshots=snapshots, children=children)
    else:
        whole = _run_of_steps(steps)
    return RunRecords(steps, children, str(getattr(state, "agent_name", "") or ""), (whole,))


_Item = TypeVar("_Item", StepRecord, RunResult)


def _by_run(items: Sequence[_Item]) -> list[list[_Item]]:
    """Items grouped by run, in the order each run first appears."""
    groups: dict[str, list[_Item]] = {}
    for item in items:
        groups.setdefault(item.run_id, []).append(item)
    return list(groups.values())


def _run_of_steps(steps: Sequence[StepRecord]) -> RunResult:
    """A run known only by its step records: a state that says where the last one left it."""
    if not steps:
        return RunResult(state=AgentState(), steps=(), snapshots=())
    last = steps[-1]
    state = AgentState(
        run_id=last.run_id, execution_id=last.execution_id, status=last.status, step=last.index
    )
    return RunResult(state=state, steps=tuple(steps), snapshots=())


def combine_results(results: Sequence[RunResult]) -> RunResult:
    """One result for a run made of several executions (paused, then resumed).

    A resumed result already holds the steps before the pause when the store had them; each
    step record and snapshot is kept once, and each sub-run as it was last seen.
    """
    if not results:
        raise ValueError("no results to combine")
    steps = {(s.execution_id, s.index, s.started_at): s for r in results for s in r.steps}
    snapshots = {s.id: s for r in results for s in r.snapshots}
    children = {c.run_id: c for r in results for c in r.children}
    return RunResult(
        state=results[-1].state,
        steps=tuple(steps.values()),
        snapshots=tuple(snapshots.values()),
        children=tuple(children.values()),
    )


class SpanTree(Record):
    """Spans in depth-first order with each one's depth and the end of its subtree.

    ``order[i]`` is the index in ``spans`` of the span at position ``i``; the span's subtree is
    the positions ``i + 1`` up to ``ends[i]`` (exclusive). A span whose parent is not in the
    trace is a root. Built once per trace; every view of it is a walk over these arrays.
    """

    spans: tuple[ExplorerSpan, ...]
    order: tuple[int, ...]
    depths: tuple[int, ...]
    ends: tuple[int, ...]
    positions: dict[str, int]
    """Position of each span id."""
    start_ns: int
    end_ns: int

    @classmethod
    def of(cls, spans: Iterable[ExplorerSpan]) -> SpanTree:
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
        starts = [s.start_ns for s in items]
        return cls(
            spans=items,
            order=tuple(order),
            depths=tuple(depths),
            ends=_subtree_ends(depths),
            positions={items[index].span_id: pos for pos, index in enumerate(order)},
            start_ns=min(starts, default=0),
            end_ns=max((s.end_ns for s in items), default=0),
        )

    def span_at(self, position: int) -> ExplorerSpan:
        """The span at a position of the depth-first order."""
        return self.spans[self.order[position]]

    def ancestors(self, position: int) -> list[int]:
        """Positions of the span's ancestors, nearest first."""
        out: list[int] = []
        parent = self.span_at(position).parent_id
        while parent is not None and parent in self.positions and len(out) < self.depths[position]:
            out.append(self.positions[parent])
            parent = self.span_at(out[-1]).parent_id
        return out


def _subtree_ends(depths: Sequence[int]) -> tuple[int, ...]:
    """For each position, the first later position that is not inside its subtree."""
    ends = [len(depths)] * len(depths)
    open_positions: list[int] = []
    for position, depth in enumerate(depths):
        while open_positions and depths[open_positions[-1]] >= depth:
            ends[open_positions.pop()] = position
        open_positions.append(position)
    return tuple(ends)


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


def search_text(span: ExplorerSpan) -> str:
    """What a search looks through: name, id, status, every attribute key and value, lowercased."""
    attributes = " ".join(f"{k}={v}" for k, v in span.attributes.items())
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
) -> list[dict[str, Any]]:
    """Rows ``offset`` to ``offset + size`` of the visible ``positions``, as the page draws them.

    Times are milliseconds from the trace's start, so the page places bars without knowing the
    epoch; ``children`` says whether the row can fold, ``folded`` whether it is.
    """
    folded = set(collapsed)
    origin = tree.start_ns
    rows = []
    for position in positions[offset : offset + size]:
        span = tree.span_at(position)
        rows.append(
            {
                "id": span.span_id,
                "name": span.name,
                "depth": tree.depths[position],
                "start": (span.start_ns - origin) / 1e6,
                "duration": span.duration_ns / 1e6,
                "category": span_category(span.name),
                "status": "error" if span.is_error else span.status,
                "children": tree.ends[position] - position - 1,
                "folded": span.span_id in folded,
                "match": matches is not None and position in matches,
            }
        )
    return rows
