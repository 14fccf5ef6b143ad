"""Journey 3: stop at the error with the Stepper, and explore the spans so far.

The person types ``error`` into the Stepper's breakpoint box, presses Continue, and the run stops
right after the digger's tool failed, two sub-agents down. A later cell opens the trace explorer
on the stopped run: the spans up to that point are there (the failed tool call red), the agents,
steps and calls still open are marked in progress (italic, a hatched bar, "in progress" on
hover), and nothing that has not happened yet is shown. Run to end from the Stepper shown again,
and a new explorer has the whole run, nothing open.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import RED, button, click
from tests.journeys.team import PROMPT, TEAM

STEPPER = f"""stepper = Stepper(lead, {PROMPT!r})
stepper"""


def test_stopped_at_the_error_the_explorer_shows_the_spans_so_far(
    open_notebook: OpenNotebook,
) -> None:
    notebook = open_notebook(
        "spans-so-far",
        [
            *TEAM,
            "from workbench.notebook import Stepper, TraceExplorer",
            STEPPER,
            "TraceExplorer(stepper.run)",
            "stepper",
            "TraceExplorer(stepper.run)",
        ],
    )
    notebook.run_until(len(TEAM) + 1)
    stepper = notebook.run()
    stepper.get_by_placeholder(re.compile("tool:NAME")).fill("error")
    click(stepper, "Add breakpoint")
    expect(stepper.get_by_role("listbox")).to_contain_text("error")
    click(stepper, "Continue")
    status = stepper.locator(".wb-status")
    expect(status).to_contain_text(re.compile(r"stopped at breakpoint .*error.* in digger"))
    expect(button(stepper, "Step out")).to_be_enabled()
    notebook.shot("1-stopped-at-the-error", stepper)

    explorer = notebook.run().locator(".wbx")
    rows = explorer.locator(".wbx-row")
    expect(explorer.locator(".wbx-count")).to_contain_text(re.compile(r"[1-9]\d* of \d+ spans"))
    failed = rows.filter(has_text="execute_tool apply_discount")
    expect(failed).to_have_count(1)
    expect(failed.locator(".wbx-bar")).to_have_css("background-color", RED)
    in_progress = re.compile(r"^in progress")  # the row's tooltip
    for open_span in ("invoke_agent lead", "execute_tool research", "invoke_agent digger"):
        row = rows.filter(has_text=open_span)
        expect(row).to_have_attribute("title", in_progress)
        expect(row.locator(".wbx-label")).to_have_css("font-style", "italic")
        expect(row.locator(".wbx-bar")).to_have_css(
            "background-image", re.compile("repeating-linear-gradient")
        )  # hatched
    expect(rows.and_(explorer.locator("[title^='in progress']"))).to_have_count(8)  # 3 runs,
    # their 3 steps, and the 2 sub-agent calls still under way
    expect(failed).not_to_have_attribute("title", in_progress)
    expect(rows.filter(has_text="workbench.step 2")).to_have_count(0)  # not happened yet
    notebook.shot("2-spans-so-far", explorer)

    rows.filter(has_text="invoke_agent digger").click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("in progress")
    failed.click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("TypeError")
    notebook.shot("3-the-failed-call-so-far", explorer)

    stepper = notebook.run()  # the Stepper again: its timeline is the run so far; run it out
    expect(stepper.locator(".js-plotly-plot .gtitle")).to_contain_text("so far")
    click(stepper, "Run to end")
    expect(stepper.locator(".wb-status")).to_contain_text("completed")
    whole = notebook.run().locator(".wbx")  # and the whole run, nothing left open
    expect(whole.locator(".wbx-count")).to_contain_text("30 of 30 spans shown")
    expect(whole.locator("[title^='in progress']")).to_have_count(0)
    notebook.shot("4-the-whole-run", whole)
