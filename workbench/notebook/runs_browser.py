"""`RunsBrowser`: the runs of a store or a trace backend as a table to sort, filter and page.

The table is an anywidget (``static/runs.js``) syncing a few traits: the filter's fields, the
sort, the page's offset and the page's rows. The kernel keeps the list in a `RunsView` and sends
only the rows of the page shown (25 by default), whatever the size of the store. Clicking a row
sets ``opened``: the run opens below the table in the trace explorer (a backend's trace through
`wb.load_trace`); a stored run's "Step through" shows it as the Stepper does, step by step
(`Stepper.of`). Ticking two rows and pressing Compare draws them side by side, step by step.

Live: a thread asks the source, every ``poll`` seconds, whether anything changed (for a store,
two counters SQLite keeps, no query of a table) and redraws the page when it did, so runs
started in another cell or another process appear while the browser is open.
"""

from __future__ import annotations

import logging
import os
import threading
from html import escape
from typing import Any

import anywidget
import ipywidgets as widgets
import traitlets

from workbench.agent import Agent
from workbench.notebook._output import row
from workbench.notebook.explorer import TraceExplorer
from workbench.notebook.explorer_view import STATIC
from workbench.notebook.history import StepperHistory
from workbench.notebook.reprs import run_result_html, stored_run_html
from workbench.notebook.rerun_panel import RerunPanel
from workbench.notebook.runs_view import RunsView, compare_html
from workbench.notebook.stepper import Stepper
from workbench.records import RunResult
from workbench.runfilter import INTERRUPTED
from workbench.runlist import RunSource, StoreRuns, source_of, writer_note
from workbench.store import RunStore
from workbench.telemetry.records_of import result_of_trace
from workbench.telemetry.trace import Trace
from workbench.traces import trace_of

__all__ = ["RunsBrowser", "RunsTable"]

log = logging.getLogger("workbench.notebook")

_FILTERS = ("status", "agent", "tool", "errors_only", "since", "query", "rollup")


class RunsTable(anywidget.AnyWidget):
    """The table of a `RunsBrowser`: traits the page and the kernel share."""

    _esm = STATIC / "runs.js"
    _css = STATIC / "runs.css"

    rows: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    complete = traitlets.Bool(True).tag(sync=True)
    offset = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(25).tag(sync=True)
    sort = traitlets.Unicode("started").tag(sync=True)
    descending = traitlets.Bool(True).tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    agent = traitlets.Unicode("").tag(sync=True)
    tool = traitlets.Unicode("").tag(sync=True)
    errors_only = traitlets.Bool(False).tag(sync=True)
    since = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    rollup = traitlets.Bool(False).tag(sync=True)
    agents: traitlets.List[str] = traitlets.List().tag(sync=True)
    tools: traitlets.List[str] = traitlets.List().tag(sync=True)
    opened = traitlets.Unicode("").tag(sync=True)
    picked: traitlets.List[str] = traitlets.List().tag(sync=True)
    note = traitlets.Unicode("").tag(sync=True)
    source = traitlets.Unicode("").tag(sync=True)


class RunsBrowser(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """Find the run that went wrong: a sortable, filterable, paged table of runs.

    ``source`` is a `RunStore`, a path to one, a backend (``"jaeger+http://host:16686"``,
    ``"phoenix+http://host:6006"``), or None for the default store. A row opens the run below
    the table in the trace explorer; two ticked rows compare side by side. With ``agent``, an
    opened stored run can be re-run from any step (a `RerunPanel`).

    From Python: ``filter(...)`` takes `RunFilter`'s fields, ``open_run(run_id)`` and
    ``compare(a, b)`` and ``step_through()`` do what the clicks do, ``opened_run``, ``explorer``
    and ``history`` are what is open, ``view`` is the `RunsView` behind the table; ``close()``
    stops watching the source.
    """

    def __init__(
        self,
        source: RunSource | RunStore | str | os.PathLike[str] | None = None,
        *,
        agent: Agent | None = None,
        page_size: int = 25,
        live: bool = True,
        poll: float = 1.0,
    ) -> None:
        self.view = RunsView(source_of(source), page_size=page_size)
        self.agent = agent
        self.opened_run: RunResult | Trace | None = None
        self.rerun_result: RunResult | None = None
        """The run the last re-run from a backend's trace made."""
        self.explorer: TraceExplorer | None = None
        self.history: StepperHistory | None = None
        """The opened run's step-by-step view, once asked for (`step_through`)."""
        self.table = RunsTable(page_size=page_size, source=self.view.source.label)
        self.pane = widgets.VBox()
        self._lock = threading.RLock()
        self._stop = threading.Event()
        self._applying = False
        self._shown = 0  # views opened under the buttons, each named for the page to find
        super().__init__([self.table, self.pane])
        self.add_class("wbr-browser")
        seen = self.view.source.version() if live else None  # what the first page shows
        self.refresh(choices=True)
        self.table.observe(self._on_filter, names=list(_FILTERS))
        self.table.observe(self._on_offset, names="offset")
        self.table.observe(self._on_opened, names="opened")
        self.table.on_msg(self._on_message)
        self._watcher: threading.Thread | None = None
        if live:
            self._watcher = threading.Thread(
                target=self._watch, args=(poll, seen), name="workbench-runs-browser", daemon=True
            )
            self._watcher.start()

    # -- what Python can do -----------------------------------------------------------------

    def filter(self, **changes: Any) -> None:
        """Change the filter (`RunFilter`'s fields); a value it cannot read raises ValueError."""
        with self._lock:
            self.view.set_filter(**changes)
            self._publish_filter()
            self.refresh()

    def open_run(self, run_id: str) -> None:
        """Open a run below the table (in the trace explorer), as clicking its row does."""
        self.table.opened = run_id
        if self.table.note:  # it could not be opened: say it here too
            raise ValueError(self.table.note)

    def compare(self, a: str, b: str) -> None:
        """Show two runs side by side, step by step, as ticking them and Compare does."""
        self.table.picked = [a, b]
        self._compare_picked()
        if self.table.note:
            raise ValueError(self.table.note)

    def refresh(self, *, choices: bool = False) -> None:
        """Ask the source again for the page (and, with ``choices``, the agents and tools)."""
        with self._lock:
            try:
                page = self.view.page()
                found = self.view.source.choices() if choices else None
            except Exception as exc:  # a backend that is down, a store that broke
                self.table.note = f"{type(exc).__name__}: {exc}"
                return
            with self.table.hold_sync():
                self.table.rows, self.table.total = page.rows, page.total
                self.table.complete = page.complete
                self.table.offset = self.view.offset
                self.table.sort, self.table.descending = self.view.sort, self.view.descending
                if found is not None:
                    self.table.agents, self.table.tools = list(found.agents), list(found.tools)

    def close(self) -> None:
        """Stop watching the source and close the widgets."""
        if "_stop" in vars(self):  # else its source could not be read: __init__ raised, and
            self._stop.set()  # ipywidgets closes what it made all the same when it is collected
            for opened in (self.explorer, self.history):
                if opened is not None:
                    opened.close()
            self.table.close()
        super().close()

    # -- what the page does -----------------------------------------------------------------

    def _publish_filter(self) -> None:
        spec = self.view.spec
        self._applying = True
        try:
            with self.table.hold_sync():
                self.table.status = spec.status[0] if spec.status else ""
                self.table.agent = spec.agent[0] if spec.agent else ""
                self.table.tool = spec.tool[0] if spec.tool else ""
                self.table.errors_only = bool(spec.errors)
                self.table.query = spec.text
                self.table.rollup = spec.rollup
                self.table.note = ""
        finally:
            self._applying = False

    def _on_filter(self, change: dict[str, Any]) -> None:
        if self._applying:
            return
        table = self.table
        changes: dict[str, Any] = {
            "status": table.status or None,
            "agent": table.agent or None,
            "tool": table.tool or None,
            "errors": True if table.errors_only else None,
            "since": table.since or None,
            "text": table.query,
            "rollup": table.rollup,
        }
        try:
            with self._lock:
                self.view.set_filter(**changes)
                self.table.note = ""
                self.refresh()
        except ValueError as exc:
            self.table.note = str(exc)

    def _on_offset(self, change: dict[str, Any]) -> None:
        with self._lock:
            if change["new"] != self.view.offset:
                self.view.turn(change["new"], self.table.total)
                self.refresh()

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        if kind == "sort" and isinstance(content.get("column"), str):
            try:
                with self._lock:
                    self.view.sort_by(content["column"])
                    self.refresh()
            except ValueError as exc:
                self.table.note = str(exc)
        elif kind == "compare":
            self._compare_picked(in_order=True)

    def _on_opened(self, change: dict[str, Any]) -> None:
        run_id = change["new"]
        if not run_id:
            return
        try:
            opened = self.view.source.open(run_id)
            listed = self._listed(opened) if isinstance(opened, RunResult) else ("", "")
            gone = _gone(*listed)
            explorer = TraceExplorer(trace_of(opened, interrupted=gone))  # the one door
        except Exception as exc:  # damaged, deleted, a backend that is down
            self.table.note = f"cannot open {run_id}: {type(exc).__name__}: {exc}"
            return
        if self.explorer is not None:
            self.explorer.close()
        if self.history is not None:
            self.history.close()
        self.opened_run, self.explorer, self.history = opened, explorer, None
        self.table.note = ""
        self.pane.children = self._opened_children(opened, explorer, listed)

    def _opened_children(
        self, opened: RunResult | Trace, explorer: TraceExplorer, listed: tuple[str, str]
    ) -> list[Any]:
        steps = widgets.Button(description="Step through…", icon="list-ol")
        steps.on_click(lambda _: self._step_through_clicked())
        if not isinstance(opened, RunResult):
            return [_buttons([steps]), *self._trace_rerun(opened), explorer]
        buttons = [steps]
        if self.agent is not None and opened.snapshots:
            button = widgets.Button(description="Re-run from a step…", icon="code-fork")
            button.on_click(lambda _: self._rerun_panel(opened))
            buttons.append(button)
        status, note = listed
        heading = widgets.HTML(stored_run_html(opened, status=status, note=note))
        return [heading, _buttons(buttons), explorer]

    def _listed(self, run: RunResult) -> tuple[str, str]:
        """The status the list shows for a stored run, and what to know of its process."""
        source = self.view.source
        if not isinstance(source, StoreRuns):
            return run.status.value, ""
        row = source.store.summary(run.run_id)
        return row.status, writer_note(source.store, row)

    def step_through(self) -> StepperHistory:
        """The opened run in the Stepper's views, step by step, under its buttons (`Stepper.of`).

        A backend's trace shows as its top run rebuilt from its spans; one that did not capture
        content raises `TraceLoadError`.
        """
        if self.opened_run is None:
            raise ValueError("open a run first")
        if self.history is None:
            opened = self.opened_run
            listed = self._listed(opened) if isinstance(opened, RunResult) else ("", "")
            self.history = Stepper.of(opened, gone=_gone(*listed))
            self._under_buttons(self.history)
        return self.history

    def _step_through_clicked(self) -> None:
        try:
            self.step_through()
        except Exception as exc:  # a trace without captured content
            self.table.note = f"cannot step through: {type(exc).__name__}: {exc}"

    def _rerun_panel(self, opened: RunResult) -> None:
        assert self.agent is not None
        if any(isinstance(shown, RerunPanel) for shown in self.pane.children):
            return  # one panel re-runs from any step: a second click added a second one
        self._under_buttons(RerunPanel(opened, self.agent))

    def _under_buttons(self, shown: widgets.Widget) -> None:
        """Show what a button opened where it was clicked: under the buttons, brought into view.

        Above the explorer, which is long: below it, the click seemed to do nothing. And the
        page scrolls to it when it opened below the window's edge (the buttons at the bottom of
        the window, under a tall run): there too the click seemed to do nothing.
        """
        children = list(self.pane.children)
        at = children.index(self.explorer) if self.explorer in children else len(children)
        self._shown += 1
        name = f"wbr-shown-{self._shown}"
        shown.add_class(name)
        self.pane.children = [*children[:at], shown, *children[at:]]
        self.table.send({"type": "reveal", "what": name})

    def _trace_rerun(self, trace: Trace) -> list[Any]:
        """A step picker and a button that re-run the agent from a step of a backend's trace.

        Only with an agent, and only for a trace that captured its content (the messages of a
        step come from its model call's span: `Agent.rerun_from_trace`).
        """
        steps = len(trace.chat_spans())
        if self.agent is None or not steps or not trace.messages(step=1):
            return []
        picker = widgets.Dropdown(
            description="From step", options=[(f"step {i}", i) for i in range(1, steps + 1)]
        )
        button = widgets.Button(description="Re-run from this step", icon="code-fork")
        result = widgets.HTML()

        def rerun(_: Any) -> None:
            assert self.agent is not None
            try:
                done = self.agent.rerun_from_trace_sync(trace, step=picker.value)
            except Exception as exc:  # a trace whose step cannot be rebuilt, a model that fails
                said = escape(f"{type(exc).__name__}: {exc}")
                result.value = f"<span class='wbr-note'>{said}</span>"
                return
            self.rerun_result = done
            result.value = run_result_html(done)

        button.on_click(rerun)
        return [widgets.HBox([picker, button]), result]

    def _compare_picked(self, *, in_order: bool = False) -> None:
        """Compare the two ticked runs: as given (`compare`), or ``in_order`` (`_in_order`)."""
        picked = list(self.table.picked)
        if len(picked) != 2:
            self.table.note = "tick two runs to compare them"
            return
        try:  # a backend's trace compares as its run rebuilt from its spans
            a, b = (_as_run(self.view.source.open(run_id)) for run_id in picked)
        except Exception as exc:  # a trace that did not capture content says so here
            self.table.note = f"cannot compare: {type(exc).__name__}: {exc}"
            return
        self.table.note = ""
        if in_order:
            a, b = _in_order(a, b)
        listed = {run.run_id: self._listed(run)[0] for run in (a, b)}
        self.pane.children = [widgets.HTML(compare_html(a, b, listed=listed))]

    # -- live -------------------------------------------------------------------------------

    def _watch(self, poll: float, seen: object) -> None:
        """Redraw the page whenever the source changes from ``seen``, until `close`."""
        while not self._stop.wait(poll):
            try:
                now = self.view.source.version()
                if now != seen:
                    seen = now
                    self.refresh(choices=True)
            except Exception:  # never let a watcher thread die with a traceback in a notebook
                log.exception("the runs browser could not check %s", self.view.source.label)


def _buttons(buttons: list[widgets.Widget]) -> widgets.HBox:
    """An opened run's buttons, in a row the page finds (to keep in view what they open)."""
    shown = row(buttons)
    shown.add_class("wbr-buttons")
    return shown


def _in_order(a: RunResult, b: RunResult) -> tuple[RunResult, RunResult]:
    """Two ticked runs as a comparison reads: a run before its re-run, else the older first.

    Whichever was ticked first: a person ticks the failing run they found, then its re-run, or
    the other way round, and means "what changed from the original".
    """
    if a.state.rerun_of is not None and a.state.rerun_of.run_id == b.run_id:
        return b, a
    if b.state.rerun_of is not None and b.state.rerun_of.run_id == a.run_id:
        return a, b
    return (b, a) if b.state.created_at < a.state.created_at else (a, b)


def _as_run(opened: RunResult | Trace) -> RunResult:
    """A stored run as it is; a backend's trace as its top run rebuilt from the spans."""
    return opened if isinstance(opened, RunResult) else result_of_trace(opened)


def _gone(status: str, note: str) -> str:
    """Why a stored run will not go on, when the list calls it interrupted (``note``), else ""."""
    return note if status == INTERRUPTED else ""
