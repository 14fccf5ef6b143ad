"""`runs`: the runs of a store (or a trace backend) as one DataFrame, filtered as a person asks.

A person rarely starts from one run: an eval of 200 tasks, a day of a deployed agent, a
session of 30 executions. `runs` is where they start: one row per run (or per run tree, with
``rollup=True``), the columns a triage needs (status, errors and the first of them, tools,
steps, tokens, cost, time, metadata) and the filters of `RunFilter`, evaluated by the store in
SQL over its summary table, so 100,000 runs filter in well under a second.
"""

from __future__ import annotations

import os
import sys
import warnings
from typing import TYPE_CHECKING, Any, Protocol

from workbench._processes import this_process
from workbench.backends import NAMES, backend_runs
from workbench.errors import StoreError, UsageError
from workbench.records import RunResult
from workbench.runfilter import INTERRUPTED, Choices, RunFilter
from workbench.store import RunStore, RunSummary
from workbench.store._frame import frame_of_summaries
from workbench.store._query import Sort

if TYPE_CHECKING:
    import pandas as pd

    from workbench.telemetry.trace import Trace

__all__ = [
    "COLUMNS",
    "Choices",
    "RunSource",
    "Source",
    "StoreRuns",
    "existing_store",
    "open_store",
    "runs",
    "source_of",
    "writer_note",
]


class RunSource(Protocol):
    """Where a run list comes from: a run store, or a trace backend's traces.

    Each listed row is a `RunSummary` (a backend fills in what its traces have); `open` gives
    the run itself, or the trace when the source keeps traces, not runs.
    """

    @property
    def label(self) -> str:
        """What the source is, for a person (a path, a URL)."""

    def count(self, spec: RunFilter) -> int:
        """How many runs ``spec`` keeps (of those listed, when the list is not `complete`)."""

    def complete(self, spec: RunFilter) -> bool:
        """Whether `count` is every run ``spec`` keeps (a backend lists within bounds)."""

    def find(
        self, spec: RunFilter, *, sort: Sort, descending: bool, offset: int, limit: int
    ) -> list[RunSummary]:
        """One page of the runs ``spec`` keeps."""

    def choices(self) -> Choices:
        """The agents and tools to offer as filters."""

    def version(self) -> object:
        """A token that changes when runs are added or change (a live list polls it)."""

    def open(self, run_id: str) -> RunResult | Trace:
        """The run (or trace) a row stands for."""


_CHOICES = 200
"""At most this many agents or tools are offered as filters (the rest can still be typed)."""


class StoreRuns:
    """A run store as a `RunSource`."""

    def __init__(self, store: RunStore) -> None:
        self.store = store

    @property
    def label(self) -> str:
        """The store's path."""
        return self.store.path

    def count(self, spec: RunFilter) -> int:
        """How many runs ``spec`` keeps."""
        return self.store.count(spec)

    def complete(self, spec: RunFilter) -> bool:
        """Always: a store counts every run."""
        return True

    def find(
        self, spec: RunFilter, *, sort: Sort, descending: bool, offset: int, limit: int
    ) -> list[RunSummary]:
        """One page of the runs ``spec`` keeps."""
        return self.store.find(spec, sort=sort, descending=descending, offset=offset, limit=limit)

    def choices(self) -> Choices:
        """The store's agents and tools, by name."""
        return Choices(*self.store.names(limit=_CHOICES))

    def version(self) -> object:
        """Changes when any connection commits to the store (this process's or another's)."""
        return self.store.version()

    def open(self, run_id: str) -> RunResult:
        """The stored run, with its sub-runs."""
        return self.store.load(run_id)


COLUMNS = {
    "run_id": "run",
    "parent_run_id": "parent",
    "depth": "depth",
    "agent_name": "agent",
    "status": "status",
    "stop_reason": "stop_reason",
    "errors": "errors",
    "first_error": "first_error",
    "tools": "tools",
    "steps": "steps",
    "tokens": "tokens",
    "cost": "cost",
    "duration": "duration",
    "created_at": "started",
    "metadata": "metadata",
    "model_name": "model",
    "output": "output",
    "trace_id": "trace_id",
    "rerun_of": "rerun_of",
}
"""The store's summary fields a run list shows, and the column each becomes (in this order)."""


def writer_note(store: RunStore, row: RunSummary) -> str:
    """What to know of the process behind an unfinished run, in a sentence; "" for most runs.

    An interrupted run's process has ended: it recorded what it recorded and will not go on.
    A run running on another machine cannot be checked from here, so it is listed as running;
    this says where it runs. Nor can one an earlier workbench stored as running without its
    process (a store before version 6): this says so. `workbench show` and the `RunsBrowser`
    print it above the run.
    """
    if row.status not in (INTERRUPTED, "running", "pending"):
        return ""
    writer = store.writer(row.run_id)
    if writer is None:  # every execution records its process since; a pending run has none yet
        return _UNRECORDED if row.status == "running" else ""
    where = f"pid {writer.pid} on {writer.host}"
    if row.status == INTERRUPTED:
        steps = f"{row.steps} step{'' if row.steps == 1 else 's'}"
        return (
            f"the process that ran it ({where}) ended while it was running: it recorded "
            f"{steps} and will not go on"
        )
    if writer.host != this_process().host:
        return (
            f"running on another machine ({where}), as far as the store knows: whether it "
            "still is cannot be checked from here"
        )
    return ""


_UNRECORDED = (
    "stored by an earlier workbench, which did not record the process running a run: whether it "
    "still runs cannot be told (if no process of yours is running it, it was interrupted)"
)


def open_store(store: RunStore | str | os.PathLike[str] | None) -> RunStore:
    """The store a run list reads: the one given, an `existing_store` at a path, or the default."""
    if isinstance(store, RunStore):
        return store
    if store is not None:
        return existing_store(store)
    default = RunStore.default()
    if default is None:
        raise UsageError(
            "there is no default run store (WORKBENCH_STORE is off): pass store=RunStore(path)"
        )
    return default


def existing_store(path: str | os.PathLike[str]) -> RunStore:
    """The store at ``path`` to read runs from; `StoreError` "no run store at PATH" if no file is.

    A path given to list or read runs names a store expected to be there: a mistyped one listed
    "no runs", as if the runs were gone (and a live `RunsBrowser` waited on it). Nothing is made.
    A store to write to is `RunStore(path)` (its file made by the first run): a `RunStore` given
    is read as it is, as is the default store, which has no file before its first run.
    """
    store = RunStore(path)
    if store.path != ":memory:" and not os.path.exists(store.path):
        # quoted as given: made absolute, a URL mistaken for a path hides from redaction
        raise StoreError(f"no run store at {os.fspath(path)}: no such file")
    return store


Source = RunSource | RunStore | str | os.PathLike[str] | None
"""What a run list can read: a store, a path to one, a backend's URL, None (the default store)."""


_BACKEND_PREFIXES = tuple(f"{name}+" for name in NAMES)


def source_of(source: Source) -> RunSource:
    """The `RunSource` a run list reads: a store, or a backend (``"jaeger+http://..."``).

    A store is given, at a path (`existing_store`), or the default one; a backend is
    ``"jaeger+http://..."`` or ``"phoenix+http://..."`` (`workbench.backends`).
    """
    # a URL, or a backend's name before it ('jaeger+notaurl' was read as a store's path: 0 runs)
    if isinstance(source, str) and ("://" in source or source.startswith(_BACKEND_PREFIXES)):
        return backend_runs(source)
    if isinstance(source, RunStore | str | os.PathLike) or source is None:
        return StoreRuns(open_store(source))
    return source


def runs(
    store: RunStore | str | os.PathLike[str] | None = None,
    *,
    source: Source = None,
    sort: Sort = "started",
    descending: bool = False,
    **filters: Any,
) -> pd.DataFrame:
    """The runs of ``store`` (the default store if None) as a DataFrame, one row per run.

    A path names a store that is there: a `StoreError` says "no run store at PATH" otherwise.

    ``source`` reads a trace backend instead (``"jaeger+http://host:16686[/SERVICE]"``,
    ``"phoenix+http://host:6006[/PROJECT]"``): one row per trace, with the columns its spans
    have, within the backend listing's bounds (a `UserWarning` says when it stopped short).

    ``filters`` are `RunFilter`'s: ``status``, ``agent``, ``tool``, ``errors``, ``since``,
    ``until``, ``metadata``, ``text`` and ``rollup`` (one row per run tree, its sub-runs'
    steps, errors, tools and count rolled up into its root's row). Columns: run, parent, depth,
    agent, status, stop_reason, errors (how many), first_error, tools (the names called), steps,
    tokens, cost (a run's usage: its sub-runs' included, as in its result), duration (seconds
    running), started, metadata, model, output, trace_id, rerun_of (and subruns when rolled up).
    Oldest first unless ``sort``/``descending`` say otherwise.

    >>> import workbench as wb
    >>> store = wb.RunStore(":memory:")
    >>> _ = wb.Agent(model=wb.ScriptedModel(["hi"]), store=store).run_sync("hello")
    >>> wb.runs(store, status="completed")[["agent", "status", "steps", "errors"]]
       agent     status  steps  errors
    0  agent  completed      1       0
    """
    spec = RunFilter(**filters)
    if source is None or isinstance(source, RunStore):
        frame = open_store(source or store).list_runs(spec, sort=sort, descending=descending)
    else:
        frame = _listed(source_of(source), spec, sort, descending)
    frame["tokens"] = frame["input_tokens"] + frame["output_tokens"]
    columns = {**COLUMNS, "subruns": "subruns"} if spec.rollup else COLUMNS
    return frame[list(columns)].rename(columns=columns)


def _listed(source: RunSource, spec: RunFilter, sort: Sort, descending: bool) -> pd.DataFrame:
    """A source's whole listing as the frame `RunStore.list_runs` makes (for backends)."""
    rows = source.find(spec, sort=sort, descending=descending, offset=0, limit=sys.maxsize)
    if not source.complete(spec):
        warnings.warn(
            f"{source.label}: listed the first {len(rows):,} runs the filter keeps and stopped "
            "(a bound on the listing); narrow it with since=, until= or other filters",
            stacklevel=3,
        )
    return frame_of_summaries(rows, rollup=spec.rollup)
