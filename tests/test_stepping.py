"""Stepping into sub-runs, and breakpoints inside them, through the parent's `AgentRun`."""

from __future__ import annotations

import asyncio
import threading
import time

import pytest

import workbench as wb
from workbench._sync import run_sync

R = wb.ModelResponse
P = wb.Phase


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def _tree(
    lead_script: list[R | str] | None = None, stop: wb.StopCondition | None = None
) -> wb.Agent:
    """lead -> research (researcher) -> dig (digger) -> search: a two-level tree."""
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "deep"}, call_id="s1"), "dug"]),
        name="digger",
        tools=[search],
        store=False,
    )
    researcher = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "dig it"}, call_id="d1"), "it is"]),
        name="researcher",
        tools=[digger.as_tool("dig")],
        store=False,
    )
    script = lead_script or [R.tool_call("research", {"task": "look"}, call_id="r1"), "done"]
    return wb.Agent(
        model=wb.ScriptedModel(script),
        name="lead",
        tools=[researcher.as_tool("research"), search],
        stop=stop,
        store=False,
    )


def _seen(event: wb.PhaseEvent) -> tuple[str, int, str, int]:
    return (event.state.agent_name, event.state.depth, event.phase.value, event.step)


PHASES = ("prepare", "inference", "tools", "continuation")


def _step(agent: str, depth: int, step: int) -> list[tuple[str, int, str, int]]:
    return [(agent, depth, phase, step) for phase in PHASES]


async def _tasks() -> set[asyncio.Task[object]]:
    return {t for t in asyncio.all_tasks() if t is not asyncio.current_task()}


def test_stepping_into_a_two_level_tree_shows_every_phase_of_every_run_in_order() -> None:
    run = _tree().start("go")
    seen = []
    while (event := run.next_phase(into=True)) is not None:
        seen.append(_seen(event))
    lead_1 = _step("lead", 0, 1)
    assert (
        seen
        == [
            *lead_1[:2],  # the lead's model asks for research: its TOOLS phase is stepped into
            *_step("researcher", 1, 1)[:2],
            *_step("digger", 2, 1),  # search is a plain tool: the digger's TOOLS is one event
            *_step("digger", 2, 2),
            *_step("researcher", 1, 1)[2:],  # its dig call ended
            *_step("researcher", 1, 2),
            *lead_1[2:],
            *_step("lead", 0, 2),
        ]
    )
    result = run.result
    assert result.output == "done" and result.children[0].output == "it is"
    assert result.children[0].children[0].output == "dug"
    assert run.subrun is None and run_sync(_tasks()) == set()


def test_stepping_over_is_todays_sequence_and_stays_at_the_level_of_a_sub_run() -> None:
    run = _tree().start("go")
    seen = [_seen(e) for e in iter(run.next_phase, None)]
    assert seen == [*_step("lead", 0, 1), *_step("lead", 0, 2)]

    run = _tree().start("go")
    run.next_phase(), run.next_phase()
    inside = run.next_phase(into=True)
    assert inside is not None and _seen(inside) == ("researcher", 1, "prepare", 1)
    assert inside.depth == 1 and inside.run_id == inside.state.run_id != run.state.run_id
    assert inside.state.parent_call_id == "r1" and "depth=1" in repr(inside)
    subrun = run.subrun
    assert subrun is not None and subrun.state.agent_name == "researcher"
    assert run.pending_calls == ()  # the lead's call is under way, not pending
    # Step over, inside the researcher: its phases one by one, its dig call's digger run
    # through inside its TOOLS phase; once it has ended, the lead finishes its TOOLS phase.
    seen = [_seen(e) for e in iter(run.next_phase, None)]
    assert seen == [
        *_step("researcher", 1, 1)[1:],
        *_step("researcher", 1, 2),
        *_step("lead", 0, 1)[2:],
        *_step("lead", 0, 2),
    ]
    assert subrun.done and subrun.result.output == "it is" and run.subrun is None
    assert run.result.output == "done"


def _stopped_in_the_digger() -> wb.AgentRun:
    """The tree's run, stopped by Continue before the digger's search runs (depth 2)."""
    run = _tree().start("go", breakpoints=[wb.Break.on_tool("search")])
    event = run.run_to_breakpoint()
    assert event is not None and _seen(event) == ("digger", 2, "inference", 1)
    return run


def test_step_over_after_continue_steps_over_at_the_depth_2_sub_runs_level() -> None:
    run = _stopped_in_the_digger()
    seen = [_seen(e) for e in iter(run.next_phase, None)]
    assert (
        seen
        == [
            *_step("digger", 2, 1)[2:],  # the search runs: no breakpoint stops a step over
            *_step("digger", 2, 2),
            *_step("researcher", 1, 1)[2:],  # the digger ended: its parent finishes its phase
            *_step("researcher", 1, 2),
            *_step("lead", 0, 1)[2:],
            *_step("lead", 0, 2),
        ]
    )


def test_step_out_finishes_the_sub_run_and_stops_in_its_parent_level_by_level() -> None:
    run = _stopped_in_the_digger()
    out = run.step_out()  # the digger finishes; the researcher's TOOLS phase (its dig) ends
    assert out is not None and _seen(out) == ("researcher", 1, "tools", 1)
    researcher = run.subrun
    assert researcher is not None and researcher.state.agent_name == "researcher"
    (digger,) = researcher.result.children
    assert digger.output == "dug" and digger.steps[0].tool_outcomes[0].content == "found deep"
    assert _seen(run.next_phase()) == ("researcher", 1, "continuation", 1)  # at its level
    out = run.step_out()
    assert out is not None and _seen(out) == ("lead", 0, "tools", 1) and run.subrun is None
    with pytest.raises(wb.UsageError, match="not stopped inside a sub-run"):
        run.step_out()
    assert _seen(run.next_phase()) == ("lead", 0, "continuation", 1)
    assert run.run_to_end().output == "done"


def test_next_step_inside_a_sub_run_is_that_sub_runs_step() -> None:
    run = _stopped_in_the_digger()
    assert _seen(run.next_step()) == ("digger", 2, "continuation", 1)
    assert _seen(run.next_step()) == ("digger", 2, "continuation", 2)  # the digger ended
    assert _seen(run.next_step()) == ("researcher", 1, "continuation", 1)
    assert _seen(run.next_step()) == ("researcher", 1, "continuation", 2)
    assert _seen(run.next_step()) == ("lead", 0, "continuation", 1)


async def test_every_way_to_go_on_works_after_continue_from_another_loop_each_time() -> None:
    """Continue, then each way on, each from another loop or thread than the one before."""
    run = _tree().start("go", breakpoints=[wb.Break.on_tool("search")])
    event = await asyncio.to_thread(run.run_to_breakpoint)
    assert event is not None and event.state.agent_name == "digger"
    assert _seen(await run.anext_phase(into=True)) == ("digger", 2, "tools", 1)
    assert _seen(await asyncio.to_thread(run.next_phase)) == ("digger", 2, "continuation", 1)
    ahead = await asyncio.to_thread(asyncio.run, run.anext_step())
    assert _seen(ahead) == ("digger", 2, "continuation", 2)
    # The digger has ended: stepping out of it stops in the researcher, where its call returned
    assert _seen(await run.astep_out()) == ("researcher", 1, "tools", 1)
    assert _seen(await asyncio.to_thread(run.step_out)) == ("lead", 0, "tools", 1)
    assert (await asyncio.to_thread(run.run_to_end)).output == "done"


def test_parallel_sub_agent_calls_are_stepped_one_after_the_other() -> None:
    helper = wb.Agent(
        model=wb.FunctionModel(lambda messages, info: f"did {messages[-1].text}"),
        name="helper",
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_calls(
                    [("help", {"task": "first"}), ("help", {"task": "second"})],
                ),
                "done",
            ]
        ),
        name="lead",
        tools=[helper.as_tool("help")],
        store=False,
    )
    run = lead.start("go")
    run.next_phase(), run.next_phase()
    calls = [c.call_id for c in run.pending_calls]
    seen = []
    while (event := run.next_phase(into=True)) is not None and event.depth:
        seen.append((event.state.parent_call_id, event.phase.value))
    assert seen == [(calls[0], p) for p in PHASES] + [(calls[1], p) for p in PHASES]
    assert event is not None and _seen(event) == ("lead", 0, "tools", 1)
    assert [c.output for c in run.run_to_end().children] == ["did first", "did second"]


def test_aborting_inside_a_sub_run_ends_the_whole_tree_and_leaves_no_task() -> None:
    before = run_sync(_tasks())
    run = _tree().start("go")
    for _ in range(5):  # lead P, I; researcher P, I; digger P
        run.next_phase(into=True)
    assert run.subrun is not None and run.subrun.state.agent_name == "digger"
    run.abort()
    assert run.state.status is wb.ExecutionStatus.ABORTED and run.done
    assert run.next_phase() is None
    (researcher,) = run.result.children  # each run ends before its next phase
    (digger,) = researcher.children
    assert researcher.status is digger.status is wb.ExecutionStatus.ABORTED
    assert digger.steps[0].tool_outcomes == ()  # the digger's step 1 never reached TOOLS
    assert run_sync(_tasks()) == before


def test_a_tool_breakpoint_stops_inside_the_sub_run_and_its_call_can_be_edited() -> None:
    script = [
        R.tool_call("research", {"task": "look"}, call_id="r1"),
        R.tool_call("search", {"query": "top"}, call_id="s9"),
        "done",
    ]
    run = _tree(script).start("go", breakpoints=[wb.Break.on_tool("search")])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint == wb.Break.on_tool("search")
    assert _seen(event) == ("digger", 2, "inference", 1)
    subrun = run.subrun
    assert subrun is not None and [c.call_id for c in subrun.pending_calls] == ["s1"]
    run.edit_call("s1", {"query": "edited"})  # the sub-run's call, through the parent
    again = run.run_to_breakpoint()  # the digger goes on, then the researcher, then the lead
    assert again is not None and _seen(again) == ("lead", 0, "inference", 2)
    assert [c.call_id for c in run.pending_calls] == ["s9"]
    assert run.run_to_breakpoint() is None
    digger = run.result.children[0].children[0]
    assert digger.steps[0].tool_outcomes[0].content == "found edited"


def test_a_dropped_call_in_a_sub_run_is_not_run_and_the_sub_agent_reads_why() -> None:
    run = _tree().start("go", breakpoints=[wb.Break.on_tool("search")])
    assert run.run_to_breakpoint() is not None
    run.drop_call("s1", "not today")
    with pytest.raises(KeyError, match="no pending tool call"):
        run.drop_call("nope")
    assert run.run_to_breakpoint() is None
    digger = run.result.children[0].children[0]
    answer = digger.messages[-2].parts[0]
    assert isinstance(answer, wb.ToolResult) and "not today" in answer.content


def test_breakpoint_scopes_say_where_they_fire() -> None:
    only_here = wb.Break.on_tool("search", scope="run")
    assert str(only_here) == "on tool 'search' (this run only)"
    run = _tree().start("go", breakpoints=[only_here])
    assert run.run_to_breakpoint() is None  # only the digger calls search
    anywhere = wb.Break.at_step(2, scope="tree")
    assert str(anywhere) == "at step 2 (sub-runs too)"
    run = _tree().start("go", breakpoints=[anywhere])
    stops = [_seen(e) for e in iter(run.run_to_breakpoint, None)]
    assert stops == [
        ("digger", 2, "prepare", 2),
        ("researcher", 1, "prepare", 2),
        ("lead", 0, "prepare", 2),
    ]


def test_a_predicate_that_raises_inside_a_sub_run_stops_there_and_does_not_crash() -> None:
    def broken(view: wb.RunView) -> bool:
        if view.state.depth:
            raise ValueError("bad view")
        return False

    run = _tree().start("go", breakpoints=[wb.Break.when(broken, scope="tree")])
    event = run.run_to_breakpoint()
    assert event is not None and event.breakpoint is not None
    assert event.breakpoint.error == "ValueError: bad view"
    assert _seen(event) == ("researcher", 1, "prepare", 1)
    assert event.state.status is wb.ExecutionStatus.RUNNING
    run.breakpoints.clear()
    assert run.run_to_end().output == "done"


def test_stepping_into_a_phase_without_sub_runs_is_just_the_phase() -> None:
    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "x"}), "ok"]),
        tools=[search],
        store=False,
    )
    run = agent.start("go")
    seen = [_seen(e) for e in iter(lambda: run.next_phase(into=True), None)]
    assert seen == [*_step("agent", 0, 1), *_step("agent", 0, 2)]


def _lead_of_a_cleaner() -> wb.Agent:
    """lead -> clean (cleaner) -> wipe, which waits for approval (call w1, via c1)."""

    @wb.tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Wipe."""
        return f"wiped {path}"

    cleaner = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/tmp"}, call_id="w1"), "clean"]),
        name="cleaner",
        tools=[wipe],
        store=False,
    )
    return wb.Agent(
        model=wb.ScriptedModel([R.tool_call("clean", {"task": "x"}, call_id="c1"), "all done"]),
        name="lead",
        tools=[cleaner.as_tool("clean")],
        store=wb.RunStore(":memory:"),
    )


def test_an_approval_inside_a_sub_run_stepped_into_pauses_the_parent_and_resumes_into_it() -> None:
    lead = _lead_of_a_cleaner()
    run = lead.start("go")
    seen = [_seen(e) for e in iter(lambda: run.next_phase(into=True), None)]
    assert seen == [
        *_step("lead", 0, 1)[:2],
        *_step("cleaner", 1, 1)[:3],  # its TOOLS phase pauses it for the approval
        ("lead", 0, "tools", 1),  # and the lead with it
    ]
    assert run.state.status is wb.ExecutionStatus.PAUSED
    assert [(p.call_id, p.via) for p in run.state.pending] == [("w1", "c1")]
    run.resume(approvals={"w1": True})
    seen = [_seen(e) for e in iter(lambda: run.next_phase(into=True), None)]
    assert (
        seen
        == [
            ("cleaner", 1, "tools", 1),  # the sub-run resumes at TOOLS, stepped into again
            ("cleaner", 1, "continuation", 1),
            *_step("cleaner", 1, 2),
            *_step("lead", 0, 1)[2:],
            *_step("lead", 0, 2),
        ]
    )
    assert run.result.output == "all done"


async def test_cancelling_the_driver_inside_a_sub_run_aborts_the_tree() -> None:
    asked = threading.Event()  # set on the workbench's loop, where a stepped phase runs

    async def hangs_first(messages: list[wb.Message], info: object) -> str:
        if messages[-1].text == "first":
            asked.set()
            await asyncio.Event().wait()  # a model call that never answers
        return "answered"

    statuses: list[str] = []

    class Ended(wb.RunObserver):
        def run_ended(self, state: wb.AgentState) -> None:
            statuses.append(state.status.value)

    slow = wb.Agent(
        model=wb.FunctionModel(hangs_first), name="slow", store=False, observers=[Ended()]
    )
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_calls([("ask", {"task": "first"}), ("ask", {"task": "second"})]), "done"]
        ),
        name="lead",
        tools=[slow.as_tool("ask")],
        store=False,
    )
    run = lead.start("go")
    await run.anext_phase(), await run.anext_phase()
    await run.anext_phase(into=True)  # the first sub-run's PREPARE; the second waits its turn
    inner = run.subrun
    assert inner is not None
    driver = asyncio.ensure_future(run.anext_phase(into=True))  # its model call hangs
    assert await asyncio.to_thread(asked.wait, 10)
    driver.cancel()
    with pytest.raises(asyncio.CancelledError):
        await driver
    assert run.state.status is wb.ExecutionStatus.ABORTED
    assert inner.state.status is wb.ExecutionStatus.ABORTED and run.subrun is None
    assert statuses == ["aborted", "aborted"]  # the one waiting its turn ended too
    assert await _tasks() == set()


def test_the_stepper_steps_into_a_sub_run_shows_its_messages_and_steps_over_it() -> None:
    from workbench.notebook import Stepper

    stepper = Stepper(_tree(), "go")
    stepper.next_phase_button.click()
    stepper.next_phase_button.click()
    stepper.step_into_button.click()  # the researcher's PREPARE
    stepper.step_into_button.click()  # its INFERENCE: it asks for dig
    assert stepper.run.subrun is not None
    assert stepper.next_phase_button.description == "Step over"
    log = stepper.phase_log.value
    assert "lead · step 1 · inference" in log
    assert "↳ researcher (depth 1) · step 1 · inference" in log
    assert "inside sub-run <b>researcher</b> (depth 1, via lead's research)" in log
    assert "Sub-run researcher (depth 1), step 1 so far" in stepper.messages.value
    assert "dig it" in stepper.messages.value  # the researcher's call, not the lead's
    assert "ran researcher (depth 1) inference of step 1" in stepper.status.value
    assert not stepper.step_out_button.disabled
    stepper.next_phase_button.click()  # step over, at the researcher's level: its dig runs
    assert _seen(stepper.events[-1]) == ("researcher", 1, "tools", 1)
    assert "ran researcher (depth 1) tools of step 1" in stepper.status.value
    stepper.step_out_button.click()  # the researcher finishes, then the lead's TOOLS phase
    assert stepper.run.subrun is None and stepper.next_phase_button.description == "Next phase"
    assert stepper.events[-1].depth == 0 and stepper.events[-1].phase is P.TOOLS
    assert stepper.step_out_button.disabled  # not inside a sub-run any more
    stepper.run_button.click()
    assert stepper.run.result.output == "done" and stepper.errors == []


def test_the_first_step_shows_the_question_and_folds_the_history_the_run_was_given() -> None:
    from workbench.notebook import Stepper

    history = [wb.Message.user("What is 2 + 3?"), wb.Message.assistant("<b>2 + 3</b> = 5")]
    model = wb.ScriptedModel([R.tool_call("search", {"query": "x"}), "ok"])
    stepper = Stepper(wb.Agent(model=model, tools=[search]), "What is 17 + 25?", history=history)
    stepper.next_phase_button.click()
    stepper.next_phase_button.click()  # the model calls search
    shown = stepper.messages.value
    earlier, _, after = shown.partition("</details>")
    assert '<details class="wb-earlier"' in earlier and "2 earlier messages" in earlier
    assert "What is 2 + 3?" in earlier and "&lt;b&gt;2 + 3&lt;/b&gt; = 5" in earlier  # as text
    assert "What is 17 + 25?" in after and "search" in after  # the question, the model's call
    stepper.next_step_button.click()  # step 2 shows what it added, nothing folded
    assert "wb-earlier" not in stepper.messages.value
    told = wb.Agent(model=wb.ScriptedModel(["ok"]), system_prompt="You add.")
    folded = Stepper(told, "What is 17 + 25?", history=history).messages.value
    assert "the system prompt and 2 earlier messages</summary>" in folded  # says what it holds


def test_the_stepper_continues_to_a_breakpoint_inside_a_sub_run_and_closing_aborts() -> None:
    from workbench.notebook import Stepper

    stepper = Stepper(_tree(), "go", breakpoints=[wb.Break.on_tool("search")])
    stepper.continue_button.click()
    assert stepper.stopped_at == wb.Break.on_tool("search")
    # how Continue got two levels down, in the calls a person recognises
    assert [r.state.agent_name for r in stepper.run.subrun_path] == ["researcher", "digger"]
    assert (
        "inside sub-run <b>digger</b> (depth 2, via lead's research ▸ researcher's dig)"
        in stepper.phase_log.value
    )
    assert "stopped at breakpoint on tool &#x27;search&#x27; in digger" in stepper.status.value
    assert "s1" in stepper.messages.value and "deep" in stepper.messages.value
    assert "stopped: on tool" in stepper.phase_log.value
    run = stepper.run
    stepper.close()
    assert run.state.status is wb.ExecutionStatus.ABORTED and run.subrun is None


async def test_stop_inside_a_sub_run_on_the_kernels_loop_ends_the_tree() -> None:
    from workbench.notebook import Stepper

    stepper = Stepper(_tree(), "go")  # button work runs as tasks on this (running) loop
    for button in [stepper.next_phase_button] * 2 + [stepper.step_into_button] * 3:
        button.click()
        await stepper.wait()
    assert stepper.run.subrun is not None and stepper.run.subrun.state.agent_name == "digger"
    stepper.stop_button.click()  # the phase ends as its sub-runs abort: the Stepper collects it
    await stepper.wait()
    run = stepper.run
    assert run.state.status is wb.ExecutionStatus.ABORTED and run.subrun is None
    assert stepper.errors == [] and stepper.next_phase_button.disabled
    assert await _tasks() == set()


async def test_a_run_stopped_inside_a_sub_run_goes_on_from_another_loop() -> None:
    run = _tree().start("go")
    for _ in range(3):
        await run.anext_phase(into=True)  # awaited on this loop: the phase lives on the portal
    assert run.subrun is not None and run.subrun.state.agent_name == "researcher"
    event = await asyncio.to_thread(run.next_phase, into=True)  # a sync call from a thread
    assert event is not None and _seen(event) == ("researcher", 1, "inference", 1)
    other = await asyncio.to_thread(asyncio.run, run.anext_phase(into=True))  # another loop
    assert other is not None and _seen(other) == ("digger", 2, "prepare", 1)
    assert (await run.arun_to_end()).output == "done"


def test_a_tool_breakpoint_in_parallel_sub_runs_stops_in_each_in_turn() -> None:
    def helper_model(messages: list[wb.Message], info: object) -> R | str:
        if messages[-1].role == "tool":
            return "helped"
        return R.tool_call("search", {"query": messages[-1].text})

    helper = wb.Agent(
        model=wb.FunctionModel(helper_model), name="helper", tools=[search], store=False
    )
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_calls([("help", {"task": "a"}), ("help", {"task": "b"})]), "done"]
        ),
        name="lead",
        tools=[helper.as_tool("help")],
        store=False,
    )
    run = lead.start("go", breakpoints=[wb.Break.on_tool("search")])
    stops = []
    while (event := run.run_to_breakpoint()) is not None:
        assert run.subrun is not None and run.subrun.state.run_id == event.run_id
        stops.append(event.state.parent_call_id)
        assert [c.name for c in run.subrun.pending_calls] == ["search"]
    assert len(set(stops)) == 2
    result = run.result
    assert result.output == "done"
    assert [c.steps[0].tool_outcomes[0].content for c in result.children] == ["found a", "found b"]


def test_continue_to_a_breakpoint_where_a_sub_run_pauses_shows_the_approval_in_that_press() -> None:
    from workbench.notebook import Stepper

    lead = _lead_of_a_cleaner()
    paused = wb.Break.when(lambda view: view.state.status is wb.ExecutionStatus.PAUSED)
    tree_paused = paused.model_copy(update={"scope": "tree"})
    stepper = Stepper(lead, "go", breakpoints=[tree_paused])
    stepper.continue_button.click()  # stops where the cleaner's TOOLS phase paused it
    assert stepper.stopped_at == tree_paused
    assert "stopped at breakpoint" in stepper.status.value and "in cleaner" in stepper.status.value
    assert [(e.state.agent_name, e.phase) for e in stepper.events[-2:]] == [
        ("cleaner", P.TOOLS),
        ("lead", P.TOOLS),  # the lead's own event came in the same press
    ]
    assert stepper.run.done and [r.pending.call_id for r in stepper.approval_rows] == ["w1"]
    stepper.approval_rows[0].approve_button.click()
    stepper.run_button.click()
    assert stepper.run.result.output == "all done" and stepper.errors == []


def test_an_abort_while_a_sub_run_works_ends_it_at_its_next_phase() -> None:
    """No stepping into: the sub-run runs freely inside the lead's TOOLS phase, and still ends."""
    asked, release = threading.Event(), threading.Event()
    calls: list[str] = []

    async def thorough(messages: list[wb.Message], info: object) -> R | str:
        calls.append(messages[-1].role)
        if len(calls) == 1:
            asked.set()
            await asyncio.to_thread(release.wait, 30)  # the first call is in flight at the abort
        return R.tool_call("search", {"query": f"more {len(calls)}"})  # it never stops alone

    researcher = wb.Agent(
        model=wb.FunctionModel(thorough), name="researcher", tools=[search], store=False
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("research", {"task": "all"}), "done"]),
        name="lead",
        tools=[researcher.as_tool("research")],
        store=False,
    )
    run = lead.start("go")
    run.next_phase(), run.next_phase()  # the lead asks for research
    tools = threading.Thread(target=run.next_phase)  # the lead's TOOLS: the researcher works
    tools.start()
    assert asked.wait(30)
    run.abort()  # from another thread, while the researcher's model call is in flight
    release.set()
    tools.join(30)
    assert not tools.is_alive()
    assert run.state.status is wb.ExecutionStatus.ABORTED
    (sub,) = run.result.children
    assert sub.status is wb.ExecutionStatus.ABORTED and len(calls) == 1  # no second model call


def test_reading_between_presses_inside_a_sub_run_is_not_the_runs_time() -> None:
    """The lead's TOOLS phase waits while the person steps its sub-runs: that is not work."""
    run = _tree(stop=wb.Timeout(1.0)).start("go")
    run.next_phase(), run.next_phase()
    tools = None
    while (event := run.next_phase(into=True)) is not None:
        time.sleep(0.15)  # the person reading after each press: ~2 s in all
        if event.depth == 0 and event.phase is P.TOOLS:
            tools = event
    assert run.result.stop_reason is wb.StopReason.COMPLETED  # not TIME_LIMIT
    assert run.result.output == "done"
    assert tools is not None and tools.duration < 0.5  # its sub-runs' work, not the reading
    assert run.state.elapsed < 0.9
    assert run.result.steps[0].timing.tools < 0.5
