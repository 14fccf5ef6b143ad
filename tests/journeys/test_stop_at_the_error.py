"""Journey: stopped at the error two sub-agents down, the person presses Stop; what went wrong?

The Stepper stops right after the digger's tool crashed (its breakpoint box says ``error``), and
the person, having seen enough, presses Stop. The run ends aborted, and every view's first line
names the tool that crashed, not the calls above it that Stop cut short (they were named first:
"first: step 1, research in lead"). In a later cell the run's first error, asked for by itself,
shows its traceback open, naming the tool's cell (it showed a one-line repr).

Driven from code instead, cell by cell, each phase a cell shows says whose it is, at which
breakpoint it stopped and what failed there (it said "tools of step 1 · 4.67 ms → running").
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import click
from tests.journeys.team import BUG_LINE, BUGGY_TOOL, PROMPT, TEAM

STEPPER = f"""stepper = Stepper(lead, {PROMPT!r}, breakpoints=[wb.Break.on_error()])
stepper"""

FIRST = "first: step 1, apply_discount in digger"


def test_stop_at_the_error_and_the_crash_is_named_first(open_notebook: OpenNotebook) -> None:
    notebook = open_notebook(
        "stop-at-the-error",
        [
            *TEAM,
            "from workbench.notebook import Stepper",
            STEPPER,
            "result = stepper.run.result\nresult",
            "result.errors[0]",
        ],
    )
    notebook.run_until(len(TEAM) + 1)
    stepper = notebook.run()
    click(stepper, "Continue")
    expect(stepper.locator(".wb-status")).to_contain_text(
        re.compile(r"stopped at breakpoint .*error.* in digger")
    )
    click(stepper, "Stop")
    expect(stepper.locator(".wb-status")).to_contain_text("aborted")
    summary = stepper.locator(".wb-summary-line")
    expect(summary).to_have_text(f"aborted, 1 tool error, 2 failed sub-runs; {FIRST}")
    notebook.shot("1-stopped", stepper)

    shown = notebook.run().locator(".wb-run-result")
    expect(shown.locator(".wb-summary-line")).to_contain_text(FIRST)
    expect(shown.locator(".wb-error-item").first).to_contain_text("TypeError")

    error = notebook.run().locator(".wb-run-error")
    expect(error).to_contain_text("step 1, apply_discount in digger")
    traceback = error.locator("details.wb-traceback[open] pre")
    tool_cell = TEAM.index(BUGGY_TOOL) + 1
    expect(traceback).to_contain_text(
        f'File "Cell In[{tool_cell}]", line {BUG_LINE}, in apply_discount'
    )
    expect(traceback).to_be_visible()
    notebook.shot("2-the-first-error", error)


def test_stopped_at_the_error_from_code_each_cell_says_where_and_what_failed(
    open_notebook: OpenNotebook,
) -> None:
    notebook = open_notebook(
        "stop-at-the-error-from-code",
        [
            *TEAM,
            f"run = lead.start({PROMPT!r}, breakpoints=[wb.Break.on_error()])",
            "run.run_to_breakpoint()",
            "run.step_out()",
            "run.run_to_end()",
        ],
    )
    notebook.run_until(len(TEAM) + 1)
    stopped = notebook.run().locator(".wb-phase-event")
    expect(stopped).to_contain_text("digger (depth 2) · tools of step 1")
    expect(stopped).to_contain_text("stopped at breakpoint on a tool error")
    expect(stopped).to_contain_text("apply_discount: Tool 'apply_discount' failed: TypeError")
    notebook.shot("1-stopped-from-code", stopped)

    out = notebook.run().locator(".wb-phase-event")
    expect(out).to_contain_text("researcher (depth 1) · tools of step 1")
    expect(out).not_to_contain_text("breakpoint")
    done = notebook.run().locator(".wb-run-result .wb-summary-line")
    expect(done).to_have_text("completed, 1 tool error: step 1, apply_discount in digger")
