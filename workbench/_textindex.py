"""Text search in a run store: the readable text of every message, and a trigram index of it.

A person searching runs for "unicorn" means the words they read: message texts, tool results,
tool-call arguments, not the JSON around them (``role`` or ``tool_call`` match nothing). Those
leaves of each stored message (`TEXT_LEAVES`) are rows of ``message_texts``, written with the
message, and an FTS5 index of their trigrams (store schema 5, `V5`) finds the rows holding a
text without reading the others. Trigrams, not words: a substring such as "nicor" is found in
"unicorn", as the search always did. The index keeps no copy of the text (``content=``): it points
into ``message_texts``, and it is written apart from the run's rows, under a savepoint, so a
damaged index costs text search, never a run.
"""

from __future__ import annotations

import sqlite3
from collections.abc import Sequence

__all__ = ["TEXT_INDEX", "TEXT_LEAVES", "V5", "drop_texts", "put_texts", "text_term"]

TEXT_LEAVES = (
    "j.type = 'text' AND (j.key IN ('text', 'content', 'invalid_arguments') "
    "OR instr(j.fullkey, '.arguments') > 0)"
)
"""The parts of a stored message a person reads (``j``, a row of its `json_tree`): texts, tool
results, tool call arguments; not the keys and tags around them (``role``, ``tool_call``)."""
TEXT_INDEX = "message_text_index"
"""The full-text index of what `TEXT_LEAVES` picks out of every message (``message_texts``)."""

V5 = (
    # Before it, a text search read every message of the runs the other filters kept: 1-3 s
    # over 100,000 runs.
    "CREATE TABLE message_texts (id INTEGER PRIMARY KEY, run_id TEXT NOT NULL, text TEXT NOT NULL)",
    "CREATE INDEX message_texts_by_run ON message_texts (run_id)",
    f"CREATE VIRTUAL TABLE {TEXT_INDEX} USING fts5(text, content='message_texts', "
    "content_rowid='id', tokenize='trigram')",
    # the messages stored before it (one that is not JSON, in a damaged file, has no text)
    "INSERT INTO message_texts (run_id, text) SELECT m.run_id, j.atom "
    f"FROM messages m, json_tree(m.body) j WHERE json_valid(m.body) AND {TEXT_LEAVES}",
    f"INSERT INTO {TEXT_INDEX} ({TEXT_INDEX}) VALUES ('rebuild')",
)


_PUT_TEXT = (
    "INSERT INTO message_texts (run_id, text) SELECT ?1, j.atom FROM json_tree(?2) j "
    f"WHERE {TEXT_LEAVES}"
)


def put_texts(conn: sqlite3.Connection, rows: Sequence[tuple[str, int, str, str]]) -> str | None:
    """Keep the readable text of message rows (run, seq, hash, JSON) and index it.

    The texts are written in the caller's transaction, with the messages; the index under a
    savepoint of its own. An index SQLite cannot write (a damaged file) is left as it is and
    its error returned: the run's rows are written all the same, and a text search says the
    index is damaged (`_storage.db_error`).
    """
    if not rows:
        return None
    (last,) = conn.execute("SELECT coalesce(max(id), 0) FROM message_texts").fetchone()
    conn.executemany(_PUT_TEXT, [(run_id, body) for run_id, _, _, body in rows])
    return _in_index(
        conn,
        f"INSERT INTO {TEXT_INDEX} (rowid, text) SELECT id, text FROM message_texts WHERE id > ?",
        last,
    )


def drop_texts(conn: sqlite3.Connection, run_id: str) -> str | None:
    """Remove a run's texts and their index entries (the index's error, if any, returned)."""
    error = _in_index(
        conn,
        f"INSERT INTO {TEXT_INDEX} ({TEXT_INDEX}, rowid, text) "
        "SELECT 'delete', id, text FROM message_texts WHERE run_id = ?",
        run_id,
    )
    conn.execute("DELETE FROM message_texts WHERE run_id = ?", (run_id,))
    return error


def _in_index(conn: sqlite3.Connection, statement: str, value: object) -> str | None:
    conn.execute("SAVEPOINT text_index")
    try:
        conn.execute(statement, (value,))
    except (sqlite3.Error, UnicodeDecodeError) as exc:  # as `_storage.DB_ERRORS`
        if conn.in_transaction:  # some errors end the transaction: the caller's write fails
            conn.execute("ROLLBACK TO text_index")
            conn.execute("RELEASE text_index")
        return f"{type(exc).__name__}: {exc}"
    conn.execute("RELEASE text_index")
    return None


def _like(text: str) -> str:
    """A LIKE pattern matching ``text`` anywhere (its wildcards escaped with a backslash)."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    return f"%{escaped}%"


def text_term(text: str) -> tuple[str, list[object]]:
    """Runs with ``text`` in what a person reads of their messages (ASCII case folded).

    Three characters or more are looked up in the trigram index (the phrase of the text's
    trigrams: a superset, the index folding every letter's case), then checked with ``LIKE``,
    which keeps the meaning the search always had; a shorter text has no trigram to look up,
    and is looked for in the texts themselves.
    """
    like = "t.text LIKE ? ESCAPE '\\'"
    if len(text) < 3:
        return f"s.run_id IN (SELECT t.run_id FROM message_texts t WHERE {like})", [_like(text)]
    phrase = '"' + text.replace('"', '""') + '"'
    return (
        f"s.run_id IN (SELECT t.run_id FROM {TEXT_INDEX} JOIN message_texts t "
        f"ON t.id = {TEXT_INDEX}.rowid WHERE {TEXT_INDEX} MATCH ? AND {like})"
    ), [phrase, _like(text)]
