"""The `Agent` facade: configure once, then run, step, resume.

An `Agent` holds configuration only; every run gets its own state. `start` returns an `AgentRun`
that is driven phase by phase (the notebook Stepper does this); `run` drives it to the end. The
sync methods run the same coroutines on the workbench's portal loop, so they also work inside a
Jupyter kernel where an event loop is already running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal

from workbench._sync import run_sync
from workbench.conditions import MaxSteps, StopCondition
from workbench.engine import DEFAULT_WRAP_UP, Execution, LoopConfig
from workbench.guards import ToolGuard
from workbench.history import HistoryProcessor
from workbench.hooks import CommandHook, Hook
from workbench.messages import JsonValue, Message, ToolCall, ToolResult, Usage
from workbench.models.base import Model, ModelSettings
from workbench.records import PhaseEvent, RunObserver, StepContext, StepRecord
from workbench.rerun import rerun_state
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, PendingCall, Phase, StopReason
from workbench.store import RunStore
from workbench.subagent import subagent_tool
from workbench.toolcalls import resume_state
from workbench.tools import Tool, tool

if TYPE_CHECKING:
    from workbench.telemetry import Telemetry

__all__ = ["Agent", "AgentRun", "RunResult"]


@dataclass(frozen=True)
class RunResult:
    """How an execution ended: the final state, the step records and the snapshots."""

    state: AgentState
    steps: tuple[StepRecord, ...]
    snapshots: tuple[StepContext, ...]
    trace_id: str | None = None
    """The trace of this execution when the agent has telemetry (taken from the state)."""

    def __post_init__(self) -> None:
        if self.trace_id is None and self.state.trace is not None:
            object.__setattr__(self, "trace_id", self.state.trace.trace_id)

    def __repr__(self) -> str:  # short: a long run's messages would fill a notebook
        return (
            f"RunResult(run_id={self.run_id!r}, status={self.status.value}, "
            f"stop_reason={self.stop_reason}, steps={len(self.steps)}, "
            f"tokens={self.usage.total_tokens}, output={_clip(self.output)})"
        )

    def _repr_html_(self) -> str:
        from workbench.notebook.reprs import run_result_html

        return run_result_html(self)

    @property
    def status(self) -> ExecutionStatus:
        """COMPLETED, FAILED, ABORTED or PAUSED."""
        return self.state.status

    @property
    def stop_reason(self) -> StopReason | None:
        """Why the run ended (None while paused)."""
        return self.state.stop_reason

    @property
    def output(self) -> str | None:
        """The text of the final answer."""
        return self.state.output

    @property
    def run_id(self) -> str:
        """The run's id, shared by all its executions."""
        return self.state.run_id

    @property
    def usage(self) -> Usage:
        """Tokens (and cost) of the whole run."""
        return self.state.usage

    @property
    def error(self) -> ErrorInfo | None:
        """The error that failed the run, if any."""
        return self.state.error

    @property
    def messages(self) -> tuple[Message, ...]:
        """The whole conversation."""
        return self.state.messages

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """Tool calls waiting for approval or results (when PAUSED)."""
        return self.state.pending


class AgentRun:
    """A run driven from outside, one phase at a time.

    Between INFERENCE and TOOLS the caller may look at `pending_calls` and `edit_call` or
    `drop_call` before the tools run.
    """

    def __init__(self, execution: Execution) -> None:
        self._execution = execution

    @property
    def state(self) -> AgentState:
        """The current state."""
        return self._execution.state

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        """Records of the steps so far."""
        return tuple(self._execution.steps)

    @property
    def snapshots(self) -> tuple[StepContext, ...]:
        """Snapshots of the steps so far."""
        return tuple(self._execution.snapshots)

    @property
    def done(self) -> bool:
        """True once the run ended or paused: `next_phase` then returns None."""
        state = self.state
        return state.status.is_terminal or (
            state.status is ExecutionStatus.PAUSED and bool(state.pending)
        )

    @property
    def next_phase_name(self) -> Phase | None:
        """The phase `next_phase` would run, or None when done."""
        return None if self.done else self.state.next_phase

    @property
    def result(self) -> RunResult:
        """The result so far (final once `done`)."""
        return RunResult(self.state, self.steps, self.snapshots)

    async def anext_phase(self) -> PhaseEvent | None:
        """Run one phase; None once the run is done."""
        return await self._execution.advance()

    async def anext_step(self) -> PhaseEvent | None:
        """Run phases up to the end of the current step (or of the run)."""
        last = None
        while (event := await self.anext_phase()) is not None:
            last = event
            if event.phase is Phase.CONTINUATION:
                break
        return last

    async def arun_to_end(self) -> RunResult:
        """Run until the run ends or pauses."""
        while await self._execution.advance() is not None:  # as `anext_phase`, one call less
            pass
        return self.result

    async def events(self) -> AsyncIterator[PhaseEvent]:
        """Every remaining phase event, as an async iterator."""
        while (event := await self.anext_phase()) is not None:
            yield event

    def next_phase(self) -> PhaseEvent | None:
        """Sync `anext_phase`."""
        return run_sync(self.anext_phase())

    def next_step(self) -> PhaseEvent | None:
        """Sync `anext_step`."""
        return run_sync(self.anext_step())

    def run_to_end(self) -> RunResult:
        """Sync `arun_to_end`."""
        return run_sync(self.arun_to_end())

    def abort(self) -> None:
        """End the run as ABORTED: now between phases or while paused, else after the phase."""
        if self._execution.in_phase:
            self._execution.request_abort()
        else:
            self._execution.abort_now()

    def resume(
        self,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """Answer the pending calls of a paused run; stepping then goes on from TOOLS."""
        self._execution.replace_state(resume_state(self.state, approvals, results))

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls the next TOOLS phase will run (empty unless TOOLS comes next)."""
        if self.done or self.state.next_phase is not Phase.TOOLS:
            return ()
        return self.state.unanswered_calls()

    def edit_call(self, call_id: str, arguments: dict[str, JsonValue]) -> None:
        """Change the arguments of a call before TOOLS runs it (the history shows the edit)."""
        self._replace_call(
            call_id,
            lambda call: call._replace({"arguments": arguments, "invalid_arguments": None}),
        )

    def drop_call(self, call_id: str, reason: str = "dropped by the user") -> None:
        """Do not run a call; the model is told why."""
        call = self._pending_call(call_id)
        answer = ToolResult(
            call_id=call_id,
            name=call.name,
            content=f"The call was not run: {reason}.",
            is_error=True,
        )
        state = self.state
        message = Message(role="tool", parts=(answer,)).stamped(
            state.run_id, state.execution_id, state.step
        )
        self._execution.replace_state(state.evolve(messages=(*state.messages, message)))

    def _pending_call(self, call_id: str) -> ToolCall:
        for call in self.pending_calls:
            if call.call_id == call_id:
                return call
        raise KeyError(f"no pending tool call {call_id!r} (calls can be changed only before TOOLS)")

    def _replace_call(self, call_id: str, change: Callable[[ToolCall], ToolCall]) -> None:
        self._pending_call(call_id)
        messages = list(self.state.messages)
        index = max(i for i, m in enumerate(messages) if m.role == "assistant")
        parts = tuple(
            change(p) if isinstance(p, ToolCall) and p.call_id == call_id else p
            for p in messages[index].parts
        )
        messages[index] = messages[index]._replace({"parts": parts})
        self._execution.replace_state(self.state.evolve(messages=tuple(messages)))


class Agent:
    """An agent: a model, tools, stop conditions, guards and the rest of the configuration."""

    def __init__(
        self,
        model: Model,
        *,
        name: str = "agent",
        system_prompt: str | None = None,
        tools: Iterable[Tool | Callable[..., Any]] = (),
        stop: StopCondition | None = None,
        guards: Sequence[ToolGuard] = (),
        hooks: Sequence[Hook | CommandHook] = (),
        max_hook_turns: int = 3,
        history_processors: Sequence[HistoryProcessor] = (),
        settings: ModelSettings | None = None,
        wrap_up_message: str | None = DEFAULT_WRAP_UP,
        grace_tool: str | None = None,
        response_retries: int = 1,
        observers: Sequence[RunObserver] = (),
        store: RunStore | Literal[False] | None = None,
        telemetry: Telemetry | None = None,
    ) -> None:
        if not isinstance(model, Model):
            raise TypeError(f"model must implement the Model protocol, got {type(model).__name__}")
        self.model = model
        self.name = name
        self.system_prompt = system_prompt
        self.tools = _tool_table(tools)
        self.stop = stop if stop is not None else MaxSteps(50)
        self.guards = tuple(guards)
        self.hooks = _hook_tuple(hooks)
        """In-process `Hook`s and `CommandHook`s; see `workbench.hooks` for where each fires."""
        self.max_hook_turns = max_hook_turns
        """How many extra turns Stop (and SubagentStop) hooks may force in one execution."""
        self.history_processors = tuple(history_processors)
        self.settings: ModelSettings = settings or ModelSettings()
        self.wrap_up_message = wrap_up_message
        if grace_tool is not None and grace_tool not in self.tools:
            raise ValueError(
                f"grace_tool {grace_tool!r} is not one of the tools: {', '.join(self.tools)}"
            )
        self.grace_tool = grace_tool
        self.response_retries = response_retries
        self.observers = tuple(observers)
        self.telemetry = telemetry
        """Spans of every run (`workbench.Telemetry`), or None: then no spans and no cost."""
        self.store = RunStore.default() if store is None else (None if store is False else store)
        """Where runs are recorded: ``store=`` or the default store (`RunStore.default`);
        ``store=False`` records nothing."""

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model.name!r}, tools={list(self.tools)})"

    def as_tool(self, name: str | None = None, description: str | None = None) -> Tool:
        """A tool that runs this agent, for another agent: each call runs it on one task.

        The sub-run's ``parent_run_id`` is the calling run, and the calling run's SubagentStart
        and SubagentStop hooks fire around it.
        """
        about = description or f"Give the {self.name} agent a task; it answers with its result."
        return subagent_tool(self, name or self.name, about)

    def start(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
        parent_run_id: str | None = None,
    ) -> AgentRun:
        """A new run, ready to be stepped; nothing is executed yet."""
        state = AgentState(agent_name=self.name, parent_run_id=parent_run_id)

        def ours(message: Message) -> Message:  # made by this run, before its first step
            return message.stamped(state.run_id, state.execution_id, 0)

        system = [ours(Message.system(self.system_prompt))] if self.system_prompt else []
        user = [ours(Message.user(prompt))] if prompt is not None else []
        stamped = (*system, *history, *user)  # history keeps its own provenance
        if not history and not user:
            raise ValueError("a run needs a prompt or a history")
        return self._run_from(state.evolve(messages=stamped), settings, on_text_delta)

    async def run(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
    ) -> RunResult:
        """Run to the end (or to a pause)."""
        run = self.start(prompt, history=history, settings=settings, on_text_delta=on_text_delta)
        return await run.arun_to_end()

    def run_sync(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
    ) -> RunResult:
        """Sync `run`; works in scripts and inside a running event loop."""
        return run_sync(
            self.run(prompt, history=history, settings=settings, on_text_delta=on_text_delta)
        )

    async def iterate(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
    ) -> AsyncIterator[PhaseEvent]:
        """The run's phase events as they happen."""
        run = self.start(prompt, history=history, settings=settings)
        async for event in run.events():
            yield event

    def start_resume(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> AgentRun:
        """A paused run with its pending calls answered, ready to be stepped."""
        return self._run_from(resume_state(state, approvals, results), settings, None)

    async def resume(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> RunResult:
        """Continue a paused run (possibly from another process) to its end or next pause.

        ``approvals`` maps call ids to True (run it), False or a reason (deny it); ``results``
        gives the results of deferred calls.
        """
        return await self.start_resume(state, approvals, results, settings=settings).arun_to_end()

    def resume_sync(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> RunResult:
        """Sync `resume`."""
        return run_sync(self.resume(state, approvals, results, settings=settings))

    def start_rerun(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
    ) -> AgentRun:
        """A new run from ``snapshot``'s step, with the edits, ready to be stepped.

        ``messages`` replaces the conversation as the step starts; ``model``, ``settings`` (laid
        over the snapshot's) and ``tools`` replace the agent's for this run only. The original run
        is untouched; the new one names it in ``state.rerun_of``.
        """
        merged = ModelSettings(**{**snapshot.model_settings, **(settings or {})})  # type: ignore[typeddict-item]
        table = None if tools is None else _tool_table(tools)
        state = rerun_state(snapshot, messages)
        return self._run_from(state, merged, None, model=model, tools=table)

    async def rerun(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
    ) -> RunResult:
        """Re-run from ``snapshot``'s step with edits (see `start_rerun`) to the end or a pause."""
        run = self.start_rerun(snapshot, messages, model, settings, tools)
        return await run.arun_to_end()

    def rerun_sync(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
    ) -> RunResult:
        """Sync `rerun`."""
        return run_sync(self.rerun(snapshot, messages, model, settings, tools))

    def _run_from(
        self,
        state: AgentState,
        settings: ModelSettings | None,
        on_text_delta: Callable[[str], None] | None,
        *,
        model: Model | None = None,
        tools: Mapping[str, Tool] | None = None,
    ) -> AgentRun:
        config = LoopConfig(
            model=model or self.model,
            tools=self.tools if tools is None else tools,
            stop=self.stop,
            guards=self.guards,
            hooks=self.hooks,
            max_hook_turns=self.max_hook_turns,
            history_processors=self.history_processors,
            settings=ModelSettings(**{**self.settings, **(settings or {})}),
            system_prompt=self.system_prompt,
            wrap_up_message=self.wrap_up_message,
            grace_tool=self.grace_tool,
            response_retries=self.response_retries,
            observers=self._observers(model or self.model),
            on_text_delta=on_text_delta,
        )
        return AgentRun(Execution(config, state))

    def _observers(self, model: Model) -> tuple[RunObserver, ...]:
        """The user's observers, the store, and a fresh telemetry observer for this execution."""
        observers = [*self.observers, *([self.store] if self.store else [])]
        if self.telemetry is not None:
            observers.append(self.telemetry.observer(model))
        return tuple(observers)


def _tool_table(tools: Iterable[Tool | Callable[..., Any]]) -> dict[str, Tool]:
    table: dict[str, Tool] = {}
    for item in tools:
        made = item if isinstance(item, Tool) else tool(item)
        if made.name in table:
            raise ValueError(f"two tools are named {made.name!r}")
        table[made.name] = made
    return table


def _hook_tuple(hooks: Sequence[Hook | CommandHook]) -> tuple[Hook | CommandHook, ...]:
    for hook in hooks:
        if not isinstance(hook, Hook | CommandHook):
            raise TypeError(f"hooks must be Hook or CommandHook objects, got {hook!r}")
    return tuple(hooks)


def _clip(text: str | None, limit: int = 60) -> str:
    if text is None or len(text) <= limit:
        return repr(text)
    return repr(text[:limit] + "…")
