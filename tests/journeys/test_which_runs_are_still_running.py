"""Journey: which of my runs are still running, and how big was that team's run?

A person's store holds the failing team's run (a lead, a researcher, a digger) and runs started
and stepped by hand: one in a process that has ended since (another kernel), one in a process
still holding it, one in this kernel. The `RunsBrowser` lists the ended one as interrupted, the
others as running; the interrupted one opens (and steps through) saying which process ran it
and what it recorded. The holding process is killed in a later cell and its run turns
interrupted in the open browser. With "sub-runs under their run" the team's row counts the
tree's steps, as it counts its errors and tokens.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.team import RUN, TEAM

OWN_STORE = """import os
os.environ["WORKBENCH_STORE"] = "still-running.sqlite"  # this notebook's runs only"""
BY_HAND = """import subprocess, sys
from workbench.demo import DEMO_PROMPT, demo_agent

BY_HAND = (  # a run started and stepped by hand (two steps and a phase) in another process
    "import sys; from workbench.demo import DEMO_PROMPT, demo_agent\\n"
    "run = demo_agent().start(DEMO_PROMPT)\\n"
    "for _ in range(9): run.next_phase()\\n"
    "print(run.state.run_id, flush=True); sys.stdin.read()"
)
ended = subprocess.run(
    [sys.executable, "-c", BY_HAND], input="", capture_output=True, text=True, check=True
).stdout.strip()
held = subprocess.Popen(
    [sys.executable, "-c", BY_HAND], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
)
holding = held.stdout.readline().strip()
here = demo_agent().start(DEMO_PROMPT)
here.next_phase()"""
BROWSER = """from workbench.notebook import RunsBrowser

browser = RunsBrowser(wb.RunStore.default())
browser"""
KILL = "held.kill(); held.wait()"
READ = """rows = wb.runs(rollup=True)
rows[["agent", "status", "steps", "subruns"]].values.tolist()"""


def test_interrupted_runs_are_told_from_running_ones_and_a_tree_counts_its_steps(
    open_notebook: OpenNotebook,
) -> None:
    notebook = open_notebook("still-running", [OWN_STORE, *TEAM, RUN, BY_HAND, BROWSER, KILL, READ])
    notebook.run_until(len(TEAM) + 3)  # the store, the team, its run, the runs stepped by hand
    cell = notebook.run()
    table = cell.locator(".wbr")
    rows = table.locator(".wbr-row")
    expect(table.locator(".wbr-count")).to_have_text("1–6 of 6 runs")
    expect(rows.locator(".wbr-badge", has_text="interrupted")).to_have_count(1)
    expect(rows.locator(".wbr-badge", has_text="running")).to_have_count(2)
    notebook.shot("s7-1-listed", table)

    table.locator(".wbr-status-filter").select_option("interrupted")
    expect(rows).to_have_count(1)
    stopped = rows.first
    expect(stopped.locator(".wbr-steps")).to_have_text("2")  # the steps it recorded
    stopped.locator(".wbr-agent").click()
    heading = cell.locator(".wb-run-result")
    status = heading.locator("tr", has_text="stop reason")  # its status badge, then why it stopped
    expect(status.locator("span", has_text="interrupted")).to_be_visible()
    expect(status).not_to_contain_text("running")
    expect(heading).to_contain_text("ended while it was running: it recorded 2 steps")
    notebook.shot("s7-2-opened", cell)
    explorer = cell.locator(".wbx")  # its run span never closed, and never will: cut off
    expect(explorer.locator(".wbx-summary.wbx-failed")).to_have_text("interrupted")
    run_span = explorer.locator(".wbx-row", has_text="invoke_agent")
    expect(run_span.locator(".wbx-dur")).to_have_text(re.compile(r"^[\d.]+ ms cut off$"))
    expect(run_span).to_have_attribute("title", re.compile("^cut off: the process that ran it"))
    expect(explorer.locator(".wbx-rows")).not_to_contain_text("so far")
    run_span.click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("cut off the process that ran it")
    expect(explorer.locator(".wbx-detail")).not_to_contain_text("in progress")
    notebook.shot("s8-2b-explorer-cut-off", explorer)
    cell.get_by_role("button", name="Step through…").click()
    history = cell.locator(".wb-history .wb-status")
    expect(history).to_contain_text("This run will not end: the process that ran it (pid")
    expect(history).not_to_contain_text("goes on")
    expect(history.locator("span", has_text="interrupted")).to_be_visible()  # its badge
    notebook.shot("s7-2a-stepped-through", cell.locator(".wb-history"))
    timeline = cell.locator(".wb-history .js-plotly-plot")
    timeline.scroll_into_view_if_needed()
    expect(timeline.locator(".legendtext", has_text="cut off")).to_be_visible()  # its red stroke
    notebook.shot("s8-2c-timeline", timeline)
    bar = timeline.locator(".point path").first.bounding_box()  # the run span's, the first row
    assert bar is not None  # plotly's drag layer lies over the bars: the mouse goes where it is
    cell.page.mouse.move(bar["x"] + bar["width"] / 2, bar["y"] + bar["height"] / 2)
    expect(cell.page.locator(".hoverlayer")).to_contain_text("cut off: its process ended")
    notebook.shot("s8-2d-timeline-hover", cell.locator(".wb-history .js-plotly-plot"))

    table.locator(".wbr-status-filter").select_option("")
    expect(rows).to_have_count(6)
    notebook.run()  # the process holding a run is killed: the open list says so, unasked
    expect(rows.locator(".wbr-badge", has_text="interrupted")).to_have_count(2)
    expect(rows.locator(".wbr-badge", has_text="running")).to_have_count(1)  # this kernel's
    notebook.shot("s7-3-killed", table)

    table.locator(".wbr-rollup").check()  # sub-runs under their run
    expect(rows).to_have_count(4)
    lead = rows.filter(has_text="+2 sub-runs")
    expect(lead.locator(".wbr-steps")).to_have_text("6")  # 2 of the lead's, 2 + 2 below it
    expect(lead.locator(".wbr-agent")).to_have_attribute("title", "lead +2 sub-runs")
    notebook.shot("s7-4-rolled-up", table)

    read = notebook.run()  # and Python reads the same
    expect(read.locator(".jp-OutputArea-output")).to_contain_text("['lead', 'completed', 6, 2]")
