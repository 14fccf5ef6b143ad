"""What the loop records about each step and run, and what went wrong in a run tree.

`StepRecord` is the per-step account a user reads in `result.steps`: what the model saw, what it
answered, what each tool call did, tokens, and the timing breakdown. `StepContext` is the snapshot
taken at the start of a step, enough to re-run from there. Both are frozen. `RunResult.errors`
reads the records of a run tree into `RunError`s (`run_errors`), so a stored run has them too.
"""

from __future__ import annotations

import time
import weakref
from collections.abc import Sequence
from typing import Literal, Protocol

from pydantic import Field

from workbench._record import Record
from workbench.breakpoints import Break
from workbench.conditions import Budget
from workbench.conversation import Messages
from workbench.errors import NoSuchStep
from workbench.ids import Id
from workbench.messages import JsonValue, Message, ModelResponse, ToolCall, ToolDefinition, Usage
from workbench.state import (
    AgentState,
    ErrorInfo,
    ExecutionStatus,
    PendingCall,
    Phase,
    StopReason,
    new_id,
)
from workbench.waits import Wait

__all__ = [
    "CALL_WORDS",
    "HookTiming",
    "PhaseEvent",
    "RecordedRun",
    "RunError",
    "RunResult",
    "StepContext",
    "StepRecord",
    "SubagentResult",
    "Timing",
    "ToolOutcome",
    "call_label",
    "errors_summary",
    "recording_of",
    "run_error",
    "run_errors",
    "step_errors",
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


ErrorKind = Literal["tool", "guard", "hook", "breakpoint", "model", "subrun", "run", "span"]

_KIND_LABELS: dict[ErrorKind, tuple[str, str]] = {
    "tool": ("tool error", "tool errors"),
    "guard": ("guard error", "guard errors"),
    "hook": ("hook error", "hook errors"),
    "breakpoint": ("breakpoint error", "breakpoint errors"),
    "model": ("model error", "model errors"),
    "subrun": ("failed sub-run", "failed sub-runs"),
    "run": ("run error", "run errors"),
    "span": ("failed span", "failed spans"),
}


class RunError(Record):
    """One thing that went wrong somewhere in a run tree, and where: agent, run, step, call.

    ``kind`` says what failed: a tool call (``tool``), a guard that raised (``guard``: the call
    was denied), a hook (``hook``), a breakpoint predicate (``breakpoint``), a model call that
    did not fail the run (``model``: a time limit ended it), a sub-run that failed, stopped at a
    limit or was aborted (``subrun``), the run itself (``run``), or, in a trace another
    framework wrote, any span it marked failed (``span``).
    """

    kind: ErrorKind
    agent: str
    run_id: str
    """The run it happened in (empty for a span another framework wrote): only ever shown, so
    a trace's own text, not checked as an id as the run ids that name files are."""
    depth: int = 0
    """How deep the run is in its tree (0: the run asked about)."""
    step: int | None = None
    call_id: str | None = None
    """The tool call it is about (a tool's, a guard's, the call that started a sub-run)."""
    name: str | None = None
    """The tool, or the hook, that failed."""
    message: str
    type: str | None = None
    """The exception's type, when something raised."""
    traceback: str | None = None
    """Where it was raised, when something raised: the user's frames first, redacted."""
    span_id: str | None = None
    """The span it is on, when it was read from a trace (`wb.Trace.errors`)."""

    @property
    def where(self) -> str:
        """Where it happened, as a person says it: ``step 3, apply_discount in digger``."""
        place = ", ".join(
            part
            for part in (f"step {self.step}" if self.step is not None else "", self.name or "")
            if part
        )
        return f"{place} in {self.agent}" if place else self.agent

    @property
    def line(self) -> str:
        """Where, then what: ``step 3, apply_discount in digger: TypeError: ...``."""
        what = f"{self.type}: {self.message}" if self.type else self.message
        return f"{self.where}: {what}"

    def __repr__(self) -> str:
        return f"RunError({self.kind}, {_clip(self.line, 120)})"


def errors_summary(status: str, errors: Sequence[RunError]) -> str:
    """The one line every view starts with: ``completed, 1 tool error: step 3, add in digger``.

    Several errors are counted by kind and the first one is named.
    """
    if not errors:
        return status
    counts: dict[ErrorKind, int] = {}
    for error in errors:
        counts[error.kind] = counts.get(error.kind, 0) + 1
    what = ", ".join(f"{count} {_KIND_LABELS[kind][count != 1]}" for kind, count in counts.items())
    first = errors[0].where
    return f"{status}, {what}: {first}" if len(errors) == 1 else f"{status}, {what}; first: {first}"


def step_errors(step: StepRecord, state: AgentState) -> tuple[RunError, ...]:
    """What went wrong in one step of the run ``state`` is a state of, its sub-runs aside.

    A sub-agent call that failed because its sub-run failed is not counted here: the sub-run's
    own error is (`run_error` of the sub-run, where it failed, with its traceback). A sub-agent
    call whose sub-run stopped at a limit or was aborted is, as a ``subrun`` error of the call.
    The run store counts a run's errors step by step with this, without its children.
    """
    found = [e for outcome in step.tool_outcomes if (e := _call_error(outcome, step, state))]
    unnamed = list(step.hook_errors)  # each hook's error is also in the step's list
    for hook in step.timing.per_hook:
        if hook.error is not None:
            if hook.error in unnamed:
                unnamed.remove(hook.error)
            raised = hook.exception
            said = raised.message if raised is not None else hook.error
            found.append(_error(state, step, "hook", said, raised, name=hook.hook))
    found += (_error(state, step, "hook", text) for text in unnamed)
    found += (_error(state, step, "breakpoint", e.message, e) for e in step.breakpoint_errors)
    model = step.model_error
    if model is not None and step.status is not ExecutionStatus.FAILED:  # else: the run's error
        found.append(_error(state, step, "model", model.message, model))
    return tuple(found)


def run_error(state: AgentState) -> RunError | None:
    """The run's own failure (``subrun`` below the root), if it failed."""
    error = state.error
    if error is None:
        return None
    return RunError(
        kind="subrun" if state.depth else "run",
        agent=state.agent_name,
        run_id=state.run_id,
        depth=state.depth,
        step=error.step,
        message=error.message,
        type=error.type,
        traceback=error.traceback,
    )


def run_errors(run: RecordedRun) -> tuple[RunError, ...]:
    """What went wrong anywhere in ``run``'s tree, in the order it happened.

    A sub-run's errors come right after the call that started it, then the step's hook errors.
    """
    children: dict[str | None, list[RunResult]] = {}
    for child in run.children:
        children.setdefault(child.parent_call_id, []).append(child)
    found: list[RunError] = []
    for step in run.steps:
        for outcome in step.tool_outcomes:
            error = _call_error(outcome, step, run.state)
            found += (error,) if error is not None else ()
            found += (e for child in children.pop(outcome.call_id, ()) for e in run_errors(child))
        found += (e for e in step_errors(step, run.state) if e.call_id is None)
    found += (e for rest in children.values() for child in rest for e in run_errors(child))
    own = run_error(run.state)
    return (*found, own) if own is not None else tuple(found)


def _call_error(outcome: ToolOutcome, step: StepRecord, state: AgentState) -> RunError | None:
    """The error of one tool call, if it is one (see `step_errors`)."""
    raised = outcome.exception
    kind: ErrorKind
    if outcome.status == "denied" and raised is not None:
        kind = "guard"
    elif outcome.status != "error":
        return None
    elif outcome.subagent is None:
        kind = "tool"
    elif outcome.subagent.error is None:  # stopped at a limit, or aborted
        kind, raised = "subrun", None
    else:  # the sub-run failed: its own error is the one
        return None
    message = raised.message if raised is not None else outcome.content
    return _error(state, step, kind, message, raised, call=outcome)


def _error(
    state: AgentState,
    step: StepRecord,
    kind: ErrorKind,
    message: str,
    raised: ErrorInfo | None = None,
    *,
    call: ToolOutcome | None = None,
    name: str | None = None,
) -> RunError:
    return RunError(
        kind=kind,
        agent=state.agent_name,
        run_id=state.run_id,
        depth=state.depth,
        step=step.index,
        call_id=call.call_id if call is not None else None,
        name=call.name if call is not None else name,
        message=message,
        type=raised.type if raised is not None else None,
        traceback=raised.traceback if raised is not None else None,
    )


CALL_WORDS: dict[str, str] = {
    "retry": "the call could not run as sent (bad arguments, the tool's ToolRetry, a timeout): "
    "the model was told what was wrong and may call again; not an error",
    "error": "the tool raised or answered an error; the model read it (what went wrong, above, "
    "has its traceback)",
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


class RunResult(Record):
    """How an execution ended: the final state, the step records and the snapshots."""

    state: AgentState
    steps: tuple[StepRecord, ...]
    snapshots: tuple[StepContext, ...]
    children: tuple[RunResult, ...] = ()
    """The runs of sub-agents this run called, in call order (each with its own children)."""

    @property
    def trace_id(self) -> str | None:
        """The trace of this execution: chosen when it starts, with or without telemetry.

        One place, the state's ``trace_id`` (its ``trace`` is the run span a later execution
        links to); a run that never started has none.
        """
        return self.state.trace_id

    def __repr__(self) -> str:  # short: a long run's messages would fill a notebook
        return (
            f"RunResult(status={self.summary!r}, run_id={self.run_id!r}, "
            f"stop_reason={self.stop_reason}, steps={len(self.steps)}, "
            f"tokens={self.usage.total_tokens}, output={_clip(self.output)})"
        )

    @property
    def errors(self) -> tuple[RunError, ...]:
        """What went wrong anywhere in the run tree, in the order it happened (`RunError`).

        Tool, guard, hook and breakpoint errors, failed or limited sub-runs, the run's own
        failure. Computed from the records, so a stored run has them too.
        """
        return run_errors(self)

    @property
    def summary(self) -> str:
        """Status and errors in one line: ``completed, 1 tool error: step 3, add in digger``."""
        return errors_summary(self.status.value, self.errors)

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
    def messages(self) -> Messages:
        """The whole conversation."""
        return self.state.messages

    @property
    def pending(self) -> tuple[PendingCall, ...]:
        """Tool calls waiting for approval or results (when PAUSED)."""
        return self.state.pending

    def snapshot(self, *, step: int) -> StepContext:
        """The snapshot taken before step ``step`` (counted from 1, as steps are shown).

        What `Agent.rerun` starts from: ``agent.rerun_sync(result.snapshot(step=3), ...)``
        re-runs step 3. (``snapshots[2]`` is the same one for a run from step 1, but not for a
        re-run, whose first snapshot is the step it started at.) Raises `NoSuchStep`, naming the
        steps there are, for one the run does not have.
        """
        for snapshot in self.snapshots:
            if snapshot.step == step:
                _handed_out[snapshot.id] = self  # what a re-run from it replays
                return snapshot
        steps = sorted(s.step for s in self.snapshots)  # in a row: a re-run's start later
        if not steps:
            have = "no steps"
        elif len(steps) == 1:
            have = f"step {steps[0]}"
        else:
            have = f"steps {steps[0]}-{steps[-1]}"
        raise NoSuchStep(f"run {self.run_id} has no step {step}: it has {have}")


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


_handed_out: weakref.WeakValueDictionary[str, RunResult] = weakref.WeakValueDictionary()
"""The run each snapshot `RunResult.snapshot` handed out came from, while that result lives."""


def recording_of(snapshot: StepContext) -> RunResult | None:
    """The run ``snapshot`` was handed out from by `RunResult.snapshot`, if it is still held.

    What `Agent.rerun` replays by default: the snapshot itself holds the state as its step
    began, not what the model answered in it. (A snapshot is plain data, kept in stores and
    files; this link lives only in this process, beside it.)
    """
    return _handed_out.get(snapshot.id)
