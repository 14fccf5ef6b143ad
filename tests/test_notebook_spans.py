"""The views' spans of a run without telemetry are the exact spans its records make.

The door (`workbench.trace_of`), which every view calls, reads a run without telemetry through
`workbench.telemetry.spans_from_run`: the writer the live run uses. These tests lock what that
means for the views: a sub-run paused and resumed with its parent sits under the
``execute_tool`` span of each execution that ran it, a tool span starts when its tool did, a run
still under way is drawn from its steps so far, and nothing needs (or reaches) an exporter.
"""

from __future__ import annotations

import subprocess
import sys
import textwrap
from typing import Any

import pytest

import workbench as wb
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


def _fold(trace: wb.Trace) -> list[Any]:
    """The trace's spans as nested {name: [children]}, children by start."""
    items = sorted(trace.spans, key=lambda s: s.start_ns)
    known = {s.span_id for s in items}
    children: dict[str | None, list[wb.SpanData]] = {}
    for item in items:
        children.setdefault(item.parent_id if item.parent_id in known else None, []).append(item)

    def node(item: wb.SpanData) -> Any:
        below = children.get(item.span_id, [])
        return {item.name: [node(c) for c in below]} if below else item.name

    return [node(item) for item in children.get(None, [])]


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
        assert _fold(wb.trace_of(run)) == PAUSED_SUBRUN


def test_a_sub_runs_spans_are_in_the_trace_of_its_call_and_name_their_runs(
    paused_tree: tuple[wb.RunResult, wb.RunStore],
) -> None:
    result, _ = paused_tree
    spans = wb.trace_of(result).spans
    by_id = {s.span_id: s for s in spans}
    cleaner = result.children[0]
    subruns = [s for s in spans if s.name == "invoke_agent cleaner"]
    assert len(subruns) == 2
    for subrun in subruns:
        assert subrun.parent_id is not None
        call = by_id[subrun.parent_id]
        assert call.trace_id == subrun.trace_id
        assert call.attributes["workbench.run.id"] == result.run_id
        assert subrun.attributes["workbench.run.id"] == cleaner.run_id
        assert subrun.attributes["workbench.parent_run.id"] == result.run_id
    assert [s.attributes["workbench.run.status"] for s in subruns] == ["paused", "completed"]


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
    spans = {s.attributes.get("gen_ai.tool.call.id"): s for s in wb.trace_of(result).spans}
    for call_id, outcome in outcomes.items():
        assert outcome.started_at is not None
        assert spans[call_id].start_ns == ns(outcome.started_at)
        assert spans[call_id].end_ns == ns(outcome.started_at) + ns(outcome.duration)
    later = outcomes["b"]
    assert later.started_at is not None and later.started_at > tools_began  # ran after "a"
    assert spans["b"].start_ns > ns(tools_began)


def test_the_trace_of_a_run_under_way_has_its_closed_steps_under_a_running_run() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("first", {"x": 1}, call_id="a"), "ok"]),
        tools=[first],
        store=False,
    )
    run = agent.start("go")
    assert wb.trace_of(run).spans == ()  # nothing recorded yet
    while len(run.steps) < 1:
        run.next_phase()
    assert run.state.status is wb.ExecutionStatus.RUNNING and len(run.steps) == 1
    trace = wb.trace_of(run)
    assert _fold(trace) == [
        {
            "invoke_agent agent": [
                _step(1, PREPARE, "chat scripted", "execute_tool first", CONTINUATION)
            ]
        }
    ]
    root = trace.tree.span_at(0)
    assert root.attributes["workbench.run.status"] == "running" and root.in_progress
    step = next(s for s in trace.spans if s.name == "workbench.step 1")
    assert root.end_ns == step.end_ns and not step.in_progress  # the run so far: its last record
    run.run_to_end()
    done = wb.trace_of(run).tree.span_at(0)
    assert done.attributes["workbench.run.status"] == "completed" and not done.in_progress


def test_the_views_of_a_run_need_no_exporter_and_send_nothing() -> None:
    """With only the ``notebook`` extra (no OTLP exporter) and an endpoint in the environment."""
    script = textwrap.dedent(
        """
        import sys
        sys.modules["opentelemetry.exporter"] = None  # not installed: importing it fails
        import workbench as wb
        from workbench.notebook import TraceExplorer, TraceView
        from workbench.report import report_html
        result = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("hello")
        print(len(TraceView(result).trace.spans), TraceExplorer(result).span_count)
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

    def counted(run: Any) -> wb.Trace:
        drawn.append(len(run.steps))
        return wb.trace_of(run)

    monkeypatch.setattr(stepper_module, "trace_of", counted)
    script: list[R | str] = [R.tool_call("first", {"x": i}) for i in range(6)]
    agent = wb.Agent(model=wb.ScriptedModel([*script, "ok"]), tools=[first], store=False)
    stepper = stepper_module.Stepper(agent, "go")
    assert drawn == [0]  # the run before it starts
    stepper.next_step_button.click()
    stepper.draw_timeline()  # (it follows a moment after the clicks pause: a test does not wait)
    assert drawn == [0, 1]
    stepper.run_button.click()
    stepper.draw_timeline()
    assert drawn == [0, 1, 7]  # one drawing for the six steps the press ran, with all of them
    steps = {s.name for s in wb.trace_of(stepper.run).spans}
    assert {f"workbench.step {i}" for i in range(1, 8)} <= steps
