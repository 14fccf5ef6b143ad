"""`StepperHistory`: a run that has ended, in the Stepper's views, step by step.

A `Stepper` drives a run; a run that has ended (a `RunResult`, a run the store kept, a row a
`RunsBrowser` opened) has nothing left to drive, but a person reading it wants the Stepper's
way of looking at it: the status line and the errors first, a step picked from a list showing
what it added, its tool calls (tracebacks open) and what the model saw against the step before,
and the timeline. `Stepper.of(run)` makes one. Any run of the tree can be picked (a sub-agent's
steps are its own). There are no driving buttons, and a line says why; re-running from a step is
the `RerunPanel`'s, which a `RunsBrowser` given the agent offers beside it.
"""

from __future__ import annotations

import ipywidgets as widgets

from workbench.agent import AgentRun
from workbench.notebook._output import figure_output, html_output, show
from workbench.notebook.html import errors_html, step_html
from workbench.notebook.spans import timeline_figure
from workbench.notebook.status_line import status_html
from workbench.records import RunResult, step_labels
from workbench.runfilter import INTERRUPTED
from workbench.telemetry.records_of import result_of_trace
from workbench.telemetry.trace import Trace
from workbench.traces import trace_of

__all__ = ["StepperHistory"]

NOTE = (
    "This run has ended: its history, step by step. Nothing is left to drive; "
    "a Stepper drives a run you start (Stepper(agent, prompt)), a RerunPanel re-runs from a step."
)
NOTE_SO_FAR = (
    "This run has not ended: its history so far, step by step. It goes on from its AgentRun "
    "(or agent.resume for a paused run); these views do not drive it."
)
NOTE_GONE = "This run will not end: {}. Its history as far as it got, step by step."
"""For a run a run list calls interrupted (`workbench.runlist.writer_note` says why)."""


class StepperHistory(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A run that has ended, as the Stepper shows one: status, errors, a step's messages, timeline.

    ``run`` is a `RunResult` (a stored run loads as one), an `AgentRun` (its result so far) or a
    `Trace` that captured content (its top run rebuilt from the spans, `result_of_trace`: no
    sub-runs; the timeline is the trace's own).
    The run picker lists every run of the tree, the step picker that run's step records; it
    opens on the run and step of the tree's first error, else on the run's last step.
    ``show(run=, step=)`` picks from Python what the pickers pick. ``gone`` is what a run list
    knows that the run's state does not: that the process running it has ended (interrupted);
    its runs that did not end say so instead of "it goes on".
    """

    def __init__(self, run: RunResult | AgentRun | Trace, *, gone: str = "") -> None:
        self.gone = gone
        if isinstance(run, Trace):  # a file's or a backend's: its top run, rebuilt from the spans
            self.trace, self.result = run, result_of_trace(run)
        else:
            self.result = run.result if isinstance(run, AgentRun) else run
            self.trace = trace_of(self.result, interrupted=gone)  # its open spans: cut off
        self.runs = _tree(self.result)
        """The runs of the tree, depth first (the run itself first), as the run picker lists."""
        self.run_picker = widgets.Dropdown(
            description="Run",
            options=[
                (_run_label(i, r, depth, gone=bool(gone)), i)
                for i, (r, depth) in enumerate(self.runs)
            ],
        )
        self.step_picker = widgets.Dropdown(description="Step", options=[])
        self.status = widgets.HTML()
        self.errors = widgets.HTML()
        self.messages = widgets.HTML()
        self.timeline = widgets.Output()
        self._draw_timeline()
        self.run_picker.value = _error_place(self.runs, self.result)
        self._pick_run(self.run_picker.value)
        self.run_picker.observe(lambda change: self._pick_run(change["new"]), names="value")
        self.step_picker.observe(lambda _: self._show_step(), names="value")
        pickers = widgets.HBox([self.run_picker, self.step_picker])
        super().__init__([self.status, self.errors, pickers, self.messages, self.timeline])
        self.add_class("wb-history")

    @property
    def picked(self) -> RunResult:
        """The run whose steps are listed."""
        place: int = self.run_picker.value
        return self.runs[place][0]

    def show(self, *, run: int | None = None, step: int | None = None) -> None:
        """Pick a run of the tree (its place in `runs`) and a step of it (a step number)."""
        if run is not None:
            self.run_picker.value = run
        if step is not None:
            found = [i for i, s in enumerate(self.picked.steps) if s.index == step]
            if not found:
                raise ValueError(f"{self.picked.state.agent_name} has no step {step}")
            self.step_picker.value = found[0]

    def _pick_run(self, place: int) -> None:
        result = self.runs[place][0]
        steps = result.steps
        budget = result.snapshots[-1].budget if result.snapshots else None
        note = NOTE if result.status.is_terminal else NOTE_SO_FAR
        status = None
        if self.gone and not result.status.is_terminal:
            note, status = NOTE_GONE.format(self.gone), INTERRUPTED
        self.status.value = status_html(result.state, None, budget, note=note, status=status)
        own = result.state.run_id  # its own failure is in the status line, traceback and all
        others = [e for e in result.errors if e.run_id != own or e.kind not in ("run", "subrun")]
        self.errors.value = errors_html(others)
        options = [(f"step {label}", i) for i, label in enumerate(step_labels(steps))]
        self.step_picker.options = options
        if options:
            self.step_picker.value = _opening_step(result)
        self._show_step()

    def _show_step(self) -> None:
        steps, chosen = self.picked.steps, self.step_picker.value
        if chosen is None or not 0 <= chosen < len(steps):
            self.messages.value = "<i>This run has no step records: it never started a step.</i>"
            return
        self.messages.value = step_html(steps[chosen], steps)

    def _draw_timeline(self) -> None:
        figure = timeline_figure(self.trace)
        if figure is None:
            show(self.timeline, html_output("<i>No spans: the run never started a step.</i>"))
            return
        show(self.timeline, figure_output(figure))


def _tree(result: RunResult, depth: int = 0) -> list[tuple[RunResult, int]]:
    """The run and its sub-runs, depth first, each with how deep it is."""
    found = [(result, depth)]
    for child in result.children:
        found += _tree(child, depth + 1)
    return found


def _run_label(place: int, result: RunResult, depth: int, *, gone: bool) -> str:
    """``2. researcher (depth 1) · completed · 3 steps``: what the run picker lists.

    A run that did not end is interrupted when its process is ``gone``.
    """
    where = f" (depth {depth})" if depth else ""
    steps = len({s.index for s in result.steps})
    status = INTERRUPTED if gone and not result.status.is_terminal else result.status.value
    return f"{place + 1}. {result.state.agent_name}{where} · {status} · {steps} steps"


def _error_place(runs: list[tuple[RunResult, int]], result: RunResult) -> int:
    """Where the run of the tree's first error is in ``runs`` (0, the run itself, if none)."""
    first = next((e.run_id for e in result.errors), None)
    return next((i for i, (r, _) in enumerate(runs) if r.state.run_id == first), 0)


def _opening_step(result: RunResult) -> int:
    """The record to open on: the step of the run's own first error, else the last record."""
    last = len(result.steps) - 1
    own = [e.step for e in result.errors if e.run_id == result.state.run_id and e.step is not None]
    if own:
        return next((i for i, s in enumerate(result.steps) if s.index == own[0]), last)
    return last
