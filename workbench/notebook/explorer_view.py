"""`ExplorerView`: what one explorer shows right now (folds, filter, rows), without any widget.

The widget and the tests drive the same object: set a filter, fold a span, move the selection,
ask for the rows of a window or the detail of a span. It keeps the visible positions of the
current folds and filter, so a click costs the detail of one span and a scroll the rows of one
window; only a new filter or fold walks the tree again.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from pathlib import Path
from typing import Any

from workbench._record import collector_paused
from workbench.notebook.explorer_data import (
    SpanFilter,
    agents_named,
    matching_positions,
    page_rows,
    search_text,
    visible_positions,
)
from workbench.notebook.explorer_html import span_detail_html
from workbench.telemetry.trace import Trace

__all__ = ["STATIC", "ExplorerView", "page_script"]

STATIC = Path(__file__).parent / "static"
"""The page side: ``explorer.js``, ``explorer.css``, and the report's ``explorer_static.js``."""

_COMMENT = re.compile(r"^[ \t]*//.*\n|[ \t]+//.*$", re.MULTILINE)


def page_script(name: str) -> str:
    """A script of `STATIC` as a report inlines it: without its comments.

    They are written for the code's reader, and every report would carry them: a tenth of a
    small run's report. A comment is a line from ``//`` on, after a space or alone; no script
    holds ``//`` in a string (tests/test_notebook_builders.py checks).
    """
    return _COMMENT.sub("", (STATIC / name).read_text(encoding="utf-8"))


class ExplorerView:
    """The explorer's state over one `Trace`: folds, filter, and the visible rows."""

    def __init__(self, trace: Trace) -> None:
        self.trace = trace
        with collector_paused():
            self.tree = trace.tree
        self.collapsed: set[str] = set()
        self.filter = SpanFilter()
        self.matches: set[int] | None = None
        self._texts: list[str] | None = None
        self.visible = visible_positions(self.tree)
        self.agents: Sequence[str] = agents_named(trace)
        """The agent of each position, when the trace has several (model calls name theirs)."""

    def _refresh(self) -> None:
        self.visible = visible_positions(self.tree, self.collapsed, self.matches)

    def set_filter(self, spec: SpanFilter) -> None:
        """Show only the spans ``spec`` keeps (and their ancestors)."""
        self.filter = spec
        if not spec.active:
            self.matches = None
        else:
            if self._texts is None:  # built on the first search: most views are never searched
                self._texts = [
                    search_text(self.tree.span_at(p)) for p in range(len(self.tree.order))
                ]
            self.matches = matching_positions(self.tree, spec, self._texts)
        self._refresh()

    def toggle(self, span_id: str) -> None:
        """Fold an open span, or open a folded one."""
        if span_id in self.collapsed:
            self.collapsed.discard(span_id)
        elif span_id in self.tree.positions:
            self.collapsed.add(span_id)
        self._refresh()

    def reveal(self, span_id: str) -> int:
        """Open the span's ancestors and drop a filter that hides it; its visible row number."""
        position = self.tree.positions[span_id]
        ancestors = {self.tree.span_at(p).span_id for p in self.tree.ancestors(position)}
        if ancestors & self.collapsed:
            self.collapsed -= ancestors
            self._refresh()
        if position not in self.visible:
            self.set_filter(SpanFilter())
        return self.visible.index(position)

    def row_of(self, span_id: str) -> int | None:
        """The visible row number of a span (None when folded away or filtered out)."""
        position = self.tree.positions.get(span_id)
        if position is None or position not in self.visible:
            return None
        return self.visible.index(position)

    def step(self, span_id: str, by: int) -> str | None:
        """The span ``by`` visible rows from ``span_id`` (the first row if it is not shown)."""
        if not self.visible:
            return None
        row = self.row_of(span_id)
        row = 0 if row is None else min(max(row + by, 0), len(self.visible) - 1)
        return self.tree.span_at(self.visible[row]).span_id

    def rows(self, offset: int, size: int) -> list[dict[str, Any]]:
        """The rows of the window starting at visible row ``offset``."""
        return page_rows(
            self.tree,
            self.visible,
            offset,
            size,
            collapsed=self.collapsed,
            matches=self.matches,
            agents=self.agents,
        )

    def detail(self, span_id: str) -> str:
        """The detail pane's HTML for a span ("" for an unknown id)."""
        position = self.tree.positions.get(span_id)
        if position is None:
            return ""
        return span_detail_html(self.trace, self.tree.span_at(position))
