"""What the loop records about each step: the account of it, the snapshot at its start, its phases.

`StepRecord` is the per-step account a user reads in `result.steps`: what the model saw, what it
answered, what each tool call did (`ToolOutcome`), tokens, and where the time went (`Timing`).
`StepContext` is the snapshot taken at the start of a step, enough to re-run from there;
`PhaseEvent` what a driver gets after each phase. All are frozen, made step by step while the
run goes on; a run's result and what went wrong in its tree are `workbench.records`'s, which
re-exports these (their public path). Last, the words a step table shows beside a call and a step.
"""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Literal

from pydantic import Field

from workbench._record import Record
from workbench.breakpoints import Break
from workbench.conditions import Budget
from workbench.conversation import Messages
from workbench.ids import Id
from workbench.messages import JsonValue, Message, ModelResponse, ToolCall, ToolDefinition, Usage
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, Phase, StopReason, new_id
from workbench.waits import Wait

__all__ = [
    "CALL_WORDS",
    "HookTiming",
    "ModelTry",
    "OutcomeStatus",
    "PhaseEvent",
    "StepContext",
    "StepRecord",
    "SubagentResult",
    "Timing",
    "ToolOutcome",
    "call_label",
    "step_labels",
]

OutcomeStatus = Literal["ok", "error", "retry", "denied", "pending", "dropped", "running"]
"""How a call ended; ``running`` only in the record of a step so far (`StepDraft.so_far`): a
call still under way when a stopped run was looked at, never in a record that is kept."""


class SubagentResult(Record):
    """What a sub-agent's run ended as, as its parent sees it (on the parent's tool outcome)."""

    run_id: Id
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
    exception: ErrorInfo | None = None
    """What was raised, when something was: the tool's exception (status ``error``), a
    guard's (``denied``: a guard that raises denies), or the failure of a sub-agent's run."""

    @property
    def traceback(self) -> str | None:
        """Where the tool (or guard, or sub-run) raised: the user's frames first, redacted."""
        return self.exception.traceback if self.exception is not None else None

    @property
    def is_error(self) -> bool:
        """Whether the call went wrong: the tool (or its sub-run) failed, or a guard did.

        A retry (the model is told what to fix) and a denial by a guard that worked are the
        loop doing its job, not errors: every view counts them apart (`CALL_WORDS`).
        """
        return self.status == "error" or (self.status == "denied" and self.exception is not None)


class HookTiming(Record):
    """How long one hook invocation took."""

    event: str
    hook: str
    duration: float
    started_at: float | None = None
    """When the invocation began (`time.time()`): its span starts here."""
    error: str | None = None
    """What went wrong (timeout, crash, bad output), if anything did."""
    exception: ErrorInfo | None = None
    """What an in-process hook raised, if it raised (its traceback included)."""

    @property
    def traceback(self) -> str | None:
        """Where the hook raised, if it did: the user's frames first, redacted."""
        return self.exception.traceback if self.exception is not None else None


class ModelTry(Record):
    """A try of a step's model call that failed, and that the client then asked again.

    An SDK retries a call its server answered with a 5xx (or not at all): the agent took one
    step, tried several times. The recording proxy sees each try; the step keeps the failed ones
    (`StepRecord.failed_tries`) before the try its ``model_*`` fields describe.
    """

    started_at: float
    """When the try began (`time.time()`): its span starts here."""
    duration: float
    error: ErrorInfo
    """What the client was told instead of an answer."""
    status: int | None = None
    """The HTTP status the client was answered with (None: not an error status, e.g. a stream
    that broke off): what a replay answers that try with."""


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
    """``(call_id, tool name, seconds)`` for each executed call: the time it worked, without the
    waits on the person stepping its sub-runs (its `ToolOutcome.duration` is wall-clock)."""
    per_hook: tuple[HookTiming, ...] = ()

    @property
    def total(self) -> float:
        """The four phases together."""
        return self.prepare + self.inference + self.tools + self.continuation


class StepRecord(Record):
    """The account of one step."""

    index: int
    run_id: Id
    execution_id: Id
    messages_in: Messages
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
    snapshot_id: Id | None
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
    model_status: int | None = None
    """The HTTP status the client was answered with when the model call failed, where the
    recording proxy saw one (a 529, a 504): what a replay answers that call with."""
    failed_tries: tuple[ModelTry, ...] = ()
    """The tries of this step's model call that failed before the one the ``model_*`` fields
    describe, when the client asked the same again (an SDK's retries, seen by the recording
    proxy), oldest first. Each is a failed model call span of the step; the INFERENCE phase
    runs from the first try's start (the client's waits between tries included)."""
    ended_at: float | None = None
    """When the step's record was closed (`time.time()`)."""
    breakpoint_errors: tuple[ErrorInfo, ...] = ()
    """Breakpoint predicates (`Break.when`) that raised during this step; each stopped the run."""
    waits: tuple[Wait, ...] = ()
    """When the run waited on whoever steps it, since its previous step record closed: between
    the steps, between this step's phases, and inside a phase while its sub-runs waited at the
    gate. Empty for a run nobody steps. Its times (a tool's `ToolOutcome.duration` too) run
    through these waits: the views leave them out (`wb.Trace`)."""

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

    @property
    def tries(self) -> int:
        """How many times the step's model call was made (0: the step made none).

        More than 1 when the client asked again after a failed try (`failed_tries`).
        """
        return len(self.failed_tries) + (self.model_started_at is not None)


class PhaseEvent(Record):
    """Yielded after each phase: which phase ran, for which step, and the state after it."""

    phase: Phase
    step: int
    state: AgentState
    duration: float = 0.0
    breakpoint: Break | None = None
    """The breakpoint that stopped `AgentRun.run_to_breakpoint` here, if one did."""
    outcomes: tuple[ToolOutcome, ...] = ()
    """A TOOLS phase's calls, as each ended (ok, error, retry, denied, waits): the messages say
    what the model read, not which of those was an error."""

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

    id: Id = Field(default_factory=lambda: new_id("snap"))
    run_id: Id
    execution_id: Id
    parent_run_id: Id | None
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


CALL_WORDS: dict[str, str] = {
    "retry": "the call could not run as sent (bad arguments, the tool's ToolRetry, a timeout): "
    "the model was told what was wrong and may call again; not an error",
    "error": "the tool raised or answered an error: the model is told of it unless the run "
    "ended there (what went wrong, above, has its traceback)",
    "denied": "a guard, a hook or the user refused the call",
    "waits": "the call waits for approval or for a result from outside: the run paused there",
    "dropped": "the call was dropped before it ran",
    "replayed": "answered from a recording: the tool did not run",
}
"""What the word beside a tool call in a step table means (a call that simply ran has none)."""

_CALL_WORD = {"pending": "waits"}


def call_label(name: str, status: str, *, replayed: bool = False) -> str:
    """A tool call as step tables show it: ``add``, ``add (retry)``, ``save (waits)``.

    >>> call_label("add", "ok"), call_label("add", "retry"), call_label("x", "ok", replayed=True)
    ('add', 'add (retry)', 'x (replayed)')
    """
    words = [] if status == "ok" else [_CALL_WORD.get(status, status)]
    words += ["replayed"] if replayed else []
    return f"{name} ({', '.join(words)})" if words else name


def step_labels(steps: Sequence[StepRecord]) -> list[str]:
    """A label per record, unique: the step number, and which part of it after a pause.

    A step that paused for approval has a record per execution (same step number): the second
    is ``(resumed)``, a third ``(resumed 2)``. Records of several runs (a session's executions)
    also say which run, in the order the runs come: ``1 (run 2)``.

    >>> step_labels([])
    []
    """
    runs = {run: n for n, run in enumerate(dict.fromkeys(s.run_id for s in steps), 1)}
    seen: dict[tuple[str, int], int] = {}
    labels = []
    for step in steps:
        key = (step.run_id, step.index)
        resumed = seen.get(key, 0)
        seen[key] = resumed + 1
        notes = [f"run {runs[step.run_id]}"] if len(runs) > 1 else []
        if resumed:
            notes.append("resumed" if resumed == 1 else f"resumed {resumed}")
        labels.append(f"{step.index} ({', '.join(notes)})" if notes else str(step.index))
    return labels
