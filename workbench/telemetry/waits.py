"""The time a run stepped by hand waited on the person, left out of its spans' times.

A run stepped by hand does nothing between two presses while the person reads; its spans, as
recorded, run through those waits (a step, its run, a tool call that waited on the sub-runs
stepped into), so drawn as they happened its work is slivers between long empty stretches.
The run records each wait (`StepRecord.waits`, a ``workbench.wait`` event on its step span),
so a trace read from anywhere (the live run, the store, a file, a backend) knows exactly when
they were. `Trace.of` closes them here: every time of the trace's spans moves back by the
waits before it, so a span's length is the time worked inside it, and nothing is guessed
from gaps: a trace without such events (a run nobody stepped, another framework's) is as
recorded.

The waits are closed per trace id: a telemetry can hold other runs' traces that ran while
a stepped run waited, and those are not shortened.
"""

from __future__ import annotations

import bisect
import math
from collections.abc import Iterable, Mapping, Sequence
from typing import NamedTuple

from workbench.telemetry import names as n
from workbench.telemetry.spandata import SpanData

__all__ = ["Recorded", "Stretches", "recorded_waits", "seconds_waited", "waits_closed"]

Stretches = tuple[tuple[int, int], ...]
"""Times of a trace's waits: ``(start_ns, end_ns)``, in order, none overlapping."""


class Recorded(NamedTuple):
    """The waits a trace's spans recorded: closed alike, said apart."""

    stretches: dict[str, Stretches]
    """Every wait, merged, by trace id."""
    drawn: float
    """Seconds of them that were the views drawing the run (``workbench.wait.drawing``): no
    person waited then, and the views say it apart from the waits on one."""


def recorded_waits(spans: Iterable[SpanData]) -> Recorded:
    """The waits each trace's spans recorded (``workbench.wait`` events), merged, by trace id.

    A run and its sub-runs stepped into record the same waits (the tree waits as one). A run
    paused for an answer and resumed goes on in a trace of its own, and the wait for the answer
    lies between its two traces: the waits of one run (its root spans' ``workbench.run.id``)
    close all the traces it made, each of which gets them all. A wait lies within its run's
    spans (between two presses, its run is open); a damaged file's is cut to them (a length of
    1e300 seconds cannot even be a time in ns), and one whose length is not a positive finite
    number of seconds is left out: a bogus event never moves a span out of the run's extent.
    """
    spans = list(spans)
    told: dict[str, list[tuple[int, float, bool]]] = {}  # trace id: (when, seconds, drawing)
    for span in spans:
        for event in span.events:
            seconds = event.attributes.get(n.WAIT_SECONDS) if event.name == n.EVENT_WAIT else None
            if isinstance(seconds, bool) or not isinstance(seconds, int | float):
                continue
            if math.isfinite(seconds) and seconds > 0:
                drawing = event.attributes.get(n.WAIT_DRAWING) is True
                told.setdefault(span.trace_id, []).append((event.time_ns, seconds, drawing))
    if not told:  # a trace nobody stepped: no pass more over its spans
        return Recorded({}, 0.0)
    runs = _runs(spans)
    extents: dict[str, tuple[int, int]] = {}  # each run's, over all its traces
    for span in spans:
        run = runs[span.trace_id]
        first, last = extents.get(run, (span.start_ns, span.end_ns))
        extents[run] = (min(first, span.start_ns), max(last, span.end_ns))
    found: dict[str, list[tuple[int, int]]] = {}
    drawings: list[tuple[int, int]] = []
    for trace_id, waits in told.items():
        run = runs[trace_id]
        first, last = extents[run]
        for at, seconds, drawing in waits:
            start, end = max(at, first), at + round(min(seconds * 1e9, last - at))
            if end > start:
                found.setdefault(run, []).append((start, end))
                if drawing:
                    drawings.append((start, end))
    merged = {run: _merged(stretches) for run, stretches in found.items()}
    drawn = sum(end - start for start, end in _merged(drawings)) / 1e9
    return Recorded({t: merged[run] for t, run in runs.items() if run in merged}, drawn)


def _runs(spans: Sequence[SpanData]) -> dict[str, str]:
    """The run each trace is of: its root's ``workbench.run.id``, else the trace's own id."""
    runs = {span.trace_id: span.trace_id for span in spans}
    for span in spans:
        run = span.attributes.get(n.RUN_ID) if span.parent_id is None else None
        if isinstance(run, str) and run:
            runs[span.trace_id] = run
    return runs


def _merged(stretches: list[tuple[int, int]]) -> Stretches:
    merged: list[tuple[int, int]] = []
    for start, end in sorted(stretches):
        if merged and start <= merged[-1][1]:
            merged[-1] = (merged[-1][0], max(merged[-1][1], end))
        else:
            merged.append((start, end))
    return tuple(merged)


def waits_closed(spans: Sequence[SpanData]) -> tuple[list[SpanData], Recorded]:
    """The spans with their traces' recorded waits closed, and those waits (`recorded_waits`).

    Every time (a span's start and end, its events') moves back by the waits before it, and
    a time inside a wait to where that wait began. The ``workbench.wait`` events go: the
    spans' times no longer hold the waits, and closing them again would move them twice.
    """
    recorded = recorded_waits(spans)
    if not recorded.stretches:
        return list(spans), recorded
    shifts = {trace_id: _Shift(stretches) for trace_id, stretches in recorded.stretches.items()}
    closed = []
    for span in spans:
        shift = shifts.get(span.trace_id)
        if shift is None:
            closed.append(span)
            continue
        events = tuple(
            e.model_copy(update={"time_ns": shift(e.time_ns)})
            for e in span.events
            if e.name != n.EVENT_WAIT
        )
        update = {"start_ns": shift(span.start_ns), "end_ns": shift(span.end_ns), "events": events}
        closed.append(span.model_copy(update=update))
    return closed, recorded


def seconds_waited(waits: Mapping[str, Stretches]) -> float:
    """Seconds the traces waited, by the clock: a stretch two of them waited counts once."""
    merged = _merged([stretch for stretches in waits.values() for stretch in stretches])
    return sum(end - start for start, end in merged) / 1e9


class _Shift:
    """Where a time lands once the waits before it are left out."""

    def __init__(self, stretches: Stretches) -> None:
        self._starts = [start for start, _ in stretches]
        self._stretches = stretches
        self._before: list[int] = []  # how long the waits up to and including each one are
        total = 0
        for start, end in stretches:
            total += end - start
            self._before.append(total)

    def __call__(self, at: int) -> int:
        i = bisect.bisect_right(self._starts, at)  # the waits that began at or before ``at``
        if not i:
            return at
        start, end = self._stretches[i - 1]
        earlier = self._before[i - 2] if i > 1 else 0
        return at - earlier - (min(at, end) - start)
