"""The spans of a stored run, written from its records by the live run's own `SpanWriter`.

The CLI's ``export`` and ``push`` work on stored runs, which keep their `StepRecord`s and
`StepContext`s but not their spans. The records carry everything a step's spans say, times
included (phase starts, the model call, each tool call and hook), and the live observer writes
a step's spans from its record too, so what comes out is the live trace: the same tree, names,
attributes and times, under the same trace id and run span id (taken from the state's ``trace``
reference when the run had telemetry).

The notebook's views draw a run without telemetry from these spans too (`spans_from_run`), so
what a view shows of a stored or unfinished run is what ``export`` would send.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Literal

from workbench.records import StepContext, StepRecord
from workbench.state import AgentState, ExecutionStatus, PendingCall, TraceRef
from workbench.telemetry.core import RunLike, Telemetry
from workbench.telemetry.names import Conventions
from workbench.telemetry.writer import Instruments, SpanWriter, step_bounds
from workbench.traceids import new_span_id, new_trace_id

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["rebuild_telemetry", "spans_from_run"]


def rebuild_telemetry(
    run: RunLike,
    *,
    capture_content: bool = False,
    otlp_endpoint: str | Literal[False] | None = None,
    service_name: str = "workbench",
    redact: Iterable[str | re.Pattern[str]] = (),
    conventions: Conventions = "current",
) -> Telemetry:
    """A `Telemetry` holding the spans of ``run``, written from its records.

    With ``otlp_endpoint`` the spans are also sent there (call `Telemetry.shutdown` to wait for
    the delivery and get the counts).
    """
    telemetry = Telemetry(
        capture_content=capture_content,
        otlp_endpoint=otlp_endpoint,
        service_name=service_name,
        redact=redact,
        conventions=conventions,
    )
    write_run(run, telemetry._instruments)
    return telemetry


def spans_from_run(
    run: RunLike,
    *,
    capture_content: bool = False,
    service_name: str = "workbench",
    redact: Iterable[str | re.Pattern[str]] = (),
    conventions: Conventions = "current",
) -> list[ReadableSpan]:
    """The spans of ``run`` written from its records, in memory (options: `rebuild_telemetry`'s).

    Nothing is sent anywhere, whatever the ``OTEL_EXPORTER_OTLP_*`` variables say: the views
    call this each time they draw a run, which must not push it. Only the OpenTelemetry API and
    SDK are needed (the ``notebook`` extra), not the OTLP exporter.
    """
    telemetry = rebuild_telemetry(
        run,
        capture_content=capture_content,
        otlp_endpoint=False,
        service_name=service_name,
        redact=redact,
        conventions=conventions,
    )
    return telemetry.spans


def write_run(run: RunLike, instruments: Instruments) -> None:
    """Write the spans of every execution of ``run``, and of its sub-runs, with ``instruments``."""
    snapshots = {s.id: s for s in run.snapshots}
    executions = [
        list(group) for _, group in itertools.groupby(run.steps, key=lambda s: s.execution_id)
    ]
    provider = next((s.provider for s in run.snapshots if s.provider), None)
    link: TraceRef | None = None
    for number, steps in enumerate(executions):
        last = number == len(executions) - 1
        final = run.state if last else _paused(run.state, steps)
        link = _execution(instruments, provider, snapshots, steps, final, link)
    for child in getattr(run, "children", ()):  # sub-runs: in the same trace, under their calls
        write_run(child, instruments)


def _execution(
    instruments: Instruments,
    provider: str | None,
    snapshots: dict[str, StepContext],
    steps: Sequence[StepRecord],
    final: AgentState,
    link: TraceRef | None,
) -> TraceRef:
    """One execution: its run span, its steps' spans, its outcome.

    The opening state carries this execution's trace id, not the run's last one: a sub-run
    paused and resumed with its parent ran each execution in the trace of the parent's
    execution that ran it, under that execution's ``execute_tool`` span.
    """
    first = steps[0]
    snapshot = snapshots.get(first.snapshot_id or "")
    model = snapshot.model_name if snapshot else _model_name(steps)
    writer = SpanWriter(instruments, provider, model)
    begun = first.index - (0 if snapshot is None else 1)
    ref = _live_ref(steps, snapshots, final)
    ids = (ref.trace_id, ref.span_id) if ref else (new_trace_id(), new_span_id())
    opening = final.model_copy(
        update={
            "execution_id": first.execution_id,
            "step": begun,
            "trace": link,
            "trace_id": ids[0],
        }
    )
    begun_ref = writer.begin(opening, ids)
    for record in steps:
        writer.write_step(record, snapshots.get(record.snapshot_id or ""))
    writer.close_run(final, step_bounds(first)[0])
    return begun_ref


def _paused(state: AgentState, steps: Sequence[StepRecord]) -> AgentState:
    """The state an earlier execution ended in: paused, waiting for its pending calls."""
    last = steps[-1]
    pending = tuple(
        PendingCall(call_id=o.call_id, tool=o.name, arguments=o.arguments, reason=o.content)
        for o in last.tool_outcomes
        if o.status == "pending"
    )
    usage = state.usage.model_copy(
        update={
            "input_tokens": sum(s.usage.input_tokens for s in steps),
            "output_tokens": sum(s.usage.output_tokens for s in steps),
            "requests": sum(s.usage.requests for s in steps),
        }
    )
    return state.model_copy(
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


def _live_ref(
    steps: Sequence[StepRecord], snapshots: dict[str, StepContext], final: AgentState
) -> TraceRef | None:
    """The live trace id and run span id of this execution, when they were kept."""
    execution_id = steps[0].execution_id
    found = [snapshots.get(s.snapshot_id or "") for s in steps]
    states = [s.state for s in found if s is not None]
    for state in [*states, final]:
        ref = state.trace
        if ref is not None and ref.execution_id == execution_id:
            return ref
    for state in [*states, final]:  # a run without telemetry: the trace id it was given
        if state.trace_id and state.execution_id == execution_id:
            return TraceRef(
                trace_id=state.trace_id,
                span_id=new_span_id(),
                run_id=state.run_id,
                execution_id=execution_id,
            )
    return None


def _model_name(steps: Sequence[StepRecord]) -> str:
    for step in steps:
        if step.response is not None and step.response.model_name:
            return step.response.model_name
    return "unknown"
