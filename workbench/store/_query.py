"""The run list's SQL: a `RunFilter` and a sort order as one query over ``runs`` and ``summaries``.

A run list filters on the runs' summaries (status, agent, start, errors, tools, tree, metadata:
a narrow table of their own) and reads a run's row (tokens, model, output: ahead of its state
payload) only for the rows it lists, never the payloads, so 100,000 runs filter in a fraction
of a second. The tools of the listed runs come from a second query: for a page, of its rows; for
a whole listing, of every run its filter keeps (the same SQL), in one pass whatever their number.

With ``rollup`` a row is a run tree: its root's row with the tree's steps, errors, tool calls
and sub-run count, which the store keeps on the root's summary as the tree's runs are written,
and its tools the union of the tree's (its tokens and cost are its root's usage, which holds
its sub-runs'). Then status and time ask about the root and the other filters about any run of
the tree.
"""

from __future__ import annotations

import json
import logging
import sqlite3
from collections.abc import Iterable, Sequence
from itertools import groupby
from operator import itemgetter
from typing import Any, Literal, NamedTuple

from pydantic import Field, model_validator

from workbench._record import Record
from workbench._storage import LISTED_STATUS, UNFINISHED
from workbench._textindex import text_term
from workbench.messages import JsonValue
from workbench.runfilter import INTERRUPTED, RunFilter

logger = logging.getLogger(__name__)

__all__ = [
    "COLUMNS",
    "FRAME",
    "SORTS",
    "Extras",
    "RunSummary",
    "Sort",
    "count_query",
    "extras",
    "list_query",
    "select",
    "session_of",
    "with_extras",
]


def session_of(metadata: object) -> str | None:
    """The `Session` a run's metadata names (a text ``session_id``; anything else is no session)."""
    value = metadata.get("session_id") if isinstance(metadata, dict) else None
    return value if isinstance(value, str) else None


def stored_metadata(text: object, run_id: object) -> dict[str, Any]:
    """A run's metadata as the store keeps it: the JSON text of an object, or none ({}).

    A damaged value (not JSON, or JSON of no object) lists as none, with a warning naming the
    run, as a damaged run's errors list as unknown: one damaged row must not hide every other
    run of the store.
    """
    if text is None:
        return {}
    try:
        found = json.loads(text) if isinstance(text, str) else None
    except ValueError:
        found = None
    if isinstance(found, dict):
        return found
    logger.warning("run %s's stored metadata is damaged: it is listed without it", run_id)
    return {}


class RunSummary(Record):
    """One row of a run list: what it shows and filters on, without loading the run."""

    run_id: str
    agent_name: str
    status: str
    """As stored, but ``"interrupted"`` for a run stored as running whose process has ended
    (`workbench.runfilter.INTERRUPTED`)."""
    stop_reason: str | None
    steps: int
    """The steps it recorded (a step under way when its process ended is not one); in a
    rolled-up row, its tree's."""
    model_name: str | None
    input_tokens: int
    output_tokens: int
    cost: float | None
    created_at: float | None
    """None where the stored time is damaged."""
    updated_at: float | None
    parent_run_id: str | None
    rerun_of: str | None
    rerun_of_step: int | None
    output: str | None
    session_id: str | None = None
    """The `Session` the run is an execution of (``metadata["session_id"]``), if any: read from
    the metadata when not given (`session_of`)."""
    depth: int = 0
    """How deep in its tree the run is: 0 for a run nobody called, 1 for a sub-agent's run..."""
    root_run_id: str | None = None
    """The run at the top of its tree (itself for a run nobody called)."""
    errors: int | None = None
    """Errors anywhere in the run (in a rolled-up row, its tree); None: its records are damaged."""
    first_error: str | None = None
    """The first of them, on one line: where, and what."""
    tools: tuple[str, ...] = ()
    """The tools it called (in a rolled-up row, its tree called), by name."""
    tool_calls: int | None = None
    duration: float | None = None
    """Seconds spent running (time paused for an approval is not counted)."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    trace_id: str | None = None
    subruns: int = 0
    """In a rolled-up row: how many sub-runs its tree holds."""

    @model_validator(mode="before")
    @classmethod
    def _read_metadata(cls, data: Any) -> Any:
        """The metadata as the store keeps it (JSON text, or none) read once, and its session."""
        if not isinstance(data, dict):
            return data
        metadata = data.get("metadata")
        if metadata is None or isinstance(metadata, str):
            metadata = stored_metadata(metadata, data.get("run_id"))
        return {"session_id": session_of(metadata), **data, "metadata": metadata}


Sort = Literal[
    "started", "updated", "run", "agent", "status", "errors", "steps", "tokens", "cost", "duration"
]
SORTS: dict[str, str] = {
    "started": "s.created_at",
    "updated": "r.updated_at",
    "run": "r.run_id",
    "agent": "s.agent_name",
    "status": LISTED_STATUS,
    "errors": "errors",
    "steps": "steps",
    "tokens": "(r.input_tokens + r.output_tokens)",
    "cost": "r.cost",
    "duration": "s.duration",
}
"""What a list can be sorted by, and the column behind each (ties go by start time, then id)."""

_TIME = "CASE WHEN typeof({0}) IN ('real', 'integer') THEN {0} END"
"""A time column, or NULL where a damaged row holds something else (it lists as no time)."""
_ROW = (
    f"r.run_id, r.agent_name, {LISTED_STATUS}, r.stop_reason, {{steps}}, r.model_name, "
    f"r.input_tokens, r.output_tokens, r.cost, {_TIME.format('r.created_at')}, "
    f"{_TIME.format('r.updated_at')}, r.parent_run_id, r.rerun_of_run, r.rerun_of_step, "
    "r.output, s.depth, s.root_run_id"
)
_RUN = (
    f"{_ROW.format(steps='r.step AS steps')}, s.errors AS errors, s.first_error, s.tool_calls, "
    "s.duration, s.metadata, s.trace_id"
)
_TREE = (  # a tree's steps, errors and tool calls (its tokens and cost are its root's usage)
    f"{_ROW.format(steps='coalesce(s.tree_steps, r.step) AS steps')}, s.tree_errors AS errors, "
    "s.first_error, s.tree_tool_calls, s.duration, s.metadata, s.trace_id, s.subruns"
)
_FROM = "FROM summaries s JOIN runs r ON r.run_id = s.run_id"
COLUMNS = tuple(
    name for name in RunSummary.model_fields if name not in ("session_id", "tools", "subruns")
)
"""The `RunSummary` fields a listing query returns, in its column order (then ``subruns``); the
session is read from the metadata (`session_of`), so its JSON is read once, in Python."""
FRAME = tuple(name for name in RunSummary.model_fields if name not in ("tools", "subruns"))
"""The columns of `RunStore.list_runs`' frame, in order (then ``subruns`` if rolled up, tools)."""


def _metadata_term(key: str, value: JsonValue) -> tuple[str, list[object]]:
    """A run whose metadata has ``key`` equal to ``value`` (JSON types kept apart: 1 is not '1')."""
    params: list[object]
    match value:
        case None:
            test, params = "m.type = 'null'", []
        case bool():
            test, params = f"m.type = '{'true' if value else 'false'}'", []
        case int() | float():
            test, params = "m.type IN ('integer', 'real') AND m.value = ?", [value]
        case str():
            test, params = "m.type = 'text' AND m.value = ?", [value]
        case _:
            test, params = (
                "m.type IN ('object', 'array') AND m.value = json(?)",
                [json.dumps(value)],
            )
    # a damaged row's metadata (not JSON) has no key: it is not matched, and stops no filter
    json_of = "CASE WHEN json_valid(s.metadata) THEN s.metadata END"
    where = f"EXISTS (SELECT 1 FROM json_each({json_of}) m WHERE m.key = ? AND {test})"
    if isinstance(value, str):
        # First a look for the pair in the summary's JSON text, as `_runfacts` writes it (compact,
        # ASCII): a scan of bytes, where json_each parses every run's metadata. A pair written
        # that way is always found; json_each still decides (the text may be inside a string).
        pair = f"{json.dumps(key)}:{json.dumps(value)}"
        return f"instr(s.metadata, ?) AND {where}", [pair, key, *params]
    return where, [key, *params]


def _in(column: str, values: Sequence[object]) -> str:
    return f"{column} IN ({', '.join('?' * len(values))})"


def _run_terms(spec: RunFilter) -> tuple[list[str], list[object]]:
    """The conditions on one run's summary (``s``) for everything but status and time."""
    terms: list[str] = []
    params: list[object] = []
    if spec.agent:
        terms.append(_in("s.agent_name", spec.agent))
        params += spec.agent
    if spec.tool:
        terms.append(f"s.run_id IN (SELECT run_id FROM run_tools WHERE {_in('tool', spec.tool)})")
        params += spec.tool
    for key, value in spec.metadata.items():
        term, more = _metadata_term(key, value)
        terms.append(term)
        params += more
    if spec.text:
        term, more = text_term(spec.text)
        terms.append(term)
        params += more
    return terms, params


def _root_terms(spec: RunFilter) -> tuple[list[str], list[object]]:
    """The conditions on the listed row itself: status and start time.

    The time is written ``+s.created_at`` so SQLite does not walk the time index for it (see
    `list_query`).
    """
    terms: list[str] = []
    params: list[object] = []
    if spec.status:
        # The stored status first, a column compare that leaves out most runs, so the listed
        # status (which may ask whether a process is there) is worked out only for the rest.
        stored = {s for s in spec.status if s != INTERRUPTED}
        stored |= set(UNFINISHED) if INTERRUPTED in spec.status else set()
        terms.append(f"{_in('s.status', sorted(stored))} AND {_in(LISTED_STATUS, spec.status)}")
        params += [*sorted(stored), *spec.status]
    if spec.since is not None:
        terms.append("+s.created_at >= ?")
        params.append(spec.since)
    if spec.until is not None:
        terms.append("+s.created_at < ?")
        params.append(spec.until)
    return terms, params


def _where(spec: RunFilter) -> tuple[str, list[object]]:
    terms, params = _root_terms(spec)
    per_run, more = _run_terms(spec)
    if spec.rollup:
        terms.append("s.depth = 0")
        if per_run:  # a tree matches when any of its runs does
            terms.append(
                f"s.run_id IN (SELECT s.root_run_id FROM summaries s WHERE {' AND '.join(per_run)})"
            )
    else:
        terms += per_run
    params += more
    if spec.errors is not None:
        column = "s.tree_errors" if spec.rollup else "s.errors"
        terms.append(f"{column} {'>' if spec.errors else '='} 0")
    return (f"WHERE {' AND '.join(terms)}" if terms else ""), params


def list_query(
    spec: RunFilter,
    sort: str = "started",
    descending: bool = False,
    limit: int | None = None,
    offset: int = 0,
) -> tuple[str, list[object]]:
    """The query listing the runs ``spec`` keeps, sorted, one page of them if ``limit``."""
    if sort not in SORTS:
        raise ValueError(f"cannot sort runs by {sort!r}: by one of {', '.join(SORTS)}")
    where, params = _where(spec)
    order = "DESC" if descending else "ASC"
    # Unfiltered, the newest (or oldest) rows are read off the time index, a page at a time.
    # Filtered, the index would be walked to its end for a filter that keeps few rows, each
    # step a lookup of the row it names: then finding the rows and sorting them is faster.
    time_key = "+s.created_at" if spec.active else "s.created_at"
    key = time_key if sort == "started" else SORTS[sort]
    query = (
        f"SELECT {_TREE if spec.rollup else _RUN} {_FROM} {where} "
        f"ORDER BY {key} {order}, {time_key} {order}, r.rowid {order}"
    )
    if limit is not None:
        query += " LIMIT ? OFFSET ?"
        params += [limit, offset]
    return query, params


def select(where: str) -> str:
    """The query listing runs (not rolled up) with a ``WHERE``/``ORDER BY`` of the caller's."""
    return f"SELECT {_RUN} {_FROM} {where}"


def count_query(spec: RunFilter) -> tuple[str, list[object]]:
    """The query counting the runs ``spec`` keeps."""
    where, params = _where(spec)
    return f"SELECT count(*) FROM summaries s {where}", params  # no run row is read


_BATCH = 500
"""Run ids per ``IN (...)`` (SQLite limits the parameters of a statement)."""


class Extras(NamedTuple):
    """What a listing adds to its rows from other tables: tools, and trees' first errors."""

    tools: dict[str, tuple[str, ...]]
    """The tools each run (or each run tree, by its root) called, sorted by name."""
    first_errors: dict[str, str]
    """For trees: the first error of any of its runs, by root (empty for single runs)."""


def extras(conn: sqlite3.Connection, listed: Sequence[str] | RunFilter, *, trees: bool) -> Extras:
    """The extras of the rows a listing shows: of the runs ``listed`` names, or a filter keeps.

    A page names its runs; a whole listing gives its filter, whose own SQL finds its runs (or
    trees) in one pass whatever their number.
    """
    key = "x.root_run_id" if trees else "t.run_id"
    select = (  # in order of run (tree) and name, so each one's tools are one sorted group
        f"SELECT DISTINCT {key}, t.tool FROM run_tools t JOIN summaries x ON x.run_id = t.run_id"
        if trees
        else f"SELECT {key}, t.tool FROM run_tools t"
    )
    tools: dict[str, tuple[str, ...]] = {}
    firsts: dict[str, str] = {}
    for where, params in _picking(key, listed):
        rows = conn.execute(f"{select} {where} ORDER BY 1, 2", params)
        tools.update(_grouped(rows))
        if trees:
            for root, first in conn.execute(_FIRST_ERRORS.format(where), params):
                firsts.setdefault(root, first)
    return Extras(tools, firsts)


def _picking(key: str, listed: Sequence[str] | RunFilter) -> list[tuple[str, list[object]]]:
    """The ``WHERE`` clauses picking the listed rows by ``key``: a filter's, or a batch of ids."""
    if isinstance(listed, RunFilter):
        if not listed.active and not listed.rollup:
            return [("WHERE 1", [])]
        where, params = _where(listed)
        return [(f"WHERE {key} IN (SELECT s.run_id FROM summaries s {where})", params)]
    batches = [listed[i : i + _BATCH] for i in range(0, len(listed), _BATCH)]
    return [(f"WHERE {_in(key, batch)}", list(batch)) for batch in batches]


def _grouped(rows: Iterable[tuple[str, str]]) -> Iterable[tuple[str, tuple[str, ...]]]:
    """(run, tool) rows in order as (run, its tools) pairs."""
    for run_id, group in groupby(rows, itemgetter(0)):
        yield run_id, tuple(tool for _, tool in group)


def with_extras(
    conn: sqlite3.Connection, rows: Sequence[RunSummary], *, trees: bool
) -> list[RunSummary]:
    """Listed rows with their tools and, for a tree whose root had none, its first error."""
    found = extras(conn, [row.run_id for row in rows], trees=trees)
    return [
        row.model_copy(
            update={
                "tools": found.tools.get(row.run_id, ()),
                "first_error": row.first_error or found.first_errors.get(row.run_id),
            }
        )
        for row in rows
    ]


_FIRST_ERRORS = (
    "SELECT x.root_run_id, x.first_error FROM summaries x JOIN runs r ON r.run_id = x.run_id "
    "{} AND x.first_error IS NOT NULL ORDER BY r.created_at, r.rowid"
)
