"""The `Agent` facade: configure once, then run, step, resume.

An `Agent` holds configuration only; every run gets its own state. `start` returns an `AgentRun`
that is driven phase by phase (the notebook Stepper does this); `run` drives it to the end. The
sync methods run the same coroutines on the workbench's portal loop, so they also work inside a
Jupyter kernel where an event loop is already running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from workbench._sync import run_sync
from workbench.breakpoints import Break, first_hit
from workbench.conditions import MaxSteps, RunView, StopCondition
from workbench.config import DEFAULT_WRAP_UP, LoopConfig
from workbench.engine import Execution
from workbench.guards import ToolGuard
from workbench.history import HistoryProcessor
from workbench.hooks import CommandHook, Hook
from workbench.hooks.runner import checked_hooks
from workbench.messages import JsonValue, Message, ToolCall
from workbench.models.base import Model, ModelSettings
from workbench.records import PhaseEvent, RunObserver, RunResult, StepContext, StepRecord
from workbench.rerun import rerun_state
from workbench.state import AgentState, Phase
from workbench.stepping import Mode, Stepping, call_dropped, call_edited
from workbench.store import RunNotFound, RunStore
from workbench.subagent import SubagentContext, SubagentLimits, subagent_tool, subagent_tree
from workbench.toolcalls import resume_state
from workbench.tools import Tool, ToolContext
from workbench.toolsets import ToolItem, Toolset, tool_choice

if TYPE_CHECKING:
    from workbench.telemetry import Telemetry
    from workbench.telemetry.trace import Trace

__all__ = ["Agent", "AgentRun", "RunResult"]


class AgentRun:
    """A run driven from outside, one phase at a time.

    Between INFERENCE and TOOLS the caller may look at `pending_calls` and `edit_call` or
    `drop_call` before the tools run. ``next_phase(into=True)`` steps into the sub-runs a TOOLS
    phase starts (`workbench.stepping`); `subrun` is the one stopped in.
    """

    def __init__(self, execution: Execution, breakpoints: Iterable[Break] = ()) -> None:
        self._execution = execution
        self._phases: AsyncIterator[PhaseEvent] | None = None
        """The loop (`Execution.phases`) under way; a new one starts after a pause is answered."""
        self.breakpoints: list[Break] = list(breakpoints)
        """Where `run_to_breakpoint` stops; add and remove at any time."""
        self.earlier: RunResult | None = None
        """The executions of this run before this one (a resumed run): part of `result`."""
        self._stepping = Stepping()

    @property
    def subrun(self) -> AgentRun | None:
        """The sub-run stepping stopped in (its event came last), or None; see `edit_call`."""
        subrun = self._stepping.subrun
        return subrun if isinstance(subrun, AgentRun) else None

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
        return self._execution.done

    @property
    def next_phase_name(self) -> Phase | None:
        """The phase `next_phase` would run, or None when done."""
        return None if self.done else self.state.next_phase

    @property
    def result(self) -> RunResult:
        """The whole run so far, earlier executions included (final once `done`)."""
        earlier = self.earlier
        return RunResult(
            state=self.state,
            steps=(earlier.steps if earlier else ()) + self.steps,
            snapshots=(earlier.snapshots if earlier else ()) + self.snapshots,
            children=_latest(
                (earlier.children if earlier else ()) + tuple(self._execution.children)
            ),
        )

    async def anext_phase(self, *, into: bool = False) -> PhaseEvent | None:
        """Run one phase; None once the run is done.

        ``into``: step into the sub-runs the phase starts (sub-agents): the event is then the
        next phase of a sub-run (its ``state`` is the sub-run's, ``depth`` > 0) until the
        phase ends. Without it, a phase stopped inside a sub-run is finished ("step over").
        """
        if into or self._stepping.under_way:
            mode: Mode = "into" if into else "over"
            return await self._stepping.advance(mode, self._anext_own, self.breakpoints)
        return await self._anext_own()

    async def anext_checked(self) -> PhaseEvent | None:
        """Run one phase, or until a sub-run it starts stops at a breakpoint of scope "tree".

        The event has ``breakpoint`` set when one fired after it (here or in the sub-run).
        """
        tree = any(b.scope == "tree" for b in self.breakpoints)
        if not (tree or self._stepping.under_way):
            event = await self._anext_own()
        else:
            event = await self._stepping.advance("break", self._anext_own, self.breakpoints)
        if event is None or event.breakpoint is not None:
            return event
        hit = self.breakpoint_after(event)
        return event if hit is None else event.model_copy(update={"breakpoint": hit})

    async def _anext_own(self) -> PhaseEvent | None:
        """Run one phase of this run's own loop."""
        if self._phases is None:
            self._phases = self._execution.phases()
        event = await anext(self._phases, None)
        if event is None:
            self._phases = None
        return event

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
        async for _ in self.events():
            pass
        return self.result

    async def arun_to_breakpoint(self) -> PhaseEvent | None:
        """Run until a breakpoint fires (its event says which) or the run is done (None).

        A breakpoint of scope "tree" stops inside a sub-run: the event is the sub-run's, and
        `subrun` is that run; the next call goes on with it, then with this run.
        """
        while (event := await self.anext_checked()) is not None:
            if event.breakpoint is not None:
                return event
        return None

    def breakpoint_after(
        self, event: PhaseEvent, breakpoints: Sequence[Break] | None = None
    ) -> Break | None:
        """The first of ``breakpoints`` (default: `breakpoints`) that fires after ``event``."""
        following = self.next_phase_name
        steps_completed = self.state.step - (following not in (Phase.PREPARE, None))
        view = RunView(
            state=self.state, elapsed=self._execution.elapsed(), steps_completed=steps_completed
        )
        among = self.breakpoints if breakpoints is None else breakpoints
        return first_hit(among, view, event.phase, following)

    def run_to_breakpoint(self) -> PhaseEvent | None:
        """Sync `arun_to_breakpoint`."""
        return run_sync(self.arun_to_breakpoint())

    async def events(self) -> AsyncIterator[PhaseEvent]:
        """Every remaining phase event, as an async iterator."""
        while (event := await self.anext_phase()) is not None:
            yield event

    def next_phase(self, *, into: bool = False) -> PhaseEvent | None:
        """Sync `anext_phase`."""
        return run_sync(self.anext_phase(into=into))

    def next_step(self) -> PhaseEvent | None:
        """Sync `anext_step`."""
        return run_sync(self.anext_step())

    def run_to_end(self) -> RunResult:
        """Sync `arun_to_end`."""
        return run_sync(self.arun_to_end())

    def abort(self) -> None:
        """End the run as ABORTED: now between phases or while paused, else after the phase.

        Stopped inside a sub-run, the sub-runs end as ABORTED too, and with them the phase.
        """
        self._execution.request_abort()
        self._stepping.abort()

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
        if self.done or self.state.next_phase is not Phase.TOOLS or self._stepping.under_way:
            return ()
        return self.state.unanswered_calls()

    def edit_call(self, call_id: str, arguments: dict[str, JsonValue]) -> None:
        """Change the arguments of a call before TOOLS runs it (the history shows the edit).

        The call may also be one of `subrun`'s, stopped before its TOOLS phase.
        """
        run = self._holding(call_id)
        run._execution.replace_state(call_edited(run.state, call_id, arguments))

    def drop_call(self, call_id: str, reason: str = "dropped by the user") -> None:
        """Do not run a call; the model is told why."""
        run = self._holding(call_id)
        run._execution.replace_state(call_dropped(run.state, call_id, reason))

    def _holding(self, call_id: str) -> AgentRun:
        """The run with ``call_id`` pending: this one, or the sub-run stepping stopped in."""
        for run in (self, self.subrun):
            if run is not None and any(c.call_id == call_id for c in run.pending_calls):
                return run
        raise KeyError(f"no pending tool call {call_id!r} (calls can be changed only before TOOLS)")


class Agent:
    """An agent: a model, tools, stop conditions, guards and the rest of the configuration."""

    def __init__(
        self,
        model: Model,
        *,
        name: str = "agent",
        system_prompt: str | None = None,
        tools: Iterable[ToolItem] = (),
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
        subagents: SubagentLimits | None = None,
    ) -> None:
        if not isinstance(model, Model):
            raise TypeError(f"model must implement the Model protocol, got {type(model).__name__}")
        self.model = model
        self.name = name
        self.system_prompt = system_prompt
        self.tools, self.toolsets = tool_choice(tools)
        """The tools by name, and the toolsets whose tools are chosen before every model call."""
        self.stop = stop if stop is not None else MaxSteps(50)
        self.guards = tuple(guards)
        self.hooks = checked_hooks(hooks)
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
        self.subagents = subagents or SubagentLimits()
        """How large a tree of sub-agents runs of this agent may start (`SubagentLimits`)."""
        """Spans of every run (`workbench.Telemetry`), or None: then no spans and no cost."""
        self.store = RunStore.default() if store is None else (None if store is False else store)
        """Where runs are recorded: ``store=`` or the default store (`RunStore.default`);
        ``store=False`` records nothing."""

    def __repr__(self) -> str:
        return f"Agent(name={self.name!r}, model={self.model.name!r}, tools={list(self.tools)})"

    def as_tool(
        self,
        name: str | None = None,
        description: str | None = None,
        *,
        context: SubagentContext | None = None,
        tools: Iterable[ToolItem] | None = None,
    ) -> Tool:
        """A tool that runs this agent, for another agent: each call runs it on one task.

        ``context`` says what the sub-agent sees of the calling run (`SubagentContext`; by
        default only its task); ``tools`` replace this agent's tools for these runs. The sub-run
        is a child of the calling run (one tree, one budget: see `workbench.subagent`), and the
        calling run's SubagentStart and SubagentStop hooks fire around it.
        """
        about = description or f"Give the {self.name} agent a task; it answers with its result."
        return subagent_tool(self, name or self.name, about, context or SubagentContext(), tools)

    def start(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
        parent_run_id: str | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        breakpoints: Iterable[Break] = (),
        parent: ToolContext | None = None,
        stop: StopCondition | None = None,
        tools: Iterable[ToolItem] | None = None,
    ) -> AgentRun:
        """A new run, ready to be stepped; nothing is executed yet.

        ``metadata`` (JSON-serializable) is kept on the run's state and in the store;
        ``breakpoints`` are where `AgentRun.run_to_breakpoint` stops. ``parent`` is the tool call
        of another run that starts this one (a sub-agent's run); ``stop`` adds conditions to the
        agent's for this run (either fires); ``tools`` replace the agent's for this run.
        """
        state = AgentState(
            agent_name=self.name,
            parent_run_id=parent.run_id if parent else parent_run_id,
            parent_call_id=parent.call_id if parent else None,
            depth=parent.view.state.depth + 1 if parent else 0,
            trace_id=parent.view.state.trace_id if parent else None,  # the parent's trace
            metadata=dict(metadata or {}),
        )

        def ours(message: Message) -> Message:  # made by this run, before its first step
            return message.stamped(state.run_id, state.execution_id, 0)

        system = [ours(Message.system(self.system_prompt))] if self.system_prompt else []
        user = [ours(Message.user(prompt))] if prompt is not None else []
        stamped = (*system, *history, *user)  # history keeps its own provenance
        if not history and not user:
            raise ValueError("a run needs a prompt or a history")
        run = self._run_from(
            state.model_copy(update={"messages": stamped}),
            settings,
            on_text_delta,
            tools=None if tools is None else tool_choice(tools),
            stop=stop,
        )
        run.breakpoints.extend(breakpoints)
        return run

    async def run(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> RunResult:
        """Run to the end (or to a pause)."""
        run = self.start(
            prompt,
            history=history,
            settings=settings,
            on_text_delta=on_text_delta,
            metadata=metadata,
        )
        return await run.arun_to_end()

    def run_sync(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        on_text_delta: Callable[[str], None] | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> RunResult:
        """Sync `run`; works in scripts and inside a running event loop."""
        return run_sync(
            self.run(
                prompt,
                history=history,
                settings=settings,
                on_text_delta=on_text_delta,
                metadata=metadata,
            )
        )

    async def iterate(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> AsyncIterator[PhaseEvent]:
        """The run's phase events as they happen."""
        run = self.start(prompt, history=history, settings=settings, metadata=metadata)
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
        """A paused run with its pending calls answered, ready to be stepped.

        Its `AgentRun.result` is the whole run: the steps before the pause come from the store
        when it has them (a state resumed elsewhere, without them, starts its result at the pause).
        """
        run = self._run_from(resume_state(state, approvals, results), settings, None)
        run.earlier = self._recorded(state.run_id)
        return run

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
        tools: Iterable[ToolItem] | None = None,
    ) -> AgentRun:
        """A new run from ``snapshot``'s step, with the edits, ready to be stepped.

        ``messages`` replaces the conversation as the step starts; ``model``, ``settings`` (laid
        over the snapshot's) and ``tools`` replace the agent's for this run only. The original run
        is untouched; the new one names it in ``state.rerun_of``.
        """
        merged = ModelSettings(**{**snapshot.model_settings, **(settings or {})})  # type: ignore[typeddict-item]
        table = None if tools is None else tool_choice(tools)
        state = rerun_state(snapshot, messages)
        return self._run_from(state, merged, None, model=model, tools=table)

    async def rerun(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[ToolItem] | None = None,
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
        tools: Iterable[ToolItem] | None = None,
    ) -> RunResult:
        """Sync `rerun`."""
        return run_sync(self.rerun(snapshot, messages, model, settings, tools))

    async def rerun_from_trace(
        self,
        trace: Trace,
        step: int,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
    ) -> RunResult:
        """Re-run from ``step`` of a trace that captured content, with no store; edits as `rerun`.

        The messages come from the step's model call span; the new run links to the traced step.
        """
        from workbench.telemetry.rerun_trace import snapshot_from_trace

        return await self.rerun(snapshot_from_trace(trace, step), messages, model, settings, tools)

    def rerun_from_trace_sync(
        self,
        trace: Trace,
        step: int,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: Iterable[Tool | Callable[..., Any]] | None = None,
    ) -> RunResult:
        """Sync `rerun_from_trace`."""
        return run_sync(self.rerun_from_trace(trace, step, messages, model, settings, tools))

    def _run_from(
        self,
        state: AgentState,
        settings: ModelSettings | None,
        on_text_delta: Callable[[str], None] | None,
        *,
        model: Model | None = None,
        tools: tuple[dict[str, Tool], tuple[Toolset, ...]] | None = None,
        stop: StopCondition | None = None,
    ) -> AgentRun:
        table, toolsets = (self.tools, self.toolsets) if tools is None else tools
        config = LoopConfig(
            model=model or self.model,
            tools=table,
            toolsets=toolsets,
            stop=self.stop if stop is None else self.stop | stop,
            subagents=self.subagents,
            subrun_observer=self._subrun_observer(),
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

    def _recorded(self, run_id: str) -> RunResult | None:
        """What the store holds of a run, if it holds it."""
        if self.store is None:
            return None
        try:
            return self.store.load(run_id)
        except RunNotFound:
            return None

    def _observers(self, model: Model) -> tuple[RunObserver, ...]:
        """The user's observers, the store, and a fresh telemetry observer for this execution.

        A sub-run of an agent without telemetry is recorded by the root's (one tree, one trace).
        """
        observers = [*self.observers, *([self.store] if self.store else [])]
        make = self._subrun_observer()
        if make is not None:
            observers.append(make(model))
        return tuple(observers)

    def _subrun_observer(self) -> Callable[[Model], RunObserver] | None:
        """The telemetry observer factory: this agent's, or the tree's for a sub-run with none."""
        if self.telemetry is not None:
            return self.telemetry.observer
        tree = subagent_tree.get()
        return tree.observer_for if tree is not None else None


def _latest(runs: tuple[RunResult, ...]) -> tuple[RunResult, ...]:
    """Each run once, as it was last seen (a sub-run paused and resumed is one child)."""
    by_id = {run.run_id: run for run in runs}
    return tuple(by_id[run_id] for run_id in dict.fromkeys(run.run_id for run in runs))
