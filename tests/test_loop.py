"""The loop, end to end on offline models: golden phase sequences and the bad-input outcomes."""

from __future__ import annotations

import asyncio
import threading

import numpy
import pytest

import workbench as wb
from tests.conftest import collect, phase_trace

R = wb.ModelResponse


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@wb.tool(requires_approval=True)
def delete_file(path: str) -> str:
    """Delete a file."""
    return f"deleted {path}"


def calculator(responses: list[R | str], **options: object) -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(responses),
        tools=[add, delete_file],
        **options,  # type: ignore[arg-type]
    )


async def test_two_step_tool_run_golden() -> None:
    agent = calculator([R.tool_call("add", {"a": 1, "b": 2}, call_id="c1"), "1 + 2 = 3"])
    run = agent.start("What is 1 + 2?")
    events = await collect(run)
    assert phase_trace(events) == [
        "1:prepare:running",
        "1:inference:running",
        "1:tools:running",
        "1:continuation:running",
        "2:prepare:running",
        "2:inference:running",
        "2:tools:running",
        "2:continuation:completed",
    ]
    result = run.result
    assert (result.status, result.stop_reason, result.output) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.COMPLETED,
        "1 + 2 = 3",
    )
    assert [m.role for m in result.messages] == ["user", "assistant", "tool", "assistant"]
    assert result.messages[2].parts == (wb.ToolResult(call_id="c1", name="add", content="3"),)
    assert [m.step for m in result.messages] == [0, 1, 1, 2]
    assert {m.run_id for m in result.messages} == {result.run_id}
    assert [s.index for s in result.steps] == [1, 2]
    assert [s.tool_outcomes[0].status for s in result.steps[:1]] == ["ok"]
    assert len(result.snapshots) == 2 and result.snapshots[1].message_count == 3


async def test_pause_serialize_resume_golden() -> None:
    agent = calculator([R.tool_call("delete_file", {"path": "/tmp/x"}, call_id="d1"), "deleted"])
    run = agent.start("delete /tmp/x")
    first = await collect(run)
    assert phase_trace(first) == [
        "1:prepare:running",
        "1:inference:running",
        "1:tools:paused",
    ]
    paused = run.result
    assert paused.status is wb.ExecutionStatus.PAUSED and paused.stop_reason is None
    assert paused.pending == (
        wb.PendingCall(
            call_id="d1",
            tool="delete_file",
            arguments={"path": "/tmp/x"},
            reason="tool requires approval",
        ),
    )
    restored = wb.AgentState.from_json(paused.state.to_json())
    assert restored == paused.state
    # a fresh agent (as in another process) resumes from the JSON
    second_agent = calculator(["deleted"])
    resumed = second_agent.start_resume(restored, approvals={"d1": True})
    second = await collect(resumed)
    assert phase_trace(second) == [
        "1:tools:running",
        "1:continuation:running",
        "2:prepare:running",
        "2:inference:running",
        "2:tools:running",
        "2:continuation:completed",
    ]
    done = resumed.result
    assert done.output == "deleted"
    assert done.run_id == paused.run_id and done.state.execution_id != paused.state.execution_id
    assert done.messages[2].parts[0] == wb.ToolResult(
        call_id="d1", name="delete_file", content="deleted /tmp/x"
    )


async def test_resume_with_denial_tells_the_model() -> None:
    agent = calculator([R.tool_call("delete_file", {"path": "/"}, call_id="d1"), "ok, not deleted"])
    paused = await agent.run("delete /")
    done = await agent.resume(paused.state, approvals={"d1": "too dangerous"})
    denial = done.messages[2].parts[0]
    assert isinstance(denial, wb.ToolResult) and denial.is_error
    assert denial.content == "The user denied this call: too dangerous."
    assert done.status is wb.ExecutionStatus.COMPLETED


async def test_resume_rejects_unknown_ids_and_unpaused_states() -> None:
    agent = calculator([R.tool_call("delete_file", {"path": "/"}, call_id="d1")])
    paused = await agent.run("delete /")
    with pytest.raises(ValueError, match="no pending call with id nope; pending: d1"):
        await agent.resume(paused.state, approvals={"nope": True})
    with pytest.raises(ValueError, match="is running, not paused"):
        await agent.resume(paused.state.model_copy(update={"status": wb.ExecutionStatus.RUNNING}))


@pytest.mark.parametrize("decision", [1, 5, 1.0, numpy.True_], ids=str)
async def test_resume_refuses_an_approval_that_is_neither_a_yes_nor_a_no(decision: object) -> None:
    """They were all denials (only ``True`` runs the call): numpy's True_ from a DataFrame of
    decisions, or a 1, denied the call the person meant to approve, without a word."""
    agent = calculator([R.tool_call("delete_file", {"path": "/"}, call_id="d1"), "ok"])
    paused = await agent.run("delete /")
    said = rf"True \(run the call\), False or a reason \(deny it\): d1: {decision!r} \("
    with pytest.raises(ValueError, match=said):
        await agent.resume(paused.state, approvals={"d1": decision})  # type: ignore[dict-item]
    done = await agent.resume(paused.state, approvals={"d1": bool(decision)})
    assert done.status is wb.ExecutionStatus.COMPLETED and done.output == "ok"


async def test_step_limit_wraps_up_without_tools() -> None:
    model = wb.FunctionModel(
        lambda messages, request: (
            R.tool_call("add", {"a": 1, "b": 1}) if request.tools else "best answer"
        )
    )
    agent = wb.Agent(model=model, tools=[add], stop=wb.MaxSteps(3))
    run = agent.start("count")
    events = await collect(run)
    assert phase_trace(events)[-4:] == [
        "3:prepare:running",
        "3:inference:running",
        "3:tools:running",
        "3:continuation:completed",
    ]
    result = run.result
    assert result.stop_reason is wb.StopReason.STEP_LIMIT
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert result.output == "best answer"
    assert [len(call.tools) for call in model.calls] == [1, 1, 0]
    last_request = model.calls[-1].messages
    assert last_request[-1].text == wb.config.DEFAULT_WRAP_UP
    assert result.steps[-1].tools_offered == ()


async def test_retry_after_invalid_arguments_golden() -> None:
    agent = calculator(
        [
            R.tool_call("add", {"a": 1, "b": "two"}, call_id="c1"),
            R.tool_call("add", {"a": 1, "b": 2}, call_id="c2"),
            "3",
        ]
    )
    run = agent.start("1 + 2?")
    events = await collect(run)
    assert len(events) == 12 and events[-1].state.stop_reason is wb.StopReason.COMPLETED
    retry = run.result.messages[2].parts[0]
    assert isinstance(retry, wb.RetryPrompt) and retry.call_id == "c1"
    assert "argument 'b'" in retry.content and "valid integer" in retry.content
    assert "'two'" in retry.content
    assert [o.status for s in run.result.steps for o in s.tool_outcomes] == ["retry", "ok"]
    assert events[2].state.retries == {"add": 1}
    assert run.result.state.retries == {}  # a success resets the tool's retry count


async def test_denied_call_is_not_executed_golden() -> None:
    executed: list[str] = []

    @wb.tool
    def shell(command: str) -> str:
        """Run a command."""
        executed.append(command)
        return "ran"

    def no_rm(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        if "rm" in call.arguments.get("command", ""):
            return wb.ToolPermission.DENY, "rm is not allowed"
        return wb.ToolPermission.ALLOW

    agent = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("shell", {"command": "rm -rf /"}, call_id="s1"), "ok"]),
        tools=[shell],
        guards=[no_rm],
    )
    run = agent.start("clean up")
    events = await collect(run)
    assert phase_trace(events) == [
        "1:prepare:running",
        "1:inference:running",
        "1:tools:running",
        "1:continuation:running",
        "2:prepare:running",
        "2:inference:running",
        "2:tools:running",
        "2:continuation:completed",
    ]
    assert executed == []
    denial = run.result.messages[2].parts[0]
    assert denial == wb.ToolResult(
        call_id="s1", name="shell", content="Permission denied: rm is not allowed", is_error=True
    )


async def test_guard_ask_pauses_and_first_deny_wins() -> None:
    def ask(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return wb.ToolPermission.ASK, "check with a human"

    def deny(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return wb.ToolPermission.DENY, "never"

    asked = await calculator([R.tool_call("add", {"a": 1, "b": 2})], guards=[ask]).run("x")
    assert asked.status is wb.ExecutionStatus.PAUSED
    assert asked.pending[0].reason == "check with a human"
    denied = await calculator([R.tool_call("add", {"a": 1, "b": 2}), "no"], guards=[ask, deny]).run(
        "x"
    )
    assert denied.messages[2].parts[0].content == "Permission denied: never"  # type: ignore[union-attr]


async def test_a_broken_guard_denies() -> None:
    def broken(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        raise RuntimeError("boom")

    result = await calculator([R.tool_call("add", {"a": 1, "b": 2}), "no"], guards=[broken]).run(
        "x"
    )
    content = result.messages[2].parts[0].content  # type: ignore[union-attr]
    assert content == "Permission denied: guard broken failed: RuntimeError: boom"


async def test_guard_sees_context_with_budget() -> None:
    seen: list[wb.ToolContext] = []

    def record(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        seen.append(ctx)
        return wb.ToolPermission.ALLOW

    agent = calculator(
        [R.tool_call("add", {"a": 1, "b": 2}), "3"],
        guards=[record],
        stop=wb.MaxSteps(5) | wb.MaxTokens(10_000),
    )
    result = await agent.run("x")
    (ctx,) = seen
    assert ctx.run_id == result.run_id and ctx.step == 1
    assert ctx.budget.steps_left == 5 and ctx.budget.steps_used == 0
    assert ctx.budget.tokens_left == 10_000 - ctx.usage.total_tokens


# -- bad input -------------------------------------------------------------------------------


async def test_unknown_tool_gets_a_retry_prompt() -> None:
    result = await calculator([R.tool_call("sub", {"a": 1}), "sorry"]).run("x")
    prompt = result.messages[2].parts[0]
    assert isinstance(prompt, wb.RetryPrompt)
    assert prompt.content == "Unknown tool 'sub'. Available tools: add, delete_file."
    assert result.status is wb.ExecutionStatus.COMPLETED


async def test_malformed_argument_json_gets_a_retry_prompt() -> None:
    result = await calculator([R.tool_call("add", '{"a": 1, "b": '), "sorry"]).run("x")
    prompt = result.messages[2].parts[0]
    assert isinstance(prompt, wb.RetryPrompt)
    assert "not a valid JSON object" in prompt.content and '{"a": 1, "b": ' in prompt.content


async def test_empty_response_is_retried_then_fails() -> None:
    empty = R(parts=())
    recovered = await calculator([empty, "fine"]).run("x")
    assert recovered.output == "fine"
    assert recovered.messages[1].parts == (wb.RetryPrompt(content=wb.engine.EMPTY_RESPONSE),)
    failed = await calculator([empty, R.text("   ")]).run("x")
    assert failed.status is wb.ExecutionStatus.FAILED
    assert failed.stop_reason is wb.StopReason.ERROR
    assert failed.error is not None and failed.error.type == "ResponseRetriesExceeded"
    assert "the model's responses were empty more than 1 time(s) in a row" in failed.error.message
    assert failed.state.retries == {}  # not counted as a tool's retries


async def test_tool_that_raises_reports_to_the_model() -> None:
    @wb.tool
    def broken() -> str:
        """Always fails."""
        raise ValueError("disk on fire")

    agent = wb.Agent(model=wb.ScriptedModel([R.tool_call("broken", {}), "ok"]), tools=[broken])
    result = await agent.run("x")
    part = result.messages[2].parts[0]
    assert isinstance(part, wb.ToolResult) and part.is_error
    assert part.content == "Tool 'broken' failed: ValueError: disk on fire"
    assert result.state.errors_total == 1


async def test_run_fatal_error_fails_the_run() -> None:
    @wb.tool
    def fatal() -> str:
        """Stops everything."""
        raise wb.RunFatalError("credentials revoked")

    agent = wb.Agent(model=wb.ScriptedModel([R.tool_call("fatal", {})]), tools=[fatal])
    result = await agent.run("x")
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.error is not None and result.error.traceback is not None
    assert result.error.model_copy(update={"traceback": None}) == wb.ErrorInfo(
        type="RunFatalError", message="credentials revoked", phase=wb.Phase.TOOLS, step=1
    )
    frames = result.error.traceback.splitlines()
    assert "your code left out" in frames[0] and "in fatal" in frames[1]


async def test_tool_past_its_timeout_gets_a_retry_prompt() -> None:
    release = asyncio.Event()

    @wb.tool(timeout=0.05)
    async def slow() -> str:
        """Never finishes in time."""
        await release.wait()
        return "late"

    agent = wb.Agent(model=wb.ScriptedModel([R.tool_call("slow", {}), "gave up"]), tools=[slow])
    result = await agent.run("x")
    prompt = result.messages[2].parts[0]
    assert isinstance(prompt, wb.RetryPrompt)
    assert prompt.content.startswith("tool 'slow' timed out after 0.05s")


async def test_ten_megabyte_result_is_truncated_with_a_notice() -> None:
    @wb.tool(max_result_chars=1000)
    def huge() -> str:
        """Returns a lot."""
        return "x" * 10_000_000

    agent = wb.Agent(model=wb.ScriptedModel([R.tool_call("huge", {}), "ok"]), tools=[huge])
    result = await agent.run("x")
    content = result.messages[2].parts[0].content  # type: ignore[union-attr]
    assert content.startswith("x" * 1000 + "\n[truncated:")
    assert "showing the first 1,000 of 10,000,000 characters; 9,999,000 cut" in content
    assert len(content) < 1200


async def test_tool_retry_limit_fails_the_run() -> None:
    @wb.tool(retries=2)
    def picky(x: int) -> str:
        """Never happy."""
        raise wb.ToolRetry("try a bigger x")

    responses = [R.tool_call("picky", {"x": i}) for i in range(3)]
    result = await wb.Agent(model=wb.ScriptedModel(responses), tools=[picky]).run("x")
    # the third retry prompt is kept in the state: failing the run loses nothing that happened
    assert [m.parts[0].content for m in result.messages if m.role == "tool"] == [  # type: ignore[union-attr]
        "try a bigger x",
        "try a bigger x",
        "try a bigger x",
    ]
    assert result.status is wb.ExecutionStatus.FAILED
    assert (
        result.error is not None
        and result.error.message == "tool 'picky' needed more than 2 retries"
    )


async def test_model_error_fails_the_run_with_the_message() -> None:
    result = await calculator([]).run("x")
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.error is not None and result.error.type == "ScriptExhausted"
    assert result.error.phase is wb.Phase.INFERENCE


async def test_an_observer_that_raises_is_logged_and_the_run_goes_on(
    caplog: pytest.LogCaptureFixture,
) -> None:
    class Broken(wb.RunObserver):
        def tool_called(self, step: int, outcome: wb.ToolOutcome, started_at: float) -> None:
            raise RuntimeError("observer exploded")

        def trace_context(self) -> None:
            raise RuntimeError("no trace here")

    class Counting(wb.RunObserver):
        def __init__(self) -> None:
            self.tools: list[str] = []
            self.steps: list[wb.StepRecord] = []

        def tool_called(self, step: int, outcome: wb.ToolOutcome, started_at: float) -> None:
            self.tools.append(outcome.status)

        def step_ended(self, record: wb.StepRecord) -> None:
            self.steps.append(record)

    after = Counting()
    agent = calculator(
        [R.tool_call("add", {"a": 1, "b": 2}), "3"], observers=[Broken(), after], store=False
    )
    result = await agent.run("1 + 2?")
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "3"
    assert after.tools == ["ok"]  # the observer after the broken one still hears of the call
    assert [s.index for s in after.steps] == [1, 2]
    assert "failed on tool_called; the run goes on" in caplog.text
    assert "RuntimeError: observer exploded" in caplog.text
    assert "failed on trace_context" in caplog.text and result.state.trace is None
    assert all(s.timing.telemetry >= 0.0 for s in result.steps)


# -- stepping ---------------------------------------------------------------------------------


def test_stepping_edit_and_drop_calls_between_inference_and_tools() -> None:
    agent = calculator(
        [
            R.tool_calls(
                [("add", {"a": 1, "b": 2}), ("add", {"a": 5, "b": 5})], call_ids=["c1", "c2"]
            ),
            "done",
        ]
    )
    run = agent.start("x")
    assert run.next_phase_name is wb.Phase.PREPARE
    assert run.next_phase().phase is wb.Phase.PREPARE  # type: ignore[union-attr]
    assert run.next_phase().phase is wb.Phase.INFERENCE  # type: ignore[union-attr]
    assert [c.call_id for c in run.pending_calls] == ["c1", "c2"]
    run.edit_call("c1", {"a": 10, "b": 20})
    run.drop_call("c2", "not needed")
    with pytest.raises(KeyError, match="no pending tool call 'c2'"):
        run.drop_call("c2")
    event = run.next_step()
    assert event is not None and event.phase is wb.Phase.CONTINUATION
    results = [m.parts[0] for m in run.state.messages if m.role == "tool"]
    assert results[0] == wb.ToolResult(
        call_id="c2", name="add", content="The call was not run: not needed.", is_error=True
    )
    assert results[1] == wb.ToolResult(call_id="c1", name="add", content="30")
    assert run.state.messages[1].tool_calls[0].arguments == {"a": 10, "b": 20}
    final = run.run_to_end()
    assert final.output == "done" and run.done and run.next_phase() is None


def test_abort_between_phases() -> None:
    run = calculator([R.tool_call("add", {"a": 1, "b": 2}), "3"]).start("x")
    run.next_phase()
    run.abort()
    assert run.state.status is wb.ExecutionStatus.ABORTED
    assert run.state.stop_reason is wb.StopReason.ABORTED
    assert run.next_phase() is None


def test_sync_api_inside_a_running_event_loop() -> None:
    async def inside() -> wb.RunResult:
        # as in a Jupyter cell: a loop is running in this thread, yet the sync call works
        return calculator([R.tool_call("add", {"a": 1, "b": 2}), "3"]).run_sync("x")

    assert asyncio.run(inside()).output == "3"


async def test_iterate_yields_phase_events() -> None:
    agent = calculator(["hi"])
    phases = [e.phase async for e in agent.iterate("x")]
    assert phases == list(wb.Phase)


async def test_independent_calls_run_concurrently() -> None:
    both_started = asyncio.Event()
    arrived: list[str] = []

    @wb.tool
    async def meet(name: str) -> str:
        """Waits until both calls are running at once."""
        arrived.append(name)
        if len(arrived) == 2:
            both_started.set()
        await asyncio.wait_for(both_started.wait(), 5)
        return name

    model = wb.ScriptedModel(
        [R.tool_calls([("meet", {"name": "a"}), ("meet", {"name": "b"})]), "ok"]
    )
    result = await wb.Agent(model=model, tools=[meet]).run("x")
    assert [m.parts[0].content for m in result.messages if m.role == "tool"] == ["a", "b"]  # type: ignore[union-attr]


async def test_deferred_tool_pauses_and_takes_an_outside_result() -> None:
    @wb.tool(deferred=True)
    def human_lookup(query: str) -> str:
        """Answered by a person."""
        raise AssertionError("never executed here")

    agent = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("human_lookup", {"query": "q"}, call_id="h1"), "thanks"]
        ),
        tools=[human_lookup],
    )
    paused = await agent.run("x")
    assert paused.pending[0].kind == "deferred"
    with pytest.raises(ValueError, match="deferred"):
        await agent.resume(paused.state, approvals={"h1": True})
    done = await agent.resume(paused.state, results={"h1": {"answer": 42}})
    assert done.messages[2].parts[0].content == '{"answer":42}'  # type: ignore[union-attr]
    assert done.output == "thanks"


def test_history_and_settings_reach_the_model() -> None:
    model = wb.ScriptedModel(["17 + 25 = 42"])
    agent = wb.Agent(
        model=model, system_prompt="You add.", tools=[add], settings={"temperature": 0.5}
    )
    history = [
        wb.Message.user("What is 2 + 3?"),
        wb.Message.assistant_tool_call("add", {"a": 2, "b": 3}, call_id="c1"),
        wb.Message.tool_result("c1", "5"),
        wb.Message.assistant("2 + 3 = 5"),
    ]
    result = agent.run_sync(
        "What is 17 + 25?", history=history, settings={"seed": 1, "temperature": 0}
    )
    sent = model.calls[0]
    assert [m.role for m in sent.messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "assistant",
        "user",
    ]
    assert sent.settings == {"temperature": 0, "seed": 1}
    assert result.messages[1].run_id is None  # history keeps its own provenance
    assert result.messages[-2].run_id == result.run_id


def test_a_history_that_is_not_messages_is_refused_at_start() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["never asked"]), store=False)
    with pytest.raises(ValueError, match=r"messages\.0"):  # pydantic's ValidationError
        agent.start(history=["What is 2 + 3?"])  # type: ignore[list-item]
    with pytest.raises(ValueError, match="a prompt or a history"):
        agent.start()


def test_external_flag_stops_from_another_thread() -> None:
    flag = wb.External()
    go_on = threading.Event()

    def respond(messages: object, request: wb.ModelRequest) -> R:
        flag.set()  # a notebook button pressed while the model was thinking
        return R.tool_call("add", {"a": 1, "b": 2})

    agent = wb.Agent(model=wb.FunctionModel(respond), tools=[add], stop=flag | wb.MaxSteps(5))
    result = agent.run_sync("x")
    assert (
        result.stop_reason is wb.StopReason.ABORTED and result.status is wb.ExecutionStatus.ABORTED
    )
    assert len(result.steps) == 1 and not go_on.is_set()


def test_abort_a_paused_run() -> None:
    run = calculator([R.tool_call("delete_file", {"path": "/"}, call_id="d1")]).start("x")
    run.run_to_end()
    assert run.state.status is wb.ExecutionStatus.PAUSED
    elapsed = run.state.elapsed
    run.abort()
    assert run.state.status is wb.ExecutionStatus.ABORTED
    assert run.state.stop_reason is wb.StopReason.ABORTED
    assert run.state.elapsed == elapsed  # time paused is not running time
    assert run.state.pending == ()
    assert run.next_phase() is None
