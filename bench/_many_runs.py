"""A run store of N runs for the run-list benchmark: real runs of the eval, copied in SQL.

``workbench.demo.run_eval`` writes ``REAL`` runs through the store as an eval would (tool errors,
failures, metadata); the rest are copies of those rows in every table (state, messages,
snapshots, steps, summaries, tools) under new run ids and later start times, made in SQL
(`copy_runs`, which tests use too), because writing 100,000 runs through an agent takes most
of an hour on this machine. A copy's payloads still name the run it was copied from, which no
listing reads; the copies' texts are indexed for text search in one go at the end, as the
store's own migration indexes a store.
"""

from __future__ import annotations

import itertools
import sqlite3
from pathlib import Path

import workbench as wb
from workbench.demo import run_eval

REAL = 1_000
"""How many runs are made by the agent (the rest are copies of them)."""

_TABLES = (
    "runs", "messages", "message_texts", "snapshots", "steps", "tool_sets", "summaries",
    "run_tools",
)  # fmt: skip
_RENAMED = {
    "run_id": "run_id || :suffix",
    "root_run_id": "root_run_id || :suffix",
    "parent_run_id": "parent_run_id || :suffix",
    "created_at": "created_at + :shift",
    "updated_at": "updated_at + :shift",
}


def build(path: Path, n: int) -> wb.RunStore:
    """A store at ``path`` holding ``n`` runs (at least ``REAL`` of them real)."""
    with wb.RunStore(path) as store:
        run_eval(min(n, REAL), store)
    copy_runs(path, n)
    return wb.RunStore(path)


def copy_runs(path: Path, n: int) -> None:
    """Fill the store at ``path`` up to ``n`` runs with copies of the runs it holds.

    Each round copies every run (in every table, under new ids, later than the runs before it),
    doubling the store, until it holds ``n`` or more; then the newest are cut to leave ``n``.
    """
    conn = sqlite3.connect(path)
    try:
        with conn:
            for copy in itertools.count(1):
                count, span = conn.execute(
                    "SELECT count(*), max(created_at) - min(created_at) + 1 FROM runs"
                ).fetchone()
                if count >= n:
                    break
                for table in _TABLES:
                    columns = [
                        column
                        for (_, column, *_) in conn.execute(f"PRAGMA table_info({table})")
                        if (table, column) != ("message_texts", "id")  # a copy gets a new one
                    ]
                    values = ", ".join(_RENAMED.get(c, c) for c in columns)
                    conn.execute(
                        f"INSERT INTO {table} ({', '.join(columns)}) SELECT {values} FROM {table}",
                        {"suffix": f"~{copy}", "shift": span},
                    )
            newest = "SELECT run_id FROM runs ORDER BY created_at DESC LIMIT ?"
            doomed = conn.execute(newest, (count - n,)).fetchall()
            for table in _TABLES:
                conn.executemany(f"DELETE FROM {table} WHERE run_id = ?", doomed)
            # the copies' texts indexed as the store indexes a run's: the index made again
            conn.execute("INSERT INTO message_text_index (message_text_index) VALUES ('rebuild')")
    finally:
        conn.close()
