"""Journey 3: stop at the error with the Stepper, and explore the spans so far.

The person types ``error`` into the Stepper's breakpoint box, presses Continue, and the run stops
right after the digger's tool failed, two sub-agents down. A later cell opens the trace explorer
on the stopped run: the spans up to that point are there (the failed tool call red), the agents
and steps still open are marked in progress, and nothing that has not happened yet is shown.
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
    in_progress = re.compile(r"^in progress")  # the row's tooltip; its bar is hatched
    for open_span in ("invoke_agent lead", "execute_tool research", "invoke_agent digger"):
        expect(rows.filter(has_text=open_span)).to_have_attribute("title", in_progress)
    expect(failed).not_to_have_attribute("title", in_progress)
    expect(rows.filter(has_text="workbench.step 2")).to_have_count(0)  # not happened yet
    notebook.shot("2-spans-so-far", explorer)

    rows.filter(has_text="invoke_agent digger").click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("in progress")
    failed.click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("TypeError")
    notebook.shot("3-the-failed-call-so-far", explorer)
