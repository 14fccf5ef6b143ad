"""The run state: one frozen value that says everything about where a run is.

`AgentState` is plain data. It serializes to JSON with a schema version and back exactly, so a
paused run can be resumed in another process days later. Status changes go through
`AgentState.with_status`, which refuses transitions the lifecycle does not allow.
"""

from __future__ import annotations

import json
import math
import os
import random
import time
from collections.abc import Callable, Iterable, Mapping
from enum import Enum, StrEnum
from typing import Any, Literal

from pydantic import Field, ValidationError, field_validator

from workbench._json import loads
from workbench._record import Record
from workbench.conversation import Messages
from workbench.errors import InvalidTransition, StateFormatError
from workbench.ids import Id, SpanId, TraceId
from workbench.messages import (
    JsonValue,
    RetryPrompt,
    ToolCall,
    ToolResult,
    Usage,
    answered_only,
)
from workbench.redact import redacted, unicode_text
from workbench.tracebacks import traceback_text

__all__ = [
    "MIGRATIONS",
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
    "Transition",
    "new_id",
]

SCHEMA_VERSION = 4
"""Version of the `AgentState` JSON format. Bump it (and add a migration) on any change.

2: the model's unusable responses are counted in ``response_retries``, not as a ``"<response>"``
tool in ``retries``; runs carry ``metadata``.
3: an error keeps its traceback (`ErrorInfo.traceback`).
4: a paused run says when it paused (``paused_at``)."""


_ids = (
    random.Random()
)  # seeded from os.urandom; private, so random.seed() elsewhere can't repeat ids
os.register_at_fork(after_in_child=_ids.seed)  # a forked child must not repeat its parent's ids


def new_id(prefix: str) -> str:
    """A short random id with a readable prefix (``run_…``, ``exe_…``, ``snap_…``).

    64 random bits from a private generator, so that ``random.seed()`` elsewhere in the program
    cannot make two runs share an id.
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

_S = ExecutionStatus


class Transition(Enum):
    """Every change of a run's status: the run-control table.

    ==========  ==========================  =========  ============================================
    transition  from                        to         when
    ==========  ==========================  =========  ============================================
    START       PENDING, PAUSED             RUNNING    a new run starts; a paused run is resumed
    PAUSE       RUNNING                     PAUSED     tool calls wait for an approval or a result
    COMPLETE    RUNNING                     COMPLETED  the model answered, a limit, a hook stop
    FAIL        RUNNING                     FAILED     an error the loop cannot recover from
    ABORT       PENDING, RUNNING, PAUSED    ABORTED    the user aborts; the run's task is cancelled
    ==========  ==========================  =========  ============================================

    The grace turn after a limit is not a status: the run stays RUNNING with ``grace_turn`` set,
    and its CONTINUATION ends the run either way. A stop asked for during a phase (an abort, a
    hook's ``continue: false``) takes effect when the phase ends.
    """

    START = (_S.RUNNING, frozenset({_S.PENDING, _S.PAUSED}))
    PAUSE = (_S.PAUSED, frozenset({_S.RUNNING}))
    COMPLETE = (_S.COMPLETED, frozenset({_S.RUNNING}))
    FAIL = (_S.FAILED, frozenset({_S.RUNNING}))
    ABORT = (_S.ABORTED, frozenset({_S.PENDING, _S.RUNNING, _S.PAUSED}))

    @property
    def target(self) -> ExecutionStatus:
        """The status the run has after this transition."""
        return self.value[0]

    @property
    def sources(self) -> frozenset[ExecutionStatus]:
        """The statuses this transition may start from."""
        return self.value[1]


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
    def transition(self) -> Transition:
        """How a run that ends for this reason ends: FAIL, ABORT or COMPLETE."""
        if self is StopReason.ERROR:
            return Transition.FAIL
        if self is StopReason.ABORTED:
            return Transition.ABORT
        return Transition.COMPLETE

    @property
    def status(self) -> ExecutionStatus:
        """The terminal status a run ended for this reason gets."""
        return self.transition.target

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


class PendingCall(Record):
    """A tool call waiting for the outside world: an approval or a result computed elsewhere."""

    call_id: str
    tool: str
    arguments: dict[str, JsonValue]
    reason: str
    kind: Literal["approval", "deferred"] = "approval"
    via: str | None = None
    """For a call of a sub-run that waits: the call of this run that started the sub-run."""


class ErrorInfo(Record):
    """An error kept in the state: what it was, where it happened, and its traceback.

    Its message and traceback are redacted as they are made (`workbench.redact.redacted`) and
    made valid UTF-8: they are stored, shown, and read by a calling run's model when a sub-run
    fails.
    """

    type: str
    message: str
    phase: Phase | None = None
    step: int | None = None
    traceback: str | None = None
    """Where it was raised (`workbench.tracebacks.traceback_text`): the user's frames first."""

    @field_validator("message", "traceback")
    @classmethod
    def _no_secrets(cls, text: str | None) -> str | None:
        """Redacted, and valid UTF-8 (an exception may quote a file name that is not)."""
        return None if text is None else unicode_text(redacted(text))

    @classmethod
    def of(
        cls,
        exc: BaseException,
        *,
        phase: Phase | None = None,
        step: int | None = None,
        redact: Callable[[str], str] = redacted,
    ) -> ErrorInfo:
        """What is kept of a raised exception: its type, message and traceback, redacted.

        ``redact`` is the run's redactor (the built-in patterns, the user's, the model's key).
        """
        return cls(
            type=type(exc).__name__,
            message=redact(str(exc)),
            phase=phase,
            step=step,
            traceback=traceback_text(exc, redact),
        )


class RerunOf(Record):
    """Where a re-run came from: the original run, the step it starts at, and its snapshot."""

    run_id: Id
    step: int
    snapshot_id: Id


class TraceRef(Record):
    """Where an execution's telemetry went: its trace and run span (hex ids, W3C format).

    Kept in the state so that a resumed execution, in this process or another one, can link its
    trace to the paused one's.
    """

    trace_id: TraceId
    span_id: SpanId
    run_id: Id
    execution_id: Id


class AgentState(Record):
    """Everything about a run at one point in time. Frozen: every change makes a new state."""

    schema_version: int = SCHEMA_VERSION
    run_id: Id = Field(default_factory=lambda: new_id("run"))
    execution_id: Id = Field(default_factory=lambda: new_id("exe"))
    parent_run_id: Id | None = None
    parent_call_id: str | None = None
    """The parent's tool call that started this run (a sub-agent's run)."""
    depth: int = 0
    """How deep in a tree of sub-agents the run is: 0 for a run nobody called."""
    agent_name: str = "agent"
    status: ExecutionStatus = ExecutionStatus.PENDING
    stop_reason: StopReason | None = None
    step: int = 0
    """Index of the current (or last) step, 1-based; 0 before the first step."""
    next_phase: Phase = Phase.PREPARE
    messages: Messages = Field(default_factory=Messages)
    """The conversation: a view of the run's append-only message log (`workbench.conversation`)."""
    usage: Usage = Field(default_factory=Usage)
    pending: tuple[PendingCall, ...] = ()
    approved: tuple[str, ...] = ()
    """Call ids approved from outside; their guards and approval checks are not asked again."""
    retries: dict[str, int] = Field(default_factory=dict)
    """Failed attempts per tool name (a success resets the tool's count)."""
    response_retries: int = 0
    """Unusable (empty) responses of the model so far."""
    errors_total: int = 0
    errors_consecutive: int = 0
    elapsed: float = 0.0
    """Seconds of running time in earlier executions (pauses do not count)."""
    paused_at: float | None = None
    """When the run paused (`time.time()`), until it runs again; None otherwise. A resume in a
    new `AgentRun` (another cell or process, days later) records the stretch from here as a
    wait on the person (`StepRecord.waits`), so its views leave the pause out. A state written
    before version 4 has none: its pause is drawn as the gap it was."""
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
    waiting_subruns: dict[str, AgentState] = Field(default_factory=dict)
    """Paused sub-runs, by the call of this run that started each: resumed when it runs again."""
    subrun_answers: dict[str, JsonValue] = Field(default_factory=dict)
    """Answers given on resume for sub-runs' calls (``approval:ID`` / ``result:ID`` keys)."""
    subruns: dict[str, int] = Field(default_factory=dict)
    """Sub-runs started so far in the tree this run is the root of, by the run that started
    each: `SubagentLimits` count them across steps and pauses (empty below the root)."""
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    """What the caller attached to the run (``metadata=``): stored, shown, passed to sub-agents."""
    trace_id: TraceId | None = None
    """The trace id this execution's spans go under, chosen when it starts (with or without
    telemetry: `workbench.traceids.new_trace_id`), so a run pushed later keeps it."""

    @field_validator("paused_at", mode="before")
    @classmethod
    def _a_moment(cls, value: object) -> float | None:
        """A damaged time (not a finite positive number: text, true, a list) is no time.

        Checked before pydantic's own check: the time only draws the pause, so a state that
        has a wrong one still loads and resumes.
        """
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            return None
        try:
            moment = float(value)
        except OverflowError:  # an integer past any float (JSON's have no bound)
            return None
        return moment if math.isfinite(moment) and moment > 0 else None

    def __repr__(self) -> str:  # short: the messages and metadata (maybe a key) fill a log
        return (
            f"AgentState(run_id={self.run_id!r}, agent={self.agent_name!r}, depth={self.depth}, "
            f"status={self.status.value}, stop_reason={self.stop_reason}, step={self.step}, "
            f"next_phase={self.next_phase.value}, messages={len(self.messages)}, "
            f"pending={len(self.pending)}, tokens={self.usage.total_tokens})"
        )

    def moved(self, transition: Transition, **changes: object) -> AgentState:
        """A copy after ``transition`` (and ``changes``); `InvalidTransition` if it cannot happen.

        The one way a status changes (`Transition` is the table); other fields change with
        ``model_copy(update=...)``.
        """
        if self.status not in transition.sources:
            raise InvalidTransition(
                f"run {self.run_id}: cannot {transition.name.lower()} a run that is "
                f"{self.status.value}"
            )
        return self.model_copy(update={"status": transition.target, **changes})

    @property
    def done(self) -> bool:
        """True once the run ended, or paused with calls waiting for the outside world."""
        return self.status.is_terminal or (self.status is _S.PAUSED and bool(self.pending))

    @property
    def output(self) -> str | None:
        """The text of the last assistant message, if the run has one.

        A run that ended by calling a completion tool (``TASK_COMPLETE``) with no text gave its
        answer in that call (a ``finish(summary=...)``, smolagents' ``final_answer(answer=...)``):
        the output is its one argument, or else its arguments as JSON.
        """
        for message in reversed(self.messages):
            if message.role != "assistant":
                continue
            calls = message.tool_calls
            if message.text or not calls or self.stop_reason is not StopReason.TASK_COMPLETE:
                return message.text or None
            arguments = calls[-1].arguments
            answer = next(iter(arguments.values())) if len(arguments) == 1 else arguments
            return answer if isinstance(answer, str) else json.dumps(answer, ensure_ascii=False)
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

    def fork(self, *, up_to_step: int) -> AgentState:
        """A new run (PENDING, fresh ids) holding the conversation as it was after ``up_to_step``.

        The messages kept are those before the first message this run made after step
        ``up_to_step``: the history it started with, and every step up to that one whole (a
        step's tool results belong to it). Messages keep their provenance, so the new run's
        history still says which run and step made each of them. Calls of that step still
        waiting for an answer are left out (a model may not be sent a call without its result),
        and the new run is a root: no run called it.
        """
        if not 0 <= up_to_step <= self.step:
            raise ValueError(f"run {self.run_id} has steps 0..{self.step}, not {up_to_step}")
        later = (
            i
            for i, m in enumerate(self.messages)
            if m.run_id == self.run_id and m.step is not None and m.step > up_to_step
        )
        cut = next(later, len(self.messages))
        return AgentState(  # a run of its own: no caller's tree, no call left unanswered
            agent_name=self.agent_name,
            messages=answered_only(self.messages[:cut]),
            metadata=dict(self.metadata),
        )

    def to_json(self, *, indent: int | None = None) -> str:
        """Serialize to JSON; `AgentState.from_json` gives back an identical state."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> AgentState:
        """Read a state written by `to_json`, refusing versions this code cannot read."""
        raw = read_versioned(text, "state", SCHEMA_VERSION, StateFormatError, MIGRATIONS)
        try:
            return cls.model_validate(raw)
        except ValidationError as exc:
            raise StateFormatError(
                f"state JSON is not a valid AgentState: {validation_summary(exc)}"
            ) from None


_NO_MIGRATIONS: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = {}


def _from_version_1(raw: dict[str, Any]) -> dict[str, Any]:
    """A version 1 state in today's layout (its ``"<response>"`` retries moved)."""
    retries = raw.get("retries")
    moved = dict(raw, schema_version=SCHEMA_VERSION)
    if isinstance(retries, dict) and "<response>" in retries:
        moved["retries"] = {k: v for k, v in retries.items() if k != "<response>"}
        moved["response_retries"] = retries["<response>"]
    return moved


def _only_added_to(raw: dict[str, Any]) -> dict[str, Any]:
    """A state of a version whose layout today's only adds to, as it is.

    Version 2: its errors have no traceback; 2 and 3: it does not say when it paused.
    """
    return dict(raw, schema_version=SCHEMA_VERSION)


MIGRATIONS: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = {
    1: _from_version_1,
    2: _only_added_to,
    3: _only_added_to,
}
"""How a state written with an older ``schema_version`` is read today (files and the store)."""


def read_versioned(
    text: str | bytes,
    what: str,
    version: int,
    error: type[Exception],
    migrations: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = _NO_MIGRATIONS,
) -> dict[str, Any]:
    """A JSON object written with ``schema_version`` ``version`` (older ones migrated).

    Anything else raises ``error`` saying what is wrong: not JSON (bad UTF-8 and nesting past
    `workbench._json.MAX_DEPTH` included), not an object, or a version this code cannot read.
    """
    try:
        raw = loads(text)
    except ValueError as exc:  # bad JSON, bad UTF-8, nested deeper than MAX_DEPTH
        raise error(f"{what} is not valid JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise error(f"{what} JSON must be an object, got {type(raw).__name__}")
    mark, _ = _KINDS.get(what, ("", ""))
    for kind, (field, how) in _KINDS.items():
        if kind != what and field in raw and mark not in raw:
            raise error(f"this JSON is not a {what} but {how}")
    return migrated(raw, what, version, error, migrations)


_KINDS = {
    "state": ("run_id", "a run's state: read it with wb.AgentState.from_json(text)"),
    "session": ("executions", "a session: read it with wb.Session.from_json(text, agent)"),
}
"""The JSON files read here, each by a field only it has: one given for the other was taken
for a newer version of it ("session schema version 4 is not supported ... written by a newer
workbench") or listed every field it has as unknown."""


def migrated(
    raw: dict[str, Any],
    what: str,
    version: int,
    error: type[Exception],
    migrations: Mapping[int, Callable[[dict[str, Any]], dict[str, Any]]] = _NO_MIGRATIONS,
) -> dict[str, Any]:
    """``raw`` in the layout of ``version`` (an older one migrated); else ``error`` says why.

    A JSON object inside another (a session file's paused `AgentState`) keeps its own version:
    the file around it reads it through this too, so it is migrated or refused as a state.
    """
    found = raw.get("schema_version")
    if isinstance(found, int) and found in migrations:
        return migrations[found](raw)
    if found != version:
        newer = isinstance(found, int) and found > version
        raise error(
            f"{what} schema version {found!r} is not supported: this workbench reads version "
            f"{version}" + (f" (the {what} was written by a newer workbench)" if newer else "")
        )
    return raw


def validation_summary(exc: ValidationError, limit: int = 5) -> str:
    """Pydantic's errors as one line: ``field.path: message`` for the first ``limit`` of them."""
    errors = exc.errors(include_url=False, include_input=False)
    shown = [
        f"{'.'.join(str(p) for p in e['loc']) or '<root>'}: {e['msg']}" for e in errors[:limit]
    ]
    more = f" (and {len(errors) - limit} more)" if len(errors) > limit else ""
    return "; ".join(shown) + more
