"""Fault table: ids from outside that would become paths, URLs or SQL.

Already covered elsewhere: a trace id in a backend URL (``tests/test_load_trace.py``: not 32 hex
digits is a `TraceLoadError`) and span ids in trace files (wrong length, all zero). Here: the
run, execution, session and snapshot ids a state file, a session file, a store or a trace hands
us. ``../x`` as a run id, resumed, once made ``workbench export`` write outside the working
directory. Every id is checked where the record holding it is validated, with a clear error.
"""

from __future__ import annotations

import json
import sqlite3
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.cli import main

BAD = ["../x", "/etc/passwd", "a/b", "..", "", "-rf", "a\\b", "x\x00y", "C:x", "r" * 129, "é"]


@wb.tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return "deleted"


def agent(store: wb.RunStore | None = None) -> wb.Agent:
    script = [
        wb.ModelResponse.tool_call("delete_file", {"path": "/tmp/x"}),
        wb.ModelResponse.text("ok"),
    ]
    return wb.Agent(model=wb.ScriptedModel(script), tools=[delete_file], store=store)


def paused_json() -> dict[str, Any]:
    state = agent().run_sync("delete /tmp/x").state
    raw: dict[str, Any] = json.loads(state.to_json())
    raw["rerun_of"] = {"run_id": "run_1", "step": 1, "snapshot_id": "snap_1"}
    raw["parent_run_id"] = "run_0"
    return raw


FIELDS = [
    ("run_id",),
    ("execution_id",),
    ("parent_run_id",),
    ("rerun_of", "run_id"),
    ("rerun_of", "snapshot_id"),
    ("messages", 0, "run_id"),
    ("messages", 1, "execution_id"),
]


def with_value(raw: Any, path: tuple[Any, ...], value: str) -> Any:
    document = json.loads(json.dumps(raw))
    *head, last = path
    target = document
    for key in head:
        target = target[key]
    target[last] = value
    return document


@pytest.mark.parametrize("path", FIELDS, ids=lambda p: ".".join(map(str, p)))
@pytest.mark.parametrize("bad", BAD[:4])
def test_a_state_file_with_a_bad_id_is_a_state_format_error(
    path: tuple[Any, ...], bad: str
) -> None:
    raw = paused_json()
    assert wb.AgentState.from_json(json.dumps(raw)).done  # the file is good but for the id
    field = ".".join(map(str, path))
    with pytest.raises(wb.StateFormatError, match=rf"{field}: .*not a valid id"):
        wb.AgentState.from_json(json.dumps(with_value(raw, path, bad)))


@pytest.mark.parametrize("bad", BAD)
def test_every_shape_of_bad_run_id_is_refused(bad: str) -> None:
    with pytest.raises(wb.StateFormatError, match="not a valid id"):
        wb.AgentState.from_json(json.dumps(with_value(paused_json(), ("run_id",), bad)))
    with pytest.raises(ValueError, match="not a valid id"):  # made in Python: the same check
        wb.AgentState(run_id=bad)


HEX = ("../x", "0" * 32, "0AF7651916CD43DD8448EB211C80319C")  # not hex, all zero, upper case


@pytest.mark.parametrize(
    ("path", "message", "bad"),
    [
        (("trace_id",), "not a trace id", HEX),
        (("trace", "trace_id"), "not a trace id", HEX),
        (("trace", "span_id"), "not a span id", HEX),
        (("trace", "run_id"), "not a valid id", BAD[:4]),
    ],
)
def test_trace_ids_in_a_state_file_are_checked(
    path: tuple[Any, ...], message: str, bad: tuple[str, ...]
) -> None:
    raw = paused_json()
    raw["trace"] = {
        "trace_id": "0af7651916cd43dd8448eb211c80319c",
        "span_id": "b7ad6b7169203331",
        "run_id": raw["run_id"],
        "execution_id": raw["execution_id"],
    }
    assert wb.AgentState.from_json(json.dumps(raw)).trace is not None
    for value in bad:
        with pytest.raises(wb.StateFormatError, match=message):
            wb.AgentState.from_json(json.dumps(with_value(raw, path, value)))


def test_a_session_file_with_a_bad_session_id_is_a_session_format_error() -> None:
    session = wb.Session(wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("hi")])))
    session.run_sync("hello")
    raw = json.loads(session.state.to_json())
    wb.Session.from_json(json.dumps(raw), session.agent)
    for path in (("session_id",), ("executions", 0, "run_id")):
        with pytest.raises(wb.SessionFormatError, match="not a valid id"):
            wb.Session.from_json(json.dumps(with_value(raw, path, "../../x")), session.agent)


def test_a_store_row_with_a_bad_run_id_is_refused_and_export_writes_nothing(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A store file from elsewhere (or damaged) whose run is called ``../x``."""
    path = tmp_path / "runs.sqlite"
    store = wb.RunStore(path)
    run = agent(store).run_sync("delete /tmp/x")
    store.close()
    with sqlite3.connect(path) as conn:
        for table in ("runs", "messages", "snapshots", "steps", "tool_sets", "summaries"):
            conn.execute(f"UPDATE {table} SET run_id = '../x' WHERE run_id = ?", (run.run_id,))
        conn.execute("UPDATE runs SET state = json_set(state, '$.run_id', '../x')")
    work = tmp_path / "work"
    work.mkdir()
    monkeypatch.chdir(work)
    assert main(["export", "../x", "--store", str(path)]) == 2
    assert [p.name for p in tmp_path.iterdir() if not p.name.startswith("runs.sqlite")] == ["work"]
    assert not list(work.iterdir())
    with pytest.raises(wb.StoreError, match=r"run_id: .*not a valid id"):
        wb.RunStore(path).load("../x")


def test_a_trace_naming_a_bad_run_id_cannot_be_re_run_from() -> None:
    telemetry = wb.Telemetry(capture_content=True)
    script = [wb.ModelResponse.text("hello")]
    wb.Agent(model=wb.ScriptedModel(script), telemetry=telemetry).run_sync("hi")
    document = json.loads(json.dumps(telemetry.trace().model_dump(mode="json")))
    trace = wb.Trace.model_validate(document)
    chat = next(s for s in trace.spans if s.name.startswith("chat"))
    spans = tuple(
        s.model_copy(update={"attributes": {**s.attributes, "workbench.run.id": "../x"}})
        if s is chat
        else s
        for s in trace.spans
    )
    bad = trace.model_copy(update={"spans": spans})
    replier = wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("again")]))
    with pytest.raises(wb.TraceLoadError, match=r"workbench\.run\.id.*not a valid run id"):
        replier.rerun_from_trace_sync(bad, step=1)
