"""`RunStore`: reading runs back, and writing them as a `RunObserver` (see `workbench.store`)."""

from __future__ import annotations

import logging
import os
import sqlite3
import threading
from collections.abc import Callable, Iterable, Iterator, Sequence
from contextlib import contextmanager, suppress
from pathlib import Path
from typing import TYPE_CHECKING, Any, ClassVar

from pydantic import ValidationError

from workbench import _storage as st
from workbench._processes import ProcessId
from workbench._storage import RunNotFound, StoreError
from workbench._textindex import drop_texts
from workbench.conversation import Messages
from workbench.messages import Message, ToolDefinition
from workbench.observing import RunObserver
from workbench.records import PhaseEvent, RunResult, StepContext, StepRecord
from workbench.runfilter import INTERRUPTED, RunFilter
from workbench.state import AgentState, validation_summary
from workbench.store import _query as q
from workbench.store._frame import frame_of_rows
from workbench.store._query import RunSummary, Sort
from workbench.store._runlog import RunLog
from workbench.store._runwrite import log_of, put_queued, put_run, put_snapshot, put_step

if TYPE_CHECKING:
    import pandas as pd

DEFAULT_STORE_PATH = Path(".workbench") / "runs.sqlite"
"""Where the default store lives, relative to the working directory when it is first asked for."""
STORE_ENV = "WORKBENCH_STORE"
"""Overrides the default store: a path, ``:memory:``, or ``off`` for no default store."""
_OFF = frozenset({"off", "none", "false", "0"})

logger = logging.getLogger("workbench.store")  # the package's name: the one users configure


_Write = Callable[[RunLog, sqlite3.Connection], None]

_CHILDREN = "SELECT run_id FROM runs WHERE parent_run_id = ? ORDER BY created_at, rowid"
"""The sub-runs of a run, in the order they started."""
_TABLES = ("runs", "messages", "snapshots", "steps", "tool_sets", "summaries", "run_tools")
"""Every table with rows of a run (by ``run_id``), besides its texts (`_textindex.drop_texts`)."""


class RunStore(RunObserver):
    """Runs, their step records and StepContext snapshots in an embedded SQLite database.

    ``path`` is a file (created, with its folder, on the first write; WAL mode, so a notebook can
    read a run another process is writing) or ``":memory:"``. Nothing is opened until the store is
    used, so making one is free. Payloads are JSON (never pickle) under a versioned schema; a
    store from a newer workbench, a damaged file or a bad payload raises `StoreError` and nothing
    is written to it. Payloads over ``max_payload_chars`` are refused when read (hostile input).

    >>> store = RunStore(":memory:")
    >>> store.runs()
    []
    """

    _defaults: ClassVar[dict[str, RunStore]] = {}
    _defaults_lock: ClassVar = threading.Lock()

    def __init__(
        self,
        path: str | os.PathLike[str] = DEFAULT_STORE_PATH,
        *,
        max_payload_chars: int = 64 * 1024 * 1024,
        busy_timeout: float = 10.0,
    ) -> None:
        raw = os.fspath(path)
        self.path = raw if raw == ":memory:" else os.path.abspath(raw)
        self.max_payload_chars = max_payload_chars
        self.busy_timeout = busy_timeout
        self.write_errors: list[str] = []
        """Writes that failed while a run went on (the run itself is never broken by the store)."""
        self._conn: sqlite3.Connection | None = None
        self._lock = threading.RLock()
        self._logs: dict[str, RunLog] = {}
        self._index_warned = False

    @classmethod
    def default(cls) -> RunStore | None:
        """The process-wide default store: ``$WORKBENCH_STORE``, else ``.workbench/runs.sqlite``.

        One store per path, shared by every `Agent` made without ``store=``. ``WORKBENCH_STORE=off``
        means no default store (runs are not recorded unless a store is given).
        """
        where = os.environ.get(STORE_ENV, "").strip() or os.fspath(DEFAULT_STORE_PATH)
        if where.lower() in _OFF:
            return None
        key = where if where == ":memory:" else os.path.abspath(where)
        with cls._defaults_lock:
            store = cls._defaults.get(key)
            if store is None:
                store = cls._defaults[key] = cls(key)
            return store

    def __repr__(self) -> str:
        return f"RunStore({self.path!r})"

    def __enter__(self) -> RunStore:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        """Close the connection (the store opens it again if used after this).

        SQLite's own advice for a connection that ends: ``PRAGMA optimize`` refreshes the
        statistics its queries would have planned better with (a run list of many runs).
        """
        with self._lock:
            if self._conn is not None:
                with suppress(*st.DB_ERRORS):  # a store that cannot be optimized still closes
                    self._conn.execute("PRAGMA optimize")
                self._conn.close()
                self._conn = None

    # -- reading --------------------------------------------------------------------------------

    def runs(self, *, roots_only: bool = False) -> list[RunSummary]:
        """Every run in the store, oldest first, without loading any of them.

        Sub-runs (sub-agents' runs) come after the run that started them, with their ``depth``
        and ``parent_run_id``; ``roots_only`` leaves them out.
        """
        where = "WHERE r.parent_run_id IS NULL " if roots_only else ""
        return self._summaries(f"{where}ORDER BY r.created_at, r.rowid")

    def session(self, session_id: str) -> list[RunSummary]:
        """The runs of one `Session`, in the order of its executions (empty if none are here).

        A session's runs carry its id in their metadata; nothing else groups them, so a session
        whose JSON was lost can still be found here.
        """
        return self._summaries(
            "WHERE json_extract(s.metadata, '$.session_id') = ? ORDER BY "
            "json_extract(s.metadata, '$.session_execution'), r.created_at, r.rowid",
            session_id,
        )

    def find(
        self,
        spec: RunFilter | None = None,
        *,
        sort: Sort = "started",
        descending: bool = False,
        offset: int = 0,
        limit: int | None = None,
    ) -> list[RunSummary]:
        """The runs ``spec`` keeps, sorted by ``sort``; a page of them with ``offset``/``limit``.

        Reads the runs' rows and summaries only, never their payloads: what a run list needs.
        """
        query, params = q.list_query(spec or RunFilter(), sort, descending, limit, offset)
        rollup = spec is not None and spec.rollup
        with self._reading() as conn:
            if conn is None:
                return []
            rows = self._validated(conn.execute(query, params), rollup)
            return q.with_extras(conn, rows, trees=rollup)

    def count(self, spec: RunFilter | None = None) -> int:
        """How many runs (or, with ``rollup``, run trees) ``spec`` keeps."""
        query, params = q.count_query(spec or RunFilter())
        with self._reading() as conn:
            return 0 if conn is None else int(conn.execute(query, params).fetchone()[0])

    def names(self, *, limit: int = 200) -> tuple[tuple[str, ...], tuple[str, ...]]:
        """The agents and the tools of the store's runs, by name (the first ``limit`` of each)."""
        with self._reading() as conn:
            if conn is None:
                return (), ()
            agents = conn.execute(
                "SELECT DISTINCT agent_name FROM runs ORDER BY agent_name LIMIT ?", (limit,)
            )
            tools = conn.execute(
                "SELECT DISTINCT tool FROM run_tools ORDER BY tool LIMIT ?", (limit,)
            )
            return tuple(a for (a,) in agents), tuple(t for (t,) in tools)

    def version(self) -> tuple[int, int, int] | None:
        """A token that changes whenever a run is written, by this store or another process.

        SQLite's ``data_version`` counts commits by other connections; this connection's own
        changes are its ``total_changes``. Both are read without touching a table, so a live
        run list can ask every second. A run is also listed differently, without a write, when
        its process ends while it runs (interrupted): the third number counts those, read off
        an index of the unfinished runs only. None while the store has no file.
        """
        with self._reading() as conn:
            if conn is None:
                return None
            (data_version,) = conn.execute("PRAGMA data_version").fetchone()
            (interrupted,) = conn.execute(_INTERRUPTED).fetchone()
            return int(data_version), conn.total_changes, int(interrupted)

    def summary(self, run_id: str) -> RunSummary:
        """One run's row as a run list shows it, without loading the run.

        Its status is ``"interrupted"`` if its process ended while it ran.
        """
        found = self._summaries("WHERE r.run_id = ?", run_id)
        if not found:
            raise RunNotFound(f"no run {run_id!r} in {self.path}")
        return found[0]

    def writer(self, run_id: str) -> ProcessId | None:
        """The process that writes (or last wrote) run ``run_id``: its host, pid and start.

        None for a run stored before workbench recorded it, or one that is not here.
        """
        with self._reading() as conn:
            row = None if conn is None else conn.execute(_WRITER, (run_id,)).fetchone()
        if row is None or not isinstance(row[0], str) or not isinstance(row[1], int):
            return None
        return ProcessId(row[0], row[1], row[2] if isinstance(row[2], str) else None)

    def _summaries(self, where: str, *params: object) -> list[RunSummary]:
        with self._reading() as conn:
            if conn is None:
                return []
            rows = self._validated(conn.execute(q.select(where), params), False)
            return q.with_extras(conn, rows, trees=False)

    def _validated(self, rows: Iterable[Sequence[Any]], rollup: bool) -> list[RunSummary]:
        names = [*q.COLUMNS, "subruns"] if rollup else list(q.COLUMNS)
        try:
            return [RunSummary(**dict(zip(names, row, strict=True))) for row in rows]
        except ValidationError as exc:
            raise StoreError(
                f"{self.path} has a damaged run row: {validation_summary(exc, limit=2)}"
            ) from None

    def list_runs(
        self,
        spec: RunFilter | None = None,
        *,
        roots_only: bool = False,
        sort: Sort = "started",
        descending: bool = False,
    ) -> pd.DataFrame:
        """The runs as a pandas DataFrame (one row per run, as `find`; times as datetimes).

        The rows of `find`'s query made into columns by pandas, not a `RunSummary` each: every
        run's tools come from one more query by the same filter, each run's metadata JSON is
        read once (its session with it), so 100,000 runs cost about what reading them does.
        """
        spec = spec or RunFilter()
        if roots_only and not spec.rollup:
            spec = spec.model_copy(update={"rollup": True})
        query, params = q.list_query(spec, sort, descending)
        with self._reading() as conn:
            rows = [] if conn is None else conn.execute(query, params).fetchall()
            found = q.Extras({}, {}) if conn is None else q.extras(conn, spec, trees=spec.rollup)
        return frame_of_rows(rows, found, rollup=spec.rollup)

    def resolve(self, ref: str) -> str:
        """The run id that ``ref`` names: the id itself, a unique prefix of one, or ``last``.

        ``last`` is the run last started from outside (not a sub-agent's run, which starts after
        the run that called it): the run a person means.
        """
        query, params = (_LAST, ()) if ref == "last" else (_RESOLVE, (ref,))
        with self._reading() as conn:
            ids = [] if conn is None else [str(r[0]) for r in conn.execute(query, params)]
        if ref in ids or (ref == "last" and ids):
            return ref if ref in ids else ids[0]
        if len(ids) == 1:
            return ids[0]
        if ids:
            raise RunNotFound(f"{ref!r} matches {len(ids)} runs: {', '.join(ids[:5])}")
        raise RunNotFound(f"no run {ref!r} in {self.path}")

    def load(self, run_id: str, *, children: bool = True) -> RunResult:
        """The whole run: its latest state, every step record and snapshot, and its sub-runs.

        A run still being written (or whose process died) loads as far as it got: its state is
        the one after its last finished step. Sub-runs (sub-agents it called) come as its
        ``children``, in the order they started, each with its own; ``children=False`` leaves
        them out, which is how a run whose sub-run is damaged is still read.
        """
        result = self._load_one(run_id)
        if not children:
            return result
        try:
            return result.model_copy(update={"children": self._subruns(run_id)})
        except StoreError as exc:  # the error names the damaged sub-run; say whose it is
            raise StoreError(
                f"a sub-run of run {run_id} cannot be loaded: {exc}. The run itself is intact: "
                f"store.load({run_id!r}, children=False) loads it without its sub-runs"
            ) from None

    def _subruns(self, run_id: str) -> tuple[RunResult, ...]:
        """The sub-runs of ``run_id``, in the order they started, each with its own."""
        with self._reading() as conn:
            rows = [] if conn is None else conn.execute(_CHILDREN, (run_id,)).fetchall()
        return tuple(
            self._load_one(child).model_copy(update={"children": self._subruns(child)})
            for (child,) in rows
        )

    def _load_one(self, run_id: str) -> RunResult:
        with self._reading() as conn:
            row = None if conn is None else conn.execute(_STATE, (self.max_payload_chars, run_id))
            found = None if row is None else row.fetchone()
            if conn is None or found is None:
                raise RunNotFound(f"no run {run_id!r} in {self.path}")
            messages = self._messages(conn, run_id)
            state = self._state(found, messages, run_id)
            snapshots = self._snapshots(conn, run_id, messages)
            steps = self._steps(conn, run_id, messages)
        return RunResult(state=state, steps=steps, snapshots=snapshots)

    def snapshot(self, run_id: str, step: int) -> StepContext:
        """The snapshot taken as step ``step`` of run ``run_id`` started."""
        with self._reading() as conn:
            cursor = (
                None
                if conn is None
                else conn.execute(_SNAPSHOT, (self.max_payload_chars, run_id, step))
            )
            row = None if cursor is None else cursor.fetchone()
            if conn is None or row is None:
                raise RunNotFound(self._no_snapshot(conn, run_id, step))
            count = conn.execute(_COUNT, (run_id,)).fetchone()[0]
            where = f"run {run_id} snapshot of step {step}"
            ranges = st.load_ranges(row[2], count, where)
            messages = self._messages(conn, run_id, ranges)
            tools = self._tool_sets(conn, run_id, {row[3]} - {None})
            return st.load_snapshot(
                row[0],
                row[1],
                st.materialize(messages, ranges),
                tools.get(row[3]),
                where,
                self.max_payload_chars,
            )

    def delete(self, run_id: str) -> None:
        """Remove a run and its sub-runs, all in one transaction (re-runs keep their own copy)."""
        with self._writing() as conn:
            if conn.execute("SELECT 1 FROM runs WHERE run_id = ?", (run_id,)).fetchone() is None:
                raise RunNotFound(f"no run {run_id!r} in {self.path}")
            doomed = [run_id]
            for parent in doomed:  # grows as sub-runs are found: the whole tree
                doomed += [child for (child,) in conn.execute(_CHILDREN, (parent,)).fetchall()]
            for doomed_id in doomed:
                for table in _TABLES:
                    conn.execute(f"DELETE FROM {table} WHERE run_id = ?", (doomed_id,))
                self._text_index_failed(drop_texts(conn, doomed_id))

    def _state(self, row: tuple[Any, ...], messages: Messages, run_id: str) -> AgentState:
        where = f"run {run_id} state"
        ranges = st.load_ranges(row[2], len(messages), where)
        return st.load_state(
            row[0], row[1], st.materialize(messages, ranges), where, self.max_payload_chars
        )

    def _messages(
        self, conn: sqlite3.Connection, run_id: str, ranges: Sequence[st.Range] | None = None
    ) -> Messages:
        """The run's messages, indexed by ``seq`` (only up to the ranges' end when given)."""
        end = max((b for _, b in ranges), default=0) if ranges is not None else None
        rows = conn.execute(
            _MESSAGES, (self.max_payload_chars, run_id, end if end is not None else -1)
        )
        out: list[Message] = []
        for seq, body, size in rows:
            where = f"run {run_id} message {seq}"
            if seq != len(out):
                raise StoreError(f"{where}: message rows before it are missing (damaged store)")
            out.append(st.load_message(body, size, where, self.max_payload_chars))
        return Messages(out)

    def _snapshots(
        self, conn: sqlite3.Connection, run_id: str, messages: Messages
    ) -> tuple[StepContext, ...]:
        rows = conn.execute(_SNAPSHOTS, (self.max_payload_chars, run_id)).fetchall()
        tools = self._tool_sets(conn, run_id, {row[4] for row in rows} - {None})
        out = []
        for step, body, size, refs, named in rows:
            where = f"run {run_id} snapshot of step {step}"
            ranges = st.load_ranges(refs, len(messages), where)
            sent = st.materialize(messages, ranges)
            limit = self.max_payload_chars
            out.append(st.load_snapshot(body, size, sent, tools.get(named), where, limit))
        return tuple(out)

    def _tool_sets(
        self, conn: sqlite3.Connection, run_id: str, wanted: set[str]
    ) -> dict[str, tuple[ToolDefinition, ...]]:
        """The run's tool sets named in ``wanted``, each read once however many steps share it."""
        if not wanted:
            return {}
        found = {}
        for digest, body, size in conn.execute(_TOOL_SETS, (self.max_payload_chars, run_id)):
            if digest in wanted:
                where = f"run {run_id} tool set {digest}"
                found[digest] = st.load_tools(body, size, where, self.max_payload_chars)
        missing = sorted(wanted - found.keys())
        if missing:
            raise StoreError(
                f"run {run_id}: the tool set {missing[0]} that its snapshots name is missing "
                "(damaged store)"
            )
        return found

    def _steps(
        self, conn: sqlite3.Connection, run_id: str, messages: Messages
    ) -> tuple[StepRecord, ...]:
        out = []
        for step, body, size, refs_in, refs_new in conn.execute(
            _STEPS, (self.max_payload_chars, run_id)
        ):
            where = f"run {run_id} record of step {step}"
            sent = st.materialize(messages, st.load_ranges(refs_in, len(messages), where))
            new = tuple(st.materialize(messages, st.load_ranges(refs_new, len(messages), where)))
            out.append(st.load_step(body, size, sent, new, where, self.max_payload_chars))
        return tuple(out)

    def _no_snapshot(self, conn: sqlite3.Connection | None, run_id: str, step: int) -> str:
        steps = [] if conn is None else [r[0] for r in conn.execute(_SNAPSHOT_STEPS, (run_id,))]
        if not steps:
            return f"no run {run_id!r} with snapshots in {self.path}"
        return (
            f"run {run_id} has no snapshot for step {step} (it has steps {steps[0]}..{steps[-1]})"
        )

    # -- connection -----------------------------------------------------------------------------

    def _connection(self, *, create: bool) -> sqlite3.Connection | None:
        if self._conn is None:
            self._conn = st.open_connection(
                self.path, create=create, busy_timeout=self.busy_timeout
            )
        return self._conn

    @contextmanager
    def _reading(self) -> Iterator[sqlite3.Connection | None]:
        """One read transaction: every query inside sees the same committed data."""
        with self._lock:
            try:
                conn = self._connection(create=False)
                if conn is None:
                    yield None
                    return
                conn.execute("BEGIN")
                try:
                    yield conn
                finally:
                    conn.execute("COMMIT")
            except st.DB_ERRORS as exc:
                raise st.db_error(self.path, exc) from None

    @contextmanager
    def _writing(self) -> Iterator[sqlite3.Connection]:
        """One write transaction, committed as a whole or not at all."""
        with self._lock:
            try:
                conn = self._connection(create=True)
                assert conn is not None
                conn.execute("BEGIN IMMEDIATE")
                try:
                    yield conn
                except BaseException:
                    conn.rollback()
                    raise
                conn.execute("COMMIT")
            except st.DB_ERRORS as exc:
                raise st.db_error(self.path, exc) from None

    # -- writing: the RunObserver side ----------------------------------------------------------

    def run_started(self, state: AgentState) -> None:
        """A run (or a resumed execution) starts: its row and first messages are written."""
        self._guarded(state.run_id, lambda log, conn: put_run(log, conn, state, insert=True))

    def step_started(self, snapshot: StepContext) -> None:
        """PREPARE took a snapshot: write it (and any message it is the first to reference)."""
        self._guarded(snapshot.run_id, lambda log, conn: put_snapshot(log, conn, snapshot))

    def phase_ended(self, event: PhaseEvent, started_at: float) -> None:
        """Keep the latest state; it is written with the step record."""
        log = self._logs.get(event.state.run_id)
        if log is not None:
            log.latest = event.state

    def step_ended(self, record: StepRecord) -> None:
        """A step finished or paused: write its record and the state after it, in one go."""
        self._guarded(record.run_id, lambda log, conn: put_step(log, conn, record))

    def run_ended(self, state: AgentState) -> None:
        """The execution ended or paused: write the final state and forget the run's log."""
        self._guarded(state.run_id, lambda log, conn: put_run(log, conn, state, insert=False))
        with self._lock:
            self._logs.pop(state.run_id, None)

    def _guarded(self, run_id: str, write: _Write) -> None:
        """Run one write transaction for ``run_id``; on failure record it and let the run go on."""
        with self._lock:
            log = None
            try:
                with self._writing() as conn:
                    log = self._log(conn, run_id)
                    write(log, conn)
                    self._text_index_failed(put_queued(log, conn))
                log.committed()
            except Exception as exc:
                if log is not None:
                    log.rolled_back()
                self._write_failed(run_id, exc)

    def _log(self, conn: sqlite3.Connection, run_id: str) -> RunLog:
        """The run's log; read back from the database for a run that was written before."""
        log = self._logs.get(run_id)
        if log is None:
            log = self._logs[run_id] = log_of(conn, run_id)
        return log

    def _text_index_failed(self, error: str | None) -> None:
        """The text index could not be written (a damaged file): say so once; runs go on."""
        if error is not None and not self._index_warned:
            self._index_warned = True
            logger.warning(
                "run store %s: its text search index is damaged (%s); runs are still recorded, "
                "searching their text cannot work",
                self.path,
                error,
            )

    def _write_failed(self, run_id: str, exc: Exception) -> None:
        text = f"run {run_id}: {type(exc).__name__}: {exc}"
        first = not any(e.startswith(f"run {run_id}:") for e in self.write_errors)
        self.write_errors.append(text)
        if first:
            logger.warning("run store %s could not record %s (the run goes on)", self.path, text)


_BODY = "CASE WHEN length(body) <= ?1 THEN body END, length(body)"
_STATE = (
    "SELECT CASE WHEN length(state) <= ?1 THEN state END, length(state), state_messages "
    "FROM runs WHERE run_id = ?2"
)
_MESSAGES = (
    f"SELECT seq, {_BODY} FROM messages WHERE run_id = ?2 AND (?3 < 0 OR seq < ?3) ORDER BY seq"
)
_SNAPSHOTS = (
    f"SELECT step, {_BODY}, messages, tools FROM snapshots WHERE run_id = ?2 ORDER BY step, rowid"
)
_SNAPSHOT = (
    f"SELECT {_BODY}, messages, tools FROM snapshots WHERE run_id = ?2 AND step = ?3 "
    "ORDER BY rowid DESC LIMIT 1"
)
_TOOL_SETS = f"SELECT hash, {_BODY} FROM tool_sets WHERE run_id = ?2"
_SNAPSHOT_STEPS = "SELECT DISTINCT step FROM snapshots WHERE run_id = ? ORDER BY step"
_STEPS = (
    f"SELECT step, {_BODY}, messages_in, new_messages FROM steps WHERE run_id = ?2 ORDER BY seq"
)
_COUNT = "SELECT count(*) FROM messages WHERE run_id = ?"
_INTERRUPTED = (
    f"SELECT count(*) FROM summaries s WHERE s.status IN {st.UNFINISHED_SQL} "
    f"AND {st.LISTED_STATUS} = '{INTERRUPTED}'"
)
_WRITER = "SELECT writer_host, writer_pid, writer_started FROM summaries WHERE run_id = ?"
_RESOLVE = "SELECT run_id FROM runs WHERE substr(run_id, 1, length(?1)) = ?1 ORDER BY created_at"
_LAST = (  # the run last started by someone: a sub-run starts after the run that called it
    "SELECT run_id FROM runs WHERE parent_run_id IS NULL ORDER BY created_at DESC, rowid DESC "
    "LIMIT 1"
)
