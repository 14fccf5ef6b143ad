"""What the loop records about each step, and the observer seam that telemetry and stores use.

`StepRecord` is the per-step account a user reads in `result.steps`: what the model saw, what it
answered, what each tool call did, tokens, and the timing breakdown. `StepContext` is the snapshot
taken at the start of a step, enough to re-run from there. Both are frozen.
"""

from __future__ import annotations

import functools
import hashlib
import json
import logging
import time
from dataclasses import field
from typing import Literal

from pydantic import Field

from workbench._record import frozen_record
from workbench.conditions import Budget
from workbench.messages import JsonValue, Message, ModelResponse, ToolCall, Usage, _Frozen
from workbench.state import AgentState, ExecutionStatus, Phase, StopReason, TraceRef, new_id
from workbench.tools import Tool, ToolDefinition

__all__ = [
    "HookTiming",
    "Observers",
    "PhaseEvent",
    "RunObserver",
    "StepContext",
    "StepRecord",
    "Timing",
    "ToolOutcome",
    "schema_hash",
]

OutcomeStatus = Literal["ok", "error", "retry", "denied", "pending", "dropped"]


@frozen_record
class ToolOutcome:
    """What happened to one tool call in the TOOLS phase."""

    call_id: str
    name: str
    arguments: dict[str, JsonValue]
    status: OutcomeStatus
    content: str
    """The text the model got back (result, error, retry feedback) or why the call waits."""
    duration: float = 0.0


@frozen_record
class HookTiming:
    """How long one hook invocation took."""

    event: str
    hook: str
    duration: float


@frozen_record
class Timing:
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


@frozen_record
class StepRecord:
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
    snapshot_id: str | None
    started_at: float
    hook_errors: tuple[str, ...] = ()
    """Hooks that failed (timeout, crash, bad output) or answered what their event cannot do."""
    hook_messages: tuple[str, ...] = ()
    """What hooks told the user (``systemMessage``), and why a hook stopped the run."""

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


@frozen_record
class PhaseEvent:
    """Yielded after each phase: which phase ran, for which step, and the state after it."""

    phase: Phase
    step: int
    state: AgentState
    duration: float = field(default=0.0, compare=False)

    def __repr__(self) -> str:  # short: the state holds every message of the run
        return (
            f"PhaseEvent(phase={self.phase.value}, step={self.step}, "
            f"status={self.state.status.value}, next_phase={self.state.next_phase.value}, "
            f"duration={self.duration * 1e3:.2f} ms)"
        )

    def _repr_html_(self) -> str:
        from workbench.notebook.reprs import phase_event_html

        return phase_event_html(self)


class StepContext(_Frozen):
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


def schema_hash(definitions: tuple[ToolDefinition, ...]) -> str:
    """A short, stable hash of the tool definitions a model is offered."""
    payload = [(d.name, d.description, d.parameters) for d in definitions]
    return hashlib.sha256(json.dumps(payload, sort_keys=True).encode()).hexdigest()[:16]


@functools.lru_cache(maxsize=64)
def tools_schema_hash(tools: tuple[Tool, ...]) -> str:
    """`schema_hash` of the tools' definitions, worked out once for all the runs of an agent.

    A `Tool` is frozen and compares by identity, so the same tools always hash the same.
    """
    return schema_hash(tuple(t.definition for t in tools))


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
