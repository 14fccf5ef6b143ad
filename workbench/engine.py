"""The loop: one execution of a run, phase by phase.

`Execution.phases` is the whole loop. Each step runs PREPARE, INFERENCE, TOOLS and CONTINUATION,
and the loop yields a `PhaseEvent` after each, so a caller can stop between any two phases,
look at the state, change it (edit or drop tool calls before TOOLS) and go on. Everything the loop
knows lives in the frozen `AgentState`; the phase methods read it and replace it.
"""

from __future__ import annotations

import asyncio
import hashlib
import time
import weakref
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from workbench.conditions import Budget, RunView, StopCondition
from workbench.errors import ToolRetriesExceeded
from workbench.guards import ToolGuard
from workbench.history import HistoryProcessor
from workbench.hooks.loop import LoopHooks, with_arguments
from workbench.hooks.runner import AnyHook, HookReport
from workbench.messages import (
    Message,
    Part,
    RetryPrompt,
    Role,
    TextPart,
    Usage,
    unvalidated,
)
from workbench.models.base import Model, ModelRequest, ModelSettings, server_of
from workbench.records import (
    HookTiming,
    Observers,
    PhaseEvent,
    RunObserver,
    StepContext,
    StepRecord,
    Timing,
    ToolOutcome,
    tools_schema_hash,
)
from workbench.state import (
    TERMINAL,
    AgentState,
    ErrorInfo,
    ExecutionStatus,
    Phase,
    StopReason,
    new_id,
)
from workbench.toolcalls import CallResult, ToolRunner
from workbench.tools import (
    Tool,
    ToolContext,
    ToolDefinition,
)

__all__ = ["DEFAULT_WRAP_UP", "Execution", "LoopConfig", "ToolRetriesExceeded"]

DEFAULT_WRAP_UP = (
    "This is your last step: tools are now disabled. Answer now with the best response you can "
    "give from what you already know."
)
GRACE_MESSAGE = "The run reached its limit. Call the tool {tool!r} now to finish the task."
EMPTY_RESPONSE = "Your response was empty. Answer the question or call one of the tools."
_GRACE_LIMITS = (StopReason.STEP_LIMIT, StopReason.TIME_LIMIT)
_STOPPABLE = (ExecutionStatus.RUNNING, ExecutionStatus.COMPLETED)
_STARTABLE = (ExecutionStatus.PENDING, ExecutionStatus.PAUSED)
_DONE = TERMINAL | {ExecutionStatus.PAUSED}
_MODEL_STOPS = (StopReason.COMPLETED, StopReason.TASK_COMPLETE)
"""Stop reasons where the model ended the run itself: Stop hooks may ask for another turn."""
_PREPARE, _INFERENCE, _TOOLS, _CONTINUATION = (
    Phase.PREPARE,
    Phase.INFERENCE,
    Phase.TOOLS,
    Phase.CONTINUATION,
)
"""The phases, read once: on Python 3.11 every ``Phase.X`` goes through the enum metaclass's
``__getattr__`` hook (~140 ns, ten times a global), and the loop names a phase ~13 times a step."""


@dataclass(frozen=True)
class LoopConfig:
    """Everything the loop needs that is not run state."""

    model: Model
    tools: Mapping[str, Tool]
    stop: StopCondition
    guards: tuple[ToolGuard, ...] = ()
    history_processors: tuple[HistoryProcessor, ...] = ()
    settings: ModelSettings = field(default_factory=lambda: ModelSettings())
    system_prompt: str | None = None
    wrap_up_message: str | None = DEFAULT_WRAP_UP
    grace_tool: str | None = None
    """A completion tool the model may call in one grace turn after a step or time limit."""
    response_retries: int = 1
    observers: tuple[RunObserver, ...] = ()
    on_text_delta: Callable[[str], None] | None = None
    hooks: tuple[AnyHook, ...] = ()
    max_hook_turns: int = 3
    """How many extra turns Stop hooks may force in one run (across pauses)."""


_NO_USAGE = Usage()


@dataclass
class _Draft:
    """The step under way; frozen into a `StepRecord` when the step ends or pauses."""

    index: int
    started_at: float
    messages_in: tuple[Message, ...] = ()
    first_new: int = 0
    tools_offered: tuple[str, ...] = ()
    response: Any = None
    outcomes: list[ToolOutcome] = field(default_factory=list)
    usage: Usage = _NO_USAGE
    timing: dict[Phase, float] = field(default_factory=dict)
    ttft: float | None = None
    snapshot_id: str | None = None
    phase_starts: list[tuple[Phase, float]] = field(default_factory=list)
    model_started_at: float | None = None
    model_duration: float = 0.0
    model_error: ErrorInfo | None = None


class Execution:
    """One execution of a run: from a new or resumed state until it ends or pauses."""

    def __init__(self, config: LoopConfig, state: AgentState) -> None:
        self.config = config
        self.state = state
        self.steps: list[StepRecord] = []
        self.snapshots: list[StepContext] = []
        self._draft: _Draft | None = None
        self._clock_start: float | None = None
        self._tool_names = tuple(config.tools)
        self._definitions = tuple(t.definition for t in config.tools.values())
        self._offers = {self._tool_names: self._definitions}
        """The definitions sent to the model, by the tools offered (all, none, the grace tool)."""
        self._schema_hash = tools_schema_hash(tuple(config.tools.values()))
        self._provider: str | None = getattr(config.model, "provider", None)
        self._server = server_of(config.model)
        self._limits = config.stop.limits()
        prompt = config.system_prompt
        self._prompt_hash = hashlib.sha256(prompt.encode()).hexdigest()[:16] if prompt else None
        self._abort_requested = False
        self.in_phase = False
        """True while a phase runs (an abort then waits for the phase to end)."""
        this = weakref.proxy(self)  # the hooks must not keep their execution alive (a cycle)
        self._hooks = LoopHooks(
            config.hooks,
            lambda: this.state,
            lambda report: this._hook_called(report),
            config.max_hook_turns,
        )
        self._observers = Observers(config.observers)
        self._runner = ToolRunner(config, self._hooks, self._observers)

    @property
    def done(self) -> bool:
        """True once the execution ended or paused."""
        return self.state.status in _DONE

    def elapsed(self) -> float:
        """Running time of the run so far, across executions (time paused does not count)."""
        if self._clock_start is None:
            return self.state.elapsed
        return self.state.elapsed + (time.perf_counter() - self._clock_start)

    async def phases(self) -> AsyncIterator[PhaseEvent]:
        """The loop: run the next phase, yield what happened, until the run ends or pauses."""
        while (event := await self.advance()) is not None:
            yield event

    async def advance(self) -> PhaseEvent | None:
        """Run the next phase and say what happened; None once the run ended or paused."""
        if self.state.status in _STARTABLE and not self.state.pending:
            await self._begin()  # a new run, or a paused one whose calls were answered
        if self.done:
            return None
        phase = self.state.next_phase
        started, wall = time.perf_counter(), time.time()
        self.in_phase = True
        try:  # an unrecovered error fails the run
            if self._abort_requested:
                self._end(StopReason.ABORTED)
            else:
                await _PHASES[phase](self)
        except Exception as exc:
            self._fail(exc, phase)
        finally:
            self.in_phase = False
        self._honour_hook_stop()
        state = self.state
        event = PhaseEvent(phase, state.step, state, time.perf_counter() - started)
        self._add_time(phase, event.duration, wall)
        self._observers.phase_ended(event, wall)
        if self.done:  # SessionEnd hooks cannot change that: they only observe
            await self._wind_up()
        elif phase is _CONTINUATION:
            self._close_step()
        return event

    async def _wind_up(self) -> None:
        """The execution ended or paused: fire SessionEnd, close the step, end the execution."""
        await self._hooks.session_end()
        self._close_step()
        self._finish()

    def request_abort(self) -> None:
        """End the run as ABORTED before its next phase starts."""
        self._abort_requested = True

    def abort_now(self) -> None:
        """End the run as ABORTED right away; only call it between phases."""
        if self.state.status.is_terminal:
            return
        self._end(StopReason.ABORTED)
        self.state = self.state.evolve(pending=())  # nothing waits for an aborted run
        self._close_step()  # no SessionEnd here: hooks are awaited and this is a sync call
        self._finish()
        self._hooks.close()

    def replace_state(self, state: AgentState) -> None:
        """Swap in an edited state between phases (edited or dropped tool calls, a resume)."""
        self.state = state

    # -- phases ---------------------------------------------------------------------------------

    async def _prepare(self) -> None:
        """Check the budget, open the step, shape the messages and take the snapshot."""
        view = self._view(self.state.step)
        if self._stop_now(view):
            return
        snapshot = self._snapshot(view)  # the state as the step starts: what a re-run starts from
        first_new = len(self.state.messages)
        self.state = self.state.evolve(step=snapshot.step, next_phase=_INFERENCE)
        if context := self._hooks.take_context():
            self._append(self._message("user", TextPart(text=context)))
        last_step = snapshot.budget.steps_left == 1 and not self.state.grace_turn
        if last_step and self.config.wrap_up_message and self._definitions:
            self._append(self._message("user", TextPart(text=self.config.wrap_up_message)))
        offered = self._offered(last_step)
        messages: Sequence[Message] = self.state.messages
        for process in self.config.history_processors:
            messages = process(messages)
        if len(messages) < len(self.state.messages):
            await self._hooks.pre_compact(len(self.state.messages), len(messages))
        self._open_step(
            _Draft(
                index=snapshot.step,
                started_at=time.time(),
                messages_in=tuple(messages),
                first_new=first_new,
                tools_offered=offered,
                snapshot_id=snapshot.id,
            )
        )
        self.snapshots.append(snapshot)
        self._observers.step_started(snapshot)

    async def _inference(self) -> None:
        """One model call, bounded by the time left; its answer joins the conversation."""
        draft = self._current_draft()
        request = ModelRequest(
            draft.messages_in,
            self._offered_definitions(draft.tools_offered),
            self.config.settings,
            self.config.on_text_delta,
        )
        seconds_left = None
        if self._limits.timeout is not None and not self.state.grace_turn:
            seconds_left = self._budget().seconds_left
        started, wall = time.perf_counter(), time.time()
        try:
            requested = self.config.model.request(request)
            if seconds_left is not None:  # no timer to arm without a time limit
                requested = asyncio.wait_for(requested, seconds_left)
            response = await requested
        except BaseException as exc:
            draft.model_started_at, draft.model_duration = wall, time.perf_counter() - started
            draft.model_error = ErrorInfo(
                type=type(exc).__name__, message=str(exc), phase=_INFERENCE, step=draft.index
            )
            self._observers.model_called(
                draft.index, draft.messages_in, None, wall, draft.model_duration, exc
            )
            if isinstance(exc, TimeoutError) and seconds_left is not None:
                self._end(StopReason.TIME_LIMIT)
                return
            raise
        draft.model_started_at, draft.model_duration = wall, time.perf_counter() - started
        self._observers.model_called(
            draft.index, draft.messages_in, response, wall, draft.model_duration, None
        )
        draft.response, draft.usage, draft.ttft = (
            response,
            response.usage,
            response.time_to_first_token,
        )
        usage = self.state.usage + response.usage
        if response.parts and (response.calls or response.text_content.strip()):
            answer = self._message("assistant", *response.parts)  # as `response.to_message()`
            self._append(answer, usage=usage, next_phase=_TOOLS)
            return
        retries = _count_retry(self.state.retries, "<response>", self.config.response_retries)
        retry = self._message("user", RetryPrompt(content=EMPTY_RESPONSE))
        self._append(retry, usage=usage, next_phase=_TOOLS, retries=retries)

    async def _tools(self) -> None:
        """Run the last answer's unanswered tool calls; pause if any waits for the outside."""
        calls = self.state.unanswered_calls()
        view = self._view(self.state.step - 1)  # the step under way does not count as used yet
        if not calls or self._stop_now(view):
            self.state = self.state.evolve(next_phase=_CONTINUATION)
            return
        draft = self._current_draft()
        results = await self._runner.run(
            calls, ToolContext(view, self._limits), draft.tools_offered, self.state.approved
        )
        self._apply(results)
        pending = tuple(r.pending for r in results if r.pending is not None)
        if pending:
            await self._hooks.notification(pending)
        if pending and self._hooks.stop_reason is None:
            self.state = self.state.with_status(
                ExecutionStatus.PAUSED, pending=pending, next_phase=_TOOLS
            )

    async def _continuation(self) -> None:
        """Decide: another step, one grace turn, or the end (and why)."""
        reason = self.config.stop.check(self._view(self.state.step))
        if self.state.messages[-1].role == "assistant":  # a final answer
            reason = StopReason.pick([reason, StopReason.COMPLETED])
        self.state = self.state.evolve(next_phase=_PREPARE)
        if self.state.grace_turn:  # the grace turn decides: completion tool called or not
            if self._grace_tool_ran():
                reason = StopReason.TASK_COMPLETE
        elif reason in _GRACE_LIMITS and self.config.grace_tool is not None:
            grace = GRACE_MESSAGE.format(tool=self.config.grace_tool)
            self._append(self._message("user", TextPart(text=grace)))
            self.state = self.state.evolve(grace_turn=True)
            return
        if reason is None or await self._stop_hooks_continue(reason):
            return
        self._end(reason)

    async def _stop_hooks_continue(self, reason: StopReason) -> bool:
        """When the model ended the run itself, Stop hooks may force one more turn (bounded)."""
        if reason not in _MODEL_STOPS or self.state.grace_turn:
            return False
        message = await self._hooks.stop()
        if message is not None:
            self.state = self.state.evolve(hook_turns=self.state.hook_turns + 1)
            self._append(self._message("user", TextPart(text=message)))
        return message is not None

    def _apply(self, results: list[CallResult]) -> None:
        """Record outcomes, count retries and errors, add the answers; CONTINUATION comes next."""
        self._current_draft().outcomes.extend(r.outcome for r in results)
        rewritten = {r.outcome.call_id: r.outcome.arguments for r in results if r.rewritten}
        if rewritten:  # the history shows the arguments hooks gave, so a resume runs them too
            self.state = self.state.evolve(messages=with_arguments(self.state.messages, rewritten))
        state, exceeded = self.state, None
        retries, total, consecutive = state.retries, state.errors_total, state.errors_consecutive
        for result in results:
            name, ok = result.outcome.name, result.outcome.status == "ok"
            if result.retry_of is not None:
                tool = self.config.tools.get(result.retry_of)
                try:
                    retries = _count_retry(retries, result.retry_of, tool.retries if tool else 1)
                except ToolRetriesExceeded as exc:
                    exceeded = exceeded or exc
            elif ok and name in retries:  # a success resets the tool's count
                retries = {k: v for k, v in retries.items() if k != name}
            if result.counts_as_error:
                total, consecutive = total + 1, consecutive + 1
            elif ok:
                consecutive = 0
        answers = [self._message("tool", r.part) for r in results if r.part is not None]
        self._append(
            *answers,
            retries=retries,
            errors_total=total,
            errors_consecutive=consecutive,
            approved=(),
            next_phase=_CONTINUATION,
        )
        if exceeded is not None:  # raised only now, so the answers are kept in the state
            raise exceeded

    # -- helpers --------------------------------------------------------------------------------

    async def _begin(self) -> None:
        if self.state.status.is_terminal:
            return
        self.state = self.state.with_status(ExecutionStatus.RUNNING)
        self._clock_start = time.perf_counter()
        self._observers.run_started(self.state)
        trace = self._observers.trace_context()
        if trace != self.state.trace:
            self.state = self.state.evolve(trace=trace)
        if not await self._hooks.session_start(self.config.model.name):
            self._end(StopReason.HOOK_STOP)
        self._honour_hook_stop()
        if self.done:
            await self._wind_up()

    def _honour_hook_stop(self) -> None:
        """End the run once a hook said ``continue: false`` (HOOK_STOP outranks limits)."""
        if self._hooks.stop_reason is None or self.state.status not in _STOPPABLE:
            return
        if StopReason.pick([self.state.stop_reason, StopReason.HOOK_STOP]) is StopReason.HOOK_STOP:
            self._end(StopReason.HOOK_STOP)

    def _hook_called(self, report: HookReport) -> None:
        timing = HookTiming(
            report.event, report.hook, report.duration, report.started_at, report.error
        )
        self._observers.hook_called(self.state.step, timing, report.started_at, report.error)

    def _view(self, steps_completed: int) -> RunView:
        return RunView(self.state, self.elapsed(), steps_completed)

    def _budget(self) -> Budget:
        """The budget during a step: the step under way does not count as used yet."""
        return Budget.of(self._limits, self._view(self.state.step - 1))

    def _stop_now(self, view: RunView) -> bool:
        """Check the stop conditions and end the run if one fires (not in the grace turn)."""
        if self.state.grace_turn:
            return False
        reason = self.config.stop.check(view)
        if reason is not None:
            self._end(reason)
        return reason is not None

    def _offered(self, last_step: bool) -> tuple[str, ...]:
        if self.state.grace_turn and self.config.grace_tool:
            return (self.config.grace_tool,)
        return () if last_step and self.config.wrap_up_message else self._tool_names

    def _offered_definitions(self, offered: tuple[str, ...]) -> tuple[ToolDefinition, ...]:
        if offered not in self._offers:
            self._offers[offered] = tuple(self.config.tools[name].definition for name in offered)
        return self._offers[offered]

    def _grace_tool_ran(self) -> bool:
        outcomes = self._current_draft().outcomes
        return any(o.status == "ok" and o.name == self.config.grace_tool for o in outcomes)

    def _snapshot(self, view: RunView) -> StepContext:
        """The snapshot of the step about to start; ``view`` is the run as it starts."""
        state = self.state
        return unvalidated(
            StepContext,
            {
                "id": new_id("snap"),
                "run_id": state.run_id,
                "execution_id": state.execution_id,
                "parent_run_id": state.parent_run_id,
                "step": state.step + 1,
                "model_name": self.config.model.name,
                "model_settings": dict(self.config.settings),
                "tool_names": self._tool_names,
                "tool_schema_hash": self._schema_hash,
                "system_prompt_hash": self._prompt_hash,
                "budget": Budget.of(self._limits, view),
                "message_count": len(state.messages),
                "created_at": time.time(),
                "state": state,
                "provider": self._provider,
                "server_address": self._server[0],
                "server_port": self._server[1],
                "tool_definitions": self._definitions,
            },
        )

    def _message(self, role: Role, *parts: Part) -> Message:
        """A message made by this step, stamped with its provenance (run, execution, step)."""
        state = self.state
        return unvalidated(
            Message,
            {
                "role": role,
                "parts": parts,
                "run_id": state.run_id,
                "execution_id": state.execution_id,
                "step": state.step,
            },
        )

    def _append(self, *messages: Message, **changes: object) -> None:
        """Add messages made by `_message`, and other changes, in one new state."""
        self.state = self.state.evolve(messages=(*self.state.messages, *messages), **changes)

    def _current_draft(self) -> _Draft:
        if self._draft is None:  # resumed mid-step: the step's record starts at TOOLS
            return self._open_step(
                _Draft(
                    index=self.state.step,
                    started_at=time.time(),
                    first_new=len(self.state.messages),
                    tools_offered=self._tool_names,
                )
            )
        return self._draft

    def _open_step(self, draft: _Draft) -> _Draft:
        """Start recording a step; the observers' cost is counted from here."""
        self._draft = draft
        self._observers.seconds = 0.0
        return draft

    def _add_time(self, phase: Phase, seconds: float, started_at: float) -> None:
        if self._draft is not None:
            self._draft.timing[phase] = self._draft.timing.get(phase, 0.0) + seconds
            self._draft.phase_starts.append((phase, started_at))

    def _end(self, reason: StopReason) -> None:
        self.state = self.state.with_status(reason.status, stop_reason=reason)

    def _fail(self, exc: Exception, phase: Phase) -> None:
        error = ErrorInfo(
            type=type(exc).__name__, message=str(exc), phase=phase, step=self.state.step
        )
        if self.state.status.is_terminal:
            return
        self.state = self.state.with_status(
            ExecutionStatus.FAILED, stop_reason=StopReason.ERROR, error=error
        )

    def _close_step(self) -> None:
        draft, self._draft = self._draft, None
        if draft is None:
            self._record_late_hooks()
            return
        timing, hooks = draft.timing, self._hooks.take()
        record = StepRecord(
            index=draft.index,
            run_id=self.state.run_id,
            execution_id=self.state.execution_id,
            messages_in=draft.messages_in,
            new_messages=self.state.messages[draft.first_new :],
            response=draft.response,
            tool_outcomes=tuple(draft.outcomes),
            usage=draft.usage,
            timing=Timing(
                prepare=timing.get(_PREPARE, 0.0),
                inference=timing.get(_INFERENCE, 0.0),
                tools=timing.get(_TOOLS, 0.0),
                continuation=timing.get(_CONTINUATION, 0.0),
                telemetry=self._observers.seconds,
                hooks=hooks.seconds,
                per_hook=hooks.timings,
                time_to_first_token=draft.ttft,
                per_tool=tuple(
                    (o.call_id, o.name, o.duration)
                    for o in draft.outcomes
                    if o.status in ("ok", "error", "retry")
                ),
            ),
            status=self.state.status,
            stop_reason=self.state.stop_reason,
            tools_offered=draft.tools_offered,
            snapshot_id=draft.snapshot_id,
            started_at=draft.started_at,
            hook_errors=hooks.errors,
            hook_messages=hooks.notes,
            phase_starts=tuple(draft.phase_starts),
            model_started_at=draft.model_started_at,
            model_duration=draft.model_duration,
            model_error=draft.model_error,
            ended_at=time.time(),
        )
        self.steps.append(record)
        self._observers.step_ended(record)

    def _record_late_hooks(self) -> None:
        """Hooks that ran with no step open (SessionEnd after a stop between steps).

        They go on this execution's last step record, or on a record of their own if there is
        none; observers already got each invocation through `RunObserver.hook_called`.
        """
        if not self._hooks.unrecorded:
            return
        if self.steps:
            self.steps[-1] = self._hooks.take().added_to(self.steps[-1])
        else:
            self._current_draft()
            self._close_step()

    def _finish(self) -> None:
        self.state = self.state.evolve(elapsed=self.elapsed())
        self._clock_start = None  # this execution's time is now in the state
        self._observers.run_ended(self.state)


_PHASES = {
    Phase.PREPARE: Execution._prepare,
    Phase.INFERENCE: Execution._inference,
    Phase.TOOLS: Execution._tools,
    Phase.CONTINUATION: Execution._continuation,
}
"""What each phase runs."""


def _count_retry(retries: dict[str, int], key: str, limit: int) -> dict[str, int]:
    """The retry counts with one more for ``key``; raises once ``limit`` is passed."""
    count = retries.get(key, 0) + 1
    if count > limit:
        what = "the model's responses" if key == "<response>" else f"tool {key!r}"
        raise ToolRetriesExceeded(f"{what} needed more than {limit} retries")
    return {**retries, key: count}
