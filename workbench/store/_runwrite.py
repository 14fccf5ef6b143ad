"""The rows each of a run's events becomes, written inside the transaction `RunStore` opened.

A run's row (its state and the columns a run list shows), the snapshot PREPARE took, the step
record with the state after it, and the run's summary (errors, tools, time, its tree's totals)
kept beside its row. These functions own nothing: what the store remembers of a run between two
events is its `RunLog`, read back from the rows here for a run written before (by another
process, or before a resume); the transaction, and what happens when it fails, are the store's.
"""

from __future__ import annotations

import sqlite3
import time
from typing import Any

from workbench import _storage as st
from workbench._processes import this_process
from workbench._runfacts import RunFacts
from workbench._textindex import put_texts
from workbench.records import StepContext, StepRecord
from workbench.state import AgentState
from workbench.store._runlog import RunLog


def log_of(conn: sqlite3.Connection, run_id: str) -> RunLog:
    """A run's log as its rows say: which messages and tool sets it has, its next step."""
    log = RunLog(run_id)
    for seq, digest in conn.execute("SELECT seq, hash FROM messages WHERE run_id = ?", (run_id,)):
        log.by_hash.setdefault(digest, seq)
        log.next_seq = max(log.next_seq, seq + 1)
    tool_sets = conn.execute("SELECT hash FROM tool_sets WHERE run_id = ?", (run_id,))
    log.tool_sets.update(digest for (digest,) in tool_sets)
    row = conn.execute("SELECT max(seq) FROM steps WHERE run_id = ?", (run_id,)).fetchone()
    log.next_step = 0 if row[0] is None else row[0] + 1
    return log


def put_queued(log: RunLog, conn: sqlite3.Connection) -> str | None:
    """The messages and tool sets an event was the first to name; the text index's error, if any."""
    conn.executemany("INSERT INTO messages VALUES (?, ?, ?, ?)", log.rows)
    failed = put_texts(conn, log.rows)
    if log.tool_rows:  # rare: a run's first step, or new tools
        conn.executemany("INSERT INTO tool_sets VALUES (?, ?, ?)", log.tool_rows)
    return failed


def put_run(log: RunLog, conn: sqlite3.Connection, state: AgentState, *, insert: bool) -> None:
    """The run's row (``insert``: its first, or a resumed execution's) and its summary."""
    ranges = st.dump_ranges(log.refs(state.messages, full=True))
    values = (*_run_values(state), st.dump_state(state), ranges)
    if insert:
        conn.execute(_INSERT_RUN, (state.run_id, state.created_at, *values))
    else:
        conn.execute(_UPDATE_RUN, (*values, state.run_id))
    facts = _facts(log, conn)
    if log.latest is None:  # the run as the step records are counted (its agent, depth)
        log.latest = state
    if log.root_run_id is None:
        log.root_run_id = _root(conn, state)
    conn.execute(st.PUT_SUMMARY, facts.row(state, log.root_run_id))
    if insert:  # an execution is written by the process that started it, to its end
        conn.execute(st.PUT_WRITER, (*this_process(), state.run_id))
    conn.execute(f"UPDATE summaries SET {st.TREE_TOTALS} WHERE run_id = ?", (log.root_run_id,))


def put_snapshot(log: RunLog, conn: sqlite3.Connection, snapshot: StepContext) -> None:
    """The snapshot PREPARE took, its messages and tools by reference."""
    ranges = st.dump_ranges(log.refs(snapshot.state.messages, full=True))
    tools = log.tools_ref(snapshot.tool_definitions)
    body = st.dump_snapshot(snapshot)
    conn.execute(
        "INSERT INTO snapshots (id, run_id, step, body, messages, tools) VALUES (?, ?, ?, ?, ?, ?)",
        (snapshot.id, snapshot.run_id, snapshot.step, body, ranges, tools),
    )
    if snapshot.model_name != log.model_name:  # once per execution: one page less a step
        conn.execute(
            "UPDATE runs SET model_name = ? WHERE run_id = ?",
            (snapshot.model_name, snapshot.run_id),
        )
        log.model_name = snapshot.model_name


def put_step(log: RunLog, conn: sqlite3.Connection, record: StepRecord) -> None:
    """A step's record, the tools it called counted, and the run's row with the state after it."""
    sent = st.dump_ranges(log.refs(record.messages_in))
    new = st.dump_ranges(log.refs(record.new_messages))
    conn.execute(
        "INSERT INTO steps VALUES (?, ?, ?, ?, ?, ?)",
        (record.run_id, log.next_step, record.index, st.dump_step(record), sent, new),
    )
    log.next_step += 1
    facts = _facts(log, conn)
    assert log.latest is not None  # the run's row (`put_run`) is written first
    called = facts.add_step(record, log.latest)
    conn.executemany(
        _PUT_TOOL, [(record.run_id, tool, facts.tool_calls[tool]) for tool in sorted(called)]
    )
    if log.latest is not None:
        put_run(log, conn, log.latest, insert=False)


def _facts(log: RunLog, conn: sqlite3.Connection) -> RunFacts:
    """The run's summary so far, read back for a run written before (or after a rollback)."""
    if log.facts is None:
        log.facts = RunFacts()
        row = conn.execute(_SUMMARY, (log.run_id,)).fetchone()
        if row is not None:
            log.root_run_id, errors, first, duration = row
            log.facts.errors, log.facts.first_error = errors or 0, first
            log.facts.duration = duration or 0.0
        tools = conn.execute("SELECT tool, calls FROM run_tools WHERE run_id = ?", (log.run_id,))
        log.facts.tool_calls.update(tools)
    return log.facts


def _run_values(state: AgentState) -> tuple[Any, ...]:
    """The summary columns of a run's row, in `_UPDATE_RUN` order."""
    rerun = state.rerun_of
    output = state.output
    return (
        state.agent_name,
        state.parent_run_id,
        rerun.run_id if rerun else None,
        rerun.step if rerun else None,
        state.status.value,
        state.stop_reason.value if state.stop_reason else None,
        state.step,
        state.usage.input_tokens,
        state.usage.output_tokens,
        state.usage.cost,
        output[:200] if output else None,
        time.time(),
    )


def _root(conn: sqlite3.Connection, state: AgentState) -> str:
    """The run at the top of ``state``'s tree: its parent's root (the parent was written first)."""
    if state.parent_run_id is None:
        return state.run_id
    row = conn.execute("SELECT root_run_id FROM summaries WHERE run_id = ?", (state.parent_run_id,))
    found = row.fetchone()
    return str(found[0]) if found is not None else state.parent_run_id


_RUN_COLUMNS = (
    "agent_name, parent_run_id, rerun_of_run, rerun_of_step, status, stop_reason, step, "
    "input_tokens, output_tokens, cost, output, updated_at, state, state_messages"
)
_INSERT_RUN = (
    f"INSERT INTO runs (run_id, created_at, {_RUN_COLUMNS}) VALUES ({', '.join('?' * 16)}) "
    "ON CONFLICT (run_id) DO UPDATE SET "
    + ", ".join(f"{c} = excluded.{c}" for c in _RUN_COLUMNS.split(", "))
)
_UPDATE_RUN = (
    "UPDATE runs SET "
    + ", ".join(f"{c} = ?" for c in _RUN_COLUMNS.split(", "))
    + " WHERE run_id = ?"
)
_SUMMARY = "SELECT root_run_id, errors, first_error, duration FROM summaries WHERE run_id = ?"
_PUT_TOOL = (
    "INSERT INTO run_tools VALUES (?, ?, ?) "
    "ON CONFLICT (run_id, tool) DO UPDATE SET calls = excluded.calls"
)
