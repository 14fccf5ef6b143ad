"""`RunsView`: what one runs browser shows right now (filter, sort, page), without any widget.

The widget and the tests drive the same object: change the filter or the sort, turn the page,
ask for the rows. It asks its `RunSource` for one page at a time and a count, never for the
whole list, so a store of 100,000 runs costs the page's rows. Rows go to the page as plain
strings (the page sets them as text, never as HTML); `compare_html` draws two runs side by
side, step by step, from `workbench.diff`.
"""

from __future__ import annotations

import time
from collections.abc import Mapping
from html import escape
from typing import Any, NamedTuple

from pydantic import ValidationError

from workbench.diff import RunDiff, StepDiff, diff
from workbench.models.prices import dollars
from workbench.notebook.html import DIFF_COLOURS, _badge, messages_html, status_badge
from workbench.notebook.reprs import run_diff_html
from workbench.records import RunResult, StepRecord
from workbench.runfilter import INTERRUPTED, RunFilter
from workbench.runlist import RunSource
from workbench.state import validation_summary
from workbench.store import RunSummary
from workbench.store._query import SORTS, Sort

__all__ = ["RunsPage", "RunsView", "compare_html", "row_cells"]

_PLAIN_ENDS = {("completed", "completed"), ("failed", "error"), ("aborted", "aborted")}
"""Stop reasons a status already says (the list shows the others: a step limit, a hook stop)."""


def _seconds(value: float | None) -> str:
    if value is None:
        return "–"
    return f"{value:.2f} s" if value >= 1 else f"{value * 1e3:.1f} ms"


def _started(value: float | None) -> str:
    """Month, day and time (the year only when it is not this one): a list column is narrow."""
    if value is None:
        return "–"
    when = time.localtime(value)
    this_year = when.tm_year == time.localtime().tm_year
    return time.strftime("%m-%d %H:%M:%S" if this_year else "%Y-%m-%d %H:%M", when)


def row_cells(row: RunSummary) -> dict[str, Any]:
    """One listed run as the page draws it: every value a string or a number, nothing HTML."""
    return {
        "id": row.run_id,
        "agent": row.agent_name,
        "depth": row.depth,
        "parent": row.parent_run_id or "",
        "status": row.status,
        "stop": "" if (row.status, row.stop_reason) in _PLAIN_ENDS else row.stop_reason or "",
        "errors": -1 if row.errors is None else row.errors,
        "first_error": row.first_error or "",
        "tools": ", ".join(row.tools),
        "steps": row.steps,
        "tokens": row.input_tokens + row.output_tokens,
        "cost": dollars(row.cost) if row.cost else "–",  # no price, or nothing: "$0" said neither
        "duration": _seconds(row.duration),
        "started": _started(row.created_at),
        "subruns": row.subruns,
        "model": row.model_name or "",
    }


class RunsPage(NamedTuple):
    """One page of a run list: its rows, and how many runs the filter keeps in all."""

    rows: list[dict[str, Any]]
    total: int
    complete: bool = True
    """Whether ``total`` is every run the filter keeps (a backend lists within bounds)."""


class RunsView:
    """A run list's filter, sort and page over one `RunSource`."""

    def __init__(self, source: RunSource, *, page_size: int = 25) -> None:
        self.source = source
        self.page_size = page_size
        self.spec = RunFilter()
        self.sort: Sort = "started"
        self.descending = True
        self.offset = 0

    def set_filter(self, **changes: Any) -> None:
        """Change some of the filter (`RunFilter`'s fields); back to the first page.

        A value that cannot be read raises `ValueError` saying why, and the filter is unchanged.
        """
        fields = {**self.spec.model_dump(), **changes}
        try:
            spec = RunFilter(**fields)
        except ValidationError as exc:
            raise ValueError(validation_summary(exc, limit=2)) from None
        if spec != self.spec:
            self.spec, self.offset = spec, 0

    def sort_by(self, column: str, descending: bool | None = None) -> None:
        """Sort by ``column`` (again on the same column: the other way); back to the first page."""
        if column not in SORTS:
            raise ValueError(f"cannot sort runs by {column!r}: by one of {', '.join(SORTS)}")
        if descending is None:
            descending = not self.descending if column == self.sort else column != "run"
        self.sort, self.descending, self.offset = column, descending, 0  # type: ignore[assignment]

    def turn(self, offset: int, total: int) -> None:
        """Go to the page starting at ``offset`` (kept within the list)."""
        last = max(total - 1, 0) // self.page_size * self.page_size
        self.offset = min(max(offset, 0), last)

    def page(self) -> RunsPage:
        """The rows of the current page, and the count of all the filter keeps."""
        found = self._find()
        total = self.source.count(self.spec)  # after the page: a backend lists as it is read
        if not found and self.offset and total:  # runs went away: show the last page there is
            self.turn(self.offset, total)
            found = self._find()
        return RunsPage([row_cells(r) for r in found], total, self.source.complete(self.spec))

    def _find(self) -> list[RunSummary]:
        return self.source.find(
            self.spec,
            sort=self.sort,
            descending=self.descending,
            offset=self.offset,
            limit=self.page_size,
        )


# -- two runs side by side ------------------------------------------------------------------------


def _last_records(run: RunResult) -> Mapping[int, StepRecord]:
    """Each step's record (a step paused and resumed has several: the last says how it ended)."""
    return {record.index: record for record in run.steps}


def _side(record: StepRecord | None) -> str:
    if record is None:
        return "<div class='wb-cmp-none'>no such step</div>"
    return messages_html(record.new_messages, empty="no new messages")


def _step_row(step: StepDiff, a: Mapping[int, StepRecord], b: Mapping[int, StepRecord]) -> str:
    colour = DIFF_COLOURS.get(step.status, "#636e72")
    changes = "<br>".join(escape(f"{where}: {what}") for where, what in step.changes())
    return (
        f"<tr class='wb-cmp-step wb-cmp-{escape(step.status)}'>"
        f"<td class='wb-cmp-index'>step {step.step}<br>{_badge(step.status, colour)}"
        f"<div class='wb-cmp-changes'>{changes}</div></td>"
        f"<td class='wb-cmp-a'>{_side(a.get(step.step))}</td>"
        f"<td class='wb-cmp-b'>{_side(b.get(step.step))}</td></tr>"
    )


def _head(label: str, run: RunResult, status: str) -> str:
    return (
        f"<th>{escape(label)} <code>{escape(run.run_id)}</code> "
        f"{status_badge(status)}"
        f"{escape(run.state.agent_name)}</th>"
    )


def compare_html(
    a: RunResult,
    b: RunResult,
    found: RunDiff | None = None,
    *,
    listed: Mapping[str, str] | None = None,
) -> str:
    """Two runs side by side, step by step (steps aligned by number), with what changed.

    Each row is one step: how it differs (`workbench.diff`), and what each run's step added to
    its conversation (the answer, the tool calls and their results). Below, the diff's summary
    table and verdict. Everything from the runs is escaped. ``listed`` is a run list's status
    of a run, by id, where it says more than the run's state (``"interrupted"``).
    """
    found = found or diff(a, b)
    listed = listed or {}
    status_a, status_b = (listed.get(r.run_id) or r.status.value for r in (a, b))
    if INTERRUPTED in (status_a, status_b):  # the diff's end lines read the states: "running"
        found = found.model_copy(
            update={
                "a_final": (status_a, *found.a_final[1:]),
                "b_final": (status_b, *found.b_final[1:]),
            }
        )
    gone = [
        f"{label} was interrupted: its process ended while it ran, after step {run.state.step}"
        for label, run, status in (("a", a, status_a), ("b", b, status_b))
        if status == INTERRUPTED
    ]
    notes = "".join(f"<div class='wb-cmp-gone'>{escape(line)}</div>" for line in gone)
    rows_a, rows_b = _last_records(a), _last_records(b)
    rows = "".join(_step_row(step, rows_a, rows_b) for step in found.steps)
    return (
        "<div class='wb-compare'>"
        f"<div class='wb-cmp-verdict'><b>{escape(found.verdict)}</b></div>{notes}"
        "<table class='wb-cmp-table'><tr><th></th>"
        f"{_head('a', a, status_a)}{_head('b', b, status_b)}</tr>{rows}</table>"
        f"{run_diff_html(found)}</div>"
    )
