"""Step labels are unique, so the per-step charts and the report read one row per record.

A step with three records (a sub-agent asked for approval twice in one parent step) and the
executions of a session (several runs, each with a step 1) used to give repeated labels, and the
report's timing bars failed on them.
"""

from __future__ import annotations

import time

import pytest

import workbench as wb
from workbench.notebook import TraceExplorer, TraceView
from workbench.notebook.bars import timing_bars_html
from workbench.notebook.tables import step_labels
from workbench.report import report_html

R = wb.ModelResponse


@wb.tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


def _paused_twice() -> wb.RunResult:
    """A lead whose sub-agent asks for approval twice within the lead's first step."""
    store = wb.RunStore(":memory:")
    cleaner = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_call("wipe", {"path": "/a"}, call_id="w1"),
                R.tool_call("wipe", {"path": "/b"}, call_id="w2"),
                "Wiped both.",
            ]
        ),
        name="cleaner",
        tools=[wipe],
        store=store,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "Clear"}, call_id="c1"), "done"]),
        name="lead",
        tools=[cleaner.as_tool("clean")],
        store=store,
    )
    paused = lead.run_sync("go")
    paused = lead.resume_sync(paused.state, approvals={"w1": True})
    return lead.resume_sync(paused.state, approvals={"w2": True})


def test_a_step_with_three_records_has_three_labels_and_a_report() -> None:
    result = _paused_twice()
    assert result.output == "done"
    assert step_labels(result.steps) == ["1", "1 (resumed)", "1 (resumed 2)", "2"]
    trace = wb.trace_of(result)
    labels = [  # the step table has every agent's steps, in the order they started
        "1 · lead",
        "1 · cleaner",
        "1 · lead (resumed)",
        "1 · cleaner (resumed)",
        "2 · cleaner",
        "1 · lead (resumed 2)",
        "2 · cleaner (resumed)",
        "3 · cleaner",
        "2 · lead",
    ]
    assert trace.steps_df()["label"].tolist() == labels
    bars = timing_bars_html(trace)
    assert all(f"step {label}<" in bars for label in labels)
    html = report_html(result)
    assert '<a href="#step-5">1 · lead (resumed 2)</a>' in html
    assert "invoke_agent cleaner" in html  # the sub-run is in the report's explorer
    assert TraceView(result).figures["timing"].data[0].x.tolist() == labels


def test_a_sessions_executions_are_labelled_by_run() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["one", "two"]), name="chat", store=False)
    session = wb.Session(agent)
    session.run_sync("first")
    session.run_sync("second")
    executions = list(session.executions)
    steps = [step for run in executions for step in run.steps]
    assert len({step.run_id for step in steps}) == 2
    assert step_labels(steps) == ["1 (run 1)", "1 (run 2)"]
    assert wb.trace_of(executions).steps_df()["label"].tolist() == ["1 (run 1)", "1 (run 2)"]
    html = report_html(executions)
    assert "step 1 (run 1)<" in html and "step 1 (run 2)<" in html


def test_a_run_paused_where_the_clock_is_ahead_is_labelled_and_ended_by_its_spans(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Paused on a machine whose clock is an hour ahead, resumed here: by the clocks the resumed
    part of step 1 comes first. It is still the one labelled resumed, and the run completed,
    not "paused" (its paused execution is the latest by the clocks)."""
    real = time.time
    store = wb.RunStore(":memory:")

    def agent(answers: list[str | wb.ModelResponse]) -> wb.Agent:
        return wb.Agent(model=wb.ScriptedModel(answers), name="saver", tools=[wipe], store=store)

    monkeypatch.setattr(time, "time", lambda: real() + 3600)  # the other machine
    paused = agent([R.tool_call("wipe", {"path": "/a"}, call_id="w1")]).run_sync("go")
    monkeypatch.setattr(time, "time", real)
    done = agent(["wiped"]).resume_sync(paused.state, approvals={"w1": True})
    trace = wb.trace_of(store.load(done.run_id))
    rows = trace.steps_df()
    assert rows["start"].tolist() == sorted(rows["start"])  # the resumed part is drawn first
    assert rows["label"].tolist() == ["1 (resumed)", "2", "1"]
    assert rows["resumed"].tolist() == [True, False, False]
    assert trace.status() == "completed"
    assert trace.summary().startswith("completed")


def test_opening_the_explorer_of_a_run_that_never_paused_builds_no_step_table() -> None:
    """The clocks' note looks for a resumed step first: the explorer needs no step table, and
    building one for every open cost a big trace several times the open itself."""
    run = wb.Agent(model=wb.ScriptedModel(["hi"]), name="a", store=False).run_sync("go")
    trace = wb.trace_of(run)
    TraceExplorer(trace)
    assert "_step_rows" not in trace.__dict__
