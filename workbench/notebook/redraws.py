"""`Redraws`: when the Stepper draws a run, so a run on the move costs neither it nor the page.

Two things set the pace. Each drawing of a run on the move (Run to end; ``run.next_step()`` in a
cell) is a wait of the run's (`AgentRun.showing`), and a person reads no faster than a few
drawings a second: so the Stepper's status, buttons and messages are drawn at most every so
often while phases follow each other, the phases in between only noted, and always as the call
that drives the run ends, so what stays on screen is the run as it stands. A phase that goes on
longer than that (a model answering) is drawn while it goes on, so the page does not show the
phase before it meanwhile.

The timeline is the run so far rebuilt, and a new figure costs the page more than a press's
status and buttons: drawn at every step, a long run's Run to end would be quadratic. So it
waits while a press runs phases and follows a moment after the presses pause; presses in a row
draw it once, and the status of each reaches the page first.

The timers live on the workbench's portal loop, where the run's phases run and the buttons'
work does, whatever thread asks (a press, a cell). Once closed, nothing more is drawn: a timer
due is cancelled, and one asked for from another thread meanwhile is never armed.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Callable, Hashable

from workbench._sync import portal

__all__ = ["Redraws"]


class Redraws:
    """When a widget showing a run draws it, and when its timeline.

    The widget at most every ``every`` seconds while the run moves, and as each call that
    drives it ends; its timeline ``delay`` seconds after the presses pause. ``draw`` draws the
    widget (and calls `drawn`, as any drawing of it does); ``draw_timeline`` draws the timeline;
    ``position`` says where the run stands (the timeline is drawn again when it moved); ``busy``
    is true while a press or code drives the run (the timeline waits).
    """

    def __init__(
        self,
        *,
        draw: Callable[[], None],
        draw_timeline: Callable[[], None],
        position: Callable[[], Hashable],
        busy: Callable[[], bool],
        every: float,
        delay: float,
    ) -> None:
        self._draw, self._draw_timeline = draw, draw_timeline
        self._position, self._busy = position, busy
        self.every, self.delay = every, delay
        self.closed = False
        """`close` was called: nothing more is drawn (the run may go on, driven from code)."""
        self._drawn_at = 0.0
        """When the widget was last drawn (`time.perf_counter`)."""
        self._undrawn = False
        """A change of the run was noted since, not drawn."""
        self._redraw_timer: asyncio.TimerHandle | None = None
        """The drawing due if the phase under way goes on (on the portal loop, `_redraw_due`)."""
        self._timeline_drawn: Hashable | None = None
        """Where the run stood when the timeline was drawn (None: never drawn)."""
        self._timeline_timer: asyncio.TimerHandle | None = None
        """The timeline's drawing due once the presses pause (on the portal loop)."""

    def drawn(self) -> None:
        """The widget was drawn just now, whoever drew it: nothing noted is left undrawn."""
        self._drawn_at, self._undrawn = time.perf_counter(), False

    def later(self) -> bool:
        """Whether a change of the run is only noted, as it came within `every` of a drawing.

        It is then drawn as the call that drives the run ends (its own drawing), or once the
        phase under way has gone on for `every` (`_redraw_due`), whichever comes first.
        """
        if time.perf_counter() - self._drawn_at >= self.every:
            return False
        self._undrawn = True
        if self._redraw_timer is None:
            portal().call_soon_threadsafe(self._arm_redraw)
        return True

    def _arm_redraw(self) -> None:  # on the portal, like the timeline's
        if self._redraw_timer is None and not self.closed:
            due = max(0.0, self._drawn_at + self.every - time.perf_counter())
            self._redraw_timer = portal().call_later(due, self._redraw_due)

    def _redraw_due(self) -> None:  # on the portal: between two awaits of the phase under way
        """Draw a run whose change noted, not drawn, is still the last (a model answering).

        While a phase goes on, the drawing is the phase's time (`AgentRun.showing`): the call
        it waits on is in flight.
        """
        self._redraw_timer = None
        if self._undrawn and not self.closed:
            self._draw()

    def timeline_soon(self) -> None:
        """Draw the timeline once the presses pause, if the run moved and nothing drives it.

        The first drawing is at once (the widget opens with it).
        """
        if self._position() == self._timeline_drawn or self._busy():
            return
        if self._timeline_drawn is None:
            self.timeline_now()
            return
        portal().call_soon_threadsafe(self._arm_timeline)

    def timeline_now(self) -> None:
        """Draw the timeline now if the run moved since it was drawn (a drawing due is dropped)."""
        self._cancel_timeline()
        position = self._position()
        if position != self._timeline_drawn and not self.closed:
            self._timeline_drawn = position
            self._draw_timeline()

    def _arm_timeline(self) -> None:  # on the portal, like the presses
        self._cancel_timeline()
        if self.closed:  # closed since it was asked for (`close` ran on another thread)
            return
        self._timeline_timer = portal().call_later(self.delay, self._timeline_due)

    def _timeline_due(self) -> None:
        self._timeline_timer = None
        if not self._busy():
            self.timeline_now()

    def _cancel_timeline(self) -> None:
        timer, self._timeline_timer = self._timeline_timer, None
        if timer is not None:
            portal().call_soon_threadsafe(timer.cancel)  # its loop's own thread cancels it

    def close(self) -> None:
        """Draw nothing more: the drawings due are cancelled, none is armed from now on."""
        self.closed = True
        self._cancel_timeline()
        if (timer := self._redraw_timer) is not None:
            portal().call_soon_threadsafe(timer.cancel)
