"""The observer seam: how the loop tells telemetry, run stores and a user's code what happens.

The loop calls a few `RunObserver` methods at fixed points (run, step, phase, model call, tool
call, hook, step end, run end) with explicit start times. It holds its observers as one
`Observers`, itself a `RunObserver`, which passes each event on, times them and keeps one that
raises from breaking the run.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Sequence

from workbench.messages import Message, ModelResponse
from workbench.records import HookTiming, PhaseEvent, StepContext, StepRecord, ToolOutcome
from workbench.state import AgentState, TraceRef

__all__ = ["Observers", "RunObserver"]


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
        request_messages: Sequence[Message],
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
        request_messages: Sequence[Message],
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
