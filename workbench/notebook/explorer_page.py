"""The explorer as one self-contained HTML fragment (the report's): no kernel, the trace inlined.

The page runs the widget's own ES module with an in-page model (``explorer_static.js``) that
folds, filters and windows the inlined rows, so a big trace still draws one window of rows at a
time. What the page holds of a trace:

- every span as the page's rows say it, column by column (`_page_spans`);
- every span's detail (`span_detail_pieces`), each distinct piece of HTML stored once in one
  table: each model call's detail holds the whole conversation sent to it, so the details
  written out whole grow with the square of a run's steps. A detail is the numbers of its
  pieces, written as a template that the details of its kind share and its own numbers
  (`_templates`); a piece with tags or ids in it is the numbers of its runs (of markup, of ids,
  of the text between) in a second table, written the same way: every message box and
  attribute row is the same markup (a template) around its own few words, and a tool call's
  id, in its boxes, its attribute rows and the diff lines of two steps, is stored once;
- other parts of the page made of the same pieces (`ExplorerPage.pieces`): the report's step
  sections show the message boxes the details hold, so the page stores them once and fills
  those sections when it loads.

Every ``<`` in the data is written as a JSON ``u003c`` escape: no text from the trace can close
the script element it travels in.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence
from typing import Any

from workbench.notebook.explorer_data import page_rows
from workbench.notebook.explorer_html import (
    DetailPiece,
    MessageBoxes,
    StepRecords,
    Where,
    span_detail_pieces,
)
from workbench.notebook.explorer_view import STATIC, ExplorerView, page_script
from workbench.notebook.tables import waited_note
from workbench.telemetry.tree import SpanTree

__all__ = ["HOLE", "WHERE", "ExplorerPage", "explorer_page_html"]

_PAGE_COLUMNS = ("id", "name", "depth", "start", "duration", "kind")
"""What the page's model keeps of each span, a list each (in tree order)."""

_KIND = ("category", "status", "span_status", "in_progress")
"""What a span's ``kind`` stands for: one of the few distinct combinations of these a trace's
spans have (a tool call that went well, a step...), in the page's list of ``kinds``."""


def _page_spans(view: ExplorerView) -> dict[str, list[Any]]:
    """Every span as the page's rows say it, column by column, times rounded to the microsecond.

    Columns, not an object per span: at 100,000 spans the keys repeated in every object were a
    third of the page. What spans say again and again is a number: a name (``execute_tool
    add``) into the page's list of ``words``, a category and statuses (``tool``, ``ok``, not
    open) into its list of ``kinds``. A span's parent and the end of its subtree are not
    written: the spans are in depth-first order, so the page reads both off the depths.
    """
    tree = view.tree
    columns: dict[str, list[Any]] = {name: [] for name in _PAGE_COLUMNS}
    words: dict[str, int] = {}
    kinds: dict[tuple[str | int, ...], int] = {}
    for position in range(len(tree)):
        (row,) = page_rows(tree, [position], 0, 1, agents=view.agents)
        row.update(span_status=tree.span_at(position).status, in_progress=int(row["in_progress"]))
        row.update(
            name=words.setdefault(row["name"], len(words)),
            start=round(row["start"], 3),
            duration=round(row["duration"], 3),
            kind=kinds.setdefault(tuple(row[name] for name in _KIND), len(kinds)),
        )
        for name in _PAGE_COLUMNS:
            columns[name].append(row[name])
    return {**columns, "words": list(words), "kinds": [list(kind) for kind in kinds]}


Items = list[int | list[int]]
"""Numbers of pieces in the page's table, a run of consecutive ones as a ``[start, end)`` range
(a negative number, a mark, stands alone)."""


def _items(numbers: Sequence[int]) -> Items:
    """Numbers as items: a run of consecutive ones as its ``[start, end)`` range."""
    ranges: list[list[int]] = []
    for i in numbers:
        if i >= 0 and ranges and ranges[-1][0] >= 0 and ranges[-1][1] == i:
            ranges[-1][1] = i + 1
        else:
            ranges.append([i, i + 1])
    return [r[0] if r[1] == r[0] + 1 else r for r in ranges]


HOLE = -2
"""In a template: where each list made from it has a number of its own."""


def _templates(
    lists: Sequence[Sequence[int]], kinds: Sequence[str]
) -> tuple[list[Items], list[Items]]:
    """Lists of numbers as templates of their kind and each one's own numbers.

    The details of one kind and length (every ``execute_tool add`` that went well) are the same
    pieces but in a few places (the rows of their step's attributes, their call id, their
    messages); the pieces that start with the same markup and have as many runs (an attribute's
    row, a tool result's box) are the same markup around their own words. A template holds
    what the lists of a kind share and a `HOLE` where they differ, and a list is its template's
    number and, as items, its numbers for the holes (returned: the templates, the lists).
    """
    groups: dict[tuple[str, int], list[int]] = {}
    for i, (numbers, kind) in enumerate(zip(lists, kinds, strict=True)):
        groups.setdefault((kind, len(numbers)), []).append(i)
    templates: list[Items] = []
    own: list[Items] = [[] for _ in lists]
    for members in groups.values():
        template = [
            column[0] if all(n == column[0] for n in column) else HOLE
            for column in zip(*(lists[i] for i in members), strict=True)
        ]
        holes = [j for j, n in enumerate(template) if n == HOLE]
        for i in members:
            own[i] = [len(templates), *_items([lists[i][j] for j in holes])]
        templates.append(_items(template))
    return templates, own


WHERE = -1
"""In a page's detail: the span's `Where` line, drawn from its row (start, duration, ids)."""
_PLAIN_ID = re.compile(r"[0-9A-Za-z_.-]*")
"""An id the page can write as it is (the HTML of the view's line escapes nothing in it)."""


def _drawn_by_page(where: Where, tree: SpanTree, position: int) -> bool:
    """Whether the page's row says everything the line says.

    The page names the parent the tree puts the span under: not a parent outside the trace, or
    one in a loop of parents (the span is a root of the tree).
    """
    parent = tree.parents[position]
    return _PLAIN_ID.fullmatch(where.span_id) is not None and (
        where.parent_id is None
        if parent is None
        else where.parent_id == tree.span_at(parent).span_id
        and _PLAIN_ID.fullmatch(where.parent_id) is not None
    )


_RUNS = re.compile(r"((?:<[^>]*>)+|(?<![\w-])[\w-]{16,}(?![\w-]))")
"""What splits a piece of HTML into the runs stored once: a run of tags (ours is escaped, so a
``<`` only ever opens a tag), or a word of 16 or more letters, digits, ``_`` and ``-``: an id
(a tool call's, a span's), which a step's pieces repeat inside text of their own (a diff line
is ``[tool] result #<call id>: 3``); the text between."""


class ExplorerPage:
    """The report's explorer: every span's row and detail, each distinct piece of HTML once.

    Built in two steps so that other parts of the page can be made of the same pieces
    (`pieces`) before the whole is written (`html`).
    """

    def __init__(self, view: ExplorerView, element_id: str = "wb-explorer") -> None:
        self.view = view
        self.element_id = element_id
        self._table: dict[str, int] = {}
        self.records = StepRecords(view.trace.steps)
        """The trace's step records, indexed once (the report's step sections read them too)."""
        draw = MessageBoxes()
        tree = view.tree
        self._details = [
            self._detail(span_detail_pieces(view.trace, tree.span_at(p), draw, self.records), p)
            for p in range(len(tree))
        ]

    def _numbers(self, html: Sequence[str]) -> list[int]:
        """The numbers of pieces of HTML in the table, each stored the first time it comes."""
        return [self._table.setdefault(piece, len(self._table)) for piece in html]

    def _detail(self, pieces: Sequence[DetailPiece], position: int) -> list[int]:
        """A detail as numbers; its `Where` line `WHERE` when the page draws it from the row."""
        numbers: list[int] = []
        for piece in pieces:
            if isinstance(piece, Where) and _drawn_by_page(piece, self.view.tree, position):
                numbers.append(WHERE)
                continue
            parts = (
                (piece,) if isinstance(piece, str)
                else (piece.html(),) if isinstance(piece, Where)
                else piece.parts
            )  # fmt: skip
            numbers += self._numbers(parts)
        return numbers

    def pieces(self, html: Sequence[str]) -> str:
        """A ``data-pieces`` attribute: the page fills its element with ``html`` when it loads.

        The pieces go into the page's table, so HTML the details hold already (a message box)
        costs a number. The page has one table: one explorer page fills a document's elements.
        """
        return f' data-pieces="{json.dumps(_items(self._numbers(html)), separators=(",", ":"))}"'

    def _table_of_runs(self) -> tuple[list[str | Items], list[Items], list[str]]:
        """The pieces as stored, their templates, and the runs of markup, ids and text.

        A piece of one run is its HTML; one of more runs (`_RUNS`) the numbers of its runs,
        written as a template (its markup) and its own numbers (`_templates`).
        """
        runs: dict[str, int] = {}
        pieces: list[str | Items] = []
        split: dict[int, list[int]] = {}  # the runs of each piece of more than one, by its number
        for piece in self._table:
            parts = [r for r in _RUNS.split(piece) if r]
            if len(parts) > 1:
                split[len(pieces)] = [runs.setdefault(r, len(runs)) for r in parts]
            pieces.append(piece)
        lists = list(split.values())
        templates, own = _templates(lists, [str(numbers[0]) for numbers in lists])
        for number, stored in zip(split, own, strict=True):
            pieces[number] = stored
        return pieces, templates, list(runs)

    def html(self) -> str:
        """The fragment: the explorer's element, its data, and the script that draws it."""
        tree = self.view.tree
        shared, piece_templates, runs = self._table_of_runs()
        kinds = [tree.span_at(p).category for p in range(len(tree))]
        templates, details = _templates(self._details, kinds)
        data = {
            "axis_ms": (tree.end_ns - tree.start_ns) / 1e6,
            "waited": waited_note(self.view.trace),  # a stepped run: said in the count line
            "interrupted": self.view.trace.interrupted,  # its open spans: cut off, not so far
            "spans": _page_spans(self.view),
            "shared": shared,
            "piece_templates": piece_templates,
            "runs": runs,
            "templates": templates,
            "details": details,
        }
        payload = json.dumps(data, ensure_ascii=False, separators=(",", ":"))
        payload = payload.replace("<", "\\u003c")
        module = page_script("explorer.js").replace("export default { render };", "")
        model = page_script("explorer_static.js")
        css = (STATIC / "explorer.css").read_text(encoding="utf-8")
        element = self.element_id
        return (
            f'<style>{css}</style><div id="{element}" class="wb-explorer"></div>'
            f'<script type="application/json" id="{element}-data">{payload}</script>'
            f"<script>(() => {{{module}\n{model}\n"
            f"const data = JSON.parse(document.getElementById('{element}-data').textContent);\n"
            "whenLoaded(() => fillPieces(data));\n"  # first: the messages need no explorer
            f"render({{ model: staticModel(data), el: document.getElementById('{element}') }});"
            "})();</script>"
        )


def explorer_page_html(view: ExplorerView, element_id: str = "wb-explorer") -> str:
    """The explorer as a self-contained HTML fragment: no kernel, no network, the trace inlined."""
    return ExplorerPage(view, element_id).html()
