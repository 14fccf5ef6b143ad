"""`AgentRun`: one run driven from outside, phase by phase, by a person or a program.

It holds the loop (`Execution.phases`) as one generator and drives it: a phase, a step, to a
breakpoint, to the end; between phases the pending calls can be edited or dropped, and
``next_phase(into=True)`` steps into the sub-runs a TOOLS phase starts (`workbench.stepping`).
`Agent.start` makes one; `Agent.run` is `start` then `arun_to_end`.
"""

from __future__ import annotations

from collections.abc import AsyncGenerator, AsyncIterator, Iterable, Mapping, Sequence

from workbench._sync import run_sync
from workbench.breakpoints import Break, first_hit
from workbench.conditions import RunView
from workbench.engine import Execution
from workbench.messages import JsonValue, ToolCall
from workbench.records import PhaseEvent, RunResult, StepContext, StepRecord
from workbench.state import AgentState, Phase
from workbench.stepping import Mode, Stepping, call_dropped, call_edited
from workbench.toolcalls import resume_state

__all__ = ["AgentRun"]


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
        self._stepping = Stepping()

    @property
    def subrun(self) -> AgentRun | None:
        """The sub-run stepping stopped in (its event came last), or None; see `edit_call`."""
        subrun = self._stepping.subrun
        return subrun if isinstance(subrun, AgentRun) else None

    @property
    def state(self) -> AgentState:
        """The current state."""
        return self._execution.state

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
            children=_latest(
                (earlier.children if earlier else ()) + tuple(self._execution.children)
            ),
        )

    async def anext_phase(self, *, into: bool = False) -> PhaseEvent | None:
        """Run one phase; None once the run is done.

        ``into``: step into the sub-runs the phase starts (sub-agents): the event is then the
        next phase of a sub-run (its ``state`` is the sub-run's, ``depth`` > 0) until the
        phase ends. Without it, a phase stopped inside a sub-run is finished ("step over").
        """
        if into or self._stepping.under_way:
            mode: Mode = "into" if into else "over"
            return await self._stepping.advance(mode, self._anext_own, self.breakpoints)
        return await self._anext_own()

    async def anext_checked(self) -> PhaseEvent | None:
        """Run one phase, or until a sub-run it starts stops at a breakpoint of scope "tree".

        The event has ``breakpoint`` set when one fired after it (here or in the sub-run).
        """
        tree = any(b.scope == "tree" for b in self.breakpoints)
        if not (tree or self._stepping.under_way):
            event = await self._anext_own()
        else:
            event = await self._stepping.advance("break", self._anext_own, self.breakpoints)
        if event is None or event.breakpoint is not None:
            return event
        hit = self.breakpoint_after(event)
        return event if hit is None else event.model_copy(update={"breakpoint": hit})

    async def _anext_own(self) -> PhaseEvent | None:
        """Run one phase of this run's own loop.

        The loop is closed with the phase that ends or pauses the run, not on the next call: a
        paused run answered with `resume` goes on with a fresh loop from TOOLS, and the next call
        must run that, not take the old loop's end for the end of the run.
        """
        if self._phases is None:
            self._phases = self._execution.phases()
        event = await anext(self._phases, None)
        if event is None or self._execution.done:  # no phase runs once the run is done
            await self._phases.aclose()
            self._phases = None
        return event

    async def anext_step(self) -> PhaseEvent | None:
        """Run phases up to the end of the current step (or of the run)."""
        last = None
        while (event := await self.anext_phase()) is not None:
            last = event
            if event.phase is Phase.CONTINUATION:
                break
        return last

    async def arun_to_end(self) -> RunResult:
        """Run until the run ends or pauses."""
        async for _ in self.events():
            pass
        return self.result

    async def arun_to_breakpoint(self) -> PhaseEvent | None:
        """Run until a breakpoint fires (its event says which) or the run is done (None).

        A breakpoint of scope "tree" stops inside a sub-run: the event is the sub-run's, and
        `subrun` is that run; the next call goes on with it, then with this run.
        """
        while (event := await self.anext_checked()) is not None:
            if event.breakpoint is not None:
                return event
        return None

    def breakpoint_after(
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
        hit = first_hit(among, view, event.phase, following, execution.config.redactor.text)
        if hit is not None and hit.exception is not None:
            execution.keep_breakpoint_error(hit.exception)
        return hit

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

    def run_to_end(self) -> RunResult:
        """Sync `arun_to_end`."""
        return run_sync(self.arun_to_end())

    def abort(self) -> None:
        """End the run as ABORTED: now between phases or while paused, else after the phase.

        Stopped inside a sub-run, the sub-runs end as ABORTED too, and with them the phase.
        """
        self._execution.request_abort()
        self._stepping.abort()

    def resume(
        self,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
    ) -> None:
        """Answer the pending calls of a paused run; stepping then goes on from TOOLS."""
        self._execution.replace_state(resume_state(self.state, approvals, results))

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

    def drop_call(self, call_id: str, reason: str = "dropped by the user") -> None:
        """Do not run a call; the model is told why."""
        run = self._holding(call_id)
        run._execution.replace_state(call_dropped(run.state, call_id, reason))

    def _holding(self, call_id: str) -> AgentRun:
        """The run with ``call_id`` pending: this one, or the sub-run stepping stopped in."""
        for run in (self, self.subrun):
            if run is not None and any(c.call_id == call_id for c in run.pending_calls):
                return run
        raise KeyError(f"no pending tool call {call_id!r} (calls can be changed only before TOOLS)")


def _latest(runs: tuple[RunResult, ...]) -> tuple[RunResult, ...]:
    """Each run once, as it was last seen (a sub-run paused and resumed is one child)."""
    by_id = {run.run_id: run for run in runs}
    return tuple(by_id[run_id] for run_id in dict.fromkeys(run.run_id for run in runs))
