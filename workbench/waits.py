"""When a run stepped by hand waited on whoever steps it, and what a stretch of it worked.

A run stepped by hand (`AgentRun`) does nothing between two calls of its driver while the
person reads. The root of its tree keeps those stretches (`Waits`), its sub-runs share them
through the gate (`StepGate.waits`), each step record keeps those since the step before
(`StepRecord.waits`), its step spans carry them (``workbench.wait`` events) and every view
leaves them out (`wb.Trace`). Records keep the wall clock; `time_worked` is what a stretch of
it worked.
"""

from __future__ import annotations

import bisect
import contextlib
import time
from collections.abc import Iterator, Sequence
from typing import Literal

from workbench._record import Record

__all__ = ["SHORTEST", "Wait", "Waits", "left_out", "time_worked", "waited_text"]

SHORTEST = 0.05
"""Seconds a stretch between two driver calls lasts before it counts as a wait on the person.

Nobody presses again within a twentieth of a second; code driving a run (``while
run.next_phase(): ...``, `Agent.iterate`) comes back within microseconds to milliseconds. Those
gaps are not waits: a run driven from code records none and is drawn as it ran, and its step
records, store and spans do not fill up with thousands of them (the OpenTelemetry SDK keeps only
a span's last 128 events). The views say nothing under it either (`left_out`).
"""


def waited_text(seconds: float) -> str:
    """A wait as a person reads it: ``12.3 s``, ``4 min 12 s``, ``2 h 5 min``, ``3 d 4 h``.

    A run resumed days after its pause waited days; "259200.3 s" says it badly.

    >>> waited_text(12.34), waited_text(252), waited_text(7500), waited_text(273600)
    ('12.3 s', '4 min 12 s', '2 h 5 min', '3 d 4 h')
    """
    if seconds < 59.95:
        return f"{seconds:.1f} s"
    minutes, rest = divmod(round(seconds), 60)
    if minutes < 60:
        return f"{minutes} min {rest} s"
    hours, minutes = divmod(minutes, 60)
    if hours < 24:
        return f"{hours} h {minutes} min"
    days, hours = divmod(hours, 24)
    return f"{days} d {hours} h"


def left_out(seconds: float) -> str:
    """What the views of a stepped run say they left out: ``4 min 12 s waiting on you left out``.

    Empty under `SHORTEST`: a run nobody stepped, or one driven from code, waited on nobody.
    """
    return f"{waited_text(seconds)} waiting on you left out" if seconds >= SHORTEST else ""


class Wait(Record):
    """A stretch a stepped run waited on whoever steps it: between two presses, or a drawing.

    A drawing is a view showing the run between its phases (`Waits.showing`): nobody waited
    on a person then, and the views say so apart (`kind`).
    """

    started_at: float
    """When the driver's call returned (`time.time()`)."""
    duration: float
    """Seconds until its next call (up to now for a wait still under way)."""
    kind: Literal["person", "drawing"] = "person"
    """What the run waited on: whoever steps it (between presses, a pause), or its views
    drawing it (`Waits.showing`: the Stepper redrawing a run driven from a cell)."""

    @property
    def ended_at(self) -> float:
        """When the wait ended (`time.time()`)."""
        return self.started_at + self.duration


def time_worked(started_at: float | None, seconds: float, waits: Sequence[Wait]) -> float:
    """Seconds of the stretch from ``started_at`` that were not ``waits`` on the person.

    A tool call that waited on the sub-runs stepped into lasted (`ToolOutcome.duration`, its
    span's wall-clock length) through every press inside it; its work is this.
    """
    if started_at is None:
        return seconds
    end = started_at + seconds
    waited = sum(max(0.0, min(end, w.ended_at) - max(started_at, w.started_at)) for w in waits)
    return max(0.0, seconds - waited)


class Waits:
    """The waits of one stepped run tree: the stretches between its driver's calls.

    The run stepped by hand (`AgentRun`, the root of its tree) marks each of its driver's calls
    (`back` as one begins, `away` as it returns); between two calls nothing in the tree moves
    (its sub-runs wait at the gate), so each stretch is the person reading; so is each drawing
    of the run for them (`showing`), even inside a call. Every run of the tree shares the log:
    the root's own, the sub-runs' through the gate. Their phases leave the waits out of their
    time (`StepLog._worked`) and their step records keep them.
    """

    def __init__(self) -> None:
        self._kept: list[Wait] = []
        self._ends: list[float] = []
        """When each kept wait ended, in order (a run stepped from code keeps thousands)."""
        self._seconds = 0.0
        self._since: tuple[float, float] | None = None
        """The wait under way: when it began, by `time.time` and by `time.perf_counter`."""
        self._shown: list[Wait] = []
        """The run's drawings during the wait under way: kept if the wait is too short to be."""

    def away(self, since: float | None = None) -> None:
        """The driver's call returned: a wait begins (if one is not under way).

        ``since``: it began then (`time.time()`), before this log was made: a paused run resumed
        in a new `AgentRun` waited from its pause (`AgentState.paused_at`).
        """
        if self._since is None:
            now = time.time()
            began = now if since is None else min(since, now)
            self._since = (began, time.perf_counter() - (now - began))

    def back(self) -> None:
        """The driver calls again: the wait under way, if any, ends."""
        self._end(SHORTEST)

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        """The run is shown (a view redraws it, `AgentRun.watch`): a wait, whatever its length.

        The Stepper redraws a run on the move inside the call that drives it (between phases,
        at most every quarter second: `stepper._REDRAW_EVERY`), and as each call ends. That time is
        spent showing the run, not running it: left in, a step's time read its redraws. A
        stretch between two calls counts only from `SHORTEST` (code driving the run comes
        back within microseconds); the drawings inside it count even when it does not. A
        run nobody watches has none of these.
        """
        if self._since is None:  # inside a driver's call: the drawing is a wait of its own
            self.away()
            try:
                yield
            finally:
                self._end(0.0, "drawing")
            return
        began = (time.time(), time.perf_counter())
        try:
            yield
        finally:
            seconds = time.perf_counter() - began[1]
            self._shown.append(Wait(started_at=began[0], duration=seconds, kind="drawing"))

    def _end(self, shortest: float, kind: Literal["person", "drawing"] = "person") -> None:
        """The wait under way, if any, ends: kept if it lasted ``shortest``, else its drawings."""
        since, self._since = self._since, None
        shown, self._shown = self._shown, []
        if since is None:
            return
        seconds = time.perf_counter() - since[1]
        whole = Wait(started_at=since[0], duration=seconds, kind=kind)
        for wait in [whole] if seconds >= shortest else shown:
            self._kept.append(wait)
            self._ends.append(wait.ended_at)
            self._seconds += wait.duration

    def seconds(self) -> float:
        """Seconds waited so far, the wait under way included."""
        under_way = self._under_way()
        return self._seconds + (under_way.duration if under_way is not None else 0.0)

    def _under_way(self) -> Wait | None:
        """The wait under way up to now, once it has lasted `SHORTEST`."""
        since = self._since
        if since is None or (seconds := time.perf_counter() - since[1]) < SHORTEST:
            return None
        return Wait(started_at=since[0], duration=seconds)

    def since(self, start: float) -> tuple[Wait, ...]:
        """The waits that ended after ``start`` (`time.time()`), cut to begin there at the earliest.

        The wait under way counts up to now.
        """
        found = self._kept[bisect.bisect_right(self._ends, start) :]
        if (under_way := self._under_way()) is not None:
            found.append(under_way)
        return tuple(
            w
            if w.started_at >= start
            else w.model_copy(update={"started_at": start, "duration": w.ended_at - start})
            for w in found
            if w.ended_at > start
        )
