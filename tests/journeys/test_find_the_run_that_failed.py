"""Journey: an eval of 2,000 runs went partly wrong. Find the failures, open one, compare two.

A person runs the eval into a store, shows the `RunsBrowser`, picks "failed" in the status box,
clicks a failed run (it opens below in the trace explorer), steps through it as the Stepper
shows a run (it opens on the step that broke; step 1 picked), ticks a run with an error and a
good one and presses Compare (side by side, step by step), then runs three more tasks in a
later cell and sees them appear in the open browser.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook

EVAL = """\
import workbench as wb
from workbench.demo import run_eval

store = wb.RunStore("runs.sqlite")
results = run_eval(2000, store)
len(results)"""
BROWSER = """\
from workbench.notebook import RunsBrowser

browser = RunsBrowser(store)
browser"""
MORE = "more = run_eval(3, store)"
OPENED = "browser.opened_run.status.value, browser.opened_run.errors[0].line"


def test_find_the_runs_that_failed_open_one_and_compare_two(open_notebook: OpenNotebook) -> None:
    notebook = open_notebook("find-the-run-that-failed", [EVAL, BROWSER, MORE, OPENED])
    notebook.run()
    cell = notebook.run()
    table = cell.locator(".wbr")
    count = table.locator(".wbr-count")
    expect(count).to_have_text("1–25 of 2,000 runs")
    expect(table.locator(".wbr-row")).to_have_count(25)
    notebook.shot("1-open", table)

    table.locator(".wbr-status-filter").select_option("failed")  # 69 of the 2,000 failed
    expect(count).to_have_text("1–25 of 69 runs")
    rows = table.locator(".wbr-row")
    expect(rows.locator(".wbr-badge", has_text="failed")).to_have_count(25)
    first = rows.first
    expect(first.locator(".wbr-first-error")).to_contain_text(
        "in shopper: ConnectionError: the model server closed the connection"
    )
    notebook.shot("2-failed", table)

    run_id = first.locator(".wbr-id").inner_text()
    first.locator(".wbr-agent").click()  # open it: below the table, in the trace explorer
    expect(first).to_have_class(re.compile("wbr-opened"))
    explorer = cell.locator(".wbx")
    expect(explorer.locator(".wbx-count")).to_contain_text("spans shown")
    expect(cell.locator(".wb-run-result")).to_contain_text(run_id)
    expect(explorer.locator(".wbx-row.wbx-error").first).to_be_visible()  # the failed call
    notebook.shot("3-opened", cell)

    cell.get_by_role("button", name="Step through…").click()  # the run as the Stepper shows it
    history = cell.locator(".wb-history")
    expect(history).to_be_in_viewport()  # where the person clicked, not below the explorer
    notebook.shot("3a-step-through-clicked")  # what the page shows right after the click
    expect(history.locator(".wb-status")).to_contain_text("This run has ended")
    expect(history.locator(".wb-status")).to_contain_text("ConnectionError: the model server")
    step = history.locator(".wb-step-head")
    expect(step).to_contain_text("Step 2 · failed")  # it opens on the step that broke
    history.locator("select").nth(1).select_option("step 1")  # the step picker
    expect(step).to_contain_text("Step 1 · ")
    expect(history.locator(".wb-step")).to_contain_text("Tool calls")  # price, called at step 1
    notebook.shot("3b-stepped-through", history)

    table.locator(".wbr-status-filter").select_option("")
    table.locator(".wbr-errors-only").check()
    expect(count).not_to_have_text("1–25 of 2,000 runs")
    ticks = rows.locator(".wbr-tick")
    ticks.nth(0).check()
    ticks.nth(1).check()
    compare = table.locator(".wbr-compare")
    expect(compare).to_be_enabled()
    compare.click()
    side_by_side = cell.locator(".wb-compare")
    expect(side_by_side).to_contain_text("first divergence: step 1")
    expect(side_by_side.locator(".wb-cmp-step")).not_to_have_count(0)
    notebook.shot("4-compared", side_by_side)

    table.locator(".wbr-errors-only").uncheck()
    expect(count).to_have_text("1–25 of 2,000 runs")
    notebook.run()  # three more tasks, from a later cell: they appear in the open browser
    expect(count).to_have_text("1–25 of 2,003 runs")
    notebook.shot("5-live", table)

    opened = notebook.run()  # and Python reads what the clicks opened
    expect(opened.locator(".jp-OutputArea-output")).to_contain_text(
        "'failed', 'step 2 in shopper: ConnectionError"
    )
