"""Approvals met while stepping: the run and the Stepper show the pause as soon as it happens,
and the first press after the answer goes on from it."""

from __future__ import annotations

import workbench as wb
from workbench.notebook import Stepper

R = wb.ModelResponse


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"


@wb.tool(requires_approval=True)
def wipe(path: str) -> str:
    """Wipe a folder."""
    return f"wiped {path}"


def _team() -> wb.Agent:
    """lead -> [research (researcher), clean (cleaner -> wipe, needs approval)] in parallel."""
    researcher = wb.Agent(model=wb.ScriptedModel(["noon"]), name="researcher", store=False)
    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/b"}, call_id="w1"), "Wiped."]),
        name="cleaner",
        tools=[wipe],
        store=False,
    )
    calls = [("research", {"task": "tide"}), ("clean", {"task": "b"})]
    both = R.tool_calls(calls, call_ids=["r1", "c1"])
    return wb.Agent(
        model=wb.ScriptedModel([both, "Swim at noon."]),
        name="lead",
        tools=[researcher.as_tool("research"), cleaner.as_tool("clean")],
        store=False,
    )


def _solo() -> wb.Agent:
    script = [R.tool_call("wipe", {"path": "/x"}, call_id="w1"), "ok"]
    return wb.Agent(model=wb.ScriptedModel(script), name="solo", tools=[wipe], store=False)


def _who(event: wb.PhaseEvent | None) -> tuple[str, str] | None:
    return None if event is None else (event.state.agent_name, event.phase.value)


def test_the_step_into_a_sub_run_that_pauses_leaves_the_parent_paused() -> None:
    run = _team().start("go")
    while (event := run.next_phase(into=True)) is not None and event.phase.value != "tools":
        pass  # the lead's PREPARE and INFERENCE
    while (event := run.next_phase(into=True)) is not None:
        if _who(event) == ("cleaner", "tools"):
            break
    # The lead's TOOLS phase has ended with it (paused), its event comes next.
    assert run.state.status is wb.ExecutionStatus.PAUSED
    assert [(p.call_id, p.via) for p in run.state.pending] == [("w1", "c1")]
    assert not run.done
    assert _who(run.next_phase(into=True)) == ("lead", "tools")
    assert run.done and run.next_phase(into=True) is None
    # where stepping goes on after the answer: the cleaner, which asked
    assert run.subrun is not None and run.subrun.state.agent_name == "cleaner"
    assert run.subrun.state.status is wb.ExecutionStatus.PAUSED


async def test_the_stepper_shows_the_approval_a_sub_run_stepped_into_asks_for() -> None:
    stepper = Stepper(_team(), "go")  # button work runs as tasks on this loop, as in a kernel
    presses = 0
    while not stepper.run.done and presses < 40:
        stepper.step_into_button.click()
        await stepper.wait()
        presses += 1
    assert stepper.run.state.status is wb.ExecutionStatus.PAUSED
    assert [r.pending.call_id for r in stepper.approval_rows] == ["w1"]
    assert stepper.step_into_button.disabled and stepper.next_phase_button.disabled
    assert "paused" in stepper.status.value and stepper.errors == []
    last = stepper.events[-2:]  # the press that paused the cleaner also took the lead's event
    assert [_who(e) for e in last] == [("cleaner", "tools"), ("lead", "tools")]
    assert presses == len(stepper.events) - 1  # every press one phase, but that one

    stepper.approval_rows[0].approve_button.click()
    stepper.run_button.click()
    await stepper.wait()
    assert stepper.result.output == "Swim at noon." and stepper.errors == []


async def test_a_press_on_a_paused_run_shows_it_as_it_is() -> None:
    stepper = Stepper(_solo(), "go")
    for _ in range(3):
        stepper.next_phase_button.click()
        await stepper.wait()
    assert stepper.run.done and "paused" in stepper.status.value
    stepper.run.abort()  # through the run, not the widget
    stepper.next_phase_button.click()
    await stepper.wait()
    assert "aborted" in stepper.status.value and stepper.approval_rows == []


def test_a_run_paused_by_next_phase_goes_on_with_the_first_call_after_resume() -> None:
    run = _solo().start("go")
    assert [_who(run.next_phase()) for _ in range(3)][-1] == ("solo", "tools")
    assert run.done and run.state.status is wb.ExecutionStatus.PAUSED
    run.resume(approvals={"w1": True})
    assert _who(run.next_phase()) == ("solo", "tools")
    assert run.run_to_end().output == "ok"


async def test_the_first_press_after_an_approval_goes_on() -> None:
    stepper = Stepper(_solo(), "go")
    for _ in range(3):
        stepper.next_phase_button.click()
        await stepper.wait()
    stepper.approval_rows[0].approve_button.click()
    stepper.run_button.click()
    await stepper.wait()
    assert stepper.run.state.status is wb.ExecutionStatus.COMPLETED
    assert stepper.result.output == "ok" and stepper.errors == []


def test_the_approval_row_says_which_sub_agent_asks_and_through_which_call() -> None:
    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/b"}, call_id="<i>w1"), "Wiped."]),
        name="cleaner",
        tools=[wipe],
        store=False,
    )
    manager = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "b"}, call_id="c1"), "Done."]),
        name="manager",
        tools=[cleaner.as_tool("clean")],
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("manage", {"task": "b"}, call_id="<i>m1</i>"), "ok"]),
        name="lead",
        tools=[manager.as_tool("manage")],
        store=False,
    )
    stepper = Stepper(lead, "go")
    stepper.run_button.click()
    [row] = stepper.approval_rows
    label = row.label.value
    # the calls a person knows, down to the one that asks; the id only on hover
    assert "asked by sub-agent <b>cleaner</b>, via lead's manage ▸ manager's clean" in label
    assert "title='call &lt;i&gt;w1'" in label and "<i>" not in label

    solo = Stepper(_solo(), "go")
    solo.run_button.click()
    assert "asked by" not in solo.approval_rows[0].label.value  # its own call: no one else


def test_the_timeline_draws_the_sub_runs_under_the_calls_that_started_them() -> None:
    run = _team().start("go")
    run.next_step()  # the lead's step 1: both sub-agents run, the cleaner's wipe waits
    run.resume(approvals={"w1": True})
    run.run_to_end()
    spans = wb.trace_of(run).spans  # what the Stepper's timeline draws
    names = {s.span_id: s.name for s in spans}
    under = {
        s.name: names.get(s.parent_id or "") for s in spans if s.name.startswith("invoke_agent")
    }
    assert under == {
        "invoke_agent lead": None,
        "invoke_agent researcher": "execute_tool research",
        "invoke_agent cleaner": "execute_tool clean",
    }


def _digging_team() -> wb.Agent:
    """lead -> research (researcher) -> dig (digger: search, then wipe, which needs approval)."""
    digger = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_call("search", {"query": "q"}, call_id="s1"),
                R.tool_call("wipe", {"path": "/tmp/x"}, call_id="w1"),
                "dug and wiped",
            ]
        ),
        name="digger",
        tools=[search, wipe],
        store=False,
    )
    researcher = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "dig"}, call_id="d1"), "found"]),
        name="researcher",
        tools=[digger.as_tool("dig")],
        store=False,
    )
    return wb.Agent(
        model=wb.ScriptedModel([R.tool_call("research", {"task": "go"}, call_id="r1"), "done"]),
        name="lead",
        tools=[researcher.as_tool("research")],
        store=False,
    )


async def _paused_in_the_digger() -> Stepper:
    stepper = Stepper(_digging_team(), "go", breakpoints=[wb.Break.on_tool("search")])
    for button in (stepper.continue_button, stepper.next_phase_button, stepper.step_out_button):
        button.click()
        await stepper.wait()
    # Step out of the digger was cut short: its next call asked for approval, the tree paused
    assert stepper.run.state.status is wb.ExecutionStatus.PAUSED
    assert [r.pending.call_id for r in stepper.approval_rows] == ["w1"]
    assert "waits for your answer to <b>1</b> call" in stepper.status.value
    return stepper


async def test_closing_the_stepper_of_a_tree_paused_in_the_digger_keeps_the_pause() -> None:
    stepper = await _paused_in_the_digger()
    stepper.close()  # a paused tree is data to resume: closing the view keeps it as it is
    assert stepper.run.state.status is wb.ExecutionStatus.PAUSED
    assert stepper.run.state.pending[0].call_id == "w1"


async def test_after_approving_a_call_inside_the_digger_the_stepper_is_still_in_the_digger() -> (
    None
):
    stepper = await _paused_in_the_digger()
    stepper.approval_rows[0].approve_button.click()
    assert stepper.run.subrun is not None and stepper.run.subrun.state.agent_name == "digger"
    assert not stepper.step_out_button.disabled
    assert stepper.next_phase_button.description == "Step over"

    stepper.next_phase_button.click()  # step over, in the digger: the approved wipe runs
    await stepper.wait()
    assert _who(stepper.events[-1]) == ("digger", "tools") and stepper.events[-1].depth == 2
    stepper.step_out_button.click()  # the digger finishes: stop in the researcher
    await stepper.wait()
    assert _who(stepper.events[-1]) == ("researcher", "tools")
    stepper.run_button.click()
    await stepper.wait()
    assert stepper.result.output == "done" and stepper.errors == []
    (researcher,) = stepper.result.children
    assert researcher.children[-1].output == "dug and wiped"


def test_a_sub_run_paused_and_resumed_keeps_what_it_did_before_the_pause() -> None:
    """Without a store the resumed sub-runs hold only their own execution: the run combines them.

    Else the timeline drew the lead's first call as one long wait with nothing under it.
    """
    run = _digging_team().start("go")
    run.next_step()  # the digger searches, then its wipe waits: the tree pauses
    assert run.state.status is wb.ExecutionStatus.PAUSED
    run.resume(approvals={"w1": True})
    run.run_to_end()
    (researcher,) = run.result.children
    (digger,) = researcher.children
    assert [s.index for s in researcher.steps] == [1, 1, 2]  # paused step 1, resumed, step 2
    assert [s.index for s in digger.steps] == [1, 2, 2, 3]
    assert len({s.execution_id for s in digger.steps}) == 2
    spans = wb.trace_of(run).spans
    names = {s.span_id: s.name for s in spans}
    calls = [s for s in spans if s.name == "execute_tool research"]
    assert len(calls) == 2  # one a lead's execution, each with the researcher's work under it
    for call in calls:
        assert any(
            s.parent_id == call.span_id and s.name == "invoke_agent researcher" for s in spans
        ), names


async def test_stepping_inside_a_resumed_sub_run_the_run_so_far_keeps_its_paused_execution() -> (
    None
):
    stepper = Stepper(_digging_team(), "go", breakpoints=[wb.Break.on_tool("search")])
    for button in (stepper.continue_button, stepper.next_phase_button, stepper.step_out_button):
        button.click()
        await stepper.wait()
    stepper.approval_rows[0].approve_button.click()
    stepper.step_out_button.click()  # the digger finishes: stopped in the researcher, resumed
    await stepper.wait()
    assert stepper.run.subrun is not None and stepper.run.subrun.state.agent_name == "researcher"
    (researcher,) = stepper.run.so_far().result.children
    assert len({s.execution_id for s in researcher.steps}) == 2  # paused, and resumed so far
    (digger,) = researcher.children
    assert [s.index for s in digger.steps] == [1, 2, 2, 3]
    stepper.run_button.click()  # (a run left inside a sub-run keeps its phase's task waiting)
    await stepper.wait()
    assert stepper.run.state.status is wb.ExecutionStatus.COMPLETED


async def test_the_phase_log_says_which_tools_phase_paused_and_which_resumed() -> None:
    stepper = Stepper(_digging_team(), "go", breakpoints=[wb.Break.on_tool("search")])
    for button in (stepper.continue_button, stepper.next_step_button):
        button.click()
        await stepper.wait()
    # between two of the digger's steps: the PREPARE that comes is step 2's, not step 1's
    inside = "step <b>1</b> done, next phase <b>prepare</b> of step <b>2</b></div>"
    assert stepper.phase_log.value.endswith(inside)
    stepper.step_out_button.click()  # the digger's wipe asks for approval: the tree pauses
    await stepper.wait()
    log = stepper.phase_log.value
    assert log.count("<b>paused</b>: waits for your answer") == 2  # the researcher, the lead
    assert "(resumed)" not in log
    stepper.approval_rows[0].approve_button.click()
    stepper.next_phase_button.click()  # step over, in the digger: its TOOLS goes on
    await stepper.wait()
    assert "digger (depth 2) · step 2 · tools (resumed) · " in stepper.phase_log.value
    stepper.step_out_button.click()
    await stepper.wait()
    assert "researcher (depth 1) · step 1 · tools (resumed) · " in stepper.phase_log.value
    stepper.step_out_button.click()
    await stepper.wait()
    assert "lead · step 1 · tools (resumed) · " in stepper.phase_log.value
    stepper.run_button.click()
    await stepper.wait()
    assert stepper.result.output == "done"


@wb.tool
def fragile(x: int) -> int:
    """Fails on 0."""
    return 10 // x


async def test_the_status_says_what_went_wrong_and_where_a_breakpoint_predicate_raised() -> None:
    def broken(view: wb.RunView) -> bool:
        return view.state.missing_attribute  # type: ignore[attr-defined, no-any-return]

    script = [R.tool_call("fragile", {"x": 0}), "gave up"]
    agent = wb.Agent(wb.ScriptedModel(script), name="solo", tools=[fragile], store=False)
    stepper = Stepper(agent, "go", breakpoints=[wb.Break.when(broken, "broken")])
    assert "wb-summary-line" not in stepper.status.value  # nothing went wrong yet
    stepper.continue_button.click()
    await stepper.wait()
    status = stepper.status.value
    assert "stopped at breakpoint when broken (raised: AttributeError" in status
    assert "wb-traceback" in status and "missing_attribute" in status  # the user's frame
    stepper.run_button.click()
    await stepper.wait()
    status = stepper.status.value
    assert status.startswith('<div class="wb-summary-line"')
    assert "1 tool error" in status and "fragile" in status
    assert "missing_attribute" not in status  # the traceback went with its note


async def test_a_predicates_traceback_goes_with_its_note_whatever_replaces_it() -> None:
    def broken(view: wb.RunView) -> bool:
        return view.state.missing_attribute  # type: ignore[attr-defined, no-any-return]

    agent = wb.Agent(wb.ScriptedModel(["hi"]), name="solo", store=False)
    stepper = Stepper(agent, "go", breakpoints=[wb.Break.when(broken, "broken")])
    stepper.continue_button.click()
    await stepper.wait()
    assert "missing_attribute" in stepper.status.value
    stepper.add_breakpoint("step:5")  # a new note, not a phase run: the old traceback goes too
    status = stepper.status.value
    assert "breakpoint added: " in status and "missing_attribute" not in status
