"""`AgentRun`: one run driven from outside, phase by phase, by a person or a program.

It holds the loop (`Execution.phases`) as one generator and drives it: a phase, a step, to a
breakpoint, to the end; between phases the pending calls can be edited or dropped, and
``next_phase(into=True)`` steps into the sub-runs a TOOLS phase starts (`workbench.stepping`).
Stopped inside a sub-run, ``next_phase()`` and ``next_step()`` step over at that sub-run's level
and ``step_out()`` finishes it and stops in its parent, as a debugger's step over and step out.
`Agent.start` makes one; `Agent.run` is `start` then `arun_to_end`.
"""

from __future__ import annotations

import asyncio
import contextlib
import logging
import warnings
from collections.abc import (
    AsyncGenerator,
    AsyncIterator,
    Callable,
    Iterable,
    Iterator,
    Mapping,
    Sequence,
)
from typing import Any

from workbench._record import Record
from workbench._sync import run_sync
from workbench.breakpoints import Break, BreakpointWarning, first_hit, never_fires
from workbench.combined import each_run_once
from workbench.conditions import RunView
from workbench.engine import Execution
from workbench.errors import UsageError
from workbench.messages import JsonValue, ToolCall
from workbench.models.base import Model
from workbench.records import PhaseEvent, RunResult, StepContext, StepRecord
from workbench.state import AgentState, ExecutionStatus, Phase
from workbench.stepping import Key, Stepping, Within, abort_scope, call_dropped, call_edited
from workbench.subagent import reachable_tools
from workbench.toolcalls import resume_state
from workbench.waits import Waits

__all__ = ["AgentRun", "SoFar"]


class SoFar(Record):
    """A run tree as it stands while it is stopped: its result so far, and its open steps."""

    result: RunResult
    """The run with its closed steps, the step under way as it stands (`StepDraft.so_far`),
    and its sub-runs (those under way too, each the same way), as children."""
    open_steps: frozenset[tuple[str, str, int]]
    """``(run id, execution id, step)`` of each step still under way, in the run or a sub-run."""


_log = logging.getLogger(__name__)


class AgentRun:
    """A run driven from outside, one phase at a time.

    Between INFERENCE and TOOLS the caller may look at `pending_calls` and `edit_call` or
    `drop_call` before the tools run. ``next_phase(into=True)`` steps into the sub-runs a TOOLS
    phase starts (`workbench.stepping`); `subrun` is the one stopped in.
    """

    def __init__(self, execution: Execution, breakpoints: Iterable[Break] = ()) -> None:
        self._execution = execution
        self._phases: AsyncGenerator[PhaseEvent, None] | None = None
        """The loop (`Execution.phases`) under way; a new one starts after a pause is answered."""
        self.breakpoints: list[Break] = list(breakpoints)
        """Where `run_to_breakpoint` stops; add and remove at any time."""
        self.earlier: RunResult | None = None
        """The executions of this run before this one (a resumed run): part of `result`."""
        self._waits: Waits | None = None
        """Stepped by hand (the root of its tree): when it waited on whoever steps it. A sub-run
        shares its tree's (`Execution.waits`, from the gate) and marks nothing itself: its
        phases are called one at a time by the gate, not by a person."""
        if execution.waits is None and execution.state.depth == 0:
            self._waits = execution.waits = Waits()
            state = execution.state
            if state.status is ExecutionStatus.PAUSED and state.paused_at is not None:
                self._waits.away(since=state.paused_at)  # resumed here: it waited since its pause
        self._stepping = Stepping(execution.waits)
        self._driver: asyncio.Task[Any] | None = None
        """The task of the driving call under way (see `_driving`)."""
        self._watchers: list[Callable[[PhaseEvent | None], None]] = []
        self._abort_asked = False
        """`abort` was called: the sub-runs of a phase under way end at their next phase."""

    @property
    def subrun(self) -> AgentRun | None:
        """The sub-run stepping stopped in (its event came last), or None; see `edit_call`."""
        subrun = self._stepping.subrun
        return subrun if isinstance(subrun, AgentRun) else None

    @property
    def subrun_path(self) -> tuple[AgentRun, ...]:
        """The sub-runs from this run's own down to `subrun`: how stepping got that deep."""
        return tuple(run for run in self._stepping.path if isinstance(run, AgentRun))

    @property
    def state(self) -> AgentState:
        """The current state."""
        return self._execution.state

    @property
    def model(self) -> Model:
        """The model this execution asks.

        For a re-run left without ``model=`` it is the replay of its recording that
        `Agent.start_rerun` chose: resume a pause of it on this model, so a replay goes on.
        """
        return self._execution.config.model

    @property
    def failure(self) -> Exception | None:
        """The exception that failed the run in this process, if one did.

        `state.error` is what is kept of it, in the store and across processes.
        """
        return self._execution.failure

    @property
    def steps(self) -> tuple[StepRecord, ...]:
        """Records of the steps so far."""
        return tuple(self._execution.steps)

    @property
    def snapshots(self) -> tuple[StepContext, ...]:
        """Snapshots of the steps so far."""
        return tuple(self._execution.snapshots)

    @property
    def done(self) -> bool:
        """True once the run ended or paused: `next_phase` then returns None.

        Not before the event of a phase stepped into has been returned: a sub-run's approval
        pauses the parent's TOOLS phase, whose own event the next `next_phase` returns.
        """
        return self._execution.done and not self._stepping.under_way

    @property
    def next_phase_name(self) -> Phase | None:
        """The phase `next_phase` would run, or None when done."""
        return None if self.done else self.state.next_phase

    @property
    def result(self) -> RunResult:
        """The whole run so far, earlier executions included (final once `done`)."""
        earlier = self.earlier
        return RunResult(
            state=self.state,
            steps=(earlier.steps if earlier else ()) + self.steps,
            snapshots=(earlier.snapshots if earlier else ()) + self.snapshots,
            children=each_run_once(
                (*(earlier.children if earlier else ()), *self._execution.children)
            ),
        )

    def so_far(self) -> SoFar:
        """The run tree as it stands, wherever it is stopped (what its views draw).

        Stopped between phases, the step under way is its record so far; stopped inside a
        sub-run (at any depth), so is every run above it, the call that started each sub-run
        under way since its phase began, and the sub-runs of the phase are its children.
        """
        below: dict[str | None, list[AgentRun]] = {}
        for run in self._stepping.subruns:
            if isinstance(run, AgentRun):
                below.setdefault(run.state.parent_run_id, []).append(run)
        open_steps: set[tuple[str, str, int]] = set()

        def tree(run: AgentRun) -> RunResult:
            subruns = below.get(run.state.run_id, [])
            below_so_far = {sub.state.run_id: tree(sub) for sub in subruns}  # first: a step so
            calls = {sub.state.parent_call_id for sub in subruns}  # far ends when it is taken,
            step = run._execution.step_so_far(  # so a parent's ends after its sub-runs' do
                [c for c in run.state.unanswered_calls() if c.call_id in calls]
            )
            whole = run.result
            if step is None:
                steps = whole.steps
            else:
                steps = (*whole.steps, step)
                open_steps.add((step.run_id, step.execution_id, step.index))
            children = each_run_once((*whole.children, *below_so_far.values()))
            return whole.model_copy(update={"steps": steps, "children": children})

        return SoFar(result=tree(self), open_steps=frozenset(open_steps))

    async def anext_phase(self, *, into: bool = False) -> PhaseEvent | None:
        """Run one phase; None once the run is done.

        ``into``: step into the sub-runs the phase starts (sub-agents): the event is then the
        next phase of a sub-run (its ``state`` is the sub-run's, ``depth`` > 0) until the
        phase ends. Without it ("step over"), the phase's sub-runs run to their end; stopped
        inside a sub-run, that sub-run runs its next phase (its own sub-runs run through), or,
        once it has ended, its parent finishes the phase it is in.
        """
        async with self._driving():
            stepping = self._stepping
            if self.done:  # ended or paused: nothing runs (and where stepping stands stays)
                return None
            if into:
                event = await stepping.advance("into", self._anext_own, self.breakpoints)
            elif stepping.under_way or stepping.resumes_in is not None:
                level = self._level(up=0)
                event = await stepping.advance("over", self._anext_own, self.breakpoints, level)
            else:
                event = await self._anext_own()
            return self._told(event)

    async def astep_out(self) -> PhaseEvent | None:
        """Finish the sub-run stepping stopped in, and stop in its parent at its next event.

        That is the end of the parent's TOOLS phase, which the sub-run was part of. Everything
        under the parent runs through on the way without stopping (at breakpoints neither), as
        a debugger's step out. Only inside a sub-run: at the top, use `arun_to_end`.
        """
        async with self._driving():
            stepping = self._stepping
            if not stepping.under_way and stepping.resumes_in is None:
                raise UsageError(
                    "step out: the run is not stopped inside a sub-run (Step into one, or "
                    "Continue to a breakpoint in one, first); to finish the run, run it to the end"
                )
            level = self._level(up=1)
            event = await stepping.advance("over", self._anext_own, self.breakpoints, level)
            return self._told(event)

    def _level(self, up: int) -> Key | Within:
        """Where stepping over (``up=0``) or out (``up=1``) acts.

        At the sub-run stopped in, or at the one a pause inside a sub-run left the person in
        (found by its run id as it resumes).
        """
        stepping = self._stepping
        if stepping.under_way:
            return stepping.focus if up == 0 else stepping.where[:-1]
        assert stepping.resumes_in is not None
        return Within(stepping.resumes_in.state.run_id, up)

    async def anext_checked(self) -> PhaseEvent | None:
        """Run one phase, or until a sub-run it starts stops at a breakpoint of scope "tree".

        The event has ``breakpoint`` set when one fired after it (here or in the sub-run).
        """
        async with self._driving():
            if self.done:
                return None
            tree = any(b.scope == "tree" for b in self.breakpoints)
            if not (tree or self._stepping.under_way):
                event = await self._anext_own()
            else:
                event = await self._stepping.advance("break", self._anext_own, self.breakpoints)
            if event is not None and event.breakpoint is None:
                hit = await self.breakpoint_after(event)
                event = event if hit is None else event.model_copy(update={"breakpoint": hit})
            return self._told(event)

    async def _anext_own(self) -> PhaseEvent | None:
        """Run one phase of this run's own loop.

        The loop is closed with the phase that ends or pauses the run, not on the next call: a
        paused run answered with `resume` goes on with a fresh loop from TOOLS, and the next call
        must run that, not take the old loop's end for the end of the run.
        """
        if self._phases is None:
            self._phases = self._execution.phases()
        with abort_scope(lambda: self._abort_asked):  # its sub-runs end when it is aborted
            event = await anext(self._phases, None)
        if event is None or self._execution.done:  # no phase runs once the run is done
            await self._phases.aclose()
            self._phases = None
        return event

    async def anext_step(self) -> PhaseEvent | None:
        """Run phases up to the end of the current step (or of the run).

        Stopped inside a sub-run, the step is that sub-run's: it ends with its CONTINUATION,
        or where it pauses or ends (then its parent's step goes on from the next call).
        """
        async with self._driving():
            stepping = self._stepping
            key = stepping.focus if stepping.under_way else ()
            inside = stepping.gate.runs[key] if key else stepping.resumes_in
            depth = (inside or self).state.depth
            last = None
            while (event := await self.anext_phase()) is not None:
                last = event
                if event.depth <= depth and (event.phase is Phase.CONTINUATION or event.state.done):
                    break
            return last

    async def arun_to_end(self) -> RunResult:
        """Run until the run ends or pauses."""
        async with self._driving():
            while await self.anext_phase() is not None:
                pass
            return self.result

    async def arun_to_breakpoint(self) -> PhaseEvent | None:
        """Run until a breakpoint fires (its event says which) or the run is done (None).

        A breakpoint of scope "tree" stops inside a sub-run: the event is the sub-run's, and
        `subrun` is that run; the next call goes on with it, then with this run.
        """
        async with self._driving():
            while (event := await self.anext_checked()) is not None:
                if event.breakpoint is not None:
                    return event
            return None

    async def asettle(self) -> PhaseEvent | None:
        """Take the events still owed once a sub-run's phase paused or ended this run; the last.

        Stepping into a sub-run whose phase pauses (an approval) or ends the tree, the driver
        returns that sub-run's event first: the run is then paused or ended (`state.done`) but
        not yet `done`, and the events of the runs above come with the next calls. A view that
        shows the run settled after each press (the Stepper) takes them at once. None when
        nothing is owed.
        """
        async with self._driving():
            last = None
            while self.state.done and not self.done:
                last = await self.anext_phase(into=True)  # queued events only: nothing runs
            return last

    async def aabort(self) -> RunResult:
        """`abort`, then let the run end: the phase under way, if one is, ends first.

        Stopped inside a sub-run, its sub-runs end as ABORTED at their next phase, then the
        phase they are part of. Returns the run's result, ABORTED.
        """
        self.abort()
        return await self.arun_to_end()

    @property
    def driving(self) -> bool:
        """True while a call is driving the run (a phase, a step, to the end...)."""
        return self._driver is not None

    def watch(self, callback: Callable[[PhaseEvent | None], None]) -> None:
        """Call ``callback`` with each event the run's driving returns, whoever drives it.

        Also with None when a driving call ends, and when the run changes between phases (a
        resume, an abort, an edited or dropped call): a view of the run (the Stepper) stays true
        to it when code drives it. Callbacks run on the thread that drives; one that raises is
        logged, never breaks the run. One that draws the run does it inside `showing`, so the
        drawing is not the run's time.
        """
        self._watchers.append(callback)

    def unwatch(self, callback: Callable[[PhaseEvent | None], None]) -> None:
        """Stop calling ``callback`` (a view closed: it draws nothing more); absent, nothing."""
        if callback in self._watchers:
            self._watchers.remove(callback)

    @contextlib.asynccontextmanager
    async def _driving(self) -> AsyncIterator[None]:
        """One driving call at a time; the watchers hear when the outermost one ends.

        Two drivers at once (a click while a cell's call runs) would take the loop's one
        generator from each other; the second gets a clear error instead.
        """
        task = asyncio.current_task()
        if self._driver is not None and self._driver is not task:
            raise UsageError(
                "this run is being driven by another call (a button's work or another cell): "
                "wait for it to finish, or Stop it"
            )
        outermost = self._driver is None
        self._driver = task
        if outermost and self._waits is not None:
            self._waits.back()
        try:
            yield
        finally:
            if outermost:
                if self._waits is not None:  # until the next call, the run waits on its driver
                    self._waits.away()
                self._driver = None
                self._tell(None)

    def _told(self, event: PhaseEvent | None) -> PhaseEvent | None:
        if event is not None:
            self._tell(event)
        return event

    def _tell(self, event: PhaseEvent | None) -> None:
        """Tell the watchers (each draws inside `showing`, if it draws at all)."""
        for watcher in self._watchers:
            try:
                watcher(event)
            except Exception:  # a broken view must not break the run it shows
                _log.exception("a watcher of run %s raised", self.state.run_id)

    @contextlib.contextmanager
    def showing(self) -> Iterator[None]:
        """A view draws the run now (a watcher, `watch`): a wait on its views, not the run's time.

        The drawing is a wait of its own (`Waits.showing`, kind "drawing"), so a step's time is
        its phases, not its redraws. Unless a call drives the run from elsewhere meanwhile (Stop
        pressed during a phase: `abort` runs on the loop between the phase's awaits, or comes
        from another thread): the phase goes on working while the view draws (a model
        answers, a tool runs in its thread), and that is the phase's time. So is a view's
        drawing of the text a model streams (`LoopConfig.on_text_delta`): it runs inside the
        model call, which is in flight meanwhile.
        """
        waits = self._execution.waits if self._run_still() else None
        with waits.showing() if waits is not None else contextlib.nullcontext():
            yield

    def _run_still(self) -> bool:
        """True when nothing of the run moves: no call drives it, or the caller is that call."""
        if self._driver is None:
            return True
        try:
            return asyncio.current_task() is self._driver
        except RuntimeError:  # another thread, with no loop running there
            return False

    async def breakpoint_after(
        self, event: PhaseEvent, breakpoints: Sequence[Break] | None = None
    ) -> Break | None:
        """The first of ``breakpoints`` (default: `breakpoints`) that fires after ``event``."""
        following = self.next_phase_name
        steps_completed = self.state.step - (following not in (Phase.PREPARE, None))
        view = RunView(
            state=self.state, elapsed=self._execution.elapsed(), steps_completed=steps_completed
        )
        among = self.breakpoints if breakpoints is None else breakpoints
        execution = self._execution
        failed = event.phase is Phase.TOOLS and any(
            o.status == "error" for o in execution.step_outcomes
        )
        redact = execution.config.redactor.text
        hit = await first_hit(among, view, event.phase, following, redact, failed=failed)
        if hit is not None and hit.exception is not None:
            execution.keep_breakpoint_error(hit.exception)
        return hit

    def add_breakpoint(self, breakpoint: Break) -> str | None:
        """Add ``breakpoint`` to `breakpoints`; warn if it can never fire, and say why.

        One that names a tool no agent of the tree has (or, of scope "run", this run's agent)
        is kept, since the tools may change, but a `BreakpointWarning` says so: a typo in a
        tool's name would otherwise wait silently for a stop that never comes. The warning's
        text is returned (None when there is nothing to say).
        """
        self.breakpoints.append(breakpoint)
        why = self.cannot_fire(breakpoint)
        if why is not None:
            warnings.warn(why, BreakpointWarning, stacklevel=2)
        return why

    def cannot_fire(self, breakpoint: Break) -> str | None:
        """Why ``breakpoint`` can never fire in this run's tree, or None (see `add_breakpoint`)."""
        config = self._execution.config
        deep = breakpoint.scope == "tree"
        return never_fires(breakpoint, reachable_tools(config.tools, config.toolsets, deep=deep))

    def run_to_breakpoint(self) -> PhaseEvent | None:
        """Sync `arun_to_breakpoint`."""
        return run_sync(self.arun_to_breakpoint())

    async def events(self) -> AsyncIterator[PhaseEvent]:
        """Every remaining phase event, as an async iterator."""
        while (event := await self.anext_phase()) is not None:
            yield event

    def next_phase(self, *, into: bool = False) -> PhaseEvent | None:
        """Sync `anext_phase`."""
        return run_sync(self.anext_phase(into=into))

    def next_step(self) -> PhaseEvent | None:
        """Sync `anext_step`."""
        return run_sync(self.anext_step())

    def step_out(self) -> PhaseEvent | None:
        """Sync `astep_out`."""
        return run_sync(self.astep_out())

    def run_to_end(self) -> RunResult:
        """Sync `arun_to_end`."""
        return run_sync(self.arun_to_end())

    def abort(self) -> None:
        """End the run as ABORTED: now between phases or while paused, else after the phase.

        The sub-runs of a phase under way (sub-agents, at any depth) end as ABORTED at their
        next phase, and with them the phase: stopped inside a sub-run too.
        """
        self._abort_asked = True
        self._execution.request_abort()
        self._stepping.abort()
        self._tell(None)

    def resume(
        self,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """Answer the pending calls of a paused run; stepping then goes on from TOOLS."""
        self._execution.replace_state(resume_state(self.state, approvals, results))
        self._tell(None)

    @property
    def pending_calls(self) -> tuple[ToolCall, ...]:
        """Tool calls the next TOOLS phase will run (empty unless TOOLS comes next)."""
        if self.done or self.state.next_phase is not Phase.TOOLS or self._stepping.under_way:
            return ()
        return self.state.unanswered_calls()

    def edit_call(self, call_id: str, arguments: dict[str, JsonValue]) -> None:
        """Change the arguments of a call before TOOLS runs it (the history shows the edit).

        The call may also be one of `subrun`'s, stopped before its TOOLS phase.
        """
        run = self._holding(call_id)
        run._execution.replace_state(call_edited(run.state, call_id, arguments))
        self._tell(None)

    def drop_call(self, call_id: str, reason: str = "dropped by the user") -> None:
        """Do not run a call; the model is told why."""
        run = self._holding(call_id)
        run._execution.replace_state(call_dropped(run.state, call_id, reason))
        self._tell(None)

    def _holding(self, call_id: str) -> AgentRun:
        """The run with ``call_id`` pending: this one, or the sub-run stepping stopped in."""
        for run in (self, self.subrun):
            if run is not None and any(c.call_id == call_id for c in run.pending_calls):
                return run
        raise KeyError(f"no pending tool call {call_id!r} (calls can be changed only before TOOLS)")
