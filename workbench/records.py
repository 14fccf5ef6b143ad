"""What the loop records about each step, and the observer seam that telemetry and stores use.

`StepRecord` is the per-step account a user reads in `result.steps`: what the model saw, what it
answered, what each tool call did, tokens, and the timing breakdown. `StepContext` is the snapshot
taken at the start of a step, enough to re-run from there. Both are frozen.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import Field

from workbench._record import Record
from workbench.breakpoints import Break
from workbench.conditions import Budget
from workbench.messages import JsonValue, Message, ModelResponse, ToolCall, ToolDefinition, Usage
from workbench.state import (
    AgentState,
    ErrorInfo,
    ExecutionStatus,
    PendingCall,
    Phase,
    StopReason,
    TraceRef,
    new_id,
)

__all__ = [
    "HookTiming",
    "Observers",
    "PhaseEvent",
    "RecordedRun",
    "RunObserver",
    "RunResult",
    "StepContext",
    "StepDraft",
    "StepRecord",
    "SubagentResult",
    "Timing",
    "ToolOutcome",
]

OutcomeStatus = Literal["ok", "error", "retry", "denied", "pending", "dropped"]


class SubagentResult(Record):
    """What a sub-agent's run ended as, as its parent sees it (on the parent's tool outcome)."""

    run_id: str
    agent: str
    output: str | None
    status: ExecutionStatus
    stop_reason: StopReason | None
    steps: int
    tools_used: tuple[str, ...]
    usage: Usage
    error: str | None = None

    @property
    def cost(self) -> float | None:
        """US dollars, when the sub-run's model has a price (``None``: unknown)."""
        return self.usage.cost


class ToolOutcome(Record):
    """What happened to one tool call in the TOOLS phase."""

    call_id: str
    name: str
    arguments: dict[str, JsonValue]
    status: OutcomeStatus
    content: str
    """The text the model got back (result, error, retry feedback) or why the call waits."""
    duration: float = 0.0
    subagent: SubagentResult | None = None
    """What the sub-run of a sub-agent tool ended as (`Agent.as_tool`), for this call."""
    started_at: float | None = None
    """When the call's pipeline began (`time.time()`): its span starts here."""
    replayed: bool = False
    """Answered from a recording (``tools="replay"``): the tool did not run."""


class HookTiming(Record):
    """How long one hook invocation took."""

    event: str
    hook: str
    duration: float
    started_at: float | None = None
    """When the invocation began (`time.time()`): its span starts here."""
    error: str | None = None
    """What went wrong (timeout, crash, bad output), if anything did."""


class Timing(Record):
    """Where the time of a step went, in seconds."""

    prepare: float = 0.0
    inference: float = 0.0
    tools: float = 0.0
    hooks: float = 0.0
    """Wall time spent waiting for hooks; part of the phase they ran in (SessionEnd: none)."""
    continuation: float = 0.0
    telemetry: float = 0.0
    """The observers' own cost (spans, store writes) during this step."""
    time_to_first_token: float | None = None
    per_tool: tuple[tuple[str, str, float], ...] = ()
    """``(call_id, tool name, seconds)`` for each executed call."""
    per_hook: tuple[HookTiming, ...] = ()

    @property
    def total(self) -> float:
        """The four phases together."""
        return self.prepare + self.inference + self.tools + self.continuation


class StepRecord(Record):
    """The account of one step."""

    index: int
    run_id: str
    execution_id: str
    messages_in: tuple[Message, ...]
    """Exactly what the model was sent (after history processors and the wrap-up message)."""
    new_messages: tuple[Message, ...]
    """What this step added to the conversation: the answer, tool results, retry prompts."""
    response: ModelResponse | None
    tool_outcomes: tuple[ToolOutcome, ...]
    usage: Usage
    timing: Timing
    status: ExecutionStatus
    stop_reason: StopReason | None
    tools_offered: tuple[str, ...]
    tools_hidden: tuple[tuple[str, str], ...] = ()
    """Tools a toolset hid in this step, with the reason (``(name, reason)``)."""
    snapshot_id: str | None
    started_at: float
    hook_errors: tuple[str, ...] = ()
    """Hooks that failed (timeout, crash, bad output) or answered what their event cannot do."""
    hook_messages: tuple[str, ...] = ()
    """What hooks told the user (``systemMessage``), and why a hook stopped the run."""
    phase_starts: tuple[tuple[Phase, float], ...] = ()
    """When each phase of the step began (`time.time()`), in order: the spans start there."""
    model_started_at: float | None = None
    """When the model call began (`time.time()`); None if the step made none."""
    model_duration: float = 0.0
    """How long the model call took, in seconds (the INFERENCE phase also counts the rest)."""
    model_error: ErrorInfo | None = None
    """Why the model call failed, if it did (the run may still end otherwise, e.g. a time limit)."""
    ended_at: float | None = None
    """When the step's record was closed (`time.time()`)."""

    def __repr__(self) -> str:  # short: the full messages are one attribute away
        calls = ", ".join(f"{o.name}:{o.status}" for o in self.tool_outcomes)
        return (
            f"StepRecord(index={self.index}, status={self.status.value}, "
            f"stop_reason={self.stop_reason}, messages_in={len(self.messages_in)}, "
            f"calls=[{calls}], tokens={self.usage.total_tokens}, "
            f"seconds={self.timing.total:.4f})"
        )

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls the model made in this step."""
        return self.response.calls if self.response is not None else ()


class PhaseEvent(Record):
    """Yielded after each phase: which phase ran, for which step, and the state after it."""

    phase: Phase
    step: int
    state: AgentState
    duration: float = 0.0
    breakpoint: Break | None = None
    """The breakpoint that stopped `AgentRun.run_to_breakpoint` here, if one did."""

    @property
    def run_id(self) -> str:
        """The run whose phase this is: a sub-run's when stepping went into it."""
        return self.state.run_id

    @property
    def depth(self) -> int:
        """How deep that run is in its tree (0: the run stepped; 1: its sub-run; ...)."""
        return self.state.depth

    def __repr__(self) -> str:  # short: the state holds every message of the run
        where = f"agent={self.state.agent_name!r}, depth={self.depth}, " if self.depth else ""
        return (
            f"PhaseEvent({where}phase={self.phase.value}, step={self.step}, "
            f"status={self.state.status.value}, next_phase={self.state.next_phase.value}, "
            f"duration={self.duration * 1e3:.2f} ms)"
        )


class StepContext(Record):
    """The snapshot taken in PREPARE of every step: enough to inspect or re-run from there."""

    id: str = Field(default_factory=lambda: new_id("snap"))
    run_id: str
    execution_id: str
    parent_run_id: str | None
    step: int
    model_name: str
    model_settings: dict[str, JsonValue]
    tool_names: tuple[str, ...]
    tool_schema_hash: str
    system_prompt_hash: str | None
    budget: Budget
    message_count: int
    created_at: float = Field(default_factory=time.time)
    state: AgentState
    """The state at the start of the step (before the step's own messages)."""
    provider: str | None = None
    """The model's provider (``gen_ai.provider.name``), so stored runs' spans can name it."""
    server_address: str | None = None
    """The host the model is served from (``server.address``); None for offline models."""
    server_port: int | None = None
    tool_definitions: tuple[ToolDefinition, ...] = ()
    """What the model is told about each tool (``gen_ai.tool.definitions``, tool descriptions)."""

    def __repr__(self) -> str:  # short: the state it holds has every message and the metadata
        return (
            f"StepContext(id={self.id!r}, run_id={self.run_id!r}, step={self.step}, "
            f"model={self.model_name!r}, tools={len(self.tool_names)}, "
            f"messages={self.message_count})"
        )


class StepDraft(Record):
    """The step under way, as the loop fills it in; `record` makes its `StepRecord`."""

    index: int
    started_at: float
    messages_in: tuple[Message, ...] = ()
    first_new: int = 0
    tools_offered: tuple[str, ...] = ()
    tools_hidden: tuple[tuple[str, str], ...] = ()
    response: ModelResponse | None = None
    outcomes: tuple[ToolOutcome, ...] = ()
    model_started_at: float | None = None
    model_duration: float = 0.0
    model_error: ErrorInfo | None = None
    snapshot_id: str | None = None

    def sending(self, messages: Sequence[Message], history: tuple[Message, ...]) -> StepDraft:
        """The draft with what the model will be sent: ``messages``, shaped from ``history``.

        The run's own ``history`` goes in as it is, not validated and copied again: the step's
        draft, model request and record then share one tuple, so a run holds its conversation
        once per step (not three times) and checks each message once, when it was made (not
        again at every step). What a history processor returned instead comes from outside: it
        is checked, as the constructor checks anything that comes in.
        """
        if messages is history:
            return self.model_copy(update={"messages_in": history})
        return StepDraft.model_validate({**dict(self), "messages_in": tuple(messages)})

    def record(
        self,
        state: AgentState,
        hooks: _HookLog,
        telemetry: float,
        phases: Sequence[tuple[Phase, float, float]],
    ) -> StepRecord:
        """The step's record as ``state`` stands, with what hooks did and what observers cost.

        ``phases`` are the step's phases as they ended: ``(phase, started at, seconds)``. The
        loop collects them and they are frozen here, once, rather than copied into the draft
        at every phase. The messages were checked when they were made; they go in as they are
        (`sending`).
        """
        timing: dict[Phase, float] = {}
        for phase, _, seconds in phases:
            timing[phase] = timing.get(phase, 0.0) + seconds
        response = self.response
        executed = [o for o in self.outcomes if o.status in ("ok", "error", "retry")]
        return StepRecord(
            index=self.index,
            run_id=state.run_id,
            execution_id=state.execution_id,
            messages_in=(),
            new_messages=(),
            response=response,
            tool_outcomes=self.outcomes,
            usage=response.usage if response is not None else Usage(),
            timing=Timing(
                prepare=timing.get(Phase.PREPARE, 0.0),
                inference=timing.get(Phase.INFERENCE, 0.0),
                tools=timing.get(Phase.TOOLS, 0.0),
                continuation=timing.get(Phase.CONTINUATION, 0.0),
                telemetry=telemetry,
                hooks=hooks.seconds,
                per_hook=hooks.timings,
                time_to_first_token=response.time_to_first_token if response else None,
                per_tool=tuple((o.call_id, o.name, o.duration) for o in executed),
            ),
            status=state.status,
            stop_reason=state.stop_reason,
            tools_offered=self.tools_offered,
            tools_hidden=self.tools_hidden,
            snapshot_id=self.snapshot_id,
            started_at=self.started_at,
            hook_errors=hooks.errors,
            hook_messages=hooks.notes,
            phase_starts=tuple((phase, at) for phase, at, _ in phases),
            model_started_at=self.model_started_at,
            model_duration=self.model_duration,
            model_error=self.model_error,
            ended_at=time.time(),
        ).model_copy(
            update={
                "messages_in": self.messages_in,
                "new_messages": state.messages[self.first_new :],
            }
        )


class _HookLog(Protocol):
    """What hooks did during a step (`workbench.hooks.runner.HookLog`, which sits above)."""

    @property
    def seconds(self) -> float: ...

    @property
    def timings(self) -> tuple[HookTiming, ...]: ...

    @property
    def errors(self) -> tuple[str, ...]: ...

    @property
    def notes(self) -> tuple[str, ...]: ...


class RunObserver:
    """Receives the loop's events; telemetry and run stores subclass it. Every method is a no-op.

    Observers must not block: the loop times them (``Timing.telemetry``). One that raises is
    logged and the run goes on (see `Observers`).
    """

    def run_started(self, state: AgentState) -> None:
        """An execution starts (a new run, or a paused run resumed)."""

    def step_started(self, snapshot: StepContext) -> None:
        """PREPARE took the step's snapshot."""

    def phase_ended(self, event: PhaseEvent, started_at: float) -> None:
        """A phase finished; ``started_at`` is its `time.time()` start."""

    def model_called(
        self,
        step: int,
        request_messages: tuple[Message, ...],
        response: ModelResponse | None,
        started_at: float,
        duration: float,
        error: BaseException | None,
    ) -> None:
        """A model call finished (``response`` is None when it failed)."""

    def tool_called(self, step: int, outcome: ToolOutcome, started_at: float) -> None:
        """A tool call was decided or executed."""

    def hook_called(
        self, step: int, timing: HookTiming, started_at: float, error: str | None
    ) -> None:
        """A hook ran (``error`` says what went wrong, if anything did)."""

    def step_ended(self, record: StepRecord) -> None:
        """A step finished, paused or ended the run."""

    def run_ended(self, state: AgentState) -> None:
        """The execution ended or paused."""

    def trace_context(self) -> TraceRef | None:
        """The trace this observer records the execution in, if it does (asked after `run_started`).

        The loop keeps it in `AgentState.trace`, so a resumed execution can link to this one.
        """
        return None


log = logging.getLogger("workbench")


class Observers(RunObserver):
    """The loop's observers as one: each event goes to each observer in turn.

    It times them (``seconds`` adds up their cost, for `Timing.telemetry`) and keeps a failing
    observer from breaking the run it watches: the exception is logged and the run goes on.
    """

    def __init__(self, observers: tuple[RunObserver, ...]) -> None:
        self.observers = observers
        self.seconds = 0.0

    def _each(self, event: str, *args: object) -> None:
        if not self.observers:
            return
        started = time.perf_counter()
        for observer in self.observers:
            try:
                getattr(observer, event)(*args)
            except Exception:
                _failed(observer, event)
        self.seconds += time.perf_counter() - started

    def run_started(self, state: AgentState) -> None:
        """Tell each observer."""
        self._each("run_started", state)

    def step_started(self, snapshot: StepContext) -> None:
        """Tell each observer."""
        self._each("step_started", snapshot)

    def phase_ended(self, event: PhaseEvent, started_at: float) -> None:
        """Tell each observer."""
        self._each("phase_ended", event, started_at)

    def model_called(
        self,
        step: int,
        request_messages: tuple[Message, ...],
        response: ModelResponse | None,
        started_at: float,
        duration: float,
        error: BaseException | None,
    ) -> None:
        """Tell each observer."""
        self._each("model_called", step, request_messages, response, started_at, duration, error)

    def tool_called(self, step: int, outcome: ToolOutcome, started_at: float) -> None:
        """Tell each observer."""
        self._each("tool_called", step, outcome, started_at)

    def hook_called(
        self, step: int, timing: HookTiming, started_at: float, error: str | None
    ) -> None:
        """Tell each observer."""
        self._each("hook_called", step, timing, started_at, error)

    def step_ended(self, record: StepRecord) -> None:
        """Tell each observer."""
        self._each("step_ended", record)

    def run_ended(self, state: AgentState) -> None:
        """Tell each observer."""
        self._each("run_ended", state)

    def trace_context(self) -> TraceRef | None:
        """The first trace an observer records the execution in."""
        for observer in self.observers:
            try:
                trace = observer.trace_context()
            except Exception:
                _failed(observer, "trace_context")
                continue
            if trace is not None:
                return trace
        return None


def _failed(observer: RunObserver, event: str) -> None:
    log.exception("observer %r failed on %s; the run goes on", observer, event)


class RunResult(Record):
    """How an execution ended: the final state, the step records and the snapshots."""

    state: AgentState
    steps: tuple[StepRecord, ...]
    snapshots: tuple[StepContext, ...]
    children: tuple[RunResult, ...] = ()
    """The runs of sub-agents this run called, in call order (each with its own children)."""

    @property
    def trace_id(self) -> str | None:
        """The trace of this execution when the agent has telemetry (kept in the state)."""
        return self.state.trace.trace_id if self.state.trace is not None else None

    def __repr__(self) -> str:  # short: a long run's messages would fill a notebook
        return (
            f"RunResult(run_id={self.run_id!r}, status={self.status.value}, "
            f"stop_reason={self.stop_reason}, steps={len(self.steps)}, "
            f"tokens={self.usage.total_tokens}, output={_clip(self.output)})"
        )

    @property
    def parent_run_id(self) -> str | None:
        """The run that called this one as a sub-agent, if one did."""
        return self.state.parent_run_id

    @property
    def parent_call_id(self) -> str | None:
        """The parent's tool call that started this run, if it is a sub-run."""
        return self.state.parent_call_id

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


class RecordedRun(Protocol):
    """What replay and what-if checks read of a recorded run.

    A `RunResult` (live, or loaded from a store) or anything shaped like one.
    """

    @property
    def state(self) -> AgentState:
        """The run's last state."""

    @property
    def steps(self) -> Sequence[StepRecord]:
        """Its step records."""

    @property
    def snapshots(self) -> Sequence[StepContext]:
        """Its snapshots."""

    @property
    def children(self) -> Sequence[RunResult]:
        """Its sub-runs, in call order."""


def _clip(text: str | None, limit: int = 60) -> str:
    if text is None or len(text) <= limit:
        return repr(text)
    return repr(text[:limit] + "…")
