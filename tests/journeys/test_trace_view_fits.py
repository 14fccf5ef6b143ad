"""Journey: the team's TraceView in JupyterLab, read at the window sizes people have.

Its steps table is drawn by the page as the report's is (``report_tables.js``): fitted to the
output's width, numbers never cut, a text cut only with its whole text as its title. A pandas
table was as wide as its text: 1,126 px in an output of 864 at a 1,300 px window (the file
browser open), its tokens and cost out of sight at the right. A column of what was never
measured is not there: no hook ran, so no hooks column; a run nothing recorded (no telemetry,
no store) has no recording column (both were columns of 0.000).
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import RED, fits, table_fit
from tests.journeys.team import RUN, TEAM

QUIET = 'quiet = wb.Agent(model=wb.ScriptedModel(["hello"]), name="quiet", store=False)'
"""An agent nothing records: no telemetry, no store."""


def test_the_steps_table_of_trace_view_fits_the_window(open_notebook: OpenNotebook) -> None:
    notebook = open_notebook(
        "trace-view-fits",
        [*TEAM, RUN, "from workbench.notebook import TraceView", "TraceView(result)", QUIET,
         'TraceView(quiet.run_sync("hi"))'],
    )  # fmt: skip
    notebook.run_until(len(TEAM) + 2)
    page, view = notebook.page, notebook.run()
    steps = view.locator("div.wb-table").first
    notebook.run()
    quiet = notebook.run().locator("div.wb-table").first
    expect(quiet.locator("th").first).to_have_text("step")
    names = table_fit(page, quiet, 1300)["names"]
    assert "time (ms)" in names and not {"recording (ms)", "hooks (ms)"} & set(names), names
    expect(steps.locator("tr.wb-failed")).to_have_count(1)  # the digger's failed step, red
    expect(steps.locator("tr.wb-failed td").nth(1)).to_have_css("color", RED)
    assert fits(page, steps, 1920) == 0  # all of it, nothing cut
    names = table_fit(page, steps, 1920)["names"]
    assert "recording (ms)" in names and "hooks (ms)" not in names, names  # telemetry, no hook
    steps.scroll_into_view_if_needed()
    notebook.shot("1-1920", steps)
    fits(page, steps, 1300)  # beside the file browser
    notebook.shot("2-1300", steps)
    # At 1,000 px beside the file browser the output is ~540 px: the numbers alone are wider, so
    # the table scrolls in its own box (its headings and rows together), no number cut ...
    narrow = table_fit(page, steps, 1000)
    assert narrow["numbers"] == [] and narrow["untold"] == [] and narrow["cut"] > 0, narrow
    assert narrow["beyond"] <= 0, narrow  # its box scrolls, not the page
    notebook.shot("3-1000-file-browser", steps)
    # ... and the file browser closed, as a person makes room, it fits again.
    page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab[data-id='filebrowser']").click()
    expect(page.locator("#filebrowser")).to_be_hidden()
    fits(page, steps, 1000)
    notebook.shot("4-1000", steps)
