"""A run stepped by hand records when it waited on the person; its views leave exactly that out.

The waits are the stretches between two calls of the run's driver (`AgentRun`): the step
records keep them (`StepRecord.waits`), the step spans carry them (``workbench.wait`` events),
and `wb.Trace` closes them, whatever the trace was read from. A run nobody steps records none
and is drawn as it ran.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import textwrap
import threading
import time
from pathlib import Path

import pytest

import workbench as wb
from workbench import waits
from workbench.notebook import Stepper
from workbench.notebook import stepper as stepper_module
from workbench.notebook.html import outcomes_html
from workbench.notebook.spans import timeline_figure
from workbench.notebook.tables import clocks_behind, trace_heading
from workbench.telemetry import names as n
from workbench.telemetry.rebuild import spans_from_run
from workbench.telemetry.spandata import SpanData, SpanEvent, span_data
from workbench.telemetry.trace import Trace

R = wb.ModelResponse
PAUSE = 1.0
"""Seconds the person reads at one point of each stepped run (the run's own work is far less)."""


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@wb.tool(requires_approval=True)
def save(note: str) -> str:
    """Save a note."""
    return "saved"


def _agent(**options: object) -> wb.Agent:
    script = [R.tool_call("search", {"query": "tides"}, call_id="s1"), "go swimming"]
    return wb.Agent(model=wb.ScriptedModel(script), name="solo", tools=[search], **options)  # type: ignore[arg-type]


def _searches(count: int, **options: object) -> wb.Agent:
    """An agent that searches ``count`` times, a step each, then answers: ``count + 1`` steps."""
    script = [R.tool_call("search", {"query": f"q{i}"}, call_id=f"s{i}") for i in range(count)]
    model = wb.ScriptedModel([*script, "go swimming"])
    return wb.Agent(model=model, name="solo", tools=[search], store=False, **options)  # type: ignore[arg-type]


def _stepped(run: wb.AgentRun, pause_after: int = 2, into: bool = False) -> None:
    """Step ``run`` phase by phase, reading for `PAUSE` seconds after phase ``pause_after``."""
    count = 0
    while run.next_phase(into=into) is not None:
        count += 1
        if count == pause_after:
            time.sleep(PAUSE)


def _extent(trace: Trace) -> float:
    return (trace.tree.end_ns - trace.tree.start_ns) / 1e9


def _wait_events(spans: list[SpanData]) -> list[SpanEvent]:
    return [e for s in spans for e in s.events if e.name == n.EVENT_WAIT]


def test_a_stepped_run_records_its_waits_and_its_views_leave_them_out() -> None:
    run = _agent(store=False).start("go")
    _stepped(run)
    result = run.result
    waits = [w for step in result.steps for w in step.waits]
    assert sum(w.duration for w in waits) >= PAUSE
    spans = [span_data(s) for s in spans_from_run(result)]
    assert len(_wait_events(spans)) == len(waits)
    trace = wb.trace_of(result)
    assert trace.waited >= PAUSE
    assert _extent(trace) < PAUSE  # the time it worked: the reading is gone
    assert not _wait_events(list(trace.spans))  # closed once: no wait left to close again
    steps = {s.attributes[n.STEP_INDEX]: s for s in trace.spans if s.category == "step"}
    first = result.steps[0]
    assert steps[1].duration_ns / 1e9 < PAUSE  # the step that held the pause, in time worked
    assert first.timing.total < PAUSE  # its phases' own time never counted the reading
    timing = trace.timing_df()
    assert timing["duration_ms"].sum() < PAUSE * 1e3
    assert "waiting on you left out" in trace_heading(trace)


def test_a_run_paused_for_approval_and_resumed_leaves_out_the_wait_between_its_traces() -> None:
    script = [R.tool_call("save", {"note": "tides"}), "saved it"]
    agent = wb.Agent(model=wb.ScriptedModel(script), name="saver", tools=[save], store=False)
    run = agent.start("go")
    while run.state.status is not wb.ExecutionStatus.PAUSED:
        run.next_phase()
    time.sleep(PAUSE)  # the person decides
    run.resume(approvals={call.call_id: True for call in run.state.unanswered_calls()})
    while run.next_phase() is not None:
        pass
    trace = wb.trace_of(run.result)
    assert len({s.trace_id for s in trace.spans}) == 2  # the resumed execution's trace of its own
    assert trace.waited >= PAUSE
    assert _extent(trace) < PAUSE  # the wait between the two traces is closed too


def _saver(store: wb.RunStore) -> wb.Agent:
    script = [R.tool_call("save", {"note": "tides"}, call_id="c1"), "saved it"]
    return wb.Agent(model=wb.ScriptedModel(script), name="saver", tools=[save], store=store)


def test_a_run_resumed_in_a_new_agent_run_leaves_out_the_wait_since_its_pause(
    tmp_path: Path,
) -> None:
    """``agent.resume(state)`` in another cell: the pause is the person's, not the run's."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        paused = _saver(store).run_sync("go")
        assert paused.state.paused_at is not None
        state = wb.AgentState.from_json(paused.state.to_json())
        time.sleep(PAUSE)  # the person decides
        agent = _saver(store)
        agent.model = paused_model = wb.ScriptedModel(["saved it"])
        done = agent.resume_sync(state, approvals={"c1": True})
    assert paused_model.calls and done.status is wb.ExecutionStatus.COMPLETED
    assert done.state.paused_at is None  # it ran again
    resumed = done.steps[len(paused.steps)]  # the paused step's TOOLS, resumed
    assert sum(w.duration for w in resumed.waits) >= PAUSE
    trace = wb.trace_of(done)
    assert len({s.trace_id for s in trace.spans}) == 2  # the paused execution's and this one's
    assert trace.waited >= PAUSE
    assert _extent(trace) < PAUSE  # the pause between the two traces is closed
    assert "waiting on you left out" in trace_heading(trace)
    assert clocks_behind(trace) == 0.0  # its clocks agree: no word of them
    assert "by the clocks" not in trace_heading(trace)


@pytest.mark.parametrize(
    "paused_at",
    [None, -1e300, 0.0, "yesterday", True, [1.0], 10**400],
    ids=["version 3", "damaged", "zero", "text", "true", "a list", "past any float"],
)
def test_a_state_that_does_not_say_when_it_paused_still_resumes(
    tmp_path: Path, paused_at: object
) -> None:
    """A version 3 state file has no ``paused_at``; a damaged one is none: it loads, resumes,
    and records no wait (a time before 1970 would have made one of 1e300 seconds)."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        paused = _saver(store).run_sync("go")
        raw = json.loads(paused.state.to_json())
        if paused_at is None:
            raw["schema_version"] = 3
            del raw["paused_at"]
        else:
            raw["paused_at"] = paused_at
        state = wb.AgentState.from_json(json.dumps(raw))
        assert state.paused_at is None and state.schema_version == wb.AgentState().schema_version
        agent = _saver(store)
        agent.model = wb.ScriptedModel(["saved it"])
        done = agent.resume_sync(state, approvals={"c1": True})
    assert done.status is wb.ExecutionStatus.COMPLETED
    assert all(step.waits == () for step in done.steps)  # drawn as before: the gap it was


AHEAD = 3600.0
"""Seconds the clock of the machine a run paused on was ahead of the one it resumes on."""


def test_a_pause_in_the_future_is_no_wait_and_the_person_s_waits_after_it_are_kept(
    tmp_path: Path,
) -> None:
    """A ``paused_at`` an hour ahead of this clock: no wait from it, and the first record
    still keeps the person's reading between presses (its waits began in the future before)."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        paused = _saver(store).run_sync("go")
        ahead = paused.state.model_copy(update={"paused_at": time.time() + AHEAD})
        agent = _saver(store)
        agent.model = wb.ScriptedModel(["saved it"])
        run = agent.start_resume(wb.AgentState.from_json(ahead.to_json()), {"c1": True})
        _stepped(run, pause_after=1)
    resumed = run.result.steps[len(paused.steps)]
    assert PAUSE <= sum(w.duration for w in resumed.waits) < AHEAD
    assert PAUSE <= wb.trace_of(run.result).waited < AHEAD


def test_a_run_resumed_before_it_paused_by_the_clocks_says_so_where_its_wait_would_show(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Paused where the clock is an hour ahead (another machine), resumed here: the pause is
    no wait, the resumed execution is drawn an hour before the paused one, and the views say
    why instead of leaving the reader with an hour of nothing."""
    real = time.time
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        monkeypatch.setattr(time, "time", lambda: real() + AHEAD)  # the other machine
        paused = _saver(store).run_sync("go")
        monkeypatch.setattr(time, "time", real)
        agent = _saver(store)
        agent.model = wb.ScriptedModel(["saved it"])
        done = agent.resume_sync(paused.state, approvals={"c1": True})
        trace = wb.trace_of(store.load(done.run_id))
    assert done.status is wb.ExecutionStatus.COMPLETED
    assert all(step.waits == () for step in done.steps)  # clamped: no wait, not a negative one
    assert trace.waited == 0.0
    assert AHEAD - 60 < clocks_behind(trace) <= AHEAD
    heading = trace_heading(trace)
    assert "waiting on you" not in heading
    said = r"resumed (1 h 0 min|59 min \d+ s) before its pause by the clocks \(one is off\)"
    assert re.search(said, heading), heading
    figure = timeline_figure(trace)
    assert figure is not None and "before its pause by the clocks" in figure.layout.title.text
    # a run whose clocks agree says nothing of it
    assert clocks_behind(wb.trace_of(paused)) == 0.0


DAYS = 3
"""Days after the pause the other process resumes the run (its clock moved on that far)."""


def test_a_run_resumed_in_another_process_days_later_is_drawn_as_the_work(tmp_path: Path) -> None:
    """The pause is days long: the views say how long they left out; the axis is the work."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        paused = _saver(store).run_sync("go")
    (tmp_path / "state.json").write_text(paused.state.to_json())
    script = textwrap.dedent(
        f"""
        import sys, time
        real, real_ns = time.time, time.time_ns
        time.time = lambda: real() + {DAYS} * 86400  # this process runs days after the pause
        time.time_ns = lambda: real_ns() + {DAYS} * 86400 * 10**9
        from pathlib import Path
        import workbench as wb
        from workbench.notebook.tables import trace_heading
        sys.path.insert(0, sys.argv[2])
        from tests.test_recorded_waits import _saver

        where = Path(sys.argv[1])
        with wb.RunStore(where / "runs.sqlite") as store:
            agent = _saver(store)
            agent.model = wb.ScriptedModel(["saved it"])
            state = wb.AgentState.from_json((where / "state.json").read_text())
            done = agent.resume_sync(state, approvals={{"c1": True}})
            trace = wb.trace_of(store.load(done.run_id))
        print(trace.waited, (trace.tree.end_ns - trace.tree.start_ns) / 1e9)
        print(trace_heading(trace))
        """
    )
    repo = Path(__file__).resolve().parents[1]
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(repo)],
        capture_output=True,
        text=True,
        env={**os.environ, "PYTHONPATH": str(repo)},
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    figures, heading = done.stdout.strip().splitlines()[-2:]
    waited, extent = (float(x) for x in figures.split())
    assert waited >= DAYS * 86400
    assert extent < 60  # the work: seconds at most, not days
    assert re.search(r"\b3 d 0 h waiting on you left out", heading), heading


def test_a_run_nobody_steps_records_no_wait_and_is_drawn_as_it_ran() -> None:
    telemetry = wb.Telemetry()
    result = _agent(store=False, telemetry=telemetry).run_sync("go")
    assert all(step.waits == () for step in result.steps)
    recorded = telemetry.span_data()
    assert not _wait_events(recorded)
    trace = wb.trace_of(result, telemetry=telemetry)
    assert trace.waits == {} and trace.waited == 0.0
    as_recorded = {s.span_id: (s.start_ns, s.end_ns) for s in recorded}
    assert {s.span_id: (s.start_ns, s.end_ns) for s in trace.spans} == as_recorded
    assert "waiting on you" not in trace_heading(trace)


async def test_a_run_driven_from_code_records_no_wait_and_is_drawn_as_it_ran() -> None:
    """Code comes back between phases within microseconds: those gaps are no wait on a person.

    Counted, a run stepped from code kept thousands of them (500 steps: 1,999 in its records,
    its run span kept the SDK's last 128) and was drawn moved by them.
    """
    telemetry = wb.Telemetry()
    run = _agent(store=False, telemetry=telemetry).start("go")
    while run.next_phase() is not None:
        pass
    iterated = [e async for e in _agent(store=False, telemetry=telemetry).iterate("go")]
    assert iterated and run.done
    assert all(step.waits == () for step in run.result.steps)
    recorded = telemetry.span_data()
    assert not _wait_events(recorded)
    trace = wb.trace_of(run.result, telemetry=telemetry)
    assert trace.waits == {}
    as_recorded = {s.span_id: (s.start_ns, s.end_ns) for s in recorded}
    assert {s.span_id: (s.start_ns, s.end_ns) for s in trace.spans} == {
        s.span_id: as_recorded[s.span_id] for s in trace.spans
    }


def test_a_run_stepped_in_more_presses_than_a_span_keeps_events_leaves_out_every_wait(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The SDK keeps a span's last 128 events: on the run span, the first waits fell off."""
    monkeypatch.setattr(waits, "SHORTEST", 0.0)  # every gap a wait: 200 quick presses
    script = [R.tool_call("search", {"query": "tides"}, call_id=f"s{i}") for i in range(49)]
    telemetry = wb.Telemetry()
    agent = wb.Agent(
        model=wb.ScriptedModel([*script, "go swimming"]),
        tools=[search],
        store=False,
        telemetry=telemetry,
    )
    run = agent.start("go")
    while run.next_phase() is not None:
        pass
    recorded = [w for step in run.result.steps for w in step.waits]
    assert len(recorded) > 128
    seconds = sum(w.duration for w in recorded)
    assert wb.trace_of(run.result).waited == pytest.approx(seconds, abs=1e-6)
    assert wb.trace_of(run.result, telemetry=telemetry).waited == pytest.approx(seconds, abs=1e-6)


def test_the_stored_run_the_live_trace_and_its_file_leave_out_the_same_waits(
    tmp_path: Path,
) -> None:
    store, telemetry = wb.RunStore(tmp_path / "runs.db"), wb.Telemetry()
    run = _agent(store=store, telemetry=telemetry).start("go")
    _stepped(run)
    result = run.result
    stored = store.load(result.run_id)
    assert [s.waits for s in stored.steps] == [s.waits for s in result.steps]
    traces = {
        "records": wb.trace_of(result),
        "telemetry": wb.trace_of(result, telemetry=telemetry),
        "store": wb.trace_of(stored),
        "otlp file": wb.load_trace(telemetry.write_otlp_json(tmp_path / "otlp.json")),
        "jaeger file": wb.load_trace(telemetry.write_jaeger_json(tmp_path / "jaeger.json")),
    }
    for name, trace in traces.items():
        assert trace.waited >= PAUSE, name
        assert _extent(trace) < PAUSE, name
    worked = {name: _extent(trace) for name, trace in traces.items()}
    assert max(worked.values()) - min(worked.values()) < 1e-4  # the same spans, closed the same


def test_a_sub_run_stepped_into_records_the_waits_and_its_calling_span_holds_it() -> None:
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "deep"}, call_id="s1"), "dug"]),
        name="digger",
        tools=[search],
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "dig"}, call_id="d1"), "done"]),
        name="lead",
        tools=[digger.as_tool("dig")],
        store=False,
    )
    run = lead.start("go")
    _stepped(run, pause_after=4, into=True)  # lead prepare, inference; digger prepare, inference
    result = run.result
    (child,) = result.children
    assert sum(w.duration for s in child.steps for w in s.waits) >= PAUSE
    assert wb.trace_of(child).waited >= PAUSE  # the sub-run's own trace knows its waits too
    trace = wb.trace_of(result)
    assert trace.waited >= PAUSE and _extent(trace) < PAUSE
    by_name = {s.name: s for s in trace.spans}
    call, sub_run = by_name["execute_tool dig"], by_name["invoke_agent digger"]
    assert call.duration_ns / 1e9 < PAUSE  # the call's time worked, not the person's reading
    assert call.start_ns <= sub_run.start_ns and sub_run.end_ns <= call.end_ns  # still holds it
    step = result.steps[0]
    (dig,) = step.tool_outcomes
    assert dig.duration >= PAUSE  # the record keeps the wall clock: its span as it happened
    ((_, _, worked),) = step.timing.per_tool
    assert worked == pytest.approx(wb.time_worked(dig.started_at, dig.duration, step.waits))
    assert worked < PAUSE
    table = outcomes_html(step.tool_outcomes, waits=step.waits)  # the Stepper's Tool calls
    assert f"{worked * 1e3:.2f} ms" in table
    assert re.search(r"\+1\.\d s waiting on you", table)


def _span(
    span_id: str, start: int, end: int, *, trace_id: str = "t", **options: object
) -> SpanData:
    parent = None if span_id == "root" else "root"
    return SpanData(
        trace_id=trace_id,
        span_id=span_id,
        parent_id=parent,
        name=span_id,
        start_ns=start,
        end_ns=end,
        **options,  # type: ignore[arg-type]
    )


def _wait(at: int, seconds: object) -> SpanEvent:
    return SpanEvent(name=n.EVENT_WAIT, time_ns=at, attributes={n.WAIT_SECONDS: seconds})


def test_the_recorded_waits_are_closed_in_their_own_trace_only() -> None:
    waits = (_wait(10, 40e-9), _wait(70, 20e-9), _wait(75, 5e-9))  # the last inside the second
    trace = Trace.of(
        [
            _span("root", 0, 100, events=waits),
            _span("a", 0, 10),
            _span("b", 50, 60, events=(SpanEvent(name="exception", time_ns=55),)),
            _span("c", 55, 70),
            _span("d", 90, 100),
            _span("other", 20, 30, trace_id="u"),  # another run that ran during the wait
        ]
    )
    assert trace.waits == {"t": ((10, 50), (70, 90))}
    bounds = {s.span_id: (s.start_ns, s.end_ns) for s in trace.spans}
    assert bounds == {
        "root": (0, 40),
        "a": (0, 10),
        "b": (10, 20),
        "c": (15, 30),
        "d": (30, 40),
        "other": (20, 30),
    }
    (b,) = [s for s in trace.spans if s.span_id == "b"]
    assert [e.time_ns for e in b.events] == [15]  # its events move with it
    assert [trace.wall_ns(s.start_ns) for s in trace.spans if s.trace_id == "t"] == [
        0,
        0,
        50,  # b began right after the first wait: 10 ns into the trace's work, 50 by the clock
        55,
        90,
    ]
    ends = [trace.wall_ns(s.end_ns, ending=True) for s in trace.spans if s.trace_id == "t"]
    assert ends == [100, 10, 60, 70, 100]
    (other,) = [s for s in trace.spans if s.trace_id == "u"]  # it ran while "t" waited
    assert trace.wall_ns(other.start_ns, trace_id="u") == 20
    assert Trace.of(trace.spans).spans == trace.spans  # nothing left to close


@pytest.mark.parametrize("seconds", ["soon", -1.0, float("nan"), True, None])
def test_a_damaged_wait_event_is_left_out_and_the_trace_drawn_as_recorded(
    seconds: object,
) -> None:
    trace = Trace.of([_span("root", 0, 100, events=(_wait(10, seconds),)), _span("a", 50, 60)])
    assert trace.waits == {}
    assert {s.span_id: (s.start_ns, s.end_ns) for s in trace.spans} == {
        "root": (0, 100),
        "a": (50, 60),
    }


@pytest.mark.parametrize(
    ("wait", "closed"),
    [
        (_wait(10, 1e300), ((10, 100),)),  # raised OverflowError: 1e309 ns is no integer
        (_wait(10, 10**30), ((10, 100),)),  # drew the run in a nanosecond
        (_wait(-20, 40e-9), ((0, 20),)),  # shifted the whole trace before its start
        (_wait(-500, 100e-9), ()),
        (_wait(200, 5e-9), ()),  # said it waited where no span of it was
    ],
)
def test_a_wait_event_outside_its_trace_is_cut_to_it(
    wait: SpanEvent, closed: tuple[tuple[int, int], ...]
) -> None:
    trace = Trace.of([_span("root", 0, 100, events=(wait,)), _span("a", 50, 60)])
    assert trace.waits == ({"t": closed} if closed else {})
    spans = {s.span_id: (s.start_ns, s.end_ns) for s in trace.spans}
    assert spans["root"][0] == 0 and all(0 <= a <= b <= 100 for a, b in spans.values())
    assert spans["root"][1] + trace.waited * 1e9 == pytest.approx(100)


REDRAW = 0.03
"""Seconds each redraw of the Stepper takes here. In a kernel one takes a few milliseconds, as
long as a scripted step's work: made longer, a step's time tells them from its work on any
machine. Under `waits.SHORTEST`, so the gaps around a redraw never count as a wait of their own."""


def _slow_redraws(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Make each Stepper redraw take `REDRAW` seconds; the list grows by one at each."""
    redrawn: list[float] = []
    refresh = Stepper.refresh

    def slow(self: Stepper) -> None:
        time.sleep(REDRAW)
        refresh(self)
        redrawn.append(REDRAW)

    monkeypatch.setattr(Stepper, "refresh", slow)
    return redrawn


def _time_beyond_phases(result: wb.RunResult) -> list[float]:
    """Per step of ``result``'s table: its time less its phases' (ms)."""
    frame = wb.trace_of(result).steps_df()
    phases = frame[["prepare_ms", "inference_ms", "tools_ms", "hooks_ms", "continuation_ms"]]
    return list(frame["duration_ms"] - phases.sum(axis=1))


async def test_run_to_end_in_the_stepper_leaves_its_redraws_out_of_each_step(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """The Stepper redraws between phases of Run to end, inside the press: not the step's time.

    In JupyterLab a scripted lead's step read 11.7 ms in the steps table, its phases 0.95 ms.
    Drawn here at every phase (a real model's phases are that slow), as often as it ever is.
    """
    monkeypatch.setattr(stepper_module, "_REDRAW_EVERY", 0.0)
    redrawn = _slow_redraws(monkeypatch)
    stepper = Stepper(_searches(4), "go")
    redrawn.clear()
    stepper.run_button.click()
    await stepper.wait()
    result = stepper.run.result
    assert result.status is wb.ExecutionStatus.COMPLETED and len(result.steps) == 5
    assert len(redrawn) >= 4 * 5  # after each phase of each step, at least
    beyond = _time_beyond_phases(result)
    assert max(beyond) < REDRAW * 1e3, beyond  # each step held three or four redraws before
    trace = wb.trace_of(result)
    assert trace.drawn > REDRAW * 4 * 4  # (those after the last phase: after it)
    assert "drawing the views left out" in trace_heading(trace)


@pytest.mark.parametrize("drive", ["step", "run"])
def test_a_run_driven_from_a_cell_while_the_stepper_shows_it_keeps_a_drawing_a_step_at_most(
    monkeypatch: pytest.MonkeyPatch, drive: str
) -> None:
    """``run.next_step()`` cell after cell, or ``run.run_to_end()``: the Stepper draws the run
    as each call ends (and between, at most every `_REDRAW_EVERY`), not at every phase.

    Drawn at every phase, each step kept eight waits (each redraw), and its heading said the
    drawings were "waiting on you". Now a step keeps one drawing at most, the views say it as
    the views' drawing, and the step's time is still its phases.
    """
    redrawn = _slow_redraws(monkeypatch)
    stepper = Stepper(_searches(4), "go")
    run = stepper.run
    if drive == "step":
        while run.next_step() is not None:
            pass
    else:
        run.run_to_end()
    result = run.result
    assert result.status is wb.ExecutionStatus.COMPLETED and len(result.steps) == 5
    recorded = [w for step in result.steps for w in step.waits]
    drawings = [w for w in recorded if w.kind == "drawing"]
    # A gap between two calls of the cell counts only from SHORTEST: a machine under load
    # may stall it that long (it then holds the drawing in it), never in a quiet run.
    gaps = [w for w in recorded if w.kind == "person"]
    assert all(w.duration >= waits.SHORTEST for w in gaps)
    assert len(drawings) <= len(result.steps)  # each call's end (the last: after its record)
    if drive == "step":
        assert len(drawings) + len(gaps) >= len(result.steps) - 1
    assert all(w.duration >= REDRAW for w in drawings)
    assert redrawn and stepper.events[-1].phase is wb.Phase.CONTINUATION  # shown as it ended
    assert "completed" in stepper.status.value
    beyond = _time_beyond_phases(result)
    assert max(beyond) < REDRAW * 1e3, beyond
    heading = trace_heading(wb.trace_of(result))
    if not gaps:
        assert "waiting on you" not in heading
    if drive == "step" and len(drawings) >= 2:  # 30 ms each: said as what they were
        assert re.search(r"0\.\d s drawing the views left out", heading), heading


def test_a_person_s_wait_and_the_views_drawing_are_said_apart() -> None:
    """A call that waited on the person and on the views says each (the Tool calls table)."""
    step = 1_000.0
    waits = (
        wb.Wait(started_at=step + 0.1, duration=2.0),
        wb.Wait(started_at=step + 2.2, duration=0.2, kind="drawing"),
        wb.Wait(started_at=step + 2.5, duration=0.001, kind="drawing"),
    )
    outcome = wb.ToolOutcome(
        call_id="c1",
        name="search",
        arguments={},
        content="x",
        status="ok",
        started_at=step,
        duration=2.6,
    )
    html = outcomes_html([outcome], waits=waits)
    assert "+2.0 s waiting on you" in html and "+0.2 s drawing the views" in html
    assert "399.00 ms" in html  # 2.6 s less the three
    assert "drawing the views" not in outcomes_html([outcome], waits=waits[:1] + waits[2:])


ANSWER = 0.6
"""Seconds the model takes to answer while Stop is pressed (far longer than a redraw)."""


async def test_a_stop_pressed_while_the_model_answers_leaves_the_phase_its_time(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Stop during a phase redraws the Stepper on the loop while the call goes on: no wait.

    The redraw runs between the phase's awaits (the model's server, a tool's thread, work on
    meanwhile); counted as a wait, the inference read less than its model call.
    """
    redrawn = _slow_redraws(monkeypatch)
    asked = threading.Event()

    async def slow(messages: object, request: object) -> str:
        asked.set()
        await asyncio.sleep(ANSWER)
        return "done"

    stepper = Stepper(wb.Agent(model=wb.FunctionModel(slow), store=False), "go")
    stepper.run_button.click()
    assert await asyncio.to_thread(asked.wait, 30)
    drawn = len(redrawn)
    stepper.stop()  # busy: the run is aborted after the phase, and redrawn now
    await stepper.wait()
    assert len(redrawn) > drawn
    result = stepper.run.result
    assert result.status is wb.ExecutionStatus.ABORTED
    step = result.steps[0]
    assert step.model_duration >= ANSWER
    assert step.timing.inference >= step.model_duration  # the call is part of its phase
