"""The run observer that writes a live execution's spans (DESIGN §5) as its steps end.

One `SpanObserver` serves one execution. It opens the run span when the execution starts (its
trace id is the run's, shown while the run goes on) and hands each finished `StepRecord` to the
`SpanWriter`, which makes the step's spans from the record's own times: the same function
``export`` and ``push`` use for stored runs, so a live trace and a pushed one are the same spans.
Nothing depends on the current OTel context surviving the loop's yields. A failure here never
breaks the run: the loop's `Observers` logs it and goes on.
"""

from __future__ import annotations

import time
from collections.abc import Callable

from workbench.observing import RunObserver
from workbench.records import HookTiming, StepContext, StepRecord
from workbench.state import AgentState, TraceRef
from workbench.telemetry.writer import Instruments, SpanWriter
from workbench.traceids import new_span_id

__all__ = ["Instruments", "SpanObserver"]


class SpanObserver(RunObserver):
    """Writes the spans of one execution: the run span now, each step's when the step ends."""

    def __init__(
        self,
        instruments: Instruments,
        provider: str | None,
        model_name: str,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self._writer = SpanWriter(instruments, provider, model_name)
        self._clock = clock
        self._snapshot: StepContext | None = None
        self._started = 0.0
        self._unrecorded: list[tuple[int, HookTiming]] = []
        """Hooks reported since the last step record: a record that comes later holds them."""

    def run_started(self, state: AgentState) -> None:
        """Open the run span; link it to the execution this one continues, if any."""
        self._started = self._clock() / 1e9
        chosen = (state.trace_id, new_span_id()) if state.trace_id else None
        self._writer.begin(state, chosen)

    def trace_context(self) -> TraceRef | None:
        """The execution's trace and run span, kept in the state for a later resume to link."""
        return self._writer.ref

    def step_started(self, snapshot: StepContext) -> None:
        """Keep the snapshot: the step's spans are written from it and its record."""
        self._snapshot = snapshot

    def hook_called(
        self, step: int, timing: HookTiming, started_at: float, error: str | None
    ) -> None:
        """Remember the hook: its span comes with the step record that holds it."""
        self._unrecorded.append((step, timing))

    def step_ended(self, record: StepRecord) -> None:
        """Write the step's spans from its record."""
        snapshot = self._snapshot
        if snapshot is not None and snapshot.id != record.snapshot_id:
            snapshot = None
        self._writer.write_step(record, snapshot)
        self._snapshot = None
        self._unrecorded.clear()

    def run_ended(self, state: AgentState) -> None:
        """Write hooks no step record holds (they ran after the last one), close the run span."""
        for step, timing in self._unrecorded:
            self._writer.write_hook(step, timing, self._started)
        self._unrecorded.clear()
        self._writer.close_run(state, self._clock() / 1e9)
