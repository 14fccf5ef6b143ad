"""`wb.runs` and `RunStore.find`: a store's runs listed, filtered, sorted, paged and rolled up.

The runs are real runs of real agents written by the store as they went (tool errors, a model
that fails, a tree with a sub-agent, a paused run, metadata, text); the listing is read back
through the public API only. A store from before the summary table is migrated to the same
listing as the live writer made.
"""

from __future__ import annotations

import shutil
import sqlite3
import time
from datetime import datetime
from pathlib import Path

import pandas as pd
import pytest
from pydantic import ValidationError

import workbench as wb
from bench._many_runs import copy_runs
from workbench.notebook import RunsBrowser
from workbench.runlist import StoreRuns
from workbench.store._frame import frame_of_summaries


@wb.tool
def lookup(key: str) -> str:
    """Look a key up."""
    if key == "bad":
        raise ValueError("no such key: bad")
    return f"value of {key}"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool(requires_approval=True)
def save(text: str) -> str:
    """Save a text."""
    return "saved"


def _solver(store: wb.RunStore, key: str, answer: str = "done", name: str = "solver") -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(
            [
                wb.ModelResponse.tool_call("lookup", {"key": key}),
                wb.ModelResponse.tool_call("add", {"a": 1, "b": 2}),
                answer,
            ]
        ),
        tools=[lookup, add],
        name=name,
        store=store,
    )


def _broken_model(messages: list[wb.Message], settings: object) -> wb.ModelResponse:
    raise ConnectionError("the model server hung up")


class Runs:
    """The runs of the fixture's store, by what each is for."""

    def __init__(self, store: wb.RunStore) -> None:
        self.ok = _solver(store, "k1").run_sync("Task 1: zebra crossing", metadata={"task": 1})
        self.tool_error = _solver(store, "bad").run_sync("Task 2", metadata={"task": "1"})
        self.between = time.time()
        self.failed = wb.Agent(
            model=wb.FunctionModel(_broken_model), name="flaky", store=store
        ).run_sync("Task 3", metadata={"split": "dev", "task": 3})
        helper = _solver(store, "bad", answer="helped", name="helper")
        lead = wb.Agent(
            model=wb.ScriptedModel([wb.ModelResponse.tool_call("ask", {"task": "x"}), "led"]),
            name="lead",
            tools=[helper.as_tool("ask", "Ask the helper.")],
            store=store,
        )
        self.lead = lead.run_sync("Task 4: 100% sure_thing")
        self.helper = self.lead.children[0]


@pytest.fixture
def store(tmp_path: Path) -> wb.RunStore:
    return wb.RunStore(tmp_path / "runs.sqlite")


@pytest.fixture
def runs(store: wb.RunStore) -> Runs:
    return Runs(store)


def _ids(frame: pd.DataFrame) -> list[str]:
    return list(frame["run"])


def _damage(store: wb.RunStore, sql: str, *params: object) -> None:
    """Change the store's file behind its back, as a damaged disk or a hand edit would."""
    store.close()
    conn = sqlite3.connect(store.path)
    with conn:
        conn.execute(sql, params)
    conn.close()


def test_a_run_list_has_what_a_triage_needs(store: wb.RunStore, runs: Runs) -> None:
    frame = wb.runs(store)
    assert _ids(frame) == [
        r.run_id for r in (runs.ok, runs.tool_error, runs.failed, runs.lead, runs.helper)
    ]
    row = frame.iloc[0]
    assert (row.agent, row.status, row.stop_reason, row.steps) == (
        "solver",
        "completed",
        "completed",
        3,
    )
    assert row.tools == ("add", "lookup") and row.errors == 0 and pd.isna(row.first_error)
    assert row.tokens == runs.ok.usage.input_tokens + runs.ok.usage.output_tokens
    assert row.duration == pytest.approx(sum(s.timing.total for s in runs.ok.steps))
    assert row.metadata == {"task": 1} and row.trace_id == runs.ok.state.trace_id
    assert isinstance(row.started, pd.Timestamp) and row.depth == 0 and pd.isna(row.parent)

    error = frame.iloc[1]
    assert error.errors == 1
    assert error.first_error == runs.tool_error.errors[0].line  # the same errors as the run's
    assert error.first_error == "step 1, lookup in solver: ValueError: no such key: bad"

    failed = frame.iloc[2]
    assert (failed.status, failed.stop_reason, failed.errors) == ("failed", "error", 1)
    assert failed.first_error == "step 1 in flaky: ConnectionError: the model server hung up"

    helper = frame.iloc[4]
    assert (helper.parent, helper.depth, helper.errors) == (runs.lead.run_id, 1, 1)


def test_filters(store: wb.RunStore, runs: Runs) -> None:
    assert _ids(wb.runs(store, status="failed")) == [runs.failed.run_id]
    assert set(_ids(wb.runs(store, errors=True))) == {
        runs.tool_error.run_id,
        runs.failed.run_id,
        runs.helper.run_id,
    }
    assert _ids(wb.runs(store, errors=False)) == [runs.ok.run_id, runs.lead.run_id]
    assert _ids(wb.runs(store, agent=["flaky", "lead"])) == [runs.failed.run_id, runs.lead.run_id]
    assert _ids(wb.runs(store, tool="ask")) == [runs.lead.run_id]
    assert _ids(wb.runs(store, tool="lookup", status="completed", agent="helper")) == [
        runs.helper.run_id
    ]
    assert _ids(wb.runs(store, since=runs.between)) == [
        runs.failed.run_id,
        runs.lead.run_id,
        runs.helper.run_id,
    ]
    assert _ids(wb.runs(store, until=runs.between)) == [runs.ok.run_id, runs.tool_error.run_id]
    assert _ids(wb.runs(store, since="1h")) == _ids(wb.runs(store))
    assert wb.runs(store, until="1h").empty


def test_metadata_values_keep_their_json_type(store: wb.RunStore, runs: Runs) -> None:
    assert _ids(wb.runs(store, metadata={"task": 1})) == [runs.ok.run_id]
    assert _ids(wb.runs(store, metadata={"task": "1"})) == [runs.tool_error.run_id]
    assert _ids(wb.runs(store, metadata={"split": "dev", "task": 3})) == [runs.failed.run_id]
    assert wb.runs(store, metadata={"split": "dev", "task": 1}).empty


def test_a_text_value_is_found_however_its_json_is_escaped(tmp_path: Path) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    values = ['ünï "quoted" \\ back', "tab\there", "😀", 'a:b,"c"', "<b>"]

    def run(metadata: dict[str, wb.JsonValue]) -> str:
        agent = wb.Agent(model=wb.ScriptedModel(["ok"]), store=store)
        return agent.run_sync("hi", metadata=metadata).run_id

    made = {v: run({"k": v, "inner": {"k": v + "!"}}) for v in values}
    nested = run({"inner": {"k": "x"}})  # the pair's text is there, one level down
    for value in values:
        assert _ids(wb.runs(store, metadata={"k": value})) == [made[value]], value
    assert wb.runs(store, metadata={"k": "x"}).empty and nested
    assert _ids(wb.runs(store, metadata={"inner": {"k": "😀!"}})) == [made["😀"]]


def test_text_is_what_a_person_reads_in_the_messages(store: wb.RunStore, runs: Runs) -> None:
    assert _ids(wb.runs(store, text="ZEBRA")) == [runs.ok.run_id]  # any case
    assert _ids(wb.runs(store, text="no such key")) == [
        runs.tool_error.run_id,
        runs.helper.run_id,
    ]  # a tool's error, as the model read it
    assert _ids(wb.runs(store, text='"key": "bad"')) == []  # JSON is not what a person reads
    assert _ids(wb.runs(store, text="bad")) == [runs.tool_error.run_id, runs.helper.run_id]
    assert wb.runs(store, text="role").empty and wb.runs(store, text="tool_call").empty
    assert _ids(wb.runs(store, text="100% sure_")) == [runs.lead.run_id]  # wildcards are text
    assert wb.runs(store, text="1_0% s").empty


SEARCHES = ("zebra", "ZEBRA", "no such key", "bad", "ba", "b", "%", "_", '"', "100% sure_",
            "1_0% s", "role", "tool_call", "Task", "élan", "ÉLAN", "value of", " ")  # fmt: skip


def _scanned(path: str, text: str) -> set[str]:
    """The runs with ``text`` as the search was before the index: every message's JSON read."""
    escaped = text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_")
    conn = sqlite3.connect(path)
    try:
        rows = conn.execute(
            "SELECT DISTINCT m.run_id FROM messages m, json_tree(m.body) j "
            "WHERE j.type = 'text' AND (j.key IN ('text', 'content', 'invalid_arguments') "
            "OR instr(j.fullkey, '.arguments') > 0) AND j.atom LIKE ? ESCAPE '\\'",
            (f"%{escaped}%",),
        )
        return {run_id for (run_id,) in rows}
    finally:
        conn.close()


def test_text_search_through_the_index_finds_what_reading_every_message_did(
    store: wb.RunStore, runs: Runs
) -> None:
    wb.Agent(model=wb.ScriptedModel(["Élan vital"]), name="poet", store=store).run_sync("write")
    for text in SEARCHES:
        assert set(_ids(wb.runs(store, text=text))) == _scanned(store.path, text), text
    assert len(wb.runs(store, text="ÉLAN")) == 1  # ASCII letters fold, as they always did,
    assert wb.runs(store, text="élan").empty  # others do not


def test_sub_runs_rolled_up_under_their_root(store: wb.RunStore, runs: Runs) -> None:
    frame = wb.runs(store, rollup=True)
    assert _ids(frame) == [r.run_id for r in (runs.ok, runs.tool_error, runs.failed, runs.lead)]
    tree = frame.iloc[3]
    assert (tree.subruns, tree.errors, tree.tools) == (1, 1, ("add", "ask", "lookup"))
    assert tree.first_error == runs.helper.errors[0].line
    # the tree matches what any of its runs matches; status asks about the root
    assert _ids(wb.runs(store, rollup=True, agent="helper")) == [runs.lead.run_id]
    assert _ids(wb.runs(store, rollup=True, errors=True, status="completed")) == [
        runs.tool_error.run_id,
        runs.lead.run_id,
    ]
    assert wb.runs(store, rollup=True, status="failed", agent="helper").empty
    assert store.count(wb.RunFilter(rollup=True)) == 4 and store.count() == 5


def test_a_rolled_up_row_counts_its_tree_s_steps_as_its_errors_and_tokens(
    store: wb.RunStore, runs: Runs
) -> None:
    """A rolled-up row's errors and tool calls are its tree's, and its tokens its root's usage,
    which holds its sub-runs': its steps are the tree's too (the lead's own 2 and the helper's),
    in the records, the frame and the sort. The flat list keeps each run's own."""
    own, helped = runs.lead.state.step, runs.helper.state.step
    assert (own, helped) == (2, 3)
    (tree,) = store.find(wb.RunFilter(rollup=True, tool="ask"))
    assert (tree.run_id, tree.steps) == (runs.lead.run_id, own + helped)
    usage = runs.lead.usage
    assert tree.input_tokens + tree.output_tokens == usage.input_tokens + usage.output_tokens
    assert usage.requests == own + helped  # a model call a step, the helper's counted in
    frame = wb.runs(store, rollup=True).set_index("run")
    assert frame.loc[runs.lead.run_id, "steps"] == own + helped
    flat = wb.runs(store).set_index("run")
    assert flat.loc[[runs.lead.run_id, runs.helper.run_id], "steps"].tolist() == [own, helped]
    by_steps = store.find(wb.RunFilter(rollup=True), sort="steps", descending=True)
    assert by_steps[0].run_id == runs.lead.run_id
    assert store.find(sort="steps", descending=True)[0].run_id != runs.lead.run_id


def test_sorted_and_paged(store: wb.RunStore, runs: Runs) -> None:
    by_errors = store.find(sort="errors", descending=True, limit=3)
    assert [r.errors for r in by_errors] == [1, 1, 1]
    assert by_errors[0].run_id == runs.helper.run_id  # ties: newest first
    page = store.find(wb.RunFilter(), sort="started", offset=1, limit=2)
    assert [r.run_id for r in page] == [runs.tool_error.run_id, runs.failed.run_id]
    assert page[0].tools == ("add", "lookup")
    with pytest.raises(ValueError, match="cannot sort runs by 'colour'"):
        store.find(sort="colour")  # type: ignore[arg-type]


def test_a_paused_run_is_listed_and_its_resume_adds_to_its_summary(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("save", {"text": "x"}),
            wb.ModelResponse.tool_call("save", {"text": "y"}),
            "ok",
        ]
    )
    with wb.RunStore(path) as first:
        paused = wb.Agent(model=model, tools=[save], store=first).run_sync("save twice")
        (row,) = first.find()
        assert (row.status, row.tool_calls, row.tools) == ("paused", 0, ())
    with wb.RunStore(path) as second:  # another process, as far as the store knows
        agent = wb.Agent(model=model, tools=[save], store=second)
        again = agent.resume_sync(paused.state, approvals={p.call_id: True for p in paused.pending})
        done = agent.resume_sync(again.state, approvals={p.call_id: True for p in again.pending})
        (row,) = second.find()
        assert (row.status, row.tool_calls, row.tools, row.errors) == ("completed", 2, ("save",), 0)
        assert done.run_id == row.run_id


def _undone(path: Path, version: int, *statements: str) -> None:
    """Make the store at ``path`` what workbench with store schema ``version`` left, the
    ``statements`` undoing what the versions after it added."""
    conn = sqlite3.connect(path)
    try:
        with conn:
            for statement in statements:
                conn.execute(statement)
            conn.execute("DELETE FROM schema_version WHERE version > ?", (version,))
    finally:
        conn.close()


def _dropped(table: str, *columns: str) -> list[str]:
    return [f"ALTER TABLE {table} DROP COLUMN {column}" for column in columns]


def _as_version_6(path: Path) -> None:
    """Make a store what workbench with store schema 6 left: no steps on the summaries."""
    _undone(path, 6, *_dropped("summaries", "steps", "tree_steps"))


def _as_version_5(path: Path) -> None:
    """Make a store what workbench with store schema 5 left: no run's process recorded."""
    _as_version_6(path)
    columns = ("writer_host", "writer_pid", "writer_started")
    _undone(path, 5, "DROP INDEX summaries_unfinished", *_dropped("summaries", *columns))


def _as_version_4(path: Path) -> None:
    """Make a store what workbench with store schema 4 left: no text index."""
    _as_version_5(path)
    _undone(path, 4, "DROP TABLE message_text_index", "DROP TABLE message_texts")


def _as_version_2(path: Path) -> None:
    """Make a store what workbench with store schema 2 left: no summaries."""
    _as_version_4(path)
    tables = ("DROP TABLE summaries", "DROP TABLE run_tools", "DROP INDEX runs_by_time")
    _undone(path, 2, *tables)


def test_an_older_store_is_summarized_as_the_live_store_was(
    store: wb.RunStore, runs: Runs, tmp_path: Path
) -> None:
    live = store.find()
    store.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(store.path, old)
    _as_version_2(old)
    with wb.RunStore(old) as migrated:
        assert migrated.find() == live
        assert migrated.find(wb.RunFilter(rollup=True)) == store.find(wb.RunFilter(rollup=True))


def _as_version_3(path: Path) -> None:
    """Make a store what workbench with store schema 3 left: summaries without status, agent
    and start."""
    _as_version_4(path)
    columns = ("status", "agent_name", "created_at")
    _undone(path, 3, "DROP INDEX summaries_by_time", *_dropped("summaries", *columns))


def test_a_version_6_store_rolls_up_its_trees_steps_as_the_live_store_does(
    store: wb.RunStore, runs: Runs, tmp_path: Path
) -> None:
    live = store.find(wb.RunFilter(rollup=True), sort="steps")
    store.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(store.path, old)
    _as_version_6(old)
    with wb.RunStore(old) as migrated:
        assert migrated.find(wb.RunFilter(rollup=True), sort="steps") == live
        assert [r.steps for r in live][-1] == runs.lead.state.step + runs.helper.state.step


def test_a_version_3_store_lists_as_the_live_store_did(
    store: wb.RunStore, runs: Runs, tmp_path: Path
) -> None:
    live = store.find(wb.RunFilter(status="completed", agent="solver"), descending=True)
    store.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(store.path, old)
    _as_version_3(old)
    with wb.RunStore(old) as migrated:
        assert (
            migrated.find(wb.RunFilter(status="completed", agent="solver"), descending=True) == live
        )
        assert migrated.count(wb.RunFilter(since=runs.between)) == 3


def test_a_version_4_store_gets_its_text_index_and_searches_as_the_live_store_did(
    store: wb.RunStore, runs: Runs, tmp_path: Path
) -> None:
    live = {text: store.find(wb.RunFilter(text=text)) for text in SEARCHES}
    store.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(store.path, old)
    _as_version_4(old)
    conn = sqlite3.connect(old)
    with conn:  # messages that are not JSON (a damaged file) have no text, and stop nothing
        conn.execute("UPDATE messages SET body = '{broken' WHERE run_id = ?", (runs.ok.run_id,))
    conn.close()
    with wb.RunStore(old) as migrated:
        for text, rows in live.items():
            found = migrated.find(wb.RunFilter(text=text))
            assert found == [r for r in rows if r.run_id != runs.ok.run_id], text
        assert migrated.find(wb.RunFilter(text="zebra")) == []
        assert len(migrated.find()) == 5


def test_a_deleted_run_leaves_nothing_to_find(store: wb.RunStore, runs: Runs) -> None:
    store.delete(runs.lead.run_id)  # and its helper
    assert _ids(wb.runs(store, text="bad")) == [runs.tool_error.run_id]
    assert wb.runs(store, text="100% sure").empty
    conn = sqlite3.connect(store.path)
    try:
        (left,) = conn.execute(
            "SELECT count(*) FROM message_texts WHERE run_id IN (?, ?)",
            (runs.lead.run_id, runs.helper.run_id),
        ).fetchone()
        assert left == 0
        conn.execute(  # the index agrees with the texts it points into (SQLite raises if not)
            "INSERT INTO message_text_index (message_text_index, rank) "
            "VALUES ('integrity-check', 1)"
        )
    finally:
        conn.close()


def test_a_damaged_text_index_costs_text_search_only(
    store: wb.RunStore, runs: Runs, caplog: pytest.LogCaptureFixture
) -> None:
    _damage(store, "UPDATE message_text_index_data SET block = x'00ff00ff00ff'")
    with pytest.raises(wb.StoreError, match="text search index is damaged"):
        wb.runs(store, text="zebra")
    assert _ids(wb.runs(store, status="failed")) == [runs.failed.run_id]  # other filters work
    later = _solver(store, "k9").run_sync("Task 5: zebra again")  # runs are still recorded
    assert store.write_errors == [] and store.load(later.run_id).state == later.state
    assert "text search index is damaged" in caplog.text
    store.delete(runs.ok.run_id)  # and deleted
    assert runs.ok.run_id not in _ids(wb.runs(store))


LISTINGS: tuple[dict[str, object], ...] = (
    {},
    {"rollup": True},
    {"status": "failed"},
    {"errors": True},
    {"errors": False, "rollup": True},
    {"tool": "lookup", "rollup": True},
    {"metadata": {"task": 1}},
    {"text": "zebra"},
    {"agent": "nobody"},
)


@pytest.mark.parametrize("size", [1_000, 10_000])
def test_a_whole_listing_is_the_frame_of_its_records(tmp_path: Path, size: int) -> None:
    """`list_runs` builds its frame from the query's rows, not a `RunSummary` each: it is the
    frame of the records `find` lists, column for column, with sub-runs, damage and metadata."""
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        Runs(store)
        for session in ("s-1", 5):  # a number is no session's id (and broke `find`)
            agent = wb.Agent(model=wb.ScriptedModel(["ok"]), store=store)
            agent.run_sync("hi", metadata={"session_id": session})
    copy_runs(path, size)
    conn = sqlite3.connect(path)
    with conn:  # damage a listing shows as unknown: a start time, an error count
        conn.execute("UPDATE runs SET created_at = 'yesterday' WHERE rowid % 97 = 3")
        conn.execute(
            "UPDATE summaries SET errors = NULL, tree_errors = NULL "
            "WHERE run_id IN (SELECT run_id FROM runs WHERE rowid % 89 = 5)"
        )
    conn.close()
    with wb.RunStore(path) as store:
        frame = store.list_runs()
        assert len(frame) == size and frame["depth"].max() == 1
        assert frame["created_at"].isna().any() and frame["errors"].isna().any()
        assert set(frame["session_id"].dropna()) == {"s-1"}
        for filters in LISTINGS:
            spec = wb.RunFilter(**filters)
            pd.testing.assert_frame_equal(
                store.list_runs(spec), frame_of_summaries(store.find(spec), rollup=spec.rollup)
            )
            pd.testing.assert_frame_equal(
                wb.runs(store, **filters), wb.runs(source=StoreRuns(store), **filters)
            )
        newest = store.find(sort="errors", descending=True)
        pd.testing.assert_frame_equal(
            store.list_runs(sort="errors", descending=True),
            frame_of_summaries(newest, rollup=False),
        )


def test_a_run_whose_metadata_is_damaged_is_listed_without_it(
    store: wb.RunStore, runs: Runs, caplog: pytest.LogCaptureFixture
) -> None:
    """One damaged row hides no other run: it lists with no metadata, and a warning names it."""
    for run, damage in ((runs.ok, "{broken"), (runs.failed, "[1, 2]")):
        _damage(store, "UPDATE summaries SET metadata = ? WHERE run_id = ?", damage, run.run_id)
    frame = store.list_runs()
    found = {r.run_id: r for r in store.find()}
    assert set(frame["run_id"]) == set(found) and len(found) == 5
    for run in (runs.ok, runs.failed):
        assert found[run.run_id].metadata == {}
        assert f"run {run.run_id}'s stored metadata is damaged" in caplog.text
    assert _ids(wb.runs(store, status="failed")) == [runs.failed.run_id]
    # a filter on metadata reads past a row it cannot read (SQLite refused the whole query)
    assert _ids(wb.runs(store, metadata={"task": "1"})) == [runs.tool_error.run_id]
    assert wb.runs(store, metadata={"task": 1}).empty  # the run it named is the damaged one


def test_a_damaged_run_is_listed_with_its_errors_unknown(
    store: wb.RunStore, runs: Runs, tmp_path: Path
) -> None:
    store.close()
    old = tmp_path / "old.sqlite"
    shutil.copy(store.path, old)
    _as_version_2(old)
    conn = sqlite3.connect(old)
    with conn:
        conn.execute("UPDATE steps SET body = '{broken' WHERE run_id = ?", (runs.ok.run_id,))
    conn.close()
    with wb.RunStore(old) as migrated:
        rows = {r.run_id: r for r in migrated.find()}
    assert len(rows) == 5
    assert (rows[runs.ok.run_id].errors, rows[runs.ok.run_id].tools) == (None, ())
    assert rows[runs.tool_error.run_id].errors == 1  # the others are whole


def test_filters_that_cannot_be_read_say_why() -> None:
    with pytest.raises(ValidationError, match="unknown status 'broken': one of pending, running"):
        wb.RunFilter(status="broken")
    with pytest.raises(ValidationError, match="'last tuesday' is not a time"):
        wb.RunFilter(since="last tuesday")
    with pytest.raises(ValidationError, match="extra"):
        wb.RunFilter(colour="red")  # type: ignore[call-arg]
    assert wb.RunFilter(since="2026-11-27").since == datetime(2026, 11, 27).timestamp()


def test_no_default_store_is_a_clear_error(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    with pytest.raises(wb.UsageError, match="no default run store"):
        wb.runs()


def test_an_empty_store_lists_nothing(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        store.delete(wb.Agent(model=wb.ScriptedModel(["hi"]), store=store).run_sync("x").run_id)
    frame = wb.runs(path)
    assert frame.empty and "first_error" in frame.columns


def test_a_store_path_where_no_file_is_says_so_and_nothing_is_made(tmp_path: Path) -> None:
    typo = tmp_path / "rnus.sqlite"  # it listed 0 runs, as a store with none does
    said = f"no run store at {typo}: no such file"
    with pytest.raises(wb.StoreError, match=said):
        wb.runs(typo)
    with pytest.raises(wb.StoreError, match=said):
        wb.runs(source=str(typo))
    with pytest.raises(wb.StoreError, match=said):
        RunsBrowser(str(typo), live=False)
    assert not list(tmp_path.iterdir())
    # a store to write to is made by its first run, and read from its path then
    store = wb.RunStore(tmp_path / "new" / "runs.sqlite")
    assert wb.runs(store).empty  # a RunStore given is read as it is: no file yet, no runs
    wb.Agent(model=wb.ScriptedModel(["hi"]), store=store).run_sync("x")
    assert len(wb.runs(store.path)) == len(wb.runs(source=store.path)) == 1
    assert wb.runs(":memory:").empty  # a new store in memory is one


def test_a_browser_of_a_backend_mistyped_is_one_error(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    forms = r"jaeger\+http://host:16686\[/SERVICE\] or phoenix\+http://host:6006\[/PROJECT\]"
    for typo in ("jaeger+notaurl", "phoenix+localhost:6006"):  # read as a store's path: 0 runs
        with pytest.raises(wb.UsageError, match=f"is not a backend: {forms}"):
            RunsBrowser(typo, live=False)  # and ipywidgets closes the half-made browser quietly
    assert not list(tmp_path.iterdir())
