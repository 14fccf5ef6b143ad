"""`TraceExplorer`: one trace as a folding span tree beside a time axis, with a detail pane.

An anywidget: a few synced traits and one ES module (``static/explorer.js``). The kernel keeps
the whole trace in an `ExplorerView`; the page gets only the rows of the window it shows (about
forty) and the detail of the selected span. Scrolling sets ``offset``, a click sets ``selected``,
the search box and filters set their traits, and a fold or a key press is a message; each is
answered with the new window. The same ES module draws the standalone report's explorer.
"""

from __future__ import annotations

from typing import Any

import anywidget
import traitlets

from workbench.notebook.explorer_data import SpanFilter, SpanStatus
from workbench.notebook.explorer_view import STATIC, ExplorerView
from workbench.notebook.stepper import Stepper
from workbench.notebook.tables import waited_note
from workbench.telemetry.core import Telemetry
from workbench.telemetry.trace import Trace
from workbench.traces import TraceSource, trace_of

__all__ = ["TraceExplorer"]

_STATUSES: dict[str, SpanStatus] = {"ok": "ok", "error": "error", "unset": "unset"}
"""The status filters the page can send (anything else is no filter)."""


class TraceExplorer(anywidget.AnyWidget):
    """Explore one trace: fold, search, filter, click a span for all of it.

    It shows whatever `workbench.trace_of` reads: ``TraceExplorer(result,
    telemetry=agent.telemetry)`` a run's recorded spans; ``TraceExplorer(result)`` a run without
    telemetry (the spans its records make); ``TraceExplorer(run)`` or ``TraceExplorer(stepper)``
    a run stopped anywhere (its spans so far, the open ones in italics);
    ``TraceExplorer(trace)`` a `wb.Trace`, a file, a backend URL, a `Telemetry` or
    OpenTelemetry spans. ``select(span_id)`` and ``selected`` drive and read the selection
    from Python; ``view`` is the `ExplorerView` behind it, ``trace`` the trace.
    """

    _esm = STATIC / "explorer.js"
    _css = STATIC / "explorer.css"

    rows: traitlets.List[dict[str, Any]] = traitlets.List().tag(sync=True)
    total = traitlets.Int(0).tag(sync=True)
    span_count = traitlets.Int(0).tag(sync=True)
    matched = traitlets.Int(-1).tag(sync=True)
    offset = traitlets.Int(0).tag(sync=True)
    page_size = traitlets.Int(40).tag(sync=True)
    axis_ms = traitlets.Float(0.0).tag(sync=True)
    waited = traitlets.Unicode("").tag(sync=True)
    """A stepped run: what its count line says it left out (`waits.left_out`)."""
    summary = traitlets.Unicode("").tag(sync=True)
    """What the trace says first (`Trace.summary`): how it ended and what went wrong, where."""
    failed = traitlets.Bool(False).tag(sync=True)
    """Whether anything went wrong (the summary is drawn red)."""
    interrupted = traitlets.Unicode("").tag(sync=True)
    """Why its open spans will never end (`Trace.interrupted`): drawn cut off, not "so far"."""
    selected = traitlets.Unicode("").tag(sync=True)
    scroll_to = traitlets.Int(0).tag(sync=True)
    detail = traitlets.Unicode("").tag(sync=True)
    query = traitlets.Unicode("").tag(sync=True)
    status = traitlets.Unicode("").tag(sync=True)
    errors_only = traitlets.Bool(False).tag(sync=True)
    slowest = traitlets.Int(0).tag(sync=True)

    def __init__(
        self,
        source: TraceSource | Stepper,
        *,
        telemetry: Telemetry | None = None,
        page_size: int = 40,
    ) -> None:
        run = source.run if isinstance(source, Stepper) else source
        trace = trace_of(run, telemetry=telemetry)  # a stepped run: in the time it worked
        self.view = ExplorerView(trace)
        tree = self.view.tree
        super().__init__(
            page_size=page_size,
            span_count=len(tree.order),
            axis_ms=(tree.end_ns - tree.start_ns) / 1e6,
            waited=waited_note(trace),
            summary=trace.summary(),
            failed=bool(trace.errors()) or bool(trace.interrupted),
            interrupted=trace.interrupted,
            total=len(self.view.visible),
            rows=self.view.rows(0, page_size),
        )
        self.on_msg(self._on_message)

    @property
    def trace(self) -> Trace:
        """The trace shown."""
        return self.view.trace

    def select(self, span_id: str) -> None:
        """Select a span: open what hides it, scroll to it and show its detail."""
        if span_id not in self.view.tree.positions:
            raise KeyError(f"no span {span_id!r} in this trace")
        row = self.view.reveal(span_id)
        self._publish_filter()
        self.selected = span_id
        self._show_row(row)

    @traitlets.observe("selected")
    def _on_selected(self, change: dict[str, Any]) -> None:
        self.detail = self.view.detail(change["new"])

    @traitlets.observe("offset", "page_size")
    def _on_window(self, change: dict[str, Any]) -> None:
        self.rows = self.view.rows(self.offset, self.page_size)

    @traitlets.observe("query", "status", "errors_only", "slowest")
    def _on_filter(self, change: dict[str, Any]) -> None:
        status = _STATUSES.get(self.status, "")
        spec = SpanFilter(
            query=self.query,
            status=status,
            errors_only=self.errors_only,
            slowest=max(self.slowest, 0),
        )
        if spec != self.view.filter:
            self.view.set_filter(spec)
            self._redraw(0)

    def _publish_filter(self) -> None:
        """Put the view's filter back in the traits (after `reveal` may have cleared it)."""
        spec = self.view.filter
        with self.hold_trait_notifications():
            self.query, self.status = spec.query, spec.status
            self.errors_only, self.slowest = spec.errors_only, spec.slowest

    def _redraw(self, offset: int) -> None:
        with self.hold_sync():
            self.total = len(self.view.visible)
            self.matched = -1 if self.view.matches is None else len(self.view.matches)
            self.offset = min(offset, max(self.total - 1, 0))
            self.rows = self.view.rows(self.offset, self.page_size)

    def _show_row(self, row: int) -> None:
        """Redraw with ``row`` inside the window, and ask the page to scroll to it."""
        offset = self.offset
        if not offset <= row < offset + self.page_size - 1:
            offset = max(row - self.page_size // 2, 0)
        self._redraw(offset)
        self.scroll_to = row

    def _on_message(self, _widget: Any, content: dict[str, Any], _buffers: Any) -> None:
        kind = content.get("type")
        if kind == "toggle" and isinstance(content.get("id"), str):
            self.view.toggle(content["id"])
            self._redraw(self.offset)
        elif kind == "move":
            target = self.view.step(self.selected, int(content.get("by", 1)))
            if target is not None:
                self.selected = target
                self._show_row(self.view.row_of(target) or 0)
        elif kind in ("fold", "open") and self._folded(self.selected) == (kind == "open"):
            self.view.toggle(self.selected)
            self._redraw(self.offset)

    def _folded(self, span_id: str) -> bool | None:
        """Whether the span is folded (None for no span: neither key applies)."""
        return span_id in self.view.collapsed if span_id else None
