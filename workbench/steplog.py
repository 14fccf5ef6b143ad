"""`StepLog`: what an execution keeps of its steps, and the time its phases worked.

The loop (`workbench.engine`) decides what happens; this keeps the account of it. The step under
way is a `StepDraft` that the phases fill in. As each phase ends, its time is counted for the
step's record and for the run's `Timeout`, less what it waited on the person stepping through its
sub-runs (reading between presses is not work). When the step closes, its `StepRecord` goes to the
observers with the hooks that ran in it, the observers' own cost and the waits on the person since
the record before. A run looked at while it is stopped inside a step gets that step's record as
it stands (`so_far`), which nothing keeps.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from workbench.drafts import StepDraft
from workbench.hooks.loop import LoopHooks
from workbench.messages import ToolCall
from workbench.observing import Observers
from workbench.records import PhaseEvent, StepRecord, ToolOutcome
from workbench.state import AgentState, ErrorInfo, Phase
from workbench.waits import Wait, Waits

__all__ = ["StepLog"]


class StepLog:
    """The step records of one execution, the step under way, and the time its phases worked."""

    def __init__(
        self,
        elapsed: float,
        waits: Waits | None,
        hooks: LoopHooks,
        observers: Observers,
        since: float | None = None,
    ) -> None:
        """A log from now, or ``since`` the run's last step record closed before it.

        A resumed run's closed as it paused (`AgentState.paused_at`): its first record keeps
        the wait since.
        """
        self.records: list[StepRecord] = []
        """The records of the steps that closed in this execution, in order."""
        self.draft: StepDraft | None = None
        """The step under way, as the phases fill it in; None between steps."""
        self.waits = waits
        """When the run tree waited on whoever steps it (`Waits`); None when nobody steps it."""
        self._hooks = hooks
        self._observers = observers
        self._phases: list[tuple[Phase, float, float]] = []  # the open step's: `StepDraft.record`
        self._run_time = elapsed
        """Seconds the run has spent inside phases: what `Timeout` counts (not time paused or
        spent reading between manual steps)."""
        self._phase_started: float | None = None
        """When the phase under way started; None between phases."""
        self._waited = 0.0
        """`Waits.seconds` when the phase under way began."""
        now = time.time()
        self._waits_from = now if since is None else min(since, now)
        """Where the next step record's waits begin: where the last one closed (a pause in the
        future, by a clock ahead of this one, is no wait: its record keeps the waits since now)."""

    # -- the run's time -------------------------------------------------------------------------

    @property
    def in_phase(self) -> bool:
        """True while a phase is under way."""
        return self._phase_started is not None

    def phase_begins(self) -> float:
        """A phase starts now; its start, to give back to `phase_ended`."""
        self._waited = self.waits.seconds() if self.waits is not None else 0.0
        self._phase_started = started = time.perf_counter()
        return started

    def elapsed(self) -> float:
        """Running time of the run so far: the time spent in its phases, across executions."""
        if self._phase_started is None:
            return self._run_time
        return self._run_time + self._worked(self._phase_started)

    def _worked(self, started: float) -> float:
        """Seconds the phase under way (begun at ``started``) has worked.

        Its time so far, less what it waited on the person stepping through its sub-runs (a
        TOOLS phase stepped into waits at the `StepGate` while they read between presses), so
        reading never eats a `Timeout` or shows as a slow phase.
        """
        waited = self.waits.seconds() - self._waited if self.waits is not None else 0.0
        return time.perf_counter() - started - waited

    def _waits(self) -> tuple[Wait, ...]:
        """The waits on the person since the last step record closed (`StepRecord.waits`)."""
        return self.waits.since(self._waits_from) if self.waits is not None else ()

    def phase_ended(self, phase: Phase, started: float, state: AgentState) -> PhaseEvent:
        """Count the phase's time (for the step and the run) and tell the observers."""
        duration = self._worked(started)
        self._run_time += duration
        self._phase_started = None
        wall = time.time() - (time.perf_counter() - started)  # when it began
        if self.draft is not None:
            self._phases.append((phase, wall, duration))
        calls = self.draft.outcomes if phase is Phase.TOOLS and self.draft is not None else ()
        event = PhaseEvent(
            phase=phase, step=state.step, state=state, duration=duration, outcomes=calls
        )
        self._observers.phase_ended(event, wall)
        return event

    # -- the step -------------------------------------------------------------------------------

    def open(self, draft: StepDraft) -> StepDraft:
        """Start recording a step; the observers' cost is counted from here."""
        self.draft, self._phases = draft, []
        self._observers.seconds = 0.0
        return draft

    def close(self, state: AgentState) -> None:
        """Close the step under way into its record, as ``state`` stands, for the observers.

        With no step open, the hooks that ran since (SessionEnd after a stop between steps) go
        on this execution's last record; observers already got each invocation through
        `RunObserver.hook_called`.
        """
        draft, self.draft = self.draft, None
        if draft is None:
            if self._hooks.unrecorded and self.records:
                self.records[-1] = self._hooks.take().added_to(self.records[-1])
            return
        hooks, seconds = self._hooks.take(), self._observers.seconds
        record = draft.record(state, hooks, seconds, self._phases, waits=self._waits())
        if record.ended_at is not None:
            self._waits_from = record.ended_at
        self.records.append(record)
        self._observers.step_ended(record)

    def so_far(self, state: AgentState, under_way: Sequence[ToolCall] = ()) -> StepRecord | None:
        """The step under way as it stands (`StepDraft.so_far`); None between steps."""
        if self.draft is None:
            return None
        phases = list(self._phases)
        if self._phase_started is not None:  # stopped inside a sub-run: its phase so far
            began = time.time() - (time.perf_counter() - self._phase_started)
            so_far = self._worked(self._phase_started)
            phases.append((state.next_phase or Phase.TOOLS, began, so_far))
        hooks, seconds = self._hooks.so_far(), self._observers.seconds
        return self.draft.so_far(state, hooks, seconds, phases, under_way, waits=self._waits())

    @property
    def outcomes(self) -> tuple[ToolOutcome, ...]:
        """The tool outcomes of the step under way (once it has closed: of the last step)."""
        if self.draft is not None:
            return self.draft.outcomes
        return self.records[-1].tool_outcomes if self.records else ()

    def keep_breakpoint_error(self, error: ErrorInfo) -> None:
        """A breakpoint predicate raised after the last phase: its step's record keeps it.

        That is the step under way; between steps, the step before (its record has then gone
        to the observers already, so only this process's result shows it).
        """
        draft = self.draft
        if draft is not None:
            kept = (*draft.breakpoint_errors, error)
            self.draft = draft.model_copy(update={"breakpoint_errors": kept})
        elif self.records:
            last = self.records[-1]
            kept = (*last.breakpoint_errors, error)
            self.records[-1] = last.model_copy(update={"breakpoint_errors": kept})
