"""The SQLite side of the run store: opening a file safely, the schema and its migrations, codecs.

Kept apart from `workbench.store` so the public class reads as "what a store does" while this module
holds "how the bytes look". Two rules shape everything here:

- A file that is not ours, is damaged, or comes from a newer workbench is refused with a
  `StoreError` *before* anything is written to it, so opening never makes damage worse.
- Payloads are JSON validated by the same pydantic models that wrote them; a payload that does not
  validate (unknown part kinds, wrong types) or is larger than the configured limit becomes a
  `StoreError` that names the run and the row, and leaves every other row readable.

Messages are stored once per run, in a per-run sequence (``seq``); snapshots, step records and
states refer to them by half-open ``[start, end)`` ranges of ``seq``. Because a run's conversation
only grows, a reference is usually a single range, so storage is linear in the length of a run.
A snapshot's tool definitions are stored once per run and set of tools (``tool_sets``, keyed by a
hash of their JSON), and the snapshot names its set: an agent's tools rarely change between steps,
and their schemas can outweigh everything else a step writes.
"""

from __future__ import annotations

import json
import os
import sqlite3
import time
from collections.abc import Callable, Sequence
from itertools import chain
from typing import Any, TypeVar

import pydantic_core
from pydantic import TypeAdapter, ValidationError

from workbench._processes import gone
from workbench._runfacts import facts_of
from workbench._textindex import TEXT_INDEX, V5
from workbench.conversation import Messages
from workbench.errors import RunNotFound, StoreError
from workbench.messages import Message, ToolDefinition
from workbench.records import StepContext, StepRecord
from workbench.runfilter import INTERRUPTED
from workbench.state import MIGRATIONS as STATE_MIGRATIONS
from workbench.state import SCHEMA_VERSION as STATE_SCHEMA_VERSION
from workbench.state import AgentState, validation_summary

__all__ = [
    "GONE",
    "LISTED_STATUS",
    "PUT_SUMMARY",
    "PUT_WRITER",
    "STORE_SCHEMA_VERSION",
    "TREE_TOTALS",
    "UNFINISHED",
    "UNFINISHED_SQL",
    "Range",
    "RunNotFound",
    "StoreError",
    "db_error",
    "dump_ranges",
    "dump_snapshot",
    "dump_state",
    "dump_step",
    "dump_tools",
    "load_message",
    "load_ranges",
    "load_snapshot",
    "load_state",
    "load_step",
    "load_tools",
    "materialize",
    "open_connection",
]

STORE_SCHEMA_VERSION = 7
"""Version of the store's table layout. Bump it and add an entry to `_MIGRATIONS` on any change."""

_T = TypeVar("_T")

Range = tuple[int, int]
"""Half-open range ``[start, end)`` of message ``seq`` numbers within one run."""


GONE = "workbench_gone"
"""The SQL function of a store's connection that says whether a writer has ended
(`workbench._processes.gone`)."""
UNFINISHED = ("running", "pending")
"""The stored statuses of a run not yet ended: with its writer gone, it is interrupted."""
UNFINISHED_SQL = f"({', '.join(repr(s) for s in UNFINISHED)})"
LISTED_STATUS = (
    f"CASE WHEN s.status IN {UNFINISHED_SQL} AND "
    f"{GONE}(s.writer_host, s.writer_pid, s.writer_started) THEN '{INTERRUPTED}' ELSE s.status END"
)
"""A run's status as a list shows it (``s`` its summary): as stored, but an unfinished run
whose writing process has ended is `INTERRUPTED`."""

# -- schema -------------------------------------------------------------------------------------

_V1 = (
    """CREATE TABLE runs (
        run_id TEXT PRIMARY KEY,
        agent_name TEXT NOT NULL,
        parent_run_id TEXT,
        rerun_of_run TEXT,
        rerun_of_step INTEGER,
        model_name TEXT,
        status TEXT NOT NULL,
        stop_reason TEXT,
        step INTEGER NOT NULL,
        input_tokens INTEGER NOT NULL,
        output_tokens INTEGER NOT NULL,
        cost REAL,
        output TEXT,
        created_at REAL NOT NULL,
        updated_at REAL NOT NULL,
        state TEXT NOT NULL,
        state_messages TEXT NOT NULL
    )""",
    """CREATE TABLE messages (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        hash TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    ) WITHOUT ROWID""",
    """CREATE TABLE snapshots (
        id TEXT NOT NULL,
        run_id TEXT NOT NULL,
        step INTEGER NOT NULL,
        body TEXT NOT NULL,
        messages TEXT NOT NULL
    )""",
    "CREATE INDEX snapshots_by_run ON snapshots (run_id, step)",
    """CREATE TABLE steps (
        run_id TEXT NOT NULL,
        seq INTEGER NOT NULL,
        step INTEGER NOT NULL,
        body TEXT NOT NULL,
        messages_in TEXT NOT NULL,
        new_messages TEXT NOT NULL,
        PRIMARY KEY (run_id, seq)
    )""",
)

_V2 = (
    # A snapshot's tool definitions, once per run and set of tools: with many tools (an MCP
    # server's) they were most of each snapshot. Older snapshots keep theirs inline (NULL here).
    """CREATE TABLE tool_sets (
        run_id TEXT NOT NULL,
        hash TEXT NOT NULL,
        body TEXT NOT NULL,
        PRIMARY KEY (run_id, hash)
    ) WITHOUT ROWID""",
    "ALTER TABLE snapshots ADD COLUMN tools TEXT",
)

_V3 = (
    # What a run list filters on beyond the run's row (`workbench._runfacts`): a narrow table,
    # so listing 100,000 runs never reads their state payloads. Written with each step.
    """CREATE TABLE summaries (
        run_id TEXT PRIMARY KEY,
        root_run_id TEXT NOT NULL,
        depth INTEGER NOT NULL,
        errors INTEGER,
        first_error TEXT,
        tool_calls INTEGER,
        duration REAL,
        metadata TEXT,
        trace_id TEXT,
        tree_errors INTEGER,
        tree_tool_calls INTEGER,
        subruns INTEGER NOT NULL DEFAULT 0
    ) WITHOUT ROWID""",
    "CREATE INDEX summaries_by_root ON summaries (root_run_id)",
    """CREATE TABLE run_tools (
        run_id TEXT NOT NULL,
        tool TEXT NOT NULL,
        calls INTEGER NOT NULL,
        PRIMARY KEY (run_id, tool)
    ) WITHOUT ROWID""",
    "CREATE INDEX run_tools_by_tool ON run_tools (tool)",
    "CREATE INDEX runs_by_time ON runs (created_at)",
)

_V4 = (
    # A run's status, agent and start on its summary too: a filtered list then reads only the
    # narrow summaries (the run rows, ahead of their state payloads, are ten times wider) and
    # looks a run's row up only for the rows it shows.
    "ALTER TABLE summaries ADD COLUMN status TEXT",
    "ALTER TABLE summaries ADD COLUMN agent_name TEXT",
    "ALTER TABLE summaries ADD COLUMN created_at REAL",
    "UPDATE summaries SET (status, agent_name, created_at) = "
    "(SELECT r.status, r.agent_name, r.created_at FROM runs r WHERE r.run_id = summaries.run_id)",
    "CREATE INDEX summaries_by_time ON summaries (created_at)",
)

_V6 = (
    # Which process writes a run (`workbench._processes`): a run still marked running whose
    # process has ended lists as interrupted. That is decided as the list is read, never written
    # back, so no reader rewrites a row a live writer owns. Runs stored before have no writer:
    # they list as they were stored. The index holds only unfinished runs: a live list asks
    # every second whether one of them was interrupted.
    "ALTER TABLE summaries ADD COLUMN writer_host TEXT",
    "ALTER TABLE summaries ADD COLUMN writer_pid INTEGER",
    "ALTER TABLE summaries ADD COLUMN writer_started TEXT",
    f"CREATE INDEX summaries_unfinished ON summaries (status) WHERE status IN {UNFINISHED_SQL}",
)

_V7 = (
    # A rolled-up row's steps are its tree's, as its errors and tool calls are: each run's steps
    # on its summary (its row has them too, ahead of its payload), the tree's on its root's.
    "ALTER TABLE summaries ADD COLUMN steps INTEGER",
    "ALTER TABLE summaries ADD COLUMN tree_steps INTEGER",
    "UPDATE summaries SET steps = (SELECT r.step FROM runs r WHERE r.run_id = summaries.run_id)",
    "UPDATE summaries SET tree_steps = (SELECT sum(t.steps) FROM summaries t "
    "WHERE t.root_run_id = summaries.run_id) WHERE depth = 0",
)

_MIGRATIONS: dict[int, tuple[str, ...]] = {
    1: _V1, 2: _V2, 3: _V3, 4: _V4, 5: V5, 6: _V6, 7: _V7,
}  # fmt: skip
"""Statements that take the store from version ``n - 1`` to ``n``."""


def open_connection(path: str, *, create: bool, busy_timeout: float) -> sqlite3.Connection | None:
    """A connection to a checked, up-to-date store; None when the file is absent and not created.

    Raises `StoreError` for a foreign, damaged or newer file, without writing to it.
    """
    memory = path == ":memory:"
    if not memory:
        if not os.path.exists(path):
            if not create:
                return None
            os.makedirs(os.path.dirname(path) or ".", exist_ok=True)
        else:
            try:
                _check_header(path)
            except OSError as exc:
                raise StoreError(f"run store {path} cannot be read: {exc}") from None
    conn = sqlite3.connect(
        path, timeout=busy_timeout, isolation_level=None, check_same_thread=False
    )
    conn.create_function(GONE, 3, gone)  # the listed status asks it (`LISTED_STATUS`)
    try:
        _prepare(conn, path, memory)
    except DB_ERRORS as exc:
        conn.close()
        raise db_error(path, exc) from None
    except StoreError:
        conn.close()
        raise
    return conn


def _prepare(conn: sqlite3.Connection, path: str, memory: bool) -> None:
    conn.execute("PRAGMA synchronous=NORMAL")  # WAL + NORMAL: a killed process loses no commit
    version = _version(conn, path)
    if version == STORE_SCHEMA_VERSION:
        return
    if not memory:
        conn.execute("PRAGMA journal_mode=WAL")  # readers never block the writer, nor it them
    conn.execute("BEGIN IMMEDIATE")
    try:
        _migrate(conn, path, _version(conn, path))  # again: another process may have migrated
        conn.execute("COMMIT")
    except BaseException:
        conn.rollback()
        raise


def _version(conn: sqlite3.Connection, path: str) -> int:
    """The store schema version; 0 for an empty database; StoreError if newer or not ours."""
    tables = {r[0] for r in conn.execute("SELECT name FROM sqlite_master WHERE type='table'")}
    if "schema_version" not in tables:
        if tables:
            raise StoreError(
                f"{path} is a SQLite database but not a workbench run store (it has tables "
                f"{', '.join(sorted(tables))}); it was left untouched"
            )
        return 0
    row = conn.execute("SELECT max(version) FROM schema_version").fetchone()
    version = row[0] if row else None
    if not isinstance(version, int):
        raise StoreError(f"{path}: the store's schema_version table is empty or damaged")
    if version > STORE_SCHEMA_VERSION:
        raise StoreError(
            f"{path} was written by a newer workbench (store schema version {version}); this "
            f"workbench reads up to version {STORE_SCHEMA_VERSION}. Upgrade workbench to read "
            "it; the file was left untouched"
        )
    return version


def _migrate(conn: sqlite3.Connection, path: str, version: int) -> None:
    if version == 0:
        conn.execute(
            "CREATE TABLE schema_version (version INTEGER PRIMARY KEY, applied_at REAL NOT NULL)"
        )
    for target in range(version + 1, STORE_SCHEMA_VERSION + 1):
        for statement in _MIGRATIONS[target]:
            conn.execute(statement)
        conn.execute("INSERT INTO schema_version VALUES (?, ?)", (target, time.time()))
    if version < 3:  # the runs stored before summaries, summarized in today's layout
        _fill_summaries(conn)
    if version:  # SQLite's statistics of the tables as they now are: they steer its plans
        conn.execute("ANALYZE")


_SUMMARY_COLUMNS = (
    "run_id", "root_run_id", "depth", "errors", "first_error", "tool_calls", "duration",
    "metadata", "trace_id", "status", "agent_name", "created_at", "steps",
)  # fmt: skip
PUT_SUMMARY = (
    f"INSERT INTO summaries ({', '.join(_SUMMARY_COLUMNS)}) "
    f"VALUES ({', '.join('?' * len(_SUMMARY_COLUMNS))}) ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _SUMMARY_COLUMNS[1:])
)
"""Write a run's own summary (`RunFacts.row`), keeping its tree's totals."""
PUT_WRITER = (
    "UPDATE summaries SET (writer_host, writer_pid, writer_started) = (?, ?, ?) WHERE run_id = ?"
)
"""Record the process writing a run (`workbench._processes.this_process`), then the run id."""
TREE_TOTALS = (
    "(tree_errors, tree_tool_calls, tree_steps, subruns) = (SELECT sum(t.errors), "
    "sum(t.tool_calls), sum(t.steps), count(*) - 1 FROM summaries t "
    "WHERE t.root_run_id = summaries.run_id)"
)
"""A root's totals over its tree (``SET`` this ``WHERE`` the root): what a rolled-up row shows,
kept on the root's row so a rolled-up list reads one row per tree, like any list."""


_STEP_BODIES = "SELECT step, body FROM steps WHERE run_id = ? ORDER BY seq"
_UNKNOWN_SUMMARY = (
    "INSERT INTO summaries (run_id, root_run_id, depth, status, agent_name, created_at, steps) "
    "SELECT run_id, ?2, 0, status, agent_name, created_at, step FROM runs WHERE run_id = ?1"
)
"""A run whose records cannot be read: its errors and tools unknown (NULL), its row's steps."""


def _fill_summaries(conn: sqlite3.Connection) -> None:
    """Summarize the runs stored before version 3, from their states and step records.

    A run whose state or steps cannot be read is listed with its errors and tools unknown
    (NULL) rather than failing the migration: the listing is how a person finds what is left.
    """
    roots: dict[str, str] = {}
    rows = conn.execute("SELECT run_id, parent_run_id, state FROM runs ORDER BY created_at, rowid")
    for run_id, parent, body in rows:
        root = roots.get(parent, parent) if parent else run_id
        roots[run_id] = root
        try:
            state = load_state(body, len(body), Messages(), f"run {run_id} state", len(body))
            steps = conn.execute(_STEP_BODIES, (run_id,))
            where = f"run {run_id} record of step {{}}"
            facts = facts_of(
                (load_step(b, len(b), Messages(), (), where.format(n), len(b)) for n, b in steps),
                state,
            )
        except (StoreError, TypeError):  # TypeError: a payload that is not text
            conn.execute(_UNKNOWN_SUMMARY, (run_id, root))
            continue
        conn.execute(PUT_SUMMARY, facts.row(state, root))
        conn.executemany(
            "INSERT INTO run_tools VALUES (?, ?, ?)",
            [(run_id, tool, calls) for tool, calls in facts.tool_calls.items()],
        )
    conn.execute(f"UPDATE summaries SET {TREE_TOTALS} WHERE depth = 0")


def _check_header(path: str) -> None:
    """Refuse a file that is not SQLite, or is shorter than its own header says (truncated).

    The size check is only safe with no ``-wal`` file beside it: while a writer is active, pages
    may live in the WAL and the main file can legitimately lag behind.
    """
    size = os.path.getsize(path)
    if size == 0:
        return
    with open(path, "rb") as file:
        head = file.read(100)
    if len(head) < 100 or not head.startswith(b"SQLite format 3\x00"):
        raise StoreError(
            f"{path} is not a SQLite database (or its header is damaged); it was left untouched"
        )
    if os.path.exists(f"{path}-wal"):
        return
    page_size = int.from_bytes(head[16:18], "big")
    page_size = 65536 if page_size == 1 else page_size
    pages = int.from_bytes(head[28:32], "big")
    if head[24:28] == head[92:96] and pages and size < pages * page_size:
        raise StoreError(
            f"{path} is truncated: its header counts {pages:,} pages of {page_size:,} bytes "
            f"({pages * page_size:,} bytes) but the file has {size:,} bytes. It was left "
            "untouched; restore it from a copy"
        )


DB_ERRORS = (sqlite3.Error, UnicodeDecodeError)
"""What SQLite can raise on a damaged file. A damaged schema makes SQLite quote the damaged bytes
in its error message, and Python, unable to decode that message, raises `UnicodeDecodeError`
in place of the `sqlite3.Error`."""


def db_error(path: str, exc: sqlite3.Error | UnicodeDecodeError) -> StoreError:
    """A `StoreError` for an error SQLite raised, saying which store and what to suspect."""
    if isinstance(exc, UnicodeDecodeError):
        text = "SQLite's error message quotes bytes that are not text"
    else:
        text = str(exc)
    hint = ""
    damage = ("malformed", "not a database", "disk image", "not text")
    if TEXT_INDEX in text or "fts5" in text:  # `workbench._textindex`
        hint = (
            " (the store's text search index is damaged: searching text cannot work, the runs "
            "and every other filter are intact)"
        )
    elif any(word in text for word in damage):
        hint = " (the file looks damaged; it was not modified)"
    elif "locked" in text or "busy" in text:
        hint = " (another process holds a write lock for too long)"
    return StoreError(f"run store {path}: {type(exc).__name__}: {text}{hint}")


# -- payload codecs -----------------------------------------------------------------------------


def dump_state(state: AgentState) -> str:
    """The state as JSON without its messages (those are referenced by ranges)."""
    return state.model_dump_json(exclude={"messages"})


def dump_snapshot(snapshot: StepContext) -> str:
    """The snapshot as JSON without its state's messages and its tool definitions."""
    return snapshot.model_dump_json(exclude={"state": {"messages"}, "tool_definitions": True})


def dump_tools(definitions: Sequence[ToolDefinition]) -> str:
    """Tool definitions as a JSON array (a row of ``tool_sets``)."""
    return pydantic_core.to_json(definitions).decode()


def dump_step(record: StepRecord) -> str:
    """The step record as JSON without its messages."""
    return record.model_dump_json(exclude={"messages_in", "new_messages"})


def dump_ranges(ranges: Sequence[Range]) -> str:
    """Ranges as compact JSON."""
    return json.dumps(ranges, separators=(",", ":"))


def load_message(body: str | None, size: int, where: str, limit: int) -> Message:
    """A message from its row."""
    return _validated(Message.model_validate_json, body, size, where, limit, "a valid message")


def load_state(
    body: str | None, size: int, messages: Messages, where: str, limit: int
) -> AgentState:
    """A state from its JSON (without messages) and its messages.

    The messages were validated one by one as they were read; they join the validated state
    afterwards, so loading a snapshot costs nothing per message it shares with the others.
    """
    raw = _current_state(_object(_bounded(body, size, where, limit), where), where)
    raw["messages"] = ()
    try:
        state = AgentState.model_validate(raw)
    except ValidationError as exc:
        raise StoreError(
            f"{where} is not a valid state: {validation_summary(exc, limit=3)}"
        ) from None
    return state.model_copy(update={"messages": messages})


def load_snapshot(
    body: str | None,
    size: int,
    messages: Messages,
    tools: tuple[ToolDefinition, ...] | None,
    where: str,
    limit: int,
) -> StepContext:
    """A snapshot from its JSON (without the state's messages), those messages and its tools.

    ``tools`` is None for a snapshot that holds its tool definitions itself (or has none).
    """
    raw = _object(_bounded(body, size, where, limit), where)
    state = raw.get("state")
    if not isinstance(state, dict):
        raise StoreError(f"{where}: the snapshot has no state object")
    state = raw["state"] = _current_state(state, where)
    state["messages"] = ()
    try:
        snapshot = StepContext.model_validate(raw)
    except ValidationError as exc:
        raise StoreError(
            f"{where} is not a valid snapshot: {validation_summary(exc, limit=3)}"
        ) from None
    full = snapshot.state.model_copy(update={"messages": messages})
    stored = {} if tools is None else {"tool_definitions": tools}
    return snapshot.model_copy(update={"state": full, **stored})


_TOOL_SET = TypeAdapter(tuple[ToolDefinition, ...])


def load_tools(body: str | None, size: int, where: str, limit: int) -> tuple[ToolDefinition, ...]:
    """The tool definitions of a ``tool_sets`` row."""
    what = "a list of tool definitions"
    return _validated(_TOOL_SET.validate_json, body, size, where, limit, what)


def _validated(
    validate: Callable[[str], _T], body: str | None, size: int, where: str, limit: int, what: str
) -> _T:
    """A row's JSON payload validated (`StoreError` saying ``where`` is not ``what``)."""
    text = _bounded(body, size, where, limit)
    try:
        return validate(text)
    except ValidationError as exc:
        raise StoreError(f"{where} is not {what}: {validation_summary(exc, limit=3)}") from None


def load_step(
    body: str | None,
    size: int,
    messages_in: Messages,
    new_messages: tuple[Message, ...],
    where: str,
    limit: int,
) -> StepRecord:
    """A step record from its JSON (without messages) and its messages."""
    raw = _object(_bounded(body, size, where, limit), where)
    raw["messages_in"], raw["new_messages"] = (), ()
    try:
        record = StepRecord.model_validate(raw)
    except ValidationError as exc:
        raise StoreError(
            f"{where} is not a valid step record: {validation_summary(exc, limit=3)}"
        ) from None
    return record.model_copy(update={"messages_in": messages_in, "new_messages": new_messages})


def load_ranges(text: str, count: int, where: str) -> list[Range]:
    """Ranges from JSON, checked against the number of messages the run has."""
    try:
        raw = json.loads(text)
    except (ValueError, RecursionError):
        raise StoreError(f"{where}: message references are not valid JSON") from None
    ok = isinstance(raw, list) and all(
        isinstance(r, list)
        and len(r) == 2
        and all(type(x) is int for x in r)
        and 0 <= r[0] < r[1] <= count
        for r in raw
    )
    if not ok:
        raise StoreError(
            f"{where}: message references {_clip(text)} do not fit the run's {count} messages"
        )
    return [(r[0], r[1]) for r in raw]


def materialize(messages: Messages, ranges: Sequence[Range]) -> Messages:
    """The messages the ranges refer to, in order (sharing the message objects).

    A run's states, snapshots and records mostly refer to a prefix of its messages: that is a
    view of the run's one log (`workbench.conversation`), so a loaded run holds its messages
    once, as the live run did, not once per step.
    """
    if len(ranges) == 1:
        start, end = ranges[0]
        return messages[start:end]
    return Messages(chain.from_iterable(messages[a:b] for a, b in ranges))


def _bounded(body: str | None, size: int, where: str, limit: int) -> str:
    """The payload, unless it is larger than the limit (it is then never read into memory)."""
    if body is None or size > limit:
        raise StoreError(
            f"{where}: payload of {size:,} characters is over the store's limit of {limit:,} "
            "(RunStore(max_payload_chars=...) raises it); not loaded"
        )
    return body


def _object(text: str, where: str) -> dict[str, Any]:
    try:
        raw = pydantic_core.from_json(text)
    except ValueError as exc:
        raise StoreError(f"{where}: payload is not valid JSON ({exc})") from None
    if not isinstance(raw, dict):
        raise StoreError(f"{where}: payload must be a JSON object, got {type(raw).__name__}")
    return raw


def _current_state(raw: dict[str, Any], where: str) -> dict[str, Any]:
    """A stored state in today's layout: an older version migrated, a newer one refused."""
    version = raw.get("schema_version")
    if isinstance(version, int) and version in STATE_MIGRATIONS:
        return STATE_MIGRATIONS[version](raw)
    if version != STATE_SCHEMA_VERSION:
        newer = isinstance(version, int) and version > STATE_SCHEMA_VERSION
        raise StoreError(
            f"{where}: state schema version {version!r} is not supported: this workbench reads "
            f"version {STATE_SCHEMA_VERSION}" + (" (written by a newer workbench)" if newer else "")
        )
    return raw


def _clip(text: str, limit: int = 60) -> str:
    return text if len(text) <= limit else f"{text[:limit]}…"
