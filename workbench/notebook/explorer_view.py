"""`ExplorerView`: what one explorer shows right now (folds, filter, rows), without any widget.

The widget and the tests drive the same object: set a filter, fold a span, move the selection,
ask for the rows of a window or the detail of a span. It keeps the visible positions of the
current folds and filter, so a click costs the detail of one span and a scroll the rows of one
window; only a new filter or fold walks the tree again.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
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
from workbench.notebook.explorer_html import (
    MessageBoxes,
    Where,
    span_detail_html,
    span_detail_pieces,
)
from workbench.telemetry.trace import Trace

__all__ = ["STATIC", "ExplorerView", "explorer_page_html"]

STATIC = Path(__file__).parent / "static"
"""The page side: ``explorer.js``, ``explorer.css``, and the report's ``explorer_static.js``."""


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


_PAGE_COLUMNS = (
    "id",
    "name",
    "depth",
    "start",
    "duration",
    "category",
    "status",
    "in_progress",
    "span_status",
    "end",
    "parent",
)
"""What the page's model keeps of each span, a list each (in tree order)."""


_WORDS = ("name", "category", "status", "span_status")
"""Columns of few distinct values, written as numbers into one list of words."""


def _page_spans(view: ExplorerView) -> dict[str, list[Any]]:
    """Every span as the page's rows say it, column by column, times rounded to the microsecond.

    Columns, not an object per span: at 100,000 spans the keys repeated in every object were a
    third of the page. The names and categories and statuses (``execute_tool add``, ``tool``,
    ``ok`` again and again) are numbers into one list of ``words``.
    """
    tree = view.tree
    columns: dict[str, list[Any]] = {name: [] for name in _PAGE_COLUMNS}
    words: dict[str, int] = {}
    for position in range(len(tree)):
        span = tree.span_at(position)
        parent = tree.positions.get(span.parent_id) if span.parent_id is not None else None
        (row,) = page_rows(tree, [position], 0, 1, agents=view.agents)
        row.update(
            start=round(row["start"], 3),
            duration=round(row["duration"], 3),
            in_progress=int(row["in_progress"]),
            span_status=span.status,
            end=tree.ends[position],
            parent=-1 if parent is None else parent,
        )
        for name in _WORDS:
            row[name] = words.setdefault(row[name], len(words))
        for name in _PAGE_COLUMNS:
            columns[name].append(row[name])
    return {**columns, "words": list(words)}


def _ranges(ids: Sequence[int]) -> list[list[int]]:
    """Ids as ``[start, end)`` ranges of consecutive ones."""
    ranges: list[list[int]] = []
    for i in ids:
        if ranges and ranges[-1][1] == i:
            ranges[-1][1] = i + 1
        else:
            ranges.append([i, i + 1])
    return ranges


WHERE = -1
"""In a page's detail: the span's `Where` line, drawn from its row (start, duration, ids)."""
_PLAIN_ID = re.compile(r"[0-9A-Za-z_.-]*")
"""An id the page can write as it is (the HTML of the view's line escapes nothing in it)."""


def _drawn_by_page(where: Where, positions: Mapping[str, int]) -> bool:
    """Whether the page's row says everything the line says (a parent outside the trace: no)."""
    parent = where.parent_id
    return _PLAIN_ID.fullmatch(where.span_id) is not None and (
        parent is None or (parent in positions and _PLAIN_ID.fullmatch(parent) is not None)
    )


_MARKUP = re.compile(r"((?:<[^>]*>)+)")
"""A run of tags: what splits a piece of HTML into its markup and its text (ours is escaped,
so a ``<`` only ever opens a tag)."""

Pieces = list[str | list[int]]
"""The page's table of pieces: HTML, or the numbers of its runs in the table of runs."""


def _page_details(view: ExplorerView) -> tuple[Pieces, list[str], list[list[int | list[int]]]]:
    """Every span's detail (in tree order), each distinct piece of HTML stored once.

    A detail is the numbers of its pieces in one table, a run of consecutive ones as a
    ``[start, end)`` range: the messages sent to a model call (the previous call's and what
    came since), the attribute rows a run's spans share, a heading, the words of a line, each
    is stored the first time it appears and referred to after. A piece with tags in it is
    stored as the numbers of its runs of markup and of text in a second table: every message
    box and attribute row is the same markup around its own few words, so the markup is stored
    once too (returned: the pieces, the runs, the details).
    """
    table: dict[str, int] = {}
    draw = MessageBoxes()
    details: list[list[int | list[int]]] = []
    for position in range(len(view.tree)):
        items: list[int | list[int]] = []
        numbers: list[int] = []
        for piece in span_detail_pieces(view.trace, view.tree.span_at(position), draw):
            if isinstance(piece, Where) and _drawn_by_page(piece, view.tree.positions):
                items += [r[0] if r[1] == r[0] + 1 else r for r in _ranges(numbers)]
                items.append(WHERE)
                numbers = []
                continue
            parts = (
                (piece,) if isinstance(piece, str)
                else (piece.html(),) if isinstance(piece, Where)
                else piece.parts
            )  # fmt: skip
            numbers += [table.setdefault(part, len(table)) for part in parts]
        items += [r[0] if r[1] == r[0] + 1 else r for r in _ranges(numbers)]
        details.append(items)
    runs: dict[str, int] = {}
    pieces: Pieces = []
    for piece in table:
        split = [r for r in _MARKUP.split(piece) if r]
        pieces.append([runs.setdefault(r, len(runs)) for r in split] if len(split) > 1 else piece)
    return pieces, list(runs), details


def explorer_page_html(view: ExplorerView, element_id: str = "wb-explorer") -> str:
    """The explorer as a self-contained HTML fragment: no kernel, no network, the trace inlined.

    The page runs the widget's own ES module with an in-page model (``explorer_static.js``)
    that folds, filters and windows the inlined rows, so a big trace still draws one window of
    rows at a time. Every ``<`` in the data is written as a JSON ``u003c`` escape: no text from
    the trace can close the script element it travels in.

    Each model call's detail holds the whole conversation sent to it, so the details written
    out whole grow with the square of a run's steps. The page holds each part that details
    repeat (a message box, an attribute's row, a span's heading, the resource table) once and
    each detail as its own HTML and ranges of those (`_page_details`), which the in-page model
    joins when a span is selected; the spans are columns (`_page_spans`), and a search looks
    through the details' text, joined when the first search is typed.
    """
    tree = view.tree
    shared, runs, details = _page_details(view)
    data = {
        "axis_ms": (tree.end_ns - tree.start_ns) / 1e6,
        "spans": _page_spans(view),
        "shared": shared,
        "runs": runs,
        "details": details,
    }
    payload = json.dumps(data, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    module = (STATIC / "explorer.js").read_text(encoding="utf-8")
    module = module.replace("export default { render };", "")
    model = (STATIC / "explorer_static.js").read_text(encoding="utf-8")
    css = (STATIC / "explorer.css").read_text(encoding="utf-8")
    return (
        f'<style>{css}</style><div id="{element_id}" class="wb-explorer"></div>'
        f'<script type="application/json" id="{element_id}-data">{payload}</script>'
        f"<script>(() => {{{module}\n{model}\n"
        f"const data = JSON.parse(document.getElementById('{element_id}-data').textContent);\n"
        f"render({{ model: staticModel(data), el: document.getElementById('{element_id}') }});"
        "})();</script>"
    )
