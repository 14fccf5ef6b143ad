"""How a run ended (`RunResult`), and what went wrong anywhere in its tree (`RunError`).

`RunResult` is a run's final state with its step records, snapshots and sub-runs.
`RunResult.errors` reads the records of a run tree into `RunError`s (`run_errors`), so a stored
run has them too, and every view starts with the same line (`errors_summary`). The records of
each step (`StepRecord`, `StepContext`, `PhaseEvent`, ...) are made step by step while the run
goes on, in `workbench.step_records`; they are re-exported here, their public path.
"""

from __future__ import annotations

import operator
import weakref
from collections.abc import Sequence
from typing import Literal, Protocol

from workbench._record import Record
from workbench.conversation import Messages
from workbench.errors import NoSuchStep, UsageError
from workbench.messages import Usage
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, PendingCall, StopReason
from workbench.step_records import (
    CALL_WORDS,
    HookTiming,
    ModelTry,
    OutcomeStatus,
    PhaseEvent,
    StepContext,
    StepRecord,
    SubagentResult,
    Timing,
    ToolOutcome,
    call_label,
    step_labels,
)

__all__ = [
    "CALL_WORDS",
    "HookTiming",
    "ModelTry",
    "OutcomeStatus",
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
    "try_name",
]

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
    """The tool, or the hook, that failed; for a model call tried more than once (a client that
    asked again), which try (``try 2``)."""
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
        if place and self.agent:
            return f"{place} in {self.agent}"
        return place or self.agent  # a trace of another framework may name no agent

    @property
    def what(self) -> str:
        """What went wrong: ``TypeError: unsupported operand...`` (the message alone, untyped)."""
        return f"{self.type}: {self.message}" if self.type else self.message

    @property
    def line(self) -> str:
        """Where, then what: ``step 3, apply_discount in digger: TypeError: ...``."""
        return f"{self.where}: {self.what}"

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
    tried = step.failed_tries  # each failed try the client asked again after: its own error
    found += (
        _error(state, step, "model", t.error.message, t.error, name=try_name(k, step.tries))
        for k, t in enumerate(tried, 1)
    )
    model = step.model_error
    if model is not None and step.status is not ExecutionStatus.FAILED:  # else: the run's error
        name = try_name(step.tries, step.tries)
        found.append(_error(state, step, "model", model.message, model, name=name))
    return tuple(found)


def try_name(number: int, tries: int) -> str | None:
    """What names a failed model call among its step's tries: ``try 2``; None for a step's only.

    >>> try_name(1, 3), try_name(1, 1)
    ('try 1', None)
    """
    return f"try {number}" if tries > 1 else None


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

    A sub-run's errors come before the error of the call that started it, if that call has one
    (it stopped at a limit, or was aborted): they happened inside the call, before it ended. So
    the first error named is the first thing that went wrong, not a call that ended because a
    person pressed Stop two sub-agents above the tool that crashed. The step's hook errors last.
    """
    children: dict[str | None, list[RunResult]] = {}
    for child in run.children:
        children.setdefault(child.parent_call_id, []).append(child)
    found: list[RunError] = []
    for step in run.steps:
        for outcome in step.tool_outcomes:
            found += (e for child in children.pop(outcome.call_id, ()) for e in run_errors(child))
            error = _call_error(outcome, step, run.state)
            found += (error,) if error is not None else ()
        found += (e for e in step_errors(step, run.state) if e.call_id is None)
    found += (e for rest in children.values() for child in rest for e in run_errors(child))
    own = run_error(run.state)
    return (*found, own) if own is not None else tuple(found)


def _call_error(outcome: ToolOutcome, step: StepRecord, state: AgentState) -> RunError | None:
    """The error of one tool call, if it is one (see `step_errors`)."""
    raised = outcome.exception
    kind: ErrorKind
    if not outcome.is_error:
        return None
    if outcome.status == "denied":
        kind = "guard"
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
        steps there are, for one the run does not have, and `UsageError` for what is no step
        number (``"3"`` read "has no step 3: it has steps 1-4"); a NumPy integer is one.
        """
        if isinstance(step, bool) or not hasattr(type(step), "__index__"):  # True is no step 1
            raise UsageError(
                f"step= takes a step's number (from 1, as steps are shown), not {step!r}"
            )
        step = operator.index(step)
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
