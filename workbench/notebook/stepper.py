"""`Stepper`: drive an agent run from buttons, phase by phase, like a debugger.

The widget keeps one `AgentRun` and a few child widgets; everything it shows is built by the plain
functions of `workbench.notebook.html`, `.spans` and `.tables`, and when it draws is `.redraws`'s
(a run on the move at most every quarter second, the timeline once the presses pause). Button
callbacks schedule the run's async methods on the workbench's portal loop (`_output.schedule`),
whatever thread the kernel delivers a click on, so a slow model call leaves the kernel and the
page responsive, streamed tokens appear in the widget as they arrive, and a run stopped inside a
sub-run goes on from any later click or cell.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from concurrent.futures import Future
from html import escape
from typing import Literal

import ipywidgets as widgets

from workbench._sync import portal
from workbench.agent import Agent, AgentRun, RunResult
from workbench.breakpoints import Break, parse_break
from workbench.messages import Message
from workbench.models.base import ModelSettings
from workbench.notebook._output import figure_output, finished, html_output, row, schedule, show
from workbench.notebook.approvals import ApprovalRow, asked_by
from workbench.notebook.history import StepperHistory
from workbench.notebook.html import (
    calls_html,
    messages_html,
    outcomes_html,
    question_html,
    step_html,
    summary_html,
)
from workbench.notebook.redraws import Redraws
from workbench.notebook.spans import timeline_figure
from workbench.notebook.status_line import status_html
from workbench.notebook.stepping_html import phase_log_html, subrun_html
from workbench.notebook.tables import step_labels
from workbench.records import PhaseEvent
from workbench.session import Session
from workbench.state import Phase
from workbench.telemetry.trace import Trace
from workbench.traces import trace_of

__all__ = ["Stepper"]

Action = Literal["phase", "into", "out", "step", "continue", "end", "abort"]
_PRESSES: dict[Action, Callable[[AgentRun], Awaitable[object]]] = {
    "phase": lambda run: run.anext_phase(),
    "into": lambda run: run.anext_phase(into=True),
    "out": lambda run: run.astep_out(),
    "step": lambda run: run.anext_step(),
    "continue": lambda run: run.arun_to_breakpoint(),
    "end": lambda run: run.arun_to_end(),
    "abort": lambda run: run.aabort(),
}
"""What each button asks of the run: the widget only presses, the run drives itself."""
_TIMELINE_DELAY = 0.3
"""Seconds after the last press before the timeline is redrawn (`Redraws`). Rebuilding a figure
and its rendering in the page take longer than a press; presses in a row redraw it once, and the
status and buttons of each reach the page first, so the clicks stay quick."""
_REDRAW_EVERY = 0.25
"""Seconds between two drawings of a run on the move (Run to end; ``run.next_step()`` or
``run.run_to_end()`` in a cell; `Redraws`): the phases in between are only noted, and the run is
drawn again as the call that drives it ends. A person reads no faster, and each drawing is a wait
of the run's (`AgentRun.showing`): drawn at every phase, a run driven from a cell kept eight
waits a step, and a long Run to end thousands. A run whose phases take longer (a real model's)
is drawn at each of them."""
LIVE = -1
"""The step picker's value for the step under way."""


class Stepper(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Step an agent's run with buttons: next phase, next step, run to end, stop.

    Shows the status, stop reason, step and budget left; approve/deny rows for calls waiting on
    approval; the messages of the selected step (role-coloured, with tool calls, results, retry
    prompts, hook errors) and a diff of what the model saw against the previous step; tokens as
    they stream; and a live waterfall of the run so far, drawn in the time it worked: the waits
    on the person between clicks, which the run records, left out, as its title says.

    Step into runs the next phase of a sub-run the parent's TOOLS phase starts (a sub-agent), with
    its phases listed under the parent's and its own messages shown; Next phase then reads Step
    over and runs that sub-run's next phase (its own sub-runs run through), Next step its step,
    and Step out finishes it and stops in its parent. Continue stops at breakpoints inside
    sub-runs too (scope "tree"). Closing the Stepper inside a sub-run aborts the run, so no
    sub-run is left waiting.

    The run itself is `run` (an `AgentRun`): anything the buttons do can also be done on it, and
    the widget shows it (`AgentRun.watch`); while code drives it, the buttons wait.
    Given a `Session` instead of an agent, it steps the session's next execution (boundary marker
    included), which the session takes in once it ends.
    Button work runs on the workbench's portal loop, off the kernel's threads;
    ``await stepper.wait()`` waits for it (tests and scripts use this instead of sleeping).
    ``with Stepper(...) as stepper:`` closes it at the end (a script, a test): a closed Stepper
    draws nothing more, so no drawing of it runs later on the portal loop.
    """

    def __init__(
        self,
        agent: Agent | Session,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        settings: ModelSettings | None = None,
        breakpoints: Sequence[Break] = (),
    ) -> None:
        self._redraws = Redraws(
            draw=self._redraw,
            draw_timeline=self._draw_timeline,
            position=self._position,
            busy=lambda: self.busy,
            every=_REDRAW_EVERY,
            delay=_TIMELINE_DELAY,
        )
        """When the widget and its timeline are drawn (`close` closes it: nothing more is)."""
        if isinstance(agent, Session):  # the session's next execution, taken in when it ends
            if prompt is None or history:
                raise ValueError("a session's execution takes a prompt and no history")
            self.agent = agent.agent
            self.run: AgentRun = agent.start(
                prompt, settings=settings, on_text_delta=self._on_delta
            )
        else:
            self.agent = agent
            self.run = agent.start(
                prompt, history=history, settings=settings, on_text_delta=self._on_delta
            )
        self.run.watch(self._watched)
        warned = [w for b in breakpoints if (w := self.run.add_breakpoint(b)) is not None]
        self.events: list[PhaseEvent] = []
        self.streamed = ""
        """The text streamed by the model call of the current step so far."""
        self.errors: list[str] = []
        self.decisions: dict[str, bool | str] = {}
        self.task: Future[None] | None = None
        self._busy = False
        self._stop_requested = False
        self._traceback: str | None = None
        """Under the note: the traceback of the breakpoint predicate that raised, if one did."""
        self._note = " · ".join(f"warning: {w}" for w in warned)
        self._summary_shown = ""
        self.stopped_at: Break | None = None
        """The breakpoint Continue last stopped at."""
        self._shown_records = -1
        self._live_from = len(self.run.state.messages)
        self._auto_picked = LIVE

        self.next_phase_button = widgets.Button(description="Next phase", icon="step-forward")
        self.step_into_button = widgets.Button(description="Step into", icon="level-down")
        self.step_into_button.on_click(lambda _: self._start("into"))
        self.step_out_button = widgets.Button(description="Step out", icon="level-up")
        self.step_out_button.on_click(lambda _: self._start("out"))
        self.next_step_button = widgets.Button(description="Next step", icon="forward")
        self.run_button = widgets.Button(description="Run to end", icon="fast-forward")
        self.stop_button = widgets.Button(description="Stop", icon="stop", button_style="warning")
        self.continue_button = widgets.Button(description="Continue", icon="play")
        self.continue_button.on_click(lambda _: self._start("continue"))
        self.break_input = widgets.Text(placeholder="tool:NAME · step:N · before:PHASE · error")
        self.add_break_button = widgets.Button(description="Add breakpoint", icon="plus")
        self.add_break_button.on_click(lambda _: self.add_breakpoint(self.break_input.value))
        self.break_list = widgets.Select(options=[], rows=3, description="Breakpoints")
        self.remove_break_button = widgets.Button(description="Remove", icon="minus")
        self.remove_break_button.on_click(lambda _: self.remove_breakpoint())
        self.next_phase_button.on_click(lambda _: self._start("phase"))
        self.next_step_button.on_click(lambda _: self._start("step"))
        self.run_button.on_click(lambda _: self._start("end"))
        self.stop_button.on_click(lambda _: self.stop())
        self.status = widgets.HTML()
        self.phase_log = widgets.HTML()
        self.approval_rows: list[ApprovalRow] = []
        self.approvals = widgets.VBox()
        self.step_picker = widgets.Dropdown(description="Step", options=[("live", LIVE)])
        self.step_picker.observe(lambda _: self._show_messages(), names="value")
        self.stream = widgets.HTML()
        self.messages = widgets.HTML()
        self.timeline = widgets.Output()
        buttons = row(
            [
                self.next_phase_button,
                self.step_into_button,
                self.step_out_button,
                self.next_step_button,
                self.continue_button,
                self.run_button,
                self.stop_button,
            ]
        )
        breaks = row(
            [self.break_input, self.add_break_button, self.break_list, self.remove_break_button]
        )
        super().__init__(
            [
                buttons,
                breaks,
                self.status,
                self.phase_log,
                self.approvals,
                self.stream,
                self.step_picker,
                self.messages,
                self.timeline,
            ]
        )
        self.refresh()

    @property
    def result(self) -> RunResult:
        """The run's result so far (for `TraceView`, `RerunPanel`, the report)."""
        return self.run.result

    @staticmethod
    def of(run: RunResult | AgentRun | Trace, *, gone: str = "") -> StepperHistory:
        """A run that has ended (a stored one, a trace's too) in the Stepper's views, step by step.

        The same status line, errors, step messages and timeline, with no buttons to drive it:
        a `StepperHistory` (``gone``: why a stored run that did not end never will, as
        `StepperHistory` takes it). ``Stepper(agent, prompt)`` is for a run you start.
        """
        return StepperHistory(run, gone=gone)

    # -- actions --------------------------------------------------------------------------------

    @property
    def _note(self) -> str:
        """The line under the status: what the last press or change did."""
        return self._note_text

    @_note.setter
    def _note(self, text: str) -> None:
        # a traceback goes with the note it explains: any later note replaces both
        self._note_text, self._traceback = text, None

    @property
    def busy(self) -> bool:
        """True while the run is being driven: by a button's work, or by code (a cell)."""
        return self._busy or self.run.driving

    async def wait(self) -> None:
        """Wait until the work started by the last button is finished (errors are shown).

        The timeline is drawn as the run then stands (`draw_timeline`).
        """
        await finished(self.task)
        self.draw_timeline()

    def stop(self) -> None:
        """End the run as ABORTED: now when idle, after the current phase when busy.

        A phase under way is never cut short: a tool's side effects happen or they don't. A run
        stopped inside a sub-run ends once its sub-runs have ended as ABORTED.
        """
        if self.busy:
            self._stop_requested = True
            self._note = "stopping after the current phase…"
            portal().call_soon_threadsafe(self.run.abort)  # where the phase runs, not waiting
            self.refresh()
            return
        self._note = "stopped"
        self._start("abort")

    def close(self) -> None:
        """Close the widget; a run stopped inside a sub-run is aborted, so none is left waiting.

        The timeline drawing due, if one is, is cancelled, and one asked for in the meantime
        (from another thread: a cell, a press) is never armed: a closed Stepper draws nothing
        more, whoever drives its run.
        """
        self._redraws.close()
        run: AgentRun | None = getattr(self, "run", None)  # None: __init__ failed (__del__)
        if run is not None:
            run.unwatch(self._watched)
            if run.subrun is not None and not run.done:  # paused: kept as is
                run.abort()
        super().close()

    def __enter__(self) -> Stepper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def add_breakpoint(self, spec: str | Break) -> None:
        """Stop Continue at ``spec``: a `Break`, or its short form as typed in the box.

        ``tool:NAME``, ``step:N``, ``before:PHASE`` or ``error``; one that can never fire is
        added with a warning, shown here too.
        """
        try:
            breakpoint = spec if isinstance(spec, Break) else parse_break(spec)
        except ValueError as exc:
            self._note = str(exc)
        else:
            warning = self.run.add_breakpoint(breakpoint)
            self.break_input.value = ""
            self._note = f"breakpoint added: {breakpoint}"
            if warning is not None:
                self._note = f"warning: {warning}"
        self.refresh()

    def remove_breakpoint(self) -> None:
        """Remove the breakpoint selected in the list."""
        index = self.break_list.index
        if index is not None and 0 <= index < len(self.run.breakpoints):
            del self.run.breakpoints[index]
        self.refresh()

    def _start(self, action: Action) -> None:
        if self.busy:
            return
        if self.run.done and action != "abort":  # the press shows the run as it is
            self.refresh()
            return
        self._busy, self._stop_requested = True, False
        self._redraw()  # what the press set going shows before it goes
        self.task = schedule(lambda: self._drive(action), self._failed)

    async def _drive(self, action: Action) -> None:
        """One press: the run's own method for it (`AgentRun`), then what it owes (`asettle`).

        The events reach the widget through `AgentRun.watch`, as they do when code drives.
        """
        run = self.run
        try:
            event = await _PRESSES[action](run)
            await run.asettle()  # a sub-run's pause paused the run: the press shows its rows
            if self._stop_requested:  # aborted mid-phase: the run ends as the phase does
                await run.arun_to_end()
                self._note = "stopped"
            elif action == "continue" and isinstance(event, PhaseEvent) and event.breakpoint:
                self.stopped_at = event.breakpoint
                where = f" in {event.state.agent_name}" if event.depth else ""
                self._note = f"stopped at breakpoint {event.breakpoint}{where}"
                self._traceback = event.breakpoint.traceback  # its predicate raised
        finally:
            self._busy = False
            self.refresh()

    def _watched(self, event: PhaseEvent | None) -> None:
        """The run moved (a press, or code driving it): show it, or note it until it is drawn.

        A phase of a run on the move is drawn at most every `_REDRAW_EVERY` (`Redraws.later`);
        the end of each driving call (``event`` None) always is, so what stays on screen is the
        run as it stands.
        """
        if event is not None:
            self._phase_done(event)
            if self._redraws.later():
                return
        self._redraw()

    def _redraw(self) -> None:
        """Draw the run as it stands, as a wait of the run's (`AgentRun.showing`), not its work."""
        with self.run.showing():
            self.refresh()

    def _phase_done(self, event: PhaseEvent) -> None:
        self.events.append(event)
        ms = event.duration * 1e3
        who = f"{event.state.agent_name} (depth {event.depth}) " if event.depth else ""
        self._note = f"ran {who}{event.phase.value} of step {event.step} in {ms:.1f} ms"
        if event.phase is Phase.PREPARE and not event.depth:
            self.streamed = ""
            if self.stream.value:
                self.stream.value = ""

    def _failed(self, exc: BaseException) -> None:
        self.errors.append(f"{type(exc).__name__}: {exc}")
        self._note = f"error: {self.errors[-1]}"
        self.refresh()

    def _on_delta(self, text: str) -> None:
        """Draw the model's text as it streams in, inside the model call.

        Not a wait (`AgentRun.showing`): the call is in flight meanwhile, the server generating
        and the socket holding what comes, so this is the call's time as a client's reading of
        its stream is; a delta's drawing is far shorter than the wait for the next one.
        """
        self.streamed += text
        text = escape(self.streamed)
        self.stream.value = (
            "<div style='color:#888;font-size:11px'>streamed</div>"
            # words whole: JupyterLab's output area breaks a <pre> anywhere (word-break:break-all)
            f"<pre class='wb-stream' style='white-space:pre-wrap;word-break:break-word;margin:0'>"
            f"{text}</pre>"
        )

    def _decide(self, call_id: str, decision: bool | str) -> None:
        self.decisions[call_id] = decision
        waiting = [p for p in self.run.state.pending if p.call_id not in self.decisions]
        if not waiting:
            decisions, self.decisions = self.decisions, {}
            self.run.resume(approvals=decisions)
            approved = sum(1 for d in decisions.values() if d is True)
            self._note = (
                f"{approved} approved, {len(decisions) - approved} denied: press a button to go on"
            )
        self.refresh()

    # -- display --------------------------------------------------------------------------------

    def refresh(self) -> None:
        """Redraw everything from the run's current state.

        The timeline follows once the presses pause (`Redraws.timeline_soon`): it is the run so
        far rebuilt, and a new figure costs the page more than a press's status and buttons.
        """
        self._redraws.drawn()
        run = self.run
        budget = run.snapshots[-1].budget if run.snapshots else None
        status = status_html(
            run.state,
            run.next_phase_name,
            budget,
            note=self._note,
            traceback=self._traceback,
            under_way=self.busy,
        )
        self.status.value = self._summary() + status
        subrun = run.subrun
        path = [run.state, *(sub.state for sub in run.subrun_path)]
        inside = subrun_html(path, subrun.next_phase_name) if subrun else ""
        self.phase_log.value = phase_log_html(self._step_events()) + inside
        self._set_buttons()
        self._show_approvals()
        if len(run.steps) != self._shown_records:
            self._records_changed()
        self._redraws.timeline_soon()
        self._follow()
        self._show_messages()

    def _summary(self) -> str:
        """What went wrong anywhere in the tree, in one red line once a press ends ("")."""
        if self.busy:  # the errors are read from the whole tree: once a press, not every phase
            return self._summary_shown
        result = self.run.result
        self._summary_shown = summary_html(result.summary, failed=True) if result.errors else ""
        return self._summary_shown

    def _failed_so_far(self, run: AgentRun) -> str:
        """The failed tool calls of the step under way, each with its traceback.

        Stopped where a tool failed (`Break.on_error`), the conversation shows only the message the
        model will read; the person looking for the bug needs the file, function and line too.
        Read once a press ends, not at every phase of one: the step so far is the run tree
        rebuilt, and a long Run to end would rebuild it at every phase.
        """
        if self.busy:
            return ""
        so_far = run.so_far()
        steps = so_far.result.steps
        if not steps or (steps[-1].run_id, steps[-1].execution_id, steps[-1].index) not in (
            so_far.open_steps
        ):
            return ""
        failed = [o for o in steps[-1].tool_outcomes if o.status == "error"]
        if not failed:
            return ""
        return "<h4 style='margin:6px 0 2px'>Failed so far</h4>" + outcomes_html(
            failed, waits=steps[-1].waits
        )

    def _step_events(self) -> list[PhaseEvent]:
        """The events since the run's own step began: its phases and those of its sub-runs."""
        starts = [i for i, e in enumerate(self.events) if not e.depth and e.phase is Phase.PREPARE]
        return self.events[starts[-1] :] if starts else self.events

    def _records_changed(self) -> None:
        """A step record closed: new picker entries."""
        run, steps = self.run, self.run.steps
        picked = self.step_picker.value
        self._shown_records = len(steps)
        self._live_from = len(run.state.messages)
        options = [(f"step {label}", i) for i, label in enumerate(step_labels(steps))]
        self.step_picker.options = [*options, ("live", LIVE)]
        self.step_picker.value = picked

    def _position(self) -> tuple[object, ...]:
        """Where the run (and the sub-run stopped in) stands: the timeline changes with it."""
        run, subrun = self.run, self.run.subrun
        inside = (subrun.state.run_id, subrun.state.step, subrun.next_phase_name) if subrun else ()
        return (len(run.steps), run.state.step, run.next_phase_name, run.state.status, *inside)

    def draw_timeline(self) -> None:
        """Redraw the timeline now if the run moved since it was drawn.

        It otherwise follows a moment after the presses pause (`_TIMELINE_DELAY`); `wait`
        draws it too, so a cell after it reads the timeline as the run stands.
        """
        self._redraws.timeline_now()

    def _draw_timeline(self) -> None:
        """The run so far (`trace_of`): closed steps, and the steps and calls under way."""
        figure = timeline_figure(trace_of(self.run), so_far=not self.run.done)
        if figure is None:
            show(
                self.timeline, html_output("<i>The timeline appears when the first phase ends.</i>")
            )
            return
        show(self.timeline, figure_output(figure))

    def _follow(self) -> None:
        """Unless the user picked a step, show the step under way, or the last one between steps."""
        if self.step_picker.value != self._auto_picked:
            return
        run, steps = self.run, self.run.steps
        between = run.done or run.state.next_phase is Phase.PREPARE
        self._auto_picked = len(steps) - 1 if steps and between else LIVE
        self.step_picker.value = self._auto_picked

    def _set_buttons(self) -> None:
        blocked = self.busy or self.run.done
        inside = self.run.subrun is not None
        self.next_phase_button.description = "Step over" if inside else "Next phase"
        for button in (
            self.next_phase_button,
            self.step_into_button,
            self.next_step_button,
            self.continue_button,
            self.run_button,
        ):
            button.disabled = blocked
        self.step_out_button.disabled = blocked or not inside
        self.break_list.options = [
            f"{b} ⚠ can never fire" if self.run.cannot_fire(b) else str(b)
            for b in self.run.breakpoints
        ]
        self.stop_button.disabled = self.run.state.status.is_terminal

    def _show_approvals(self) -> None:
        pending = self.run.state.pending if self.run.done else ()
        if [r.pending for r in self.approval_rows] == list(pending):
            return
        result = self.run.result
        self.approval_rows = [
            ApprovalRow(p, self._decide, asked_by(result, p.call_id)) for p in pending
        ]
        self.approvals.children = tuple(self.approval_rows)

    def _show_messages(self) -> None:
        steps, subrun = self.run.steps, self.run.subrun
        chosen = self.step_picker.value
        if subrun is not None and chosen == LIVE:  # stopped inside a sub-run: its conversation
            name, depth = escape(subrun.state.agent_name), subrun.state.depth
            head = f"<b>Sub-run {name} (depth {depth}), step {subrun.state.step} so far</b>"
            shown = messages_html(subrun.state.messages) + self._failed_so_far(subrun)
            self.messages.value = head + shown + calls_html(subrun.pending_calls)
            return
        if chosen is not None and 0 <= chosen < len(steps):
            self.messages.value = step_html(steps[chosen], steps)
            return
        state = self.run.state
        head = f"<b>Step {state.step} so far</b> (next phase: {self.run.next_phase_name or '—'})"
        if not steps and not self.events:
            head = "<b>The run has not started</b>: its first messages"
        if steps:
            live = messages_html(state.messages[self._live_from :], empty="no new messages yet")
        else:  # the first step holds the prompt it started from, and the history before it
            live = question_html(state.messages, empty="no new messages yet")
        waiting = calls_html(self.run.pending_calls)
        self.messages.value = head + live + self._failed_so_far(self.run) + waiting
