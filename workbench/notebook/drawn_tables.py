"""The step and agent tables as the page draws them: the report's and TraceView's, one way.

A table travels as its columns (JSON) beside an empty box, and ``static/report_tables.js``
draws it in the page: its columns fitted to the width the page has (a number never cut, a text
cut with its whole text as its title, a heading broken between words, never within one),
drawn again when that width changes, sortable, and only the rows in view drawn. A pandas table
cannot fit: its cells are as wide as their text, so a 16-column step table was wider than a
JupyterLab output at 1,300 px and its tokens and cost were cut off at the right. `TABLE_STYLE`
is the tables' look, scoped to them (a notebook page holds other tables: pandas' ``dataframe``
class is not theirs to style).
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench.notebook.explorer_view import page_script

if TYPE_CHECKING:
    import pandas as pd

    from workbench.telemetry.trace import Trace

__all__ = ["TABLE_STYLE", "failed_rows", "table_html", "table_output"]

TABLE_STYLE = """
div.wb-table-scroll { max-height: 480px; overflow: auto; max-width: 100%; width: max-content; }
/* borders not collapsed: a sticky heading's collapsed border scrolls away with the rows */
table.wb-windowed { table-layout: fixed; border-collapse: separate; border-spacing: 0;
                    font-size: 12px; margin: 0; }
table.wb-windowed td, table.wb-windowed th { border: solid var(--jp-border-color2, #e0e0e0);
                                             border-width: 0 1px 1px 0; }
table.wb-windowed tr > :first-child { border-left-width: 1px; }
table.wb-windowed th { border-top-width: 1px; }
table.wb-windowed td { white-space: nowrap; overflow: hidden; text-overflow: ellipsis; }
table.wb-windowed td, table.wb-windowed th { padding: 2px 4px; }  /* PAD in report_tables.js */
table.wb-windowed td { text-align: left; max-width: none; }
table.wb-windowed th { text-align: left; }
table.wb-windowed .wb-number { text-align: right; font-variant-numeric: tabular-nums; }
table.wb-windowed th { position: sticky; top: 0; background: var(--jp-layout-color0, #fff);
                       cursor: pointer; vertical-align: bottom; font-weight: bold; }
table.wb-windowed tr.wb-gap td { padding: 0; border: 0; }
table.wb-windowed tr.wb-failed td, table.wb-windowed tr.wb-failed a { color: #c62828; }
div.wb-table-tools { margin: 4px 0; font-size: 12px; color: #555; }
div.wb-table-tools input { width: 240px; margin-right: 8px; }
@media print {  /* every row printed (report_tables.js draws them all): no box to scroll */
  div.wb-table-scroll { max-height: none; overflow: visible; }
  div.wb-table-tools { display: none; }
}
"""
"""The drawn tables' look; the report's page has it, and each notebook output of a table."""


def table_html(
    frame: pd.DataFrame, element_id: str, *, links: bool = False, marked: Sequence[int] = ()
) -> str:
    """A table the page draws from its columns (``report_tables.js``), in a box that scrolls.

    Columns, not rows of HTML: at 16,666 steps the markup around each value was most of the
    table, and the page draws only the rows in view. Numbers with decimals are written with the
    three the table shows (`_cell`); a missing value is ``null`` (an empty cell). With
    ``links``, a row's first cell links to the section of its step (``#step-<row>``); a click
    on a column's heading sorts the rows by it; the rows numbered in ``marked`` are drawn as
    failed. The values travel as JSON with every ``<`` escaped, so no text can close its script
    element, and the page sets each one as text.
    """
    from pandas.api.types import is_float_dtype

    decimals = [is_float_dtype(frame[name]) for name in frame.columns]
    table = {
        "names": [str(name) for name in frame.columns],
        "columns": [[_cell(value) for value in frame[name].tolist()] for name in frame.columns],
        "decimals": decimals,
        "links": links,
        "marked": list(marked),
    }
    payload = json.dumps(table, ensure_ascii=False, separators=(",", ":")).replace("<", "\\u003c")
    return (
        f'<div class="wb-table" data-table="{element_id}-data"></div>'
        f'<script type="application/json" id="{element_id}-data">{payload}</script>'
    )


def table_output(frame: pd.DataFrame, *, marked: Sequence[int] = ()) -> dict[str, Any]:
    """A ``display_data`` output of `table_html` for a notebook: its look and its script along.

    Its element's id is its own (a notebook shows many tables in one page); the script draws
    each table once, so another output's script leaves this one as it is.
    """
    element = f"wb-table-{uuid.uuid4().hex[:12]}"
    script = page_script("report_tables.js")
    html = (
        f"<style>{TABLE_STYLE}</style>{table_html(frame, element, marked=marked)}"
        f"<script>(() => {{{script}}})();</script>"
    )
    return {
        "output_type": "display_data",
        "data": {
            "text/html": html,
            "text/plain": f"<table: {len(frame):,} rows × {len(frame.columns)} columns>",
        },
        "metadata": {},
    }


def _cell(value: object) -> str | int | float | None:
    """A table's value as its JSON says it: a number, its text, ``None`` when missing or empty.

    A number with decimals is rounded to the three the table shows, or to two significant
    digits when three decimals would read 0 for a number that is not (a step that cost
    $0.00001: the page shows 0.000010). Empty text (a step that called no tool) is ``None``
    as a missing value is: the page sorts empty cells last.
    """
    import pandas as pd

    if pd.isna(value):
        return None
    if isinstance(value, float):
        shown = round(value, 3)
        return shown if shown or not value else float(f"{value:.2g}")
    if isinstance(value, int) and not isinstance(value, bool):
        return value
    return str(value) or None


def failed_rows(trace: Trace) -> list[int]:
    """The step rows (their numbers in `Trace.step_rows`) in which something went wrong.

    Each error of `Trace.errors` is in the step nearest above its span: a sub-agent's tool
    error is its own step's, not the steps that called the sub-agent. Another framework's
    tool call is no child of its step's model call: its error names the step (`RunError.step`).
    A retry or a denial is no error, so its step is not one of them.
    """
    tree = trace.tree
    step_rows = trace.step_rows()
    rows = {row["span_id"]: r for r, row in enumerate(step_rows)}
    numbered = {(row["agent"], row["step"]): r for r, row in enumerate(step_rows)}
    failed: set[int] = set()
    for error in trace.errors():
        position = tree.positions.get(error.span_id or "")
        if position is None:
            continue
        around = (tree.span_at(p).span_id for p in [position, *tree.ancestors(position)])
        step = next((rows[span] for span in around if span in rows), None)
        if step is None and error.kind in ("model", "tool"):
            step = numbered.get((error.agent, error.step))
        if step is not None:
            failed.add(step)
    return sorted(failed)
