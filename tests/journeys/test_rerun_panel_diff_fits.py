"""Journey: the team's failing run re-run from step 1 in the `RerunPanel`, its diff table read.

The diff table is drawn by the page as TraceView's tables are (``report_tables.js``), fitted to
the output: a pandas table of its 14 columns was as wide as their texts. Its ``delta ms`` column
may hold a negative number beside a positive one of as many characters ("-8.490", "27.467"):
sized for the first, the second was cut ("27.4…", with no title to read it by); the times vary
from run to run, so a table of those two numbers is drawn in a cell of its own.
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import table_fit
from tests.journeys.team import PROMPT, TEAM

CELLS = [
    *TEAM,
    f"failing = lead.run_sync({PROMPT!r})",
    "from workbench.notebook import RerunPanel\n\npanel = RerunPanel(failing, lead)\npanel",
    "panel.step_picker.value = 0\npanel.rerun()\nawait panel.wait()",
    """import pandas as pd
from IPython.display import display
from workbench.notebook.drawn_tables import table_output

signed = pd.DataFrame({"step": [1, 2], "delta ms": [-8.49, 27.467]})
display(table_output(signed)["data"], raw=True)""",
]


def test_the_rerun_panel_s_diff_table_fits_and_cuts_no_number(open_notebook: OpenNotebook) -> None:
    notebook = open_notebook("rerun-panel-diff", CELLS)
    notebook.run_until(len(TEAM) + 1)
    panel = notebook.run()
    notebook.run()
    table = panel.locator("div.wb-table").first
    expect(table.locator("th").first).to_have_text("step")
    signed = notebook.run().locator("div.wb-table").first
    expect(signed.locator("td.wb-number", has_text="27.467")).to_have_count(1)
    for width in (1920, 1300):
        for drawn in (table, signed):
            found = table_fit(table.page, drawn, width)
            assert found["numbers"] == [] and found["untold"] == [], (width, found)
    assert "inference ms a" in table_fit(table.page, table, 1920)["names"]
    assert table_fit(table.page, table, 1920)["sideways"] == 0
    notebook.shot("1300", table)
