"""Spans rebuilt from a finished run's records, for runs that come back from a store.

The CLI's ``export`` and ``push`` work on stored runs, which keep their `StepRecord`s and
`StepContext`s but not their spans. The records have everything the spans say (messages, tool
outcomes, usage, and the timing breakdown), so the same `SpanObserver` is driven again with the
recorded times. What comes out matches the live trace: the same tree, names and attributes, the
same trace id and run span id (taken from the state's ``trace`` reference when the run had
telemetry). Start times inside a step are laid out from the recorded durations in phase order
(tool calls all start when TOOLS starts), so they are exact to the phase, not to the microsecond.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.records import HookTiming, PhaseEvent, StepContext, StepRecord
from workbench.state import (
    AgentState,
    ExecutionStatus,
    PendingCall,
    Phase,
    TraceRef,
)
from workbench.telemetry.core import RunLike, Telemetry, _resource
from workbench.telemetry.observer import SpanObserver

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["rebuild_telemetry", "spans_from_run"]

_BEFORE_STEP = ("SessionStart", "UserPromptSubmit", "PreCompact")
"""Hooks that fire before the step opens: children of the run span, as they are live."""
_IN_TOOLS: tuple[str, ...] = ("PreToolUse", "PostToolUse", "PostToolUseFailure")
_IN_TOOLS += ("SubagentStart", "SubagentStop", "Notification")
_IN_CONTINUATION = ("Stop",)


def rebuild_telemetry(
    run: RunLike,
    *,
    capture_content: bool = False,
    otlp_endpoint: str | None = None,
    service_name: str = "workbench",
    redact: Iterable[str | re.Pattern[str]] = (),
) -> Telemetry:
    """A `Telemetry` holding the spans of ``run`` rebuilt from its records.

    With ``otlp_endpoint`` the spans are also sent there (call `Telemetry.shutdown` to wait for
    the delivery and get the counts).
    """
    from opentelemetry.sdk.trace import TracerProvider

    ids = _ReplayIds()
    provider = TracerProvider(
        resource=_resource(service_name), id_generator=ids, shutdown_on_exit=False
    )
    telemetry = Telemetry(
        provider,
        capture_content=capture_content,
        otlp_endpoint=otlp_endpoint,
        redact=redact,
    )
    _Replay(run, telemetry, ids).run()
    return telemetry


def spans_from_run(run: RunLike, **options: Any) -> list[ReadableSpan]:
    """The spans of ``run`` rebuilt from its records (options as in `rebuild_telemetry`)."""
    return rebuild_telemetry(run, **options).spans


def _ReplayIds() -> Any:  # a factory: the class needs the SDK, imported on demand
    from opentelemetry.sdk.trace.id_generator import RandomIdGenerator

    class ReplayIds(RandomIdGenerator):
        """Hands out chosen ids first (the live run's trace and run span), random ones after."""

        def __init__(self) -> None:
            self.trace_id: int | None = None
            self.span_id: int | None = None

        def generate_trace_id(self) -> int:
            chosen, self.trace_id = self.trace_id, None
            return chosen if chosen is not None else super().generate_trace_id()

        def generate_span_id(self) -> int:
            chosen, self.span_id = self.span_id, None
            return chosen if chosen is not None else super().generate_span_id()

    return ReplayIds()


class _Clock:
    def __init__(self) -> None:
        self.now = 0

    def __call__(self) -> int:
        return self.now

    def set(self, seconds: float) -> None:
        self.now = int(seconds * 1e9)


class _Replay:
    """Drives a `SpanObserver` through a run's executions from their step records."""

    def __init__(self, run: RunLike, telemetry: Telemetry, ids: Any) -> None:
        self.run_ = run
        self.telemetry = telemetry
        self.ids = ids
        self.snapshots = {s.id: s for s in run.snapshots}
        self.clock = _Clock()

    def run(self) -> None:
        executions = [
            list(group)
            for _, group in itertools.groupby(self.run_.steps, key=lambda s: s.execution_id)
        ]
        link: TraceRef | None = None
        for number, steps in enumerate(executions):
            last = number == len(executions) - 1
            link = self._execution(steps, link, last)

    def _execution(
        self, steps: Sequence[StepRecord], link: TraceRef | None, last: bool
    ) -> TraceRef | None:
        final = self.run_.state
        first = steps[0]
        snapshot = self.snapshots.get(first.snapshot_id or "")
        resumed = snapshot is None
        model = snapshot.model_name if snapshot else self._model_name(steps)
        observer = SpanObserver(self.telemetry._instruments, None, model, clock=self.clock)
        self._choose_ids(steps, final, last)
        start = self._step_start(first) - sum(h.duration for h in _hooks(first, _BEFORE_STEP))
        self.clock.set(start)
        observer.run_started(
            final.model_copy(
                update={
                    "execution_id": first.execution_id,
                    "step": first.index - (0 if resumed else 1),
                    "trace": link,
                }
            )
        )
        end = start
        for record in steps:
            end = self._step(observer, record)
        self.clock.set(end)
        observer.run_ended(final if last else self._paused(steps))
        return observer.trace_context()

    def _step(self, observer: SpanObserver, record: StepRecord) -> float:
        timing = record.timing
        state = self.run_.state
        snapshot = self.snapshots.get(record.snapshot_id or "")
        t = self._step_start(record)
        before = _hooks(record, _BEFORE_STEP)
        self._fire(observer, record.index, before, t - sum(h.duration for h in before))
        if snapshot is not None:
            observer.step_started(snapshot)
            observer.phase_ended(
                PhaseEvent(
                    phase=Phase.PREPARE, step=record.index, state=state, duration=timing.prepare
                ),
                t,
            )
            t += timing.prepare
        if record.response is not None or timing.inference:
            error = self._error(record, Phase.INFERENCE)
            duration = timing.inference
            observer.model_called(
                record.index, record.messages_in, record.response, t, duration, error
            )
            t += duration
        for outcome in record.tool_outcomes:
            observer.tool_called(record.index, outcome, t)
        self._fire(observer, record.index, _hooks(record, _IN_TOOLS), t, together=True)
        t += timing.tools
        self._fire(observer, record.index, _hooks(record, _IN_CONTINUATION), t)
        if timing.continuation:
            event = PhaseEvent(
                phase=Phase.CONTINUATION,
                step=record.index,
                state=state,
                duration=timing.continuation,
            )
            observer.phase_ended(event, t)
            t += timing.continuation
        known = (*_BEFORE_STEP, *_IN_TOOLS, *_IN_CONTINUATION)
        late = [h for h in record.timing.per_hook if h.event not in known]
        t = self._fire(observer, record.index, late, t)  # SessionEnd: before the step closes
        self.clock.set(t)
        observer.step_ended(record)
        return t

    def _step_start(self, record: StepRecord) -> float:
        """When the step began: PREPARE's start, or its first activity for a resumed step."""
        resumed = record.snapshot_id not in self.snapshots
        return record.started_at - (0.0 if resumed else record.timing.prepare)

    @staticmethod
    def _fire(
        observer: SpanObserver,
        step: int,
        hooks: Sequence[HookTiming],
        at: float,
        *,
        together: bool = False,
    ) -> float:
        """Replay hook invocations from ``at``, one after another (or all at once)."""
        for timing in hooks:
            observer.hook_called(step, timing, at, None)
            at += 0.0 if together else timing.duration
        return at

    def _error(self, record: StepRecord, phase: Phase) -> BaseException | None:
        info = self.run_.state.error
        if info is None or info.step != record.index or info.phase is not phase:
            return None
        return type(info.type, (Exception,), {})(info.message)  # type: ignore[no-any-return]

    def _paused(self, steps: Sequence[StepRecord]) -> AgentState:
        """The state an earlier execution ended in: paused, waiting for its pending calls."""
        last = steps[-1]
        pending = tuple(
            PendingCall(call_id=o.call_id, tool=o.name, arguments=o.arguments, reason=o.content)
            for o in last.tool_outcomes
            if o.status == "pending"
        )
        usage = self.run_.state.usage.model_copy(
            update={
                "input_tokens": sum(s.usage.input_tokens for s in steps),
                "output_tokens": sum(s.usage.output_tokens for s in steps),
                "requests": sum(s.usage.requests for s in steps),
            }
        )
        return self.run_.state.model_copy(
            update={
                "execution_id": last.execution_id,
                "status": ExecutionStatus.PAUSED,
                "stop_reason": None,
                "error": None,
                "step": last.index,
                "pending": pending,
                "usage": usage,
            }
        )

    def _choose_ids(self, steps: Sequence[StepRecord], final: AgentState, last: bool) -> None:
        """Reuse the live trace id and run span id of this execution, when they were kept."""
        execution_id = steps[0].execution_id
        refs = [self.snapshots.get(s.snapshot_id or "") for s in steps]
        states = [s.state for s in refs if isinstance(s, StepContext)]
        if last:
            states.append(final)
        for state in states:
            ref = state.trace
            if ref is not None and ref.execution_id == execution_id:
                self.ids.trace_id = int(ref.trace_id, 16)
                self.ids.span_id = int(ref.span_id, 16)
                return

    @staticmethod
    def _model_name(steps: Sequence[StepRecord]) -> str:
        for step in steps:
            if step.response is not None and step.response.model_name:
                return step.response.model_name
        return "unknown"


def _hooks(record: StepRecord, events: tuple[str, ...]) -> list[HookTiming]:
    return [h for h in record.timing.per_hook if h.event in events]
