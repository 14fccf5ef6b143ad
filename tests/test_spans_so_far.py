"""The spans so far of a stopped run: what its explorer, TraceView, Stepper and report draw.

While a run is stopped (a breakpoint, manual stepping, an approval, inside a sub-run at any
depth), `wb.trace_of(run)` is every closed step and each step under way as it stands: the run
spans, steps and calls still open are marked ``in_progress`` and end at the moment the trace was
taken. Before, a run stopped inside a sub-agent in its lead's first step showed "0 of 0 spans".
"""

from __future__ import annotations

from typing import Any

import pytest

import workbench as wb
from workbench.notebook import Stepper, TraceExplorer, TraceView
from workbench.report import report_html
from workbench.telemetry.rebuild import spans_from_run
from workbench.telemetry.spandata import span_data

R = wb.ModelResponse


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found: {query}"


@wb.tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


def team() -> wb.Agent:
    """lead → scout → digger → search, with fresh scripted models."""
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "tides"}, call_id="s1"), "noon"]),
        name="digger",
        tools=[search],
        store=False,
    )
    scout = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "tables"}, call_id="d1"), "noon"]),
        name="scout",
        tools=[digger.as_tool("dig", "Dig.")],
        store=False,
    )
    return wb.Agent(
        model=wb.ScriptedModel([R.tool_call("scout", {"task": "tide?"}, call_id="t1"), "Swim."]),
        name="lead",
        tools=[scout.as_tool("scout", "Find out.")],
        store=False,
    )


def fold(trace: wb.Trace) -> list[Any]:
    """The trace as nested {name: [children]}, a name marked ``…`` while in progress."""
    tree = trace.tree

    def node(position: int) -> Any:
        span = tree.span_at(position)
        name = span.name + (" …" if span.in_progress else "")
        below, child = [], position + 1
        while child < tree.ends[position]:
            below.append(node(child))
            child = tree.ends[child]
        return {name: below} if below else name

    roots, position = [], 0
    while position < len(tree):
        roots.append(node(position))
        position = tree.ends[position]
    return roots


PREPARE, CHAT = "workbench.prepare", "chat scripted"
STOPPED_IN_THE_DIGGER = [
    {
        "invoke_agent lead …": [
            {
                "workbench.step 1 …": [
                    PREPARE,
                    CHAT,
                    {
                        "execute_tool scout …": [
                            {
                                "invoke_agent scout …": [
                                    {
                                        "workbench.step 1 …": [
                                            PREPARE,
                                            CHAT,
                                            {
                                                "execute_tool dig …": [
                                                    {
                                                        "invoke_agent digger …": [
                                                            {
                                                                "workbench.step 1 …": [
                                                                    PREPARE,
                                                                    CHAT,
                                                                ]
                                                            }
                                                        ]
                                                    }
                                                ]
                                            },
                                        ]
                                    }
                                ]
                            }
                        ]
                    },
                ]
            }
        ]
    }
]
"""Stopped at ``Break.on_tool("search")`` in the digger, two sub-runs down, in the lead's step 1:
every run of the tree is in its first step, each calling the next."""


def stopped_in_the_digger() -> wb.AgentRun:
    run = team().start("When can we swim?", breakpoints=[wb.Break.on_tool("search")])
    event = run.run_to_breakpoint()
    assert event is not None and event.state.agent_name == "digger" and event.depth == 2
    return run


def test_a_run_stopped_two_sub_runs_down_shows_its_spans_so_far() -> None:
    run = stopped_in_the_digger()
    trace = wb.trace_of(run)
    assert fold(trace) == STOPPED_IN_THE_DIGGER
    explorer = TraceExplorer(run)
    assert explorer.span_count == 14 and explorer.total == 14  # not "0 of 0 spans"
    opened = [r for r in explorer.view.rows(0, 20) if r["in_progress"]]
    assert [r["name"] for r in opened][:3] == [
        "invoke_agent lead",
        "workbench.step 1",
        "execute_tool scout",
    ]
    call = next(s for s in trace.spans if s.name == "execute_tool dig")
    explorer.select(call.span_id)
    assert "in progress" in explorer.detail
    assert " ms so far · span" in explorer.detail  # its time is the time it has been open
    table = trace.steps_df()
    assert table["label"].tolist() == ["1 · lead", "1 · scout", "1 · digger"]
    assert table["in_progress"].all() and table["tools"].tolist() == [
        "scout (running)",
        "dig (running)",
        "",
    ]
    for span in trace.spans:  # an open span ends when the trace was taken: it holds its children
        if span.parent_id is not None:  # (to the microsecond: times are float seconds on the way)
            parent = next(p for p in trace.spans if p.span_id == span.parent_id)
            assert parent.start_ns <= span.start_ns and span.end_ns <= parent.end_ns + 1_000
    run.run_to_end()
    done = wb.trace_of(run)
    assert not any(s.in_progress for s in done.spans) and len(done.spans) == 30


def test_each_phase_of_manual_stepping_adds_its_span_to_the_step_under_way() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "x"}), "done"]),
        tools=[search],
        store=False,
    )
    run = agent.start("go")
    assert wb.trace_of(run).spans == ()  # nothing ran yet
    shapes = []
    for _ in range(5):
        run.next_phase()
        shapes.append(fold(wb.trace_of(run)))
    step_1 = ["workbench.prepare", "chat scripted", "execute_tool search", "workbench.continuation"]
    assert shapes == [
        [{"invoke_agent agent …": [{"workbench.step 1 …": step_1[:1]}]}],
        [{"invoke_agent agent …": [{"workbench.step 1 …": step_1[:2]}]}],
        [{"invoke_agent agent …": [{"workbench.step 1 …": step_1[:3]}]}],
        [{"invoke_agent agent …": [{"workbench.step 1": step_1}]}],  # the step closed
        [
            {
                "invoke_agent agent …": [
                    {"workbench.step 1": step_1},
                    {"workbench.step 2 …": ["workbench.prepare"]},
                ]
            }
        ],
    ]
    assert len(run.steps) == 1  # the step so far is drawn, never kept
    run.run_to_end()


def test_stepping_into_a_sub_run_shows_the_call_that_waits_for_it() -> None:
    run = team().start("When can we swim?")
    run.next_phase()  # the lead's PREPARE
    run.next_phase()  # INFERENCE: it calls the scout
    event = run.next_phase(into=True)  # the scout's PREPARE
    assert event is not None and event.state.agent_name == "scout"
    assert fold(wb.trace_of(run)) == [
        {
            "invoke_agent lead …": [
                {
                    "workbench.step 1 …": [
                        PREPARE,
                        CHAT,
                        {
                            "execute_tool scout …": [
                                {"invoke_agent scout …": [{"workbench.step 1 …": [PREPARE]}]}
                            ]
                        },
                    ]
                }
            ]
        }
    ]
    run.run_to_end()  # nothing is left waiting inside a sub-run


def test_a_run_paused_for_approval_inside_a_sub_run_is_whole_and_not_in_progress() -> None:
    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/b"}, call_id="w1"), "Wiped."]),
        name="cleaner",
        tools=[wipe],
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "b"}, call_id="c1"), "Done."]),
        name="lead",
        tools=[cleaner.as_tool("clean")],
        store=False,
    )
    run = lead.start("go")
    run.run_to_end()
    assert run.state.status is wb.ExecutionStatus.PAUSED
    trace = wb.trace_of(run)
    names = {s.name for s in trace.spans}
    assert {"invoke_agent lead", "invoke_agent cleaner", "execute_tool wipe"} <= names
    assert not any(s.in_progress for s in trace.spans)  # paused is an end, not a step under way
    wipe_span = next(s for s in trace.spans if s.name == "execute_tool wipe")
    assert wipe_span.attributes["workbench.tool.status"] == "pending"


def test_the_stepper_draws_the_run_so_far_after_continue_stops_in_a_sub_run() -> None:
    stepper = Stepper(team(), "When can we swim?", breakpoints=[wb.Break.on_tool("search")])
    assert "appears when the first phase ends" in str(stepper.timeline.outputs)
    stepper.continue_button.click()  # no running loop here: the click returns when it is done
    assert stepper.run.subrun is not None and stepper.run.subrun.state.agent_name == "digger"
    stepper.draw_timeline()  # (it follows a moment after the clicks pause: a test does not wait)
    figure = stepper.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    ticks = figure["layout"]["yaxis"]["ticktext"]
    title = figure["layout"]["title"]["text"]
    assert (
        "······ invoke_agent digger" in ticks and title == "Timeline: 3 steps of 3 agents, so far"
    )
    view = TraceView(stepper)
    assert len(view.trace.spans) == 14 and view.table["in_progress"].all()
    assert "invoke_agent digger" in report_html(stepper.run)
    stepper.run_button.click()
    stepper.draw_timeline()
    figure = stepper.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert "so far" not in figure["layout"]["title"]["text"]


@pytest.mark.parametrize("telemetry", [True, False])
def test_a_stopped_run_with_telemetry_is_read_from_its_records(telemetry: bool) -> None:
    """A telemetry holds only spans that ended: the open ones come from the records."""
    tel = wb.Telemetry() if telemetry else None
    run = stopped_in_the_digger()
    assert fold(wb.trace_of(run, telemetry=tel)) == STOPPED_IN_THE_DIGGER
    run.run_to_end()


def test_a_run_stepped_by_hand_is_explored_without_the_time_it_waited_on_the_person() -> None:
    """As the Stepper's timeline draws it: the explorer's axis and durations are the work.

    The run recorded when it waited (`StepRecord.waits`), so its result is drawn the same.
    """
    import time

    run = stopped_in_the_digger()
    time.sleep(0.6)  # a person reads the stopped run, then lets it finish
    run.run_to_end()
    recorded = [span_data(s) for s in spans_from_run(run.result)]  # as recorded, waits and all
    root = min((s for s in recorded if s.parent_id is None), key=lambda s: s.start_ns)
    for source in (run, run.result):
        explorer = TraceExplorer(source)
        assert explorer.trace.waited >= 0.55 and explorer.axis_ms < root.duration_ns / 1e6 - 550
        assert explorer.waited.endswith(" s waiting on you left out")
        assert explorer.span_count == len(recorded)
        drawn = explorer.trace.tree.span_at(0)
        assert drawn.name == root.name and drawn.duration_ns < root.duration_ns - 0.55e9
        explorer.select(drawn.span_id)
        assert f"· {drawn.duration_ns / 1e6:.3f} ms · span" in explorer.detail  # the work
