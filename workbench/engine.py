"""The loop: one execution of a run, phase by phase.

`Execution.phases` is the loop, and every way to drive a run goes through it (`AgentRun` runs it
to the end, one phase or one step at a time; resume and re-run start it from another state).
Each phase is a method that returns the phase that comes next, or None when the run ended or
paused (the state says which, and why); the loop yields a `PhaseEvent` after each, so a caller
can stop between any two phases, look at the state, change it (edit or drop tool calls before
TOOLS) and go on. Everything the loop knows lives in the frozen `AgentState`; a phase reads it
and replaces it. Status changes follow the `Transition` table in `workbench.state`. What the loop
keeps of its steps (the step under way, its records, the time its phases worked) is its
`StepLog` (`workbench.steplog`): this module decides, that one keeps the account.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import weakref
from collections.abc import AsyncGenerator, Mapping, Sequence

from workbench._sync import call_user
from workbench.conditions import Budget, RunView
from workbench.config import LoopConfig
from workbench.conversation import appended
from workbench.drafts import StepDraft
from workbench.errors import ResponseRetriesExceeded
from workbench.history import shaped
from workbench.hooks.loop import LoopHooks, with_arguments
from workbench.hooks.runner import HookReport
from workbench.messages import (
    Message,
    Part,
    RetryPrompt,
    Role,
    TextPart,
    ToolCall,
    with_unique_call_ids,
)
from workbench.models.base import ModelRequest, server_of
from workbench.observing import Observers
from workbench.records import (
    HookTiming,
    PhaseEvent,
    RunResult,
    StepContext,
    StepRecord,
    ToolOutcome,
)
from workbench.state import (
    AgentState,
    ErrorInfo,
    ExecutionStatus,
    Phase,
    StopReason,
    Transition,
    new_id,
)
from workbench.steplog import StepLog
from workbench.stepping import step_gate
from workbench.subagent import SubagentTool
from workbench.toolcalls import CallResult, ToolRunner, counted_retries
from workbench.tools import Tool, ToolContext, tools_hash
from workbench.toolsets import choose_tools
from workbench.traceids import new_trace_id
from workbench.waits import Waits

__all__ = ["Execution"]

GRACE_MESSAGE = "The run reached its limit. Call the tool {tool!r} now to finish the task."
EMPTY_RESPONSE = "Your response was empty. Answer the question or call one of the tools."
LACKING = "Tools you do not have in this task: "
_GRACE_LIMITS = (StopReason.STEP_LIMIT, StopReason.TIME_LIMIT)
_MODEL_STOPS = (StopReason.COMPLETED, StopReason.TASK_COMPLETE)
"""Stop reasons where the model ended the run itself: Stop hooks may ask for another turn."""


class Execution:
    """One execution of a run: from a new or resumed state until it ends or pauses."""

    def __init__(self, config: LoopConfig, state: AgentState) -> None:
        self.config = config
        self.state = state
        self.snapshots: list[StepContext] = []
        self.children: list[RunResult] = []
        """The sub-runs this execution's tools made (sub-agents), in call order."""
        self.failure: Exception | None = None
        """The exception that failed this execution, for callers in this process (the state
        keeps its `ErrorInfo`): a sub-run's caller tells a replay's departure by it."""
        self._stop_asked: StopReason | None = None
        """An end asked for during a phase (an abort); it takes effect when the phase ends."""
        self._step_tools: Mapping[str, Tool] = config.tools
        """The tools of the step under way: the agent's, and what its toolsets offer now."""
        self._hidden: tuple[tuple[str, str], ...] = ()
        """The toolsets' tools hidden this step, with the reason."""
        self._provider: str | None = getattr(config.model, "provider", None)
        self._server = server_of(config.model)
        self._limits = config.stop.limits()
        prompt = config.system_prompt
        self._prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()[:16] if prompt else None
        this = weakref.proxy(self)  # the hooks must not keep their execution alive (a cycle)
        self._hooks = LoopHooks(
            config.hooks,
            lambda: this.state,
            lambda report: this._hook_called(report),
            config.max_hook_turns,
            config.redactor.text,
        )
        self._observers = Observers(config.observers)
        self._runner = ToolRunner(config, self._hooks, self._observers)
        gate = step_gate.get()  # a sub-run of a stepped tree: the tree's waits on the person
        waits = gate.waits if gate is not None else None
        self._log = StepLog(
            state.elapsed, waits, self._hooks, self._observers, since=state.paused_at
        )

    @property
    def done(self) -> bool:
        """True once the run ended, or paused with calls waiting (`AgentState.done`)."""
        return self.state.done

    @property
    def steps(self) -> list[StepRecord]:
        """The records of the steps that closed in this execution, in order."""
        return self._log.records

    @property
    def waits(self) -> Waits | None:
        """When the run tree waited on whoever steps it (`Waits`); None when nobody steps it.

        A sub-run of a stepped tree has the tree's; `AgentRun` gives a run stepped by hand its
        own.
        """
        return self._log.waits

    @waits.setter
    def waits(self, waits: Waits | None) -> None:
        self._log.waits = waits

    def elapsed(self) -> float:
        """Running time of the run so far: the time spent in its phases, across executions."""
        return self._log.elapsed()

    async def phases(self) -> AsyncGenerator[PhaseEvent, None]:
        """The loop: run a phase, yield what happened, until the run ends or pauses."""
        phase = await self._start()  # PREPARE, TOOLS for a resumed run, None if it cannot run
        while phase is not None and not self.state.done:  # done: aborted between phases
            started = self._log.phase_begins()
            try:
                following = await self._run_phase(phase)
            except asyncio.CancelledError:  # Ctrl+C in a notebook, a cancelled task
                self._end_for(StopReason.ABORTED, phase, started)
                await self._wind_up()
                raise
            except Exception as exc:  # an unrecovered error fails the run
                self._fail(exc, phase)
                following = None
            following = self._honour_stops(following)
            if following is not None:
                self._update(next_phase=following)
            event = self._log.phase_ended(phase, started, self.state)
            if following is None:
                await self._wind_up()
            elif phase is Phase.CONTINUATION:
                self._close_step()
            yield event
            phase = following

    async def _run_phase(self, phase: Phase) -> Phase | None:
        """One phase of a step; each says what comes next (None: the run ended or paused)."""
        match phase:
            case Phase.PREPARE:  # the budget, the snapshot, the messages to send
                return await self._prepare()  # INFERENCE, or None when a limit was reached
            case Phase.INFERENCE:  # one model call
                return await self._inference()  # TOOLS, or None when the time ran out
            case Phase.TOOLS:  # guards, hooks, approval, then the calls
                return await self._tools()  # CONTINUATION, or None: paused or a limit
            case Phase.CONTINUATION:  # stop conditions: another step, a grace turn, the end
                return await self._continuation()  # PREPARE, or None: the run ended

    def request_abort(self) -> None:
        """End the run as ABORTED: now between phases, else when the phase under way ends."""
        if self._log.in_phase:
            self._stop_asked = StopReason.ABORTED
            return
        if self.state.status.is_terminal:
            return
        self._end(StopReason.ABORTED, pending=())  # nothing waits for an aborted run
        self._close_step()  # no SessionEnd here: hooks are awaited and this is a sync call
        self._finish()
        self._hooks.close()

    def step_so_far(self, under_way: Sequence[ToolCall] = ()) -> StepRecord | None:
        """The step under way as it stands (`StepDraft.so_far`); None between steps."""
        return self._log.so_far(self.state, under_way)

    def replace_state(self, state: AgentState) -> None:
        """Swap in an edited state between phases (edited or dropped tool calls, a resume)."""
        self.state = state

    @property
    def step_outcomes(self) -> tuple[ToolOutcome, ...]:
        """The tool outcomes of the step under way (once it has closed: of the last step)."""
        return self._log.outcomes

    def keep_breakpoint_error(self, error: ErrorInfo) -> None:
        """A breakpoint predicate raised after the last phase: its step's record keeps it."""
        self._log.keep_breakpoint_error(error)

    # -- phases ---------------------------------------------------------------------------------

    async def _prepare(self) -> Phase | None:
        """Check the budget, choose the tools, take the snapshot and shape the messages."""
        view = self._view(self.state.step)
        if await self._end_at_limit(view):
            return None
        await self._choose_tools(view, self.state.step + 1)
        self._hide_refused_subagents()
        snapshot = self._snapshot(view)  # the state as the step starts: what a re-run starts from
        first_new = len(self.state.messages)
        self._update(step=snapshot.step)
        if self.state.depth and snapshot.step == 1 and self._hidden:  # a sub-agent is told
            lacking = "; ".join(f"{name} ({why})" for name, why in self._hidden)
            self._append(self._message("user", TextPart(text=f"{LACKING}{lacking}.")))
        if context := self._hooks.take_context():
            self._append(self._message("user", TextPart(text=context)))
        last_step = snapshot.budget.steps_left == 1 and not self.state.grace_turn
        if last_step and self.config.wrap_up_message and self._step_tools:
            self._append(self._message("user", TextPart(text=self.config.wrap_up_message)))
        messages: Sequence[Message] = self.state.messages
        if self.config.history_processors:  # the user's code: in a worker, never on the loop
            messages = await call_user(shaped, self.config.history_processors, messages)
        if len(messages) < len(self.state.messages):
            await self._hooks.pre_compact(len(self.state.messages), len(messages))
        self._log.open(
            StepDraft(
                index=snapshot.step,
                started_at=time.time(),
                first_new=first_new,
                tools_offered=self._offered(last_step),
                tools_hidden=self._hidden,
                snapshot_id=snapshot.id,
            ).sending(messages, self.state.messages)
        )
        self.snapshots.append(snapshot)
        self._observers.step_started(snapshot)
        return Phase.INFERENCE

    async def _inference(self) -> Phase | None:
        """One model call, bounded by the time left; its answer joins the conversation."""
        draft = self._step_draft()
        request = ModelRequest(  # the draft's messages go in as they are (`StepDraft.sending`)
            messages=(),
            tools=tuple(self._step_tools[name].definition for name in draft.tools_offered),
            settings=self.config.settings,
            on_text_delta=self.config.on_text_delta,
        ).model_copy(update={"messages": draft.messages_in})
        seconds_left = None
        if self._limits.timeout is not None and not self.state.grace_turn:
            seconds_left = self._budget().seconds_left
        started, wall = time.perf_counter(), time.time()
        try:
            requested = self.config.model.request(request)
            if seconds_left is not None:  # no timer to arm without a time limit
                requested = asyncio.wait_for(requested, seconds_left)
            response = (await requested).writable()
        except Exception as exc:
            duration = time.perf_counter() - started
            error = ErrorInfo.of(
                exc, phase=Phase.INFERENCE, step=draft.index, redact=self.config.redactor.text
            )
            self._log.draft = draft.model_copy(
                update={"model_started_at": wall, "model_duration": duration, "model_error": error}
            )
            self._observers.model_called(draft.index, draft.messages_in, None, wall, duration, exc)
            if isinstance(exc, TimeoutError) and seconds_left is not None:
                self._end(StopReason.TIME_LIMIT)
                return None
            raise
        duration = time.perf_counter() - started
        self._observers.model_called(draft.index, draft.messages_in, response, wall, duration, None)
        self._log.draft = draft.model_copy(
            update={"response": response, "model_started_at": wall, "model_duration": duration}
        )
        usage = self.state.usage + response.usage
        if response.parts and (response.calls or response.text_content.strip()):
            parts = with_unique_call_ids(response.parts)
            self._append(self._message("assistant", *parts), usage=usage, response_retries=0)
            return Phase.TOOLS
        retries = self.state.response_retries + 1
        if retries > self.config.response_retries:
            self._update(usage=usage)
            raise ResponseRetriesExceeded(
                f"the model's responses were empty more than {self.config.response_retries} "
                "time(s) in a row"
            )
        retry = self._message("user", RetryPrompt(content=EMPTY_RESPONSE))
        self._append(retry, usage=usage, response_retries=retries)
        return Phase.TOOLS

    async def _tools(self) -> Phase | None:
        """Run the last answer's unanswered tool calls; pause if any waits for the outside."""
        calls = self.state.unanswered_calls()
        if not calls:
            return Phase.CONTINUATION
        view = self._view(self.state.step - 1)  # the step under way does not count as used yet
        if await self._end_at_limit(view):
            return None
        if self._log.draft is None:  # resumed mid-step: the tools are chosen again
            await self._choose_tools(view, self.state.step)
        draft = self._step_draft()
        results = await self._runner.run(
            calls,
            ToolContext(view=view, limits=self._limits),
            self._step_tools,
            draft.tools_offered,
            self.state.approved,
            self._hidden,
        )
        self._apply(results)
        pending = tuple(p for r in results for p in r.pending)
        if not pending:
            return Phase.CONTINUATION
        await self._hooks.notification(pending)
        if self._hooks.stop_reason is None:  # a hook's stop outranks the pause
            self.state = self.state.moved(Transition.PAUSE, pending=pending, next_phase=Phase.TOOLS)
        return None

    async def _continuation(self) -> Phase | None:
        """Decide: another step, one grace turn, or the end (and why)."""
        reason = await self._stop_reason(self._view(self.state.step))
        if self.state.messages[-1].role == "assistant":  # a final answer
            reason = StopReason.pick([reason, StopReason.COMPLETED])
        if self.state.grace_turn:  # the grace turn decides: completion tool called or not
            if self._grace_tool_ran():
                reason = StopReason.TASK_COMPLETE
        elif reason in _GRACE_LIMITS and self.config.grace_tool is not None:
            grace = GRACE_MESSAGE.format(tool=self.config.grace_tool)
            self._append(self._message("user", TextPart(text=grace)), grace_turn=True)
            return Phase.PREPARE
        if reason is None or await self._stop_hooks_continue(reason):
            return Phase.PREPARE
        self._end(reason)
        return None

    async def _stop_hooks_continue(self, reason: StopReason) -> bool:
        """When the model ended the run itself, Stop hooks may force one more turn (bounded)."""
        if reason not in _MODEL_STOPS or self.state.grace_turn:
            return False
        message = await self._hooks.stop()
        if message is not None:
            turns = self.state.hook_turns + 1
            self._append(self._message("user", TextPart(text=message)), hook_turns=turns)
        return message is not None

    def _apply(self, results: list[CallResult]) -> None:
        """Record outcomes, count retries and errors, and add the answers to the conversation."""
        draft = self._step_draft()
        outcomes = draft.outcomes + tuple(r.outcome for r in results)
        self._log.draft = draft.model_copy(update={"outcomes": outcomes})
        rewritten = {r.outcome.call_id: r.outcome.arguments for r in results if r.rewritten}
        if rewritten:  # the history shows the arguments hooks gave, so a resume runs them too
            self._update(messages=with_arguments(self.state.messages, rewritten))
        retries, exceeded = counted_retries(self.state.retries, results, self._step_tools)
        total, consecutive = self.state.errors_total, self.state.errors_consecutive
        for result in results:
            if result.counts_as_error:
                total, consecutive = total + 1, consecutive + 1
            elif result.outcome.status == "ok":
                consecutive = 0
        answers = [self._message("tool", r.part) for r in results if r.part is not None]
        waiting = dict(self.state.waiting_subruns)  # a sub-run that ran again is no longer kept
        for result in results:
            waiting.pop(result.outcome.call_id, None)
            if result.waiting is not None:
                waiting[result.outcome.call_id] = result.waiting
        self.children += [child for r in results for child in r.children]
        usage = sum((r.usage for r in results if r.usage is not None), self.state.usage)
        self._append(
            *answers,
            usage=usage,  # what sub-agents spent counts against this run's budget
            retries=retries,
            errors_total=total,
            errors_consecutive=consecutive,
            approved=(),
            waiting_subruns=waiting,
            subrun_answers={} if not waiting else self.state.subrun_answers,
            subruns=self._runner.subruns(self.state),
        )
        departed = next((r.departed for r in results if r.departed is not None), None)
        for failure in (departed, exceeded):  # raised only now: the answers are kept in the state
            if failure is not None:
                raise failure

    # -- run control ----------------------------------------------------------------------------

    async def _start(self) -> Phase | None:
        """Start the execution (SessionStart hooks first); the first phase, or None."""
        if self.state.done:
            return None
        # Each execution is a trace of its own; a sub-run's is its parent's (set by its caller).
        resumed = self.state.status is ExecutionStatus.PAUSED and self.state.parent_call_id is None
        trace_id = new_trace_id() if resumed or not self.state.trace_id else self.state.trace_id
        self.state = self.state.moved(Transition.START, trace_id=trace_id, paused_at=None)
        self._observers.run_started(self.state)
        trace = self._observers.trace_context()
        if trace != self.state.trace:
            self._update(trace=trace)
        if not await self._hooks.session_start(self.config.model.name):
            self._end(StopReason.HOOK_STOP)
        first = self._honour_stops(self.state.next_phase)
        if first is None or self.state.done:
            await self._wind_up()
            return None
        return first

    def _honour_stops(self, following: Phase | None) -> Phase | None:
        """Apply an end asked for during the phase: a hook's ``continue: false``, an abort.

        Either outranks what the phase decided: HOOK_STOP ends a run that was about to go on,
        pause, or end for a lesser reason (a limit); an abort ends any run that has not ended.
        """
        hook_stop = StopReason.HOOK_STOP if self._hooks.stop_reason is not None else None
        reason = StopReason.pick([self._stop_asked, hook_stop])
        state = self.state
        if reason is None:
            return following
        if state.status in reason.transition.sources:
            self._end(reason, pending=())
        elif (
            state.status is reason.status and StopReason.pick([state.stop_reason, reason]) is reason
        ):
            self._update(stop_reason=reason)  # the run ended in this phase for a lesser reason
        return None  # ended, or paused: nothing follows in this execution

    async def _end_at_limit(self, view: RunView) -> bool:
        """End the run if a stop condition fires (never in the grace turn); True if it ended."""
        if self.state.grace_turn:
            return False
        reason = await self._stop_reason(view)
        if reason is not None:
            self._end(reason)
        return reason is not None

    async def _stop_reason(self, view: RunView) -> StopReason | None:
        """Why the stop conditions would end the run now; a user's condition runs off the loop."""
        stop = self.config.stop
        return stop.check(view) if stop.inline else await call_user(stop.check, view)

    def _end(self, reason: StopReason, **changes: object) -> None:
        self.state = self.state.moved(reason.transition, stop_reason=reason, **changes)

    def _end_for(self, reason: StopReason, phase: Phase, started: float) -> None:
        """End the run from a phase that was cut short (cancelled), and count its time."""
        if not self.state.status.is_terminal:
            self._end(reason, pending=())
        self._log.phase_ended(phase, started, self.state)

    def _fail(self, exc: Exception, phase: Phase) -> None:
        """End the run as FAILED, keeping the error; the loop then winds up (nothing follows)."""
        if self.state.status.is_terminal:
            return
        redact = self.config.redactor.text
        error = ErrorInfo.of(exc, phase=phase, step=self.state.step, redact=redact)
        self.failure = exc
        self._end(StopReason.ERROR, error=error)

    async def _wind_up(self) -> None:
        """The execution ended or paused: fire SessionEnd, close the step, end the execution."""
        await self._hooks.session_end()
        self._close_step()
        self._finish()

    def _finish(self) -> None:
        paused = self.state.status is ExecutionStatus.PAUSED  # a resume waits from here on
        self._update(elapsed=self.elapsed(), paused_at=time.time() if paused else None)
        self._observers.run_ended(self.state)

    # -- the step record ------------------------------------------------------------------------

    def _step_draft(self) -> StepDraft:
        """The step under way; a run resumed mid-step records it from TOOLS on."""
        if self._log.draft is None:
            return self._log.open(
                StepDraft(
                    index=self.state.step,
                    started_at=time.time(),
                    first_new=len(self.state.messages),
                    tools_offered=tuple(self._step_tools),
                    tools_hidden=self._hidden,
                )
            )
        return self._log.draft

    def _close_step(self) -> None:
        """Close the step under way (`StepLog.close`).

        Hooks that ran with no step open, in an execution with no record to join, get a record
        of their own.
        """
        if self._log.draft is None and self._hooks.unrecorded and not self._log.records:
            self._step_draft()
        self._log.close(self.state)

    # -- helpers --------------------------------------------------------------------------------

    def _hook_called(self, report: HookReport) -> None:
        timing = HookTiming(
            event=report.event,
            hook=report.hook,
            duration=report.duration,
            started_at=report.started_at,
            error=report.error,
            exception=report.exception,
        )
        self._observers.hook_called(self.state.step, timing, report.started_at, report.error)

    def _view(self, steps_completed: int) -> RunView:
        return RunView(state=self.state, elapsed=self.elapsed(), steps_completed=steps_completed)

    def _budget(self) -> Budget:
        """The budget during a step: the step under way does not count as used yet."""
        return Budget.of(self._limits, self._view(self.state.step - 1))

    async def _choose_tools(self, view: RunView, step: int) -> None:
        """The step's tools: the agent's, and what each toolset offers at this point of the run."""
        if not self.config.toolsets:
            self._step_tools, self._hidden = self.config.tools, ()
            return
        recording = self.config.tool_recording if self.config.replay_tools else None
        recorded = recording.definitions.get(step) if recording is not None else None
        self._step_tools, self._hidden = await choose_tools(
            self.config.tools, self.config.toolsets, view, step, recorded
        )

    def _hide_refused_subagents(self) -> None:
        """Hide the sub-agent tools that a limit of the tree would refuse now, saying which.

        Only when a step starts: a call already admitted (a paused sub-run) runs on resume.
        """
        tools = self._step_tools
        subagents = [name for name, tool in tools.items() if isinstance(tool, SubagentTool)]
        if not subagents:
            return
        state = self.state
        refusal = self._runner.tree(state).limit_reached(state.run_id, state.depth)
        if refusal is not None:
            self._step_tools = {n: t for n, t in tools.items() if n not in subagents}
            self._hidden += tuple((name, refusal) for name in subagents)

    def _offered(self, last_step: bool) -> tuple[str, ...]:
        if self.state.grace_turn and self.config.grace_tool:
            return (self.config.grace_tool,)
        return () if last_step and self.config.wrap_up_message else tuple(self._step_tools)

    def _grace_tool_ran(self) -> bool:
        outcomes = self._step_draft().outcomes
        return any(o.status == "ok" and o.name == self.config.grace_tool for o in outcomes)

    def _snapshot(self, view: RunView) -> StepContext:
        """The snapshot of the step about to start; ``view`` is the run as it starts."""
        state = self.state
        return StepContext(
            id=new_id("snap"),
            run_id=state.run_id,
            execution_id=state.execution_id,
            parent_run_id=state.parent_run_id,
            step=state.step + 1,
            model_name=self.config.model.name,
            model_settings=dict(self.config.settings),
            tool_names=tuple(self._step_tools),
            tool_schema_hash=tools_hash(tuple(self._step_tools.values())),
            system_prompt_hash=self._prompt_hash,
            budget=Budget.of(self._limits, view),
            message_count=len(state.messages),
            created_at=time.time(),
            state=state,
            provider=self._provider,
            server_address=self._server[0],
            server_port=self._server[1],
            tool_definitions=tuple(t.definition for t in self._step_tools.values()),
        )

    def _message(self, role: Role, *parts: Part) -> Message:
        """A message made by this step, stamped with its provenance (run, execution, step)."""
        state = self.state
        return Message(
            role=role,
            parts=parts,
            run_id=state.run_id,
            execution_id=state.execution_id,
            step=state.step,
        )

    def _append(self, *messages: Message, **changes: object) -> None:
        """Add messages made by `_message`, and other changes, in one new state."""
        self._update(messages=appended(self.state.messages, *messages), **changes)

    def _update(self, **changes: object) -> None:
        """Replace the state with a copy that has ``changes`` (never its status)."""
        self.state = self.state.model_copy(update=changes)
