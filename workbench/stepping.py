"""Stepping into sub-runs: the gate between a stepped run's driver and the sub-runs it starts.

A sub-run (a sub-agent's run) runs inside its parent's TOOLS phase: the sub-agent tool awaits it.
To step into it, the parent's phase runs as a task (`Stepping`) while the parent's driver
(`AgentRun.anext_phase` and friends) waits on a `StepGate`, which every sub-run of that phase,
and their own sub-runs, find through a context variable. A sub-run asks the gate before each of
its phases and tells it about each phase it ran; what happens then depends on what the driver is
doing:

- stepping into (``next_phase(into=True)``): a sub-run waits before every phase until the driver
  lets exactly one phase run; that phase's event is what the driver returns.
- running to a breakpoint (``run_to_breakpoint``): sub-runs run freely and check the parent's
  breakpoints of scope ``"tree"`` after each phase; one that fires stops that sub-run, and its
  event (with ``.breakpoint``) is what the driver returns.
- stepping over (``next_phase()`` inside a sub-run, ``step_out``): at one level of the tree, the
  run stopped in (or its parent, to step out): that run goes one phase (or, if its phase is
  under way, to the end of it) while the runs under it run freely; the driver returns that
  run's event. At the stepped run's own level this is the end of its phase, as without a gate.

Between two calls of the driver every sub-run waits before its next phase, so nothing moves
while the user looks at one, and the one looked at can be changed (edit or drop a pending call).
Every run is still driven by its one loop, `Execution.phases`: the gate only decides when a
sub-run's next phase may start.

Sub-runs that run in parallel (several sub-agent calls in one step) are stepped one at a time,
depth first: the one that reached the gate first, with its own sub-runs, goes until it ends, then
the next. The phase that ends or pauses a sub-run is returned once the runs above it went on as
far as they go alone (to the gate again, or to the end of the stepped phase): a parent paused by
its sub-run's approval is paused when the driver returns, and its own event comes next.
An abort releases every waiting sub-run, which ends as ABORTED before its next phase; at exit,
phases still stopped inside a sub-run are aborted so a script that ends there exits.
"""

from __future__ import annotations

import asyncio
import atexit
import contextlib
import itertools
import sys
from collections import deque
from collections.abc import Awaitable, Callable, Iterator, Sequence
from contextvars import ContextVar
from typing import Any, Literal, NamedTuple, Protocol

from workbench._sync import on_portal, portal
from workbench.breakpoints import Break
from workbench.messages import JsonValue, Message, ToolCall, ToolResult
from workbench.records import PhaseEvent, RunResult
from workbench.state import AgentState, ExecutionStatus
from workbench.waits import Waits

__all__ = [
    "Mode",
    "StepGate",
    "Stepping",
    "Within",
    "abort_scope",
    "call_dropped",
    "call_edited",
    "drive",
    "step_gate",
]

Mode = Literal["into", "break", "over"]
"""What the driver is doing: stepping into sub-runs, running to a breakpoint, stepping over."""
Key = tuple[int, ...]
"""A sub-run's place in the tree under the stepped phase: its parent's key and its own number.
Keys sort depth first, so the smaller key is the sub-run to step first. The stepped run itself
is ``()``."""


def _under(key: Key, level: Key) -> bool:
    """True when ``key`` is a sub-run (at any depth) of the run at ``level``."""
    return len(key) > len(level) and key[: len(level)] == level


def _at_or_above(key: Key, level: Key) -> bool:
    """True when ``key`` is the run at ``level`` or one it runs inside of (an ancestor)."""
    return key == level or _under(level, key)


class SubRun(Protocol):
    """What the gate needs of a sub-run: an `AgentRun`, seen from below (no import of it)."""

    @property
    def state(self) -> AgentState: ...

    @property
    def done(self) -> bool: ...

    @property
    def failure(self) -> Exception | None: ...

    async def anext_phase(self, *, into: bool = False) -> PhaseEvent | None: ...

    async def arun_to_end(self) -> RunResult: ...

    async def breakpoint_after(
        self, event: PhaseEvent, breakpoints: Sequence[Break] | None = None
    ) -> Break | None: ...

    def abort(self) -> None: ...


step_gate: ContextVar[StepGate | None] = ContextVar("workbench_step_gate", default=None)
"""The gate of the stepped phase the running code belongs to; None when nobody steps into it."""
_place: ContextVar[Key] = ContextVar("workbench_step_place", default=())
"""The key of the sub-run whose phase is running here (empty: the stepped run's own phase)."""


_aborting: ContextVar[Callable[[], bool] | None] = ContextVar("workbench_aborting", default=None)
"""Whether the run whose phase the running code is part of, or a run above it, was aborted."""


@contextlib.contextmanager
def abort_scope(asked: Callable[[], bool]) -> Iterator[None]:
    """While a run's phase runs: the sub-runs it starts end when ``asked()`` (or a run above).

    An abort of a tree takes effect where each run is: between phases at once, else after the
    phase under way. A sub-run is inside its parent's TOOLS phase, so without this it would run
    to its end before the parent's abort could take effect, however long that takes.
    """
    above = _aborting.get()
    token = _aborting.set(asked if above is None else lambda: asked() or above())
    try:
        yield
    finally:
        _aborting.reset(token)


async def drive(run: SubRun) -> RunResult:
    """Run a sub-run to its end or pause: freely, or through the gate of a stepped parent.

    Freely, it checks before each phase whether its parent (or a run above) was aborted, and
    ends as ABORTED if so (`abort_scope`).
    """
    gate = step_gate.get()
    if gate is not None:
        return await gate.drive(run)
    asked = _aborting.get()
    while not run.done:
        if asked is not None and asked():
            run.abort()
            break
        if await run.anext_phase() is None:
            break
    return await run.arun_to_end()  # nothing is left to run: this closes its loop


class Within(NamedTuple):
    """A level not known yet: ``up`` levels above the sub-run ``run_id``, once it comes.

    Stepping on in a sub-run resumed after an approval: its key at the gate is new.
    """

    run_id: str
    up: int = 0


class Stop(NamedTuple):
    """A sub-run's event for the driver: which sub-run (its key and run) and what it ran."""

    key: Key
    run: SubRun
    event: PhaseEvent


class StepGate:
    """Where the sub-runs of one stepped phase wait for the driver, and what they tell it."""

    def __init__(self, waits: Waits | None = None) -> None:
        self.waits = waits
        """The stepped tree's waits on the person (`Waits`): its sub-runs record them too."""
        self.breakpoints: Sequence[Break] = ()
        """The stepped run's breakpoints, as the driver last gave them: sub-runs check those of
        scope "tree"."""
        self.mode: Mode | None = None
        """What the driver does now; None between its calls (every sub-run then waits)."""
        self.level: Key = ()
        """Stepping over: the run whose next event the driver waits for (its sub-runs run)."""
        self.within: Within | None = None
        """A level to find by run id as the sub-runs come to the gate (see `Within`)."""
        self.runs: dict[Key, SubRun] = {}
        """Every sub-run that came to the gate, by key (those that ended too): also what the views
        of a run stopped inside one draw as its run tree so far."""
        self.aborted = False
        self._waiting: dict[Key, asyncio.Future[None]] = {}
        """Sub-runs waiting before their next phase."""
        self._running: set[Key] = set()
        """Sub-runs with a phase under way."""
        self._stops: deque[Stop] = deque()
        """Sub-run events for the driver, oldest first."""
        self._wake: asyncio.Future[None] | None = None
        self._numbers = itertools.count()

    async def drive(self, run: SubRun) -> RunResult:
        """Run ``run`` phase by phase, each phase when the gate lets it."""
        key = (*_place.get(), next(self._numbers))
        self.runs[key] = run
        within = self.within
        if within is not None and run.state.run_id == within.run_id:
            self.level, self.within = key[: len(key) - within.up], None
        place = _place.set(key)  # its own sub-runs are placed under it
        try:
            while not run.done:
                await self._turn(key)
                if self.aborted:
                    run.abort()  # between phases: it ends now
                    break
                event = await run.anext_phase()
                if event is None:
                    break
                await self._ran(key, run, event)
        except asyncio.CancelledError:  # the stepped phase was cancelled (Ctrl+C)
            run.abort()  # one waiting at the gate ends too (one in a phase has ended already)
            raise
        finally:
            _place.reset(place)
            self._running.discard(key)
            self._waiting.pop(key, None)
        return await run.arun_to_end()  # nothing is left to run: this closes its loop

    async def next_stop(
        self, mode: Mode, phase: asyncio.Future[Any], level: Key | Within = ()
    ) -> Stop | None:
        """Let the sub-runs go on as ``mode`` says until one stops (its event) or ``phase`` ends.

        Stepping over, ``level`` is the run whose next event ends it (``()``: the phase); a
        `Within` is found as the sub-runs come (until then they run freely).
        """
        self.mode = mode
        if isinstance(level, Within):
            self.level, self.within = (), level
        elif self.within is None:
            self.level = level
        try:
            while True:
                stop = self._first(mode)  # a stop not yet returned goes first: nothing moves
                if stop is not None and self._settled(stop.run, phase):
                    return self._stops.popleft()
                if stop is None:
                    if phase.done():
                        return None
                    if mode == "into":
                        self._grant()
                    elif mode == "over":
                        self._release_under(self.level)
                    else:
                        self._release_all()
                self._wake = wake = asyncio.get_running_loop().create_future()
                await asyncio.wait({phase, wake}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            self.mode = self._wake = None

    def abort(self) -> None:
        """Release every waiting sub-run to end as ABORTED (and every one that comes later)."""
        self.aborted = True
        self._release_all()
        self._notify()

    # -- the sub-runs' side ---------------------------------------------------------------------

    async def _turn(self, key: Key) -> None:
        """Wait until ``key`` may run its next phase."""
        free = self.mode == "break" or (self.mode == "over" and _under(key, self.level))
        if self.aborted or (free and not self._stops):
            self._running.add(key)
            return
        self._waiting[key] = waiting = asyncio.get_running_loop().create_future()
        self._notify()
        await waiting  # `_grant` or `_release_all` marks it running

    async def _ran(self, key: Key, run: SubRun, event: PhaseEvent) -> None:
        """A sub-run ran a phase: a stop for the driver if it steps into or a breakpoint fired.

        The sub-run counts as running until its breakpoints are checked (a predicate runs in a
        worker thread), so the driver never takes its phase for over before then.
        """
        tree = [b for b in self.breakpoints if b.scope == "tree"] if self.mode != "over" else []
        hit = await run.breakpoint_after(event, tree) if tree else None
        self._running.discard(key)
        if self.mode == "over":
            # The run stepped over at ends the step; once it has ended, the runs above it go on
            # and their events are the next steps over at their levels: kept, not dropped.
            if _at_or_above(key, self.level):
                self._stops.append(Stop(key, run, event))
                self._notify()
            return
        if hit is not None:
            event = event.model_copy(update={"breakpoint": hit})
        if self.mode == "into" or hit is not None:
            self._stops.append(Stop(key, run, event))
            self._notify()

    # -- the driver's side ----------------------------------------------------------------------

    def _first(self, mode: Mode) -> Stop | None:
        """The next stop the driver returns in ``mode``, left queued; others are dropped."""
        while self._stops:
            stop = self._stops[0]
            if (
                mode == "into"
                or (mode == "break" and stop.event.breakpoint is not None)
                or (mode == "over" and _at_or_above(stop.key, self.level))
            ):
                return stop
            self._stops.popleft()
        return None

    def _settled(self, run: SubRun, phase: asyncio.Future[Any]) -> bool:
        """True when the driver may return the stop ``run`` made: the tree went as far as it goes.

        A sub-run that ended or paused lets the runs above it go on without the gate: up to the
        gate again (a sub-run waits its turn, or an ancestor's phase ended: another stop) or to
        the end of the stepped phase. The driver waits for that, so the run it returns to is
        settled: a parent paused by its sub-run's approval is paused when the driver returns,
        not a moment later while the user looks at it.
        """
        if not run.done or phase.done() or len(self._stops) > 1:
            return True
        return bool(self._ready())

    def _ready(self) -> list[Key]:
        """The waiting sub-runs that may go next.

        Those whose every running run is an ancestor of theirs (a parent blocked in its TOOLS
        phase on them).
        """
        return [
            key
            for key in self._waiting
            if all(key[: len(running)] == running for running in self._running)
        ]

    def _grant(self) -> None:
        """Let the first `_ready` sub-run run one phase: one branch of the tree moves at a time."""
        ready = self._ready()
        if ready:
            key = min(ready)
            self._running.add(key)
            _let_go(self._waiting.pop(key))

    def _release_under(self, level: Key) -> None:
        """Stepping over at ``level``: its sub-runs run freely; it runs one phase if it waits."""
        for key in [k for k in self._waiting if _under(k, level) or k == level]:
            self._running.add(key)
            _let_go(self._waiting.pop(key))

    def _release_all(self) -> None:
        for key, waiting in self._waiting.items():
            self._running.add(key)
            _let_go(waiting)
        self._waiting.clear()

    def _notify(self) -> None:
        if self._wake is not None and not self._wake.done():
            self._wake.set_result(None)


class Stepping:
    """A run's driver side of the gate: its phase under way as a task, and where it stopped."""

    def __init__(self, waits: Waits | None = None) -> None:
        self.waits = waits
        """The run tree's waits on the person, which each phase's gate hands its sub-runs."""
        self.gate = StepGate(waits)
        self.subrun: SubRun | None = None
        """The sub-run whose event the driver returned last; None after the run's own event."""
        self.where: Key = ()
        """That sub-run's key (``()``: the run's own event came last)."""
        self.resumes_in: SubRun | None = None
        """The sub-run a phase stepped into paused in (the innermost waiting for an approval):
        after the answer, stepping over and out goes on at its level, where the person was."""
        self._phase: asyncio.Task[PhaseEvent | None] | None = None

    @property
    def under_way(self) -> bool:
        """True while a phase of the run is under way (stopped inside one of its sub-runs)."""
        return self._phase is not None

    @property
    def path(self) -> tuple[SubRun, ...]:
        """The sub-runs from the stepped run's own down to `subrun`: how stepping got there."""
        runs, subrun = self.gate.runs, self.subrun
        if subrun is None:
            return ()
        key = self.where or next((k for k, run in runs.items() if run is subrun), ())
        return tuple(runs[key[:i]] for i in range(1, len(key) + 1) if key[:i] in runs)

    @property
    def focus(self) -> Key:
        """Where stepping over acts: the sub-run stopped in, or its nearest unfinished ancestor.

        A sub-run whose last phase was shown has ended; stepping over then finishes its parent's
        phase, as a debugger's step over at a function's last line returns to its caller.
        """
        key = self.where
        while key and self.gate.runs[key].done:
            key = key[:-1]
        return key

    @property
    def subruns(self) -> tuple[SubRun, ...]:
        """The sub-runs of the phase under way, at any depth (none between phases)."""
        return tuple(self.gate.runs.values()) if self._phase is not None else ()

    async def advance(
        self,
        mode: Mode,
        run_phase: Callable[[], Awaitable[PhaseEvent | None]],
        breakpoints: Sequence[Break] = (),
        level: Key | Within = (),
    ) -> PhaseEvent | None:
        """The next event: a sub-run's stop, or the run's own phase (``run_phase``) ended.

        The phase and its gate live on the portal loop (`workbench._sync`), whatever loop the
        driver awaits from: a run stopped inside a sub-run is driven on from the next call,
        which may come from another loop (a notebook cell after a button, a click that a kernel
        delivers on another thread), and the portal is the one loop nothing blocks.
        """
        if asyncio.get_running_loop() is not portal():
            return await on_portal(self.advance(mode, run_phase, breakpoints, level))
        if self._phase is None:
            self.gate = StepGate(self.waits)  # each phase has its own (numbers, stops, an abort)
            self.resumes_in = None
            self._phase = asyncio.ensure_future(self._gated(run_phase))
            _stepped.add(self)
            self._phase.add_done_callback(lambda _: _stepped.discard(self))
        phase = self._phase
        self.gate.breakpoints = breakpoints
        try:
            stop = await self.gate.next_stop(mode, phase, level)
        except asyncio.CancelledError:  # Ctrl+C: the phase is cancelled, the run ends ABORTED
            phase.cancel()
            await asyncio.wait({phase})
            self._ended()
            raise
        if stop is not None:
            self.subrun, self.where = stop.run, stop.key
            return stop.event
        event = phase.result()
        self._ended(event)
        return event

    def _ended(self, event: PhaseEvent | None = None) -> None:
        """The phase under way has ended: the run's own event comes (came) last.

        If it paused inside a sub-run (an approval there), the innermost paused sub-run is
        where stepping goes on after the answer (`resumes_in`), and is shown as the sub-run
        stopped in meanwhile.
        """
        paused = event is not None and event.state.status is ExecutionStatus.PAUSED
        self.resumes_in = self._innermost_paused() if paused else None
        self._phase, self.subrun = None, self.resumes_in
        self.where = ()

    def _innermost_paused(self) -> SubRun | None:
        """The deepest paused sub-run of the phase (the first, depth first, of equals)."""
        runs = self.gate.runs
        paused = [k for k, run in runs.items() if run.state.status is ExecutionStatus.PAUSED]
        return runs[min(paused, key=lambda k: (-len(k), k))] if paused else None

    def abort(self, wait: float | None = None) -> None:
        """Let the sub-runs of the phase under way end as ABORTED, so none is left waiting.

        From another thread than the phase's loop, this waits until the phase has ended (at
        most ``wait`` seconds, then the phase is cancelled), unless that loop runs no more: at
        interpreter exit (a widget's finalizer closing a Stepper left inside a sub-run) its
        thread is stopped, and waiting would never end.
        """
        phase = self._phase
        if phase is None:
            return
        loop = phase.get_loop()
        try:
            here = asyncio.get_running_loop()
        except RuntimeError:
            here = None
        if sys.is_finalizing() or loop.is_closed():  # nothing runs the phase again
            self._ended()
            return
        if here is loop or not loop.is_running():  # the phase ends when its loop runs it next
            self.gate.abort()
            return

        async def aborted() -> None:
            self.gate.abort()
            await asyncio.wait({phase})

        try:
            asyncio.run_coroutine_threadsafe(aborted(), loop).result(wait)
        except BaseException:  # Ctrl+C, or the wait ran out, while a sub-run's phase takes long
            loop.call_soon_threadsafe(phase.cancel)
            raise
        self._ended()

    async def _gated(
        self, run_phase: Callable[[], Awaitable[PhaseEvent | None]]
    ) -> PhaseEvent | None:
        step_gate.set(self.gate)  # this task's own context: seen by the sub-runs it starts
        return await run_phase()


_stepped: set[Stepping] = set()
"""Steppings whose phase is under way (stopped inside a sub-run), held until it ends.

A run dropped while stopped there (a cell that starts a run and steps into a sub-run, run twice)
is not collected with its phase suspended: the collector would destroy the phase's task pending
and close its scopes in another context, each an error printed under whatever cell runs then.
It is kept, and its sub-runs are ended as ABORTED at exit (`_abort_at_exit`), as those of a
run still in hand are.
"""
_EXIT_WAIT = 5.0
"""Seconds `_abort_at_exit` waits for each phase to end before it cancels it."""


@atexit.register
def _abort_at_exit() -> None:
    """End the phases still stopped inside a sub-run while their loops still run.

    A script that ends there would otherwise leave them to be destroyed pending at interpreter
    exit (errors printed); this runs before, while the workbench's loop thread is still alive.
    """
    for stepping in list(_stepped):
        with contextlib.suppress(Exception):  # a loop that does not answer: exit anyway
            stepping.abort(wait=_EXIT_WAIT)


def _let_go(waiting: asyncio.Future[None]) -> None:
    if not waiting.done():  # a sub-run cancelled while it waited is not let go
        waiting.set_result(None)


# -- what a driver may change between phases ----------------------------------------------------


def call_edited(state: AgentState, call_id: str, arguments: dict[str, JsonValue]) -> AgentState:
    """``state`` with the pending call's arguments replaced (the history shows the edit)."""
    messages = list(state.messages)
    index = max(i for i, m in enumerate(messages) if m.role == "assistant")
    parts = tuple(
        p.model_copy(update={"arguments": arguments, "invalid_arguments": None})
        if isinstance(p, ToolCall) and p.call_id == call_id
        else p
        for p in messages[index].parts
    )
    messages[index] = messages[index].model_copy(update={"parts": parts})
    return state.model_copy(update={"messages": tuple(messages)})


def call_dropped(state: AgentState, call_id: str, reason: str) -> AgentState:
    """``state`` with the pending call answered as not run, saying why (the model reads it)."""
    call = next(c for c in state.unanswered_calls() if c.call_id == call_id)
    answer = ToolResult(
        call_id=call_id, name=call.name, content=f"The call was not run: {reason}.", is_error=True
    )
    message = Message(role="tool", parts=(answer,)).stamped(
        state.run_id, state.execution_id, state.step
    )
    return state.model_copy(update={"messages": (*state.messages, message)})
