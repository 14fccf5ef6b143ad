"""RunStore: durable runs, exact round trips, linear storage, crash safety and hostile files."""

from __future__ import annotations

import hashlib
import json
import sqlite3
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import workbench as wb
from tests._counting import PROMPT, add, content, counting_agent, counting_model
from workbench import _storage
from workbench.demo import demo_agent, run_demo
from workbench.store import STORE_ENV


@pytest.fixture
def store(tmp_path: Path) -> wb.RunStore:
    with wb.RunStore(tmp_path / "runs.sqlite") as s:
        yield s


def _rows(path: Path, sql: str) -> list[tuple[object, ...]]:
    conn = sqlite3.connect(path)
    try:
        return conn.execute(sql).fetchall()
    finally:
        conn.close()


def _execute(path: Path, sql: str, params: tuple[object, ...] = ()) -> None:
    conn = sqlite3.connect(path)
    try:
        with conn:
            conn.execute(sql, params)
    finally:
        conn.close()


def _digest(path: Path) -> str:
    return hashlib.sha256(path.read_bytes()).hexdigest()


# -- round trips --------------------------------------------------------------------------------


def test_paused_and_resumed_run_loads_exactly_as_it_ran(store: wb.RunStore) -> None:
    results = run_demo(demo_agent(store=store))
    assert [r.status for r in results] == [wb.ExecutionStatus.PAUSED, wb.ExecutionStatus.COMPLETED]
    loaded = store.load(results[-1].run_id)
    assert loaded.state == results[-1].state
    assert loaded.steps == results[1].steps  # a resumed result is the whole run
    assert loaded.snapshots == results[1].snapshots
    assert [s.index for s in loaded.steps] == [1, 2, 3, 3, 4]  # step 3 paused, then resumed
    assert store.write_errors == []


def test_snapshot_by_step_and_missing_ones(store: wb.RunStore) -> None:
    result = counting_agent(4, store).run_sync(PROMPT)
    for original in result.snapshots:
        assert store.snapshot(result.run_id, original.step) == original
    with pytest.raises(wb.RunNotFound, match=r"has no snapshot for step 9 \(it has steps 1\.\.4\)"):
        store.snapshot(result.run_id, 9)
    with pytest.raises(wb.RunNotFound, match="no run 'run_nope'"):
        store.load("run_nope")


def test_step_context_and_state_json_round_trip(store: wb.RunStore) -> None:
    result = counting_agent(3, store).run_sync(PROMPT)
    for snapshot in result.snapshots:
        assert wb.StepContext.model_validate_json(snapshot.model_dump_json()) == snapshot
    rerun = counting_agent(3, store).rerun_sync(result.snapshots[1])
    assert rerun.state.rerun_of is not None
    assert wb.AgentState.from_json(rerun.state.to_json()) == rerun.state


def test_runs_and_list_runs(store: wb.RunStore) -> None:
    first = counting_agent(3, store).run_sync(PROMPT)
    fork = counting_agent(3, store).rerun_sync(first.snapshots[1])
    summaries = store.runs()
    assert [s.run_id for s in summaries] == [first.run_id, fork.run_id]
    assert summaries[1].rerun_of == first.run_id and summaries[1].rerun_of_step == 2
    assert summaries[0].model_name == "counter" and summaries[0].output == "total 3"
    frame = store.list_runs()
    assert list(frame["run_id"]) == [first.run_id, fork.run_id]
    assert list(frame["status"]) == ["completed", "completed"]
    assert str(frame["created_at"].dtype).startswith("datetime64")
    assert store.resolve(first.run_id[:10]) == first.run_id
    assert store.resolve("last") == fork.run_id


def test_list_runs_of_a_missing_file_is_empty_and_creates_nothing(tmp_path: Path) -> None:
    path = tmp_path / "none" / "runs.sqlite"
    store = wb.RunStore(path)
    assert store.runs() == []
    assert len(store.list_runs()) == 0
    assert not path.exists()


def test_delete_removes_one_run_and_keeps_its_reruns(store: wb.RunStore, tmp_path: Path) -> None:
    agent = counting_agent(4, store)
    first = agent.run_sync(PROMPT)
    fork = agent.rerun_sync(first.snapshots[2])
    store.delete(first.run_id)
    with pytest.raises(wb.RunNotFound):
        store.load(first.run_id)
    with pytest.raises(wb.RunNotFound):
        store.delete(first.run_id)
    assert store.load(fork.run_id).state == fork.state  # a re-run keeps its own copy of messages
    db = tmp_path / "runs.sqlite"
    assert _rows(db, f"SELECT count(*) FROM messages WHERE run_id = '{first.run_id}'") == [(0,)]


# -- linear storage -----------------------------------------------------------------------------


def test_each_message_is_stored_once_and_snapshots_reference_ranges(
    store: wb.RunStore, tmp_path: Path
) -> None:
    result = counting_agent(30, store).run_sync(PROMPT)
    db = tmp_path / "runs.sqlite"
    assert _rows(db, "SELECT count(*) FROM messages") == [(len(result.messages),)]
    references = [json.loads(r[0]) for r in _rows(db, "SELECT messages FROM snapshots")]
    assert all(len(r) == 1 and r[0][0] == 0 for r in references)  # one range each
    assert [r[0][1] for r in references] == [len(s.state.messages) for s in result.snapshots]
    sizes = [r[0] for r in _rows(db, "SELECT length(body) FROM snapshots ORDER BY step")]
    assert max(sizes) < 1.2 * min(sizes)  # a snapshot's size does not grow with the run


def test_resumed_in_a_new_store_object_does_not_store_messages_twice(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as first_store:
        first = demo_agent(store=first_store)
        paused = first.run_sync("What is 17 + 25, doubled?")
    assert paused.status is wb.ExecutionStatus.PAUSED
    state = wb.AgentState.from_json(paused.state.to_json())  # as if in another process
    approvals: dict[str, bool | str] = {p.call_id: True for p in state.pending}
    with wb.RunStore(path) as second_store:
        agent = demo_agent(store=second_store)
        agent.model = first.model  # the script goes on where it stopped
        done = agent.resume_sync(state, approvals=approvals)
        loaded = second_store.load(done.run_id)
    assert done.status is wb.ExecutionStatus.COMPLETED
    assert content(loaded.messages) == content(done.messages)
    assert _rows(path, "SELECT count(*) FROM messages") == [(len(done.messages),)]
    assert [s.index for s in loaded.steps] == [1, 2, 3, 3, 4]


# -- the default store --------------------------------------------------------------------------


def test_default_store_is_lazy_and_configurable(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "default" / "runs.sqlite"
    monkeypatch.setenv(STORE_ENV, str(path))
    agent = wb.Agent(model=counting_model(2), tools=[])
    assert agent.store is wb.RunStore.default()
    assert agent.store is not None and agent.store.path == str(path)
    assert not path.exists()  # making an Agent costs no file
    agent.run_sync(PROMPT)
    assert path.exists() and len(agent.store.runs()) == 1
    assert wb.Agent(model=counting_model(2), store=False).store is None
    agent.store.close()
    monkeypatch.setenv(STORE_ENV, "off")
    assert wb.Agent(model=counting_model(2)).store is None


def test_a_failing_store_never_breaks_the_run(tmp_path: Path) -> None:
    store = wb.RunStore(tmp_path)  # a directory: every write fails
    result = counting_agent(3, store).run_sync(PROMPT)
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "total 3"
    assert store.write_errors and all(result.run_id in e for e in store.write_errors)


# -- crash safety and concurrent readers --------------------------------------------------------

_CHILD = textwrap.dedent(
    """
    import sys
    import workbench as wb
    from tests._counting import PROMPT, counting_model

    def add(a: int, b: int) -> int:
        \"\"\"Add two integers.\"\"\"
        if b == 4:  # step 4: say so, then block until killed
            print("READY", flush=True)
            sys.stdin.readline()
        return a + b

    store = wb.RunStore(sys.argv[1])
    agent = wb.Agent(model=counting_model(8), name="counter", tools=[add],
                     stop=wb.MaxSteps(13), store=store)
    agent.run_sync(PROMPT)
    """
)


def test_killed_run_keeps_its_finished_steps_and_reruns_from_its_last_snapshot(
    tmp_path: Path,
) -> None:
    db = tmp_path / "runs.sqlite"
    script = tmp_path / "child.py"
    script.write_text(_CHILD)
    root = Path(__file__).resolve().parents[1]
    child = subprocess.Popen(
        [sys.executable, str(script), str(db)],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        cwd=root,
        env={"PYTHONPATH": str(root), "PATH": "/usr/bin:/bin"},
    )
    try:
        assert child.stdout is not None
        line = child.stdout.readline()
        assert line == "READY\n", child.stderr.read() if child.stderr else ""
        with wb.RunStore(db) as reader:  # read while the writer is alive and mid-step
            (summary,) = reader.runs()
            live = reader.load(summary.run_id)
        assert summary.status == "running"
        assert [s.index for s in live.steps] == [1, 2, 3]
    finally:
        child.kill()
        child.wait()
        for stream in (child.stdin, child.stdout, child.stderr):
            if stream is not None:
                stream.close()
    with wb.RunStore(db) as store:
        run = store.load(summary.run_id)
        assert [s.index for s in run.steps] == [1, 2, 3]
        assert [s.step for s in run.snapshots] == [1, 2, 3, 4]  # step 4 started, never ended
        assert run.status is wb.ExecutionStatus.RUNNING
        rerun = counting_agent(8, store).rerun_sync(run.snapshots[-1])
        assert rerun.status is wb.ExecutionStatus.COMPLETED
        assert rerun.output == f"total {sum(range(1, 8))}"
        assert [s.index for s in rerun.steps] == [4, 5, 6, 7, 8]
        assert rerun.state.rerun_of == wb.RerunOf(
            run_id=run.run_id, step=4, snapshot_id=run.snapshots[-1].id
        )
        assert store.load(rerun.run_id).state == rerun.state


# -- hostile and damaged files ------------------------------------------------------------------


def _stored_run(path: Path, steps: int = 3) -> wb.RunResult:
    with wb.RunStore(path) as store:
        return counting_agent(steps, store).run_sync(PROMPT)


def test_store_from_a_newer_workbench_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _stored_run(path)
    _execute(path, "INSERT INTO schema_version VALUES (99, 0)")
    before = _digest(path)
    with pytest.raises(wb.StoreError, match=r"newer workbench \(store schema version 99\)"):
        wb.RunStore(path).runs()
    assert _digest(path) == before


def test_truncated_file_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    _stored_run(path, steps=20)
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 2])
    before = _digest(path)
    store = wb.RunStore(path)
    with pytest.raises(wb.StoreError, match="is truncated"):
        store.runs()
    result = counting_agent(2, store).run_sync(PROMPT)  # a run writing to it still completes
    assert result.status is wb.ExecutionStatus.COMPLETED and store.write_errors
    assert _digest(path) == before


@pytest.mark.parametrize(
    ("data", "message"),
    [(b"not a database at all" * 10, "not a SQLite database"), (b"SQLite format 3\x00", "header")],
)
def test_a_file_that_is_not_a_store_is_refused(tmp_path: Path, data: bytes, message: str) -> None:
    path = tmp_path / "runs.sqlite"
    path.write_bytes(data)
    with pytest.raises(wb.StoreError, match=message):
        wb.RunStore(path).runs()
    assert path.read_bytes() == data


def test_foreign_sqlite_database_is_refused_untouched(tmp_path: Path) -> None:
    path = tmp_path / "other.sqlite"
    _execute(path, "CREATE TABLE invoices (id INTEGER)")
    before = _digest(path)
    with pytest.raises(
        wb.StoreError, match=r"not a workbench run store \(it has tables invoices\)"
    ):
        wb.RunStore(path).runs()
    assert _digest(path) == before


def test_unknown_part_kind_is_a_clear_error_and_other_runs_still_load(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    bad, good = _stored_run(path), _stored_run(path)
    body = json.dumps({"role": "user", "parts": [{"kind": "image", "url": "x"}]})
    _execute(path, "UPDATE messages SET body = ? WHERE run_id = ? AND seq = 0", (body, bad.run_id))
    with wb.RunStore(path) as store:
        with pytest.raises(wb.StoreError, match=rf"run {bad.run_id} message 0 is not a valid mes"):
            store.load(bad.run_id)
        with pytest.raises(wb.StoreError, match=r"'image' .* does not match any of the expected"):
            store.snapshot(bad.run_id, 1)
        assert store.load(good.run_id).state == good.state
        assert len(store.runs()) == 2


@pytest.mark.parametrize(
    ("change", "message"),
    [
        (lambda raw: raw.update(step="three"), "step: Input should be a valid integer"),
        (lambda raw: raw["state"].update(status="dancing"), "state.status: Input should be"),
        (lambda raw: raw["state"].update(schema_version=7), "state schema version 7"),
        (lambda raw: raw.update(extra_field=1), "extra_field: Extra inputs are not permitted"),
        (
            lambda raw: raw["state"].update(
                pending=[{"call_id": "c", "tool": "t", "arguments": {}, "reason": "", "kind": "x"}]
            ),
            "state.pending.0.kind: Input should be 'approval' or 'deferred'",
        ),
    ],
)
def test_snapshot_with_wrong_types_is_a_clear_error(
    tmp_path: Path, change: object, message: str
) -> None:
    path = tmp_path / "runs.sqlite"
    bad, good = _stored_run(path), _stored_run(path)
    (body,) = _rows(path, f"SELECT body FROM snapshots WHERE run_id = '{bad.run_id}' AND step = 2")
    raw = json.loads(str(body[0]))
    change(raw)  # type: ignore[operator]
    _execute(
        path,
        "UPDATE snapshots SET body = ? WHERE run_id = ? AND step = 2",
        (json.dumps(raw), bad.run_id),
    )
    with wb.RunStore(path) as store:
        with pytest.raises(wb.StoreError, match=f"snapshot of step 2.*{message}"):
            store.snapshot(bad.run_id, 2)
        with pytest.raises(wb.StoreError, match=message):
            store.load(bad.run_id)
        assert store.snapshot(bad.run_id, 1) == bad.snapshots[0]
        assert store.load(good.run_id).snapshots == good.snapshots


def test_payloads_over_the_limit_are_refused_without_loading(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run = _stored_run(path)
    huge = json.dumps({"role": "user", "parts": [{"kind": "text", "text": "x" * 200_000}]})
    _execute(path, "UPDATE messages SET body = ? WHERE run_id = ? AND seq = 1", (huge, run.run_id))
    with (
        wb.RunStore(path, max_payload_chars=100_000) as store,
        pytest.raises(wb.StoreError, match=r"payload of 200,\d{3} characters is over the store"),
    ):
        store.load(run.run_id)
    with wb.RunStore(path) as roomy:  # the default limit is far larger
        assert roomy.load(run.run_id).messages[1].text == "x" * 200_000


def test_damaged_message_references_are_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    run = _stored_run(path)
    _execute(path, "UPDATE steps SET messages_in = '[[0, 999]]' WHERE run_id = ?", (run.run_id,))
    with (
        wb.RunStore(path) as store,
        pytest.raises(wb.StoreError, match=r"references \[\[0, 999\]\] do not fit"),
    ):
        store.load(run.run_id)


# -- schema migrations --------------------------------------------------------------------------


def test_an_older_store_is_migrated_and_keeps_its_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "runs.sqlite"
    run = _stored_run(path)
    current = _storage.STORE_SCHEMA_VERSION
    monkeypatch.setattr(_storage, "STORE_SCHEMA_VERSION", current + 1)
    monkeypatch.setitem(
        _storage._MIGRATIONS, current + 1, ("CREATE INDEX steps_by_step ON steps (run_id, step)",)
    )
    with wb.RunStore(path) as store:
        assert store.load(run.run_id).state == run.state
    versions = _rows(path, "SELECT version FROM schema_version ORDER BY version")
    assert versions == [(v,) for v in range(1, current + 2)]
    assert _rows(path, "SELECT name FROM sqlite_master WHERE name = 'steps_by_step'")


ADD = wb.tool(add).definition
"""What the counting agent's tool is defined as, to the model and in snapshots."""


def _v1_store(path: Path) -> str:
    """A store written by workbench with store schema 1 (tool definitions inside snapshots)."""
    conn = sqlite3.connect(path)
    try:
        conn.executescript((Path(__file__).parent / "data" / "store_v1.sql").read_text())
    finally:
        conn.close()
    (run_id,) = _rows(path, "SELECT run_id FROM runs")[0]
    return str(run_id)


def test_a_version_1_store_is_migrated_its_snapshots_keep_their_tools_and_runs_go_on(
    tmp_path: Path,
) -> None:
    path = tmp_path / "runs.sqlite"
    old_id = _v1_store(path)
    with wb.RunStore(path) as store:
        old = store.load(old_id)
        assert [s.tool_names for s in old.snapshots] == [("add",), ("add",)]
        assert [[d.name for d in s.tool_definitions] for s in old.snapshots] == [["add"], ["add"]]
        assert store.snapshot(old_id, 2).tool_definitions == old.snapshots[1].tool_definitions
        assert old.output == "total 1"
        rerun = counting_agent(2, store).rerun_sync(old.snapshots[1])  # a new run in the old file
        assert store.load(rerun.run_id).snapshots[-1].tool_definitions == (ADD,)
    assert _rows(path, "SELECT max(version) FROM schema_version") == [
        (_storage.STORE_SCHEMA_VERSION,)
    ]
    assert _rows(path, "SELECT count(*) FROM snapshots WHERE tools IS NULL") == [(2,)]  # old ones
    with wb.RunStore(path) as store:  # the old run is summarized for the run list (version 3)
        (summary,) = store.find(wb.RunFilter(tool="add", status="completed"), limit=1)
        assert (summary.run_id, summary.tools, summary.errors) == (old_id, ("add",), 0)
    assert _rows(path, "SELECT count(*) FROM tool_sets") == [(1,)]


def test_tool_definitions_are_stored_once_a_run_and_set_of_tools(
    store: wb.RunStore, tmp_path: Path
) -> None:
    result = counting_agent(6, store).run_sync(PROMPT)
    db = tmp_path / "runs.sqlite"
    assert _rows(db, "SELECT count(*) FROM tool_sets") == [(1,)]
    bodies = [str(r[0]) for r in _rows(db, "SELECT body FROM snapshots")]
    assert len(bodies) == len(result.snapshots) and not any("tool_definitions" in b for b in bodies)
    assert "Add two integers." in str(_rows(db, "SELECT body FROM tool_sets")[0][0])
    loaded = store.load(result.run_id)
    assert loaded.snapshots == result.snapshots
    assert loaded.snapshots[0].tool_definitions == (ADD,)
    assert store.snapshot(result.run_id, 3) == result.snapshots[2]


def test_a_run_whose_tools_change_stores_each_set_once() -> None:
    from workbench.store._runlog import RunLog

    log = RunLog("run_x")
    one = (ADD,)
    two = (ADD, ADD.model_copy(update={"name": "plus"}))
    refs = [log.tools_ref(tools) for tools in (one, one, two, one, ())]
    assert refs[0] == refs[1] == refs[3] and refs[2] not in (refs[0], None) and refs[4] is None
    assert [row[1] for row in log.tool_rows] == [refs[0], refs[2]]  # each set queued once
    log.rolled_back()  # the transaction failed: the next write queues them again
    assert log.tools_ref(two) == refs[2] and [row[1] for row in log.tool_rows] == [refs[2]]


def test_a_damaged_or_missing_tool_set_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "runs.sqlite"
    bad, good = _stored_run(path), _stored_run(path)
    _execute(path, "UPDATE tool_sets SET body = '[{\"name\": 3}]' WHERE run_id = ?", (bad.run_id,))
    with wb.RunStore(path) as store:
        with pytest.raises(wb.StoreError, match=r"tool set .* is not a list of tool definitions"):
            store.load(bad.run_id)
        with pytest.raises(wb.StoreError, match=r"tool set .* is not a list of tool definitions"):
            store.snapshot(bad.run_id, 1)
        assert store.load(good.run_id).snapshots == good.snapshots
    _execute(path, "DELETE FROM tool_sets WHERE run_id = ?", (bad.run_id,))
    with wb.RunStore(path) as store, pytest.raises(wb.StoreError, match=r"missing \(damaged"):
        store.load(bad.run_id)
    huge = json.dumps([{"name": "t", "description": "x" * 200_000, "parameters": {}}])
    _execute(path, "UPDATE tool_sets SET body = ? WHERE run_id = ?", (huge, good.run_id))
    with (
        wb.RunStore(path, max_payload_chars=100_000) as store,
        pytest.raises(wb.StoreError, match=r"tool set .* payload of 200,\d{3} characters"),
    ):
        store.load(good.run_id)


def test_an_edited_earlier_message_is_stored_not_taken_from_the_previous_conversation() -> None:
    from workbench.store._runlog import RunLog

    log = RunLog("run_x")
    m = [wb.Message.user(f"m{i}") for i in range(3)]
    assert log.refs(m, full=True) == [(0, 3)]
    edited = [m[0], wb.Message.user("m1 edited"), m[2], wb.Message.user("m3")]
    assert log.refs(edited, full=True) == [(0, 1), (3, 4), (2, 3), (4, 5)]
    assert log.refs([*edited, wb.Message.user("m5")], full=True) == [
        (0, 1),
        (3, 4),
        (2, 3),
        (4, 6),
    ]
    assert [row[1] for row in log.rows] == [0, 1, 2, 3, 4, 5]  # each message queued once
    assert log.refs([wb.Message.user("m0")]) == [(0, 1)]  # an equal message is the same row


def test_a_call_edited_before_tools_is_stored_as_edited(store: wb.RunStore) -> None:
    run = counting_agent(3, store).start(PROMPT)
    run.next_phase()
    run.next_phase()  # INFERENCE: the model asked for add(a=0, b=1)
    (call,) = run.pending_calls
    run.edit_call(call.call_id, {"a": 40, "b": 2})
    result = run.run_to_end()
    loaded = store.load(result.run_id)
    assert loaded.messages[1].tool_calls[0].arguments == {"a": 40, "b": 2}
    assert loaded.state == result.state and loaded.steps == result.steps
