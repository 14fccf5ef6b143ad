"""`trace_of`: the one door from anything that has a trace to the `Trace` every view reads.

TraceView, the trace explorer, the Stepper's timeline, the report, ``workbench trace`` and the
DataFrame helpers each call it once, at their entry, and read only the `Trace` it returns. The
sources, by type:

- a `Trace` is itself;
- a file path, a JSON text or a backend URL is read by `load_trace`;
- a `Telemetry` is every span it collected;
- OpenTelemetry SDK spans (``telemetry.spans``, a processor's) are read as they are;
- a run (a `RunResult`, live or loaded from a store; the results of its executions, paused and
  resumed, or a session's; an `AgentRun`) is its run tree: with ``telemetry=``, the spans that
  telemetry recorded of it; without, the spans its records make, written by the telemetry's own
  `SpanWriter` (`spans_from_run`), which are the same spans. Its step records come along, for
  the views that draw a step's messages.
- an `AgentRun` stopped anywhere (a breakpoint, manual stepping, inside a sub-run at any depth)
  is its spans so far (`AgentRun.so_far`): every closed step, and each step under way as it
  stands, with the run spans, steps and calls still open marked `SpanData.in_progress` (their
  end is the moment the trace was taken). A telemetry holds only spans that ended, so such a
  run is read from its records, with or without ``telemetry=``.
- a stored run whose process ended while it ran (a run list's ``interrupted``) has open spans
  too, that will never end: the caller that knows it (`RunsBrowser`, ``Stepper.of(run,
  gone=...)``, ``workbench report``) says why as ``interrupted=``, and the trace carries it
  (`Trace.interrupted`): its views draw those spans cut off, not "so far".
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from workbench._record import collector_paused
from workbench.agent_run import AgentRun
from workbench.combined import combine_results
from workbench.errors import UsageError
from workbench.records import RunResult, StepRecord
from workbench.telemetry import names as n
from workbench.telemetry.core import Telemetry
from workbench.telemetry.load import load_trace
from workbench.telemetry.rebuild import spans_from_run
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.trace import Trace

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["RunSource", "TraceSource", "combine_results", "run_tree", "trace_of"]

RunSource: TypeAlias = RunResult | AgentRun | Sequence[RunResult]
"""A run: a result (live or stored), a stepped run, or the results of several executions."""
TraceSource: TypeAlias = "RunSource | Trace | Telemetry | Sequence[ReadableSpan] | str | Path"
"""Everything `trace_of` reads."""


def trace_of(
    source: TraceSource, *, telemetry: Telemetry | None = None, interrupted: str = ""
) -> Trace:
    """The `Trace` of ``source`` (see the module docstring for what each source gives).

    ``telemetry`` is for a run: the spans it recorded of that run tree (a long session collects
    many runs in one telemetry); a run it has no spans of gets the spans its records make.
    ``interrupted`` is what a run list knows that a stored run's records do not: why it will
    never go on (`workbench.runlist.writer_note` of a run listed ``interrupted``); it becomes
    `Trace.interrupted`.
    """
    trace = _trace_of(source, telemetry)
    return trace.model_copy(update={"interrupted": interrupted}) if interrupted else trace


def _trace_of(source: TraceSource, telemetry: Telemetry | None) -> Trace:
    if isinstance(source, AgentRun) and not source.done:  # stopped anywhere: its spans so far
        so_far = source.so_far()
        return _rebuilt([so_far.result], so_far.open_steps)
    runs = _runs(source)
    if runs is None:
        if telemetry is not None:
            raise UsageError(
                f"telemetry= picks a run's spans out of a telemetry; a {type(source).__name__} "
                "has its own spans"
            )
        with collector_paused():
            return _spans_source(source)
    if telemetry is not None:
        with collector_paused():
            recorded = _recorded(telemetry, runs)
            if recorded is not None:
                # a copy with other spans derives again; with the same spans it keeps the tree
                return recorded.model_copy(update={"steps": _tree_steps(runs)})
    return _rebuilt(runs)


def _tree_steps(runs: Sequence[RunResult]) -> tuple[StepRecord, ...]:
    return tuple(step for run in runs for _, tree_run in run_tree(run) for step in tree_run.steps)


def _rebuilt(
    runs: Sequence[RunResult], open_steps: frozenset[tuple[str, str, int]] = frozenset()
) -> Trace:
    """The trace the runs' records make, what is still under way marked `SpanData.in_progress`.

    Open are: the run span of an execution still running, the steps ``open_steps`` names, and
    the calls a record so far has as ``running``. Each was written up to the moment the trace
    was taken: its end is that moment, not an end.
    """
    with collector_paused():
        trace = Trace.from_spans(
            [s for run in runs for s in spans_from_run(run)], steps=_tree_steps(runs)
        )
        spans = [
            s.model_copy(update={"in_progress": True}) if _open(s, open_steps) else s
            for s in trace.spans
        ]
        return trace.model_copy(update={"spans": tuple(spans)})


def _open(span: SpanData, open_steps: frozenset[tuple[str, str, int]]) -> bool:
    attributes = span.attributes
    match span.category:
        case "agent":
            return attributes.get(n.RUN_STATUS) == "running"
        case "step":
            key = (
                attributes.get(n.RUN_ID),
                attributes.get(n.EXECUTION_ID),
                attributes.get(n.STEP_INDEX),
            )
            return key in open_steps
        case "tool":
            return attributes.get(n.TOOL_STATUS) == "running"
    return False


def _runs(source: TraceSource) -> list[RunResult] | None:
    """The runs of a run source, each execution of a run combined; None for other sources."""
    match source:
        case RunResult():
            return [source]
        case AgentRun():
            return [source.result]
        case str() | Path() | Trace() | Telemetry():
            return None
        case Sequence() if source and all(isinstance(item, RunResult) for item in source):
            results = [item for item in source if isinstance(item, RunResult)]
            by_run: dict[str, list[RunResult]] = {}
            for result in results:
                by_run.setdefault(result.run_id, []).append(result)
            return [combine_results(group) for group in by_run.values()]
    return None


def _spans_source(source: TraceSource) -> Trace:
    match source:
        case Trace():
            return source
        case str() | Path():
            return load_trace(source)
        case Telemetry():
            return source.trace()
        case Sequence() if not isinstance(source, bytes | bytearray):  # bytes: ints, no spans
            return Trace.from_spans(_sdk_spans(source))
    raise TypeError(
        "trace_of reads a run (RunResult, AgentRun, the results of its executions), a Trace, "
        f"a Telemetry, OpenTelemetry spans, or a trace file or backend URL; got "
        f"{type(source).__name__}"
        + (" (a trace's JSON goes as text: decode it)" if isinstance(source, bytes) else "")
    )


def _sdk_spans(items: Sequence[object]) -> list[ReadableSpan]:
    from opentelemetry.sdk.trace import ReadableSpan

    spans = [item for item in items if isinstance(item, ReadableSpan)]
    if len(spans) != len(items):
        odd = next(type(item).__name__ for item in items if not isinstance(item, ReadableSpan))
        raise TypeError(f"trace_of reads OpenTelemetry SDK spans; the sequence holds a {odd}")
    return spans


def run_tree(run: RunResult) -> list[tuple[int, RunResult]]:
    """The run and every sub-run below it, depth first in call order, with their depth."""
    out: list[tuple[int, RunResult]] = []
    stack = [(0, run)]
    while stack:
        depth, current = stack.pop()
        out.append((depth, current))
        stack.extend((depth + 1, child) for child in reversed(current.children))
    return out


def _recorded(telemetry: Telemetry, runs: Sequence[RunResult]) -> Trace | None:
    """The telemetry's spans of the runs' trees: their runs, and sub-runs found by their spans.

    A long session collects many runs in one telemetry; only this tree's are kept. A telemetry
    holding this tree alone (the usual notebook) gives its own kept `Telemetry.trace`, so the
    run's views and the telemetry's DataFrames share one tree, derived once. None when the
    telemetry has no span of these runs.
    """
    every = telemetry.span_data()
    runs_of = [(s.attributes.get(n.RUN_ID), s.attributes.get(n.PARENT_RUN_ID)) for s in every]
    wanted = {tree_run.run_id for run in runs for _, tree_run in run_tree(run)}
    while True:  # sub-runs the records do not hold (yet): their spans name their parent run
        below = {str(run) for run, parent in runs_of if parent in wanted}
        if below <= wanted:
            break
        wanted |= below
    spans = [s for s, (run, _) in zip(every, runs_of, strict=True) if run in wanted]
    if not spans:
        return None
    if len(spans) < len(every):  # other runs' spans too: the whole trace is not this tree's
        return Trace.of(spans)
    whole = telemetry.trace()  # kept, unless a span arrived since: then it is not these spans
    return whole if len(whole.spans) == len(spans) else Trace.of(spans)
