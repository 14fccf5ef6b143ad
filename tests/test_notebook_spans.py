"""The views' spans of a run without telemetry are the exact spans its records make.

`run_span_rows` (TraceView, the report, the Stepper's timeline) and `explorer_spans` (the trace
explorer) both read `workbench.telemetry.spans_from_run`: the writer the live run uses. These
tests lock what that means for the views: a sub-run paused and resumed with its parent sits under
the ``execute_tool`` span of each execution that ran it, a tool span starts when its tool did,
a run still under way is drawn from its closed steps, and nothing needs (or reaches) an exporter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from collections.abc import Iterable
from typing import Any

import pytest

import workbench as wb
from workbench.notebook import explorer_spans, run_span_rows, run_view_data
from workbench.notebook.explorer_data import ExplorerSpan
from workbench.notebook.stepper import timeline_spans
from workbench.telemetry.writer import ns

R = wb.ModelResponse


@wb.tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


@wb.tool(sequential=True)
def first(x: int) -> int:
    """Run alone, before second."""
    return x + 1


@wb.tool(sequential=True)
def second(x: int) -> int:
    """Run alone, after first."""
    return x * 2


def _lead(store: wb.RunStore) -> wb.Agent:
    """lead → clean (cleaner → wipe, which waits for an approval)."""
    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/b"}, call_id="w1"), "Wiped."]),
        name="cleaner",
        tools=[wipe],
        store=store,
    )
    return wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "b"}, call_id="c1"), "Done."]),
        name="lead",
        tools=[cleaner.as_tool("clean")],
        store=store,
    )


def _fold(rows: Iterable[tuple[str, str | None, str, float]]) -> list[Any]:
    """(span id, parent id, name, start) as nested {name: [children]}, children by start."""
    items = sorted(rows, key=lambda r: r[3])
    known = {r[0] for r in items}
    children: dict[str | None, list[tuple[str, str | None, str, float]]] = {}
    for item in items:
        children.setdefault(item[1] if item[1] in known else None, []).append(item)

    def node(item: tuple[str, str | None, str, float]) -> Any:
        below = children.get(item[0], [])
        return {item[2]: [node(c) for c in below]} if below else item[2]

    return [node(item) for item in children.get(None, [])]


def _fold_rows(rows: list[dict[str, Any]]) -> list[Any]:
    return _fold((r["span_id"], r["parent_id"], r["name"], r["start"]) for r in rows)


def _fold_explorer(spans: list[ExplorerSpan]) -> list[Any]:
    return _fold((s.span_id, s.parent_id, s.name, s.start_ns) for s in spans)


def _step(n: int, *below: Any) -> dict[str, list[Any]]:
    return {f"workbench.step {n}": list(below)}


PREPARE, CHAT, CONTINUATION = "workbench.prepare", "chat scripted", "workbench.continuation"
PAUSED_SUBRUN = [
    {
        "invoke_agent lead": [
            _step(
                1,
                PREPARE,
                CHAT,
                {
                    "execute_tool clean": [
                        {"invoke_agent cleaner": [_step(1, PREPARE, CHAT, "execute_tool wipe")]}
                    ]
                },
            )
        ]
    },
    {
        "invoke_agent lead": [
            _step(
                1,
                {
                    "execute_tool clean": [
                        {
                            "invoke_agent cleaner": [
                                _step(1, "execute_tool wipe", CONTINUATION),
                                _step(2, PREPARE, CHAT, CONTINUATION),
                            ]
                        }
                    ]
                },
                CONTINUATION,
            ),
            _step(2, PREPARE, CHAT, CONTINUATION),
        ]
    },
]
"""The lead paused by its sub-run's approval, then resumed: each execution a trace of its own,
and each execution of the sub-run under the ``execute_tool clean`` of the lead's execution that
ran it (not both under the last one)."""


@pytest.fixture(scope="module")
def paused_tree() -> tuple[wb.RunResult, wb.RunStore]:
    store = wb.RunStore(":memory:")
    lead = _lead(store)
    paused = lead.run_sync("go")
    assert paused.status is wb.ExecutionStatus.PAUSED
    done = lead.resume_sync(paused.state, approvals={"w1": True})
    assert done.status is wb.ExecutionStatus.COMPLETED
    return done, store


def test_a_resumed_sub_run_sits_under_the_call_of_each_execution_that_ran_it(
    paused_tree: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, store = paused_tree
    for run in (result, store.load(result.run_id)):
        assert _fold_rows(run_span_rows(run)) == PAUSED_SUBRUN
        view = run_view_data(run)
        assert view.synthesized and isinstance(view.spans, list)
        assert _fold_rows(view.spans) == PAUSED_SUBRUN
        assert _fold_explorer(explorer_spans(run)) == PAUSED_SUBRUN


def test_a_sub_runs_spans_are_in_the_trace_of_its_call_and_name_their_runs(
    paused_tree: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, _ = paused_tree
    rows = run_span_rows(result)
    by_id = {r["span_id"]: r for r in rows}
    cleaner = result.children[0]
    subruns = [r for r in rows if r["name"] == "invoke_agent cleaner"]
    assert len(subruns) == 2
    for subrun in subruns:
        call = by_id[subrun["parent_id"]]
        assert call["trace_id"] == subrun["trace_id"]
        assert call["attributes"]["workbench.run.id"] == result.run_id
        assert subrun["attributes"]["workbench.run.id"] == cleaner.run_id
        assert subrun["attributes"]["workbench.parent_run.id"] == result.run_id
    assert [r["attributes"]["workbench.run.status"] for r in subruns] == ["paused", "completed"]


def test_a_tool_span_starts_when_its_tool_did_not_when_tools_began() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_calls([("first", {"x": 1}), ("second", {"x": 2})], call_ids=["a", "b"]), "ok"]
        ),
        tools=[first, second],
        store=False,
    )
    result = agent.run_sync("go")
    step = result.steps[0]
    tools_began = dict(step.phase_starts)[wb.Phase.TOOLS]
    outcomes = {o.call_id: o for o in step.tool_outcomes}
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in explorer_spans(result)}
    for call_id, outcome in outcomes.items():
        assert outcome.started_at is not None
        assert spans[call_id].start_ns == ns(outcome.started_at)
        assert spans[call_id].end_ns == ns(outcome.started_at) + ns(outcome.duration)
    later = outcomes["b"]
    assert later.started_at is not None and later.started_at > tools_began  # ran after "a"
    assert spans["b"].start_ns > ns(tools_began)


def test_the_timeline_of_a_run_under_way_draws_its_closed_steps_under_a_running_run() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("first", {"x": 1}, call_id="a"), "ok"]),
        tools=[first],
        store=False,
    )
    run = agent.start("go")
    assert timeline_spans(run) == []  # nothing recorded yet
    while len(run.steps) < 1:
        run.next_phase()
    run.next_phase()  # step 2's PREPARE: the step is open, its record is not written yet
    assert run.state.status is wb.ExecutionStatus.RUNNING and len(run.steps) == 1
    rows = timeline_spans(run)
    assert _fold_rows(rows) == [
        {
            "invoke_agent agent": [
                _step(1, PREPARE, "chat scripted", "execute_tool first", CONTINUATION)
            ]
        }
    ]
    root = next(r for r in rows if r["parent_id"] is None)
    assert root["attributes"]["workbench.run.status"] == "running"
    step = next(r for r in rows if r["name"] == "workbench.step 1")
    assert root["end"] == pytest.approx(step["end"])  # the run span ends with its last record
    run.run_to_end()
    done = next(r for r in timeline_spans(run) if r["parent_id"] is None)
    assert done["attributes"]["workbench.run.status"] == "completed"


def test_the_views_of_a_run_need_no_exporter_and_send_nothing() -> None:
    """With only the ``notebook`` extra (no OTLP exporter) and an endpoint in the environment."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry.exporter"] = None  # not installed: importing it fails
        import workbench as wb
        from workbench.notebook import explorer_spans, run_view_data
        from workbench.report import report_html
        result = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("hello")
        print(len(run_view_data(result).spans), len(explorer_spans(result)))
        print("invoke_agent agent" in report_html(result))
        """
    )
    env = {"OTEL_EXPORTER_OTLP_ENDPOINT": "http://127.0.0.1:9", "PATH": ""}
    done = subprocess.run(
        [sys.executable, "-c", script], capture_output=True, text=True, timeout=120, env=env
    )
    assert done.returncode == 0, done.stderr
    # run, step, prepare, chat, continuation; any export would have had to import the exporter
    assert done.stdout.split() == ["5", "5", "True"]


def test_the_stepper_draws_its_timeline_once_a_press_ends_not_at_every_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Each drawing rebuilds the run so far: at every step, Run to end would be quadratic."""
    from workbench.notebook import stepper as stepper_module

    drawn: list[int] = []

    def counted(run: Any) -> list[dict[str, Any]]:
        drawn.append(len(run.steps))
        return timeline_spans(run)

    monkeypatch.setattr(stepper_module, "timeline_spans", counted)
    script: list[R | str] = [R.tool_call("first", {"x": i}) for i in range(6)]
    agent = wb.Agent(model=wb.ScriptedModel([*script, "ok"]), tools=[first], store=False)
    stepper = stepper_module.Stepper(agent, "go")
    stepper.next_step_button.click()
    assert drawn == [1]
    stepper.run_button.click()
    assert drawn == [1, 7]  # one drawing for the six steps the press ran, with all of them
    steps = {r["name"] for r in stepper_module.timeline_spans(stepper.run)}
    assert {f"workbench.step {i}" for i in range(1, 8)} <= steps
