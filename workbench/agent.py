"""The `Agent` facade: configure once, then run, step, resume.

An `Agent` holds configuration only; every run gets its own state. `start` returns an `AgentRun`
(`workbench.agent_run`) that is driven phase by phase (the notebook Stepper does this); `run`
drives it to the end. The
sync methods run the same coroutines on the workbench's portal loop, so they also work inside a
Jupyter kernel where an event loop is already running.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Literal

from workbench._sync import run_sync
from workbench.agent_run import AgentRun
from workbench.breakpoints import Break
from workbench.conditions import MaxSteps, StopCondition
from workbench.config import DEFAULT_WRAP_UP, LoopConfig
from workbench.engine import Execution
from workbench.errors import UsageError
from workbench.guards import ToolGuard
from workbench.history import HistoryProcessor
from workbench.hooks import CommandHook, Hook
from workbench.hooks.runner import hook_tuple
from workbench.messages import JsonValue, Message
from workbench.models.base import Model, ModelSettings
from workbench.models.replay import ReplayModel, tool_replay_of
from workbench.observing import RunObserver
from workbench.records import PhaseEvent, RunResult, StepContext, recording_of
from workbench.redact import Redactor
from workbench.rerun import rerun_state
from workbench.state import AgentState, new_id
from workbench.store import RunNotFound, RunStore
from workbench.subagent import (
    SubagentContext,
    SubagentLimits,
    reachable_tools,
    subagent_tool,
    subagent_tree,
)
from workbench.toolcalls import resume_state
from workbench.tools import Tool, ToolContext
from workbench.toolsets import ToolItem, Toolset, tool_table

if TYPE_CHECKING:
    from workbench.telemetry import Telemetry
    from workbench.telemetry.trace import Trace

__all__ = ["Agent", "AgentRun", "RunResult"]


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
        self.tools, self.toolsets = tool_table(tools)
        """The tools by name, and the toolsets whose tools are chosen before every model call."""
        self.stop = stop if stop is not None else MaxSteps(50)
        self.guards = tuple(guards)
        self.hooks = hook_tuple(hooks)
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
        tools: Toolset | Iterable[ToolItem] | None = None,
    ) -> Tool:
        """A tool that runs this agent, for another agent: each call runs it on one task.

        ``context`` says what the sub-agent sees of the calling run (`SubagentContext`; by
        default only its task); ``tools`` (a toolset, or tools and toolsets) replace this agent's
        tools for these runs. The sub-run
        is a child of the calling run (one tree, one budget: see `workbench.subagent`), and the
        calling run's SubagentStart and SubagentStop hooks fire around it.
        """
        about = description or f"Give the {self.name} agent a task; it answers with its result."
        own = (tools,) if isinstance(tools, Toolset) else tools
        return subagent_tool(self, name or self.name, about, context or SubagentContext(), own)

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
        model: Model | None = None,
    ) -> AgentRun:
        """A new run, ready to be stepped; nothing is executed yet.

        ``metadata`` (JSON-serializable) is kept on the run's state and in the store;
        ``breakpoints`` are where `AgentRun.run_to_breakpoint` stops. ``parent`` is the tool call
        of another run that starts this one (a sub-agent's run); ``stop`` adds conditions to the
        agent's for this run (either fires); ``tools`` and ``model`` replace the agent's for it.
        """
        if not history and prompt is None:
            raise ValueError("a run needs a prompt or a history")
        run_id, execution_id = new_id("run"), new_id("exe")

        def ours(message: Message) -> Message:  # made by this run, before its first step
            return message.stamped(run_id, execution_id, 0)

        system = [ours(Message.system(self.system_prompt))] if self.system_prompt else []
        user = [ours(Message.user(prompt))] if prompt is not None else []
        state = AgentState(
            run_id=run_id,
            execution_id=execution_id,
            agent_name=self.name,
            parent_run_id=parent.run_id if parent else parent_run_id,
            parent_call_id=parent.call_id if parent else None,
            depth=parent.view.state.depth + 1 if parent else 0,
            trace_id=parent.view.state.trace_id if parent else None,  # the parent's trace
            metadata=dict(metadata or {}),
            messages=(*system, *history, *user),  # history keeps its own provenance
        )
        run = self._run_from(
            state,
            settings,
            on_text_delta,
            tools=None if tools is None else tool_table(tools),
            stop=stop,
            model=model,
        )
        for breakpoint in breakpoints:
            run.add_breakpoint(breakpoint)  # a BreakpointWarning for one that cannot fire
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
        model: Model | None = None,
    ) -> AgentRun:
        """A paused run with its pending calls answered, ready to be stepped.

        Its `AgentRun.result` is the whole run: the steps before the pause come from the store
        when it has them (a state resumed elsewhere, without them, starts its result at the pause).
        ``model`` replaces the agent's for this execution.
        """
        resumed = resume_state(state, approvals, results)
        run = self._run_from(resumed, settings, None, model=model)
        run.earlier = self._recorded(state.run_id)
        return run

    async def resume(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
        model: Model | None = None,
    ) -> RunResult:
        """Continue a paused run (possibly from another process) to its end or next pause.

        ``approvals`` maps call ids to True (run it), False or a reason (deny it); ``results``
        gives the results of deferred calls. ``model`` replaces the agent's (the `ReplayModel`
        of a replayed fork, so its calls are still answered from the recording).
        """
        run = self.start_resume(state, approvals, results, settings=settings, model=model)
        return await run.arun_to_end()

    def resume_sync(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
        model: Model | None = None,
    ) -> RunResult:
        """Sync `resume`."""
        return run_sync(self.resume(state, approvals, results, settings=settings, model=model))

    def start_rerun(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: RerunTools = None,
    ) -> AgentRun:
        """A new run from ``snapshot``'s step, with the edits, ready to be stepped.

        ``messages`` replaces the conversation as the step starts; ``settings`` are laid over
        the snapshot's. The original run is untouched; the new one names it in
        ``state.rerun_of``.

        ``model``: left out, the re-run *replays* what the model answered at the snapshot's
        step, and the sub-runs that step's calls made, when this agent's model is the one that
        recorded them (the same name) and the recording is at hand (the run
        `RunResult.snapshot` handed the snapshot out from, or this agent's store). So only what
        you changed changes: a fixed tool runs on the recorded call, and the model goes on live
        from the next step, or from the first request that departs from the recording (an
        edited message, a sub-agent reading the fixed tool's new result), each agent with its
        own model. To go live at the snapshot's step itself, give the model:
        ``model=agent.model``. A model given (a `ReplayModel` of your own, say) is used as is.

        ``tools`` replaces tools *by name*, in this agent and in every sub-agent the re-run
        calls (a parent's re-run reaches a fixed sub-agent tool), and keeps the others; a name
        no agent of the tree has is a `UsageError`. ``tools="replay"`` answers the calls of
        replayed responses from the recording instead: nothing recorded runs again (without a
        recording to replay it is a `UsageError`).
        """
        merged = ModelSettings(**{**snapshot.model_settings, **(settings or {})})  # type: ignore[typeddict-item]
        replay = tools == "replay"
        fixes = {} if tools is None or isinstance(tools, str) else self._fixes(tools)
        chosen = model if model is not None else self._replay_of(snapshot)
        state = rerun_state(snapshot, messages)
        return self._run_from(
            state, merged, None, model=chosen, replay_tools=replay, tool_fixes=fixes
        )

    def _replay_of(self, snapshot: StepContext) -> ReplayModel | None:
        """A re-run's model by default (see `start_rerun`); None when there is nothing to replay.

        The recorded answers up to the snapshot's step, then this agent's model.
        """
        if snapshot.model_name != self.model.name:  # another model recorded it: go live
            return None
        recorded = recording_of(snapshot) or self._recorded(snapshot.run_id)
        if recorded is None:
            return None
        return ReplayModel.from_run(
            recorded, until_step=snapshot.step, then=self.model, departs="live"
        )

    def _fixes(self, tools: Iterable[ToolItem]) -> dict[str, Tool]:
        """``tools=`` of a re-run as replacements by name, checked against the tree's tools."""
        fixes, toolsets = tool_table(tools)
        if toolsets:
            raise UsageError(
                "a re-run's tools= replaces tools by name: give the tools (or functions), not "
                "toolsets"
            )
        known = reachable_tools(self.tools, self.toolsets)
        unknown = sorted(set(fixes) - known) if known is not None else []
        if unknown:
            names, have = ", ".join(map(repr, unknown)), ", ".join(sorted(known or ()))
            raise UsageError(
                f"a re-run's tools= replaces tools by name, and no agent of this tree has a tool "
                f"named {names} (its tools: {have})"
            )
        return fixes

    async def rerun(
        self,
        snapshot: StepContext,
        messages: Sequence[Message] | None = None,
        model: Model | None = None,
        settings: ModelSettings | None = None,
        tools: RerunTools = None,
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
        tools: RerunTools = None,
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
        tools: RerunTools = None,
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
        tools: RerunTools = None,
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
        replay_tools: bool = False,
        tool_fixes: Mapping[str, Tool] | None = None,
    ) -> AgentRun:
        table, toolsets = (self.tools, self.toolsets) if tools is None else tools
        tree = subagent_tree.get()  # a sub-run of a re-run: the tools it fixes reach it too
        fixes = tool_fixes if tool_fixes is not None else (tree.fixes if tree is not None else {})
        if fixes:
            table = {name: fixes.get(name, tool) for name, tool in table.items()}
        recording, replay_tools = tool_replay_of(model or self.model, replay_tools)
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
            tool_recording=recording,
            replay_tools=replay_tools,
            redactor=self._redactor(model or self.model),
            tool_fixes=fixes,
        )
        return AgentRun(Execution(config, state))

    def _redactor(self, model: Model) -> Redactor:
        """The telemetry's redactor (its patterns) or the built-in one, with the model's key."""
        telemetry = self.telemetry
        return (telemetry.redactor if telemetry is not None else Redactor()).with_model(model)

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


RerunTools = Iterable[ToolItem] | Literal["replay"] | None
"""What a re-run's ``tools=`` takes: other tools, or ``"replay"`` (answer from the recording)."""
