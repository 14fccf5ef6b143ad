"""The run state: one frozen value that says everything about where a run is.

`AgentState` is plain data. It serializes to JSON with a schema version and back exactly, so a
paused run can be resumed in another process days later. Status changes go through
`AgentState.with_status`, which refuses transitions the lifecycle does not allow.
"""

from __future__ import annotations

import json
import os
import random
import time
from collections.abc import Iterable
from enum import StrEnum
from typing import Literal

from pydantic import Field, ValidationError

from workbench.errors import InvalidTransition, StateFormatError
from workbench.messages import JsonValue, Message, RetryPrompt, ToolCall, ToolResult, Usage, _Frozen

__all__ = [
    "SCHEMA_VERSION",
    "AgentState",
    "ErrorInfo",
    "ExecutionStatus",
    "InvalidTransition",
    "PendingCall",
    "Phase",
    "RerunOf",
    "StateFormatError",
    "StopReason",
    "TraceRef",
    "new_id",
]

SCHEMA_VERSION = 1
"""Version of the `AgentState` JSON format. Bump it (and add a migration) on any change."""


_ids = (
    random.Random()
)  # seeded from os.urandom; private, so random.seed() elsewhere can't repeat ids
os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def new_id(prefix: str) -> str:
    """A short random id with a readable prefix (``run_…``, ``exe_…``, ``snap_…``).

    64 random bits from a private generator: unique enough for ids, and cheaper than `uuid.uuid4`
    (one system call per id), which mattered on the loop's per-step path.
    """
    return f"{prefix}_{_ids.getrandbits(64):016x}"


class Phase(StrEnum):
    """The four phases of a step, in order."""

    PREPARE = "prepare"
    INFERENCE = "inference"
    TOOLS = "tools"
    CONTINUATION = "continuation"


class ExecutionStatus(StrEnum):
    """Where a run is in its lifecycle."""

    PENDING = "pending"
    RUNNING = "running"
    PAUSED = "paused"
    COMPLETED = "completed"
    FAILED = "failed"
    ABORTED = "aborted"

    @property
    def is_terminal(self) -> bool:
        """True once the run can no longer change."""
        return self in TERMINAL


TERMINAL = frozenset({ExecutionStatus.COMPLETED, ExecutionStatus.FAILED, ExecutionStatus.ABORTED})
"""The statuses a run cannot leave (`ExecutionStatus.is_terminal`)."""

_ALLOWED: dict[ExecutionStatus, frozenset[ExecutionStatus]] = {
    ExecutionStatus.PENDING: frozenset({ExecutionStatus.RUNNING, ExecutionStatus.ABORTED}),
    ExecutionStatus.RUNNING: frozenset(
        {
            ExecutionStatus.PAUSED,
            ExecutionStatus.COMPLETED,
            ExecutionStatus.FAILED,
            ExecutionStatus.ABORTED,
        }
    ),
    ExecutionStatus.PAUSED: frozenset({ExecutionStatus.RUNNING, ExecutionStatus.ABORTED}),
    ExecutionStatus.COMPLETED: frozenset(),
    ExecutionStatus.FAILED: frozenset(),
    ExecutionStatus.ABORTED: frozenset(),
}


class StopReason(StrEnum):
    """Why a run ended.

    When several reasons fire at once, `StopReason.pick` keeps the most important one:
    ERROR > ABORTED > HOOK_STOP > limits (step, token, time, cost, doom loop, error budget)
    > TASK_COMPLETE > COMPLETED.
    """

    COMPLETED = "completed"
    TASK_COMPLETE = "task_complete"
    STEP_LIMIT = "step_limit"
    TOKEN_LIMIT = "token_limit"
    TIME_LIMIT = "time_limit"
    COST_LIMIT = "cost_limit"
    DOOM_LOOP = "doom_loop"
    ERROR_BUDGET = "error_budget"
    HOOK_STOP = "hook_stop"
    ERROR = "error"
    ABORTED = "aborted"

    @property
    def priority(self) -> int:
        """Higher wins when several reasons fire together."""
        return _PRIORITY[self]

    @property
    def status(self) -> ExecutionStatus:
        """The terminal status a run ended for this reason gets."""
        if self is StopReason.ERROR:
            return ExecutionStatus.FAILED
        if self is StopReason.ABORTED:
            return ExecutionStatus.ABORTED
        return ExecutionStatus.COMPLETED

    @staticmethod
    def pick(reasons: Iterable[StopReason | None]) -> StopReason | None:
        """The most important of the reasons given, or None if there are none."""
        present = [r for r in reasons if r is not None]
        return max(present, key=lambda r: r.priority) if present else None


_PRIORITY = {
    StopReason.COMPLETED: 0,
    StopReason.TASK_COMPLETE: 1,
    StopReason.STEP_LIMIT: 2,
    StopReason.TOKEN_LIMIT: 2,
    StopReason.TIME_LIMIT: 2,
    StopReason.COST_LIMIT: 2,
    StopReason.DOOM_LOOP: 2,
    StopReason.ERROR_BUDGET: 2,
    StopReason.HOOK_STOP: 3,
    StopReason.ABORTED: 4,
    StopReason.ERROR: 5,
}


class PendingCall(_Frozen):
    """A tool call waiting for the outside world: an approval or a result computed elsewhere."""

    call_id: str
    tool: str
    arguments: dict[str, JsonValue]
    reason: str
    kind: Literal["approval", "deferred"] = "approval"


class ErrorInfo(_Frozen):
    """An error kept in the state: what it was, and where it happened."""

    type: str
    message: str
    phase: Phase | None = None
    step: int | None = None


class RerunOf(_Frozen):
    """Where a re-run came from: the original run, the step it starts at, and its snapshot."""

    run_id: str
    step: int
    snapshot_id: str


class TraceRef(_Frozen):
    """Where an execution's telemetry went: its trace and run span (hex ids, W3C format).

    Kept in the state so that a resumed execution, in this process or another one, can link its
    trace to the paused one's.
    """

    trace_id: str
    span_id: str
    run_id: str
    execution_id: str


class AgentState(_Frozen):
    """Everything about a run at one point in time. Frozen: every change makes a new state."""

    schema_version: int = SCHEMA_VERSION
    run_id: str = Field(default_factory=lambda: new_id("run"))
    execution_id: str = Field(default_factory=lambda: new_id("exe"))
    parent_run_id: str | None = None
    agent_name: str = "agent"
    status: ExecutionStatus = ExecutionStatus.PENDING
    stop_reason: StopReason | None = None
    step: int = 0
    """Index of the current (or last) step, 1-based; 0 before the first step."""
    next_phase: Phase = Phase.PREPARE
    messages: tuple[Message, ...] = ()
    usage: Usage = Field(default_factory=Usage)
    pending: tuple[PendingCall, ...] = ()
    approved: tuple[str, ...] = ()
    """Call ids approved from outside; their guards and approval checks are not asked again."""
    retries: dict[str, int] = Field(default_factory=dict)
    """Failed attempts per tool name (and ``"<response>"`` for unusable responses)."""
    errors_total: int = 0
    errors_consecutive: int = 0
    elapsed: float = 0.0
    """Seconds of running time in earlier executions (pauses do not count)."""
    hook_turns: int = 0
    """Extra turns Stop hooks have forced so far (bounded by the agent's ``max_hook_turns``)."""
    grace_turn: bool = False
    """True while the single grace turn after a limit is under way."""
    error: ErrorInfo | None = None
    created_at: float = Field(default_factory=time.time)
    rerun_of: RerunOf | None = None
    """Set on a run made by `Agent.rerun`: the original run and step (``workbench.rerun.of``)."""
    trace: TraceRef | None = None
    """The trace of the execution that made this state (None without telemetry)."""
    trace_id: str | None = None
    """The trace id this execution's spans go under, chosen when it starts (with or without
    telemetry: `workbench.traceids.new_trace_id`), so a run pushed later keeps it."""

    def with_status(self, status: ExecutionStatus, **changes: object) -> AgentState:
        """A copy with a new status; raises `InvalidTransition` if the lifecycle forbids it."""
        if status is not self.status and status not in _ALLOWED[self.status]:
            raise InvalidTransition(
                f"run {self.run_id}: cannot go from {self.status.value} to {status.value}"
            )
        return self._replace({"status": status, **changes})

    def evolve(self, **changes: object) -> AgentState:
        """A copy with some fields changed (status changes go through `with_status`)."""
        return self._replace(changes)

    @property
    def output(self) -> str | None:
        """The text of the last assistant message, if the run has one."""
        for message in reversed(self.messages):
            if message.role == "assistant":
                return message.text or None
        return None

    def unanswered_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls of the last assistant message that have no result yet."""
        answered: set[str] = set()
        for message in reversed(self.messages):
            if message.role == "assistant":
                return tuple(c for c in message.tool_calls if c.call_id not in answered)
            for part in message.parts:
                if isinstance(part, ToolResult | RetryPrompt) and part.call_id is not None:
                    answered.add(part.call_id)
        return ()

    def to_json(self, *, indent: int | None = None) -> str:
        """Serialize to JSON; `AgentState.from_json` gives back an identical state."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> AgentState:
        """Read a state written by `to_json`, refusing versions this code cannot read."""
        try:
            raw = json.loads(text)
        except json.JSONDecodeError as exc:
            raise StateFormatError(f"state is not valid JSON: {exc}") from None
        if not isinstance(raw, dict):
            raise StateFormatError(f"state JSON must be an object, got {type(raw).__name__}")
        version = raw.get("schema_version")
        if version != SCHEMA_VERSION:
            raise StateFormatError(
                f"state schema version {version!r} is not supported: this workbench reads "
                f"version {SCHEMA_VERSION}"
                + (" (the state was written by a newer workbench)" if _is_newer(version) else "")
            )
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise StateFormatError(
                f"state JSON is not a valid AgentState: {validation_summary(exc)}"
            ) from None


def _is_newer(version: object) -> bool:
    return isinstance(version, int) and version > SCHEMA_VERSION


def validation_summary(exc: ValidationError, limit: int = 5) -> str:
    """Pydantic's errors as one line: ``field.path: message`` for the first ``limit`` of them."""
    errors = exc.errors(include_url=False, include_input=False)
    shown = [
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors[:limit]
    ]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(shown) + more
