"""Journey 5: the same failing span, found in the standalone report opened offline.

The team's run is recorded in a store by a script, ``workbench report last -o`` writes the
report of the run the script started (the lead's), and the person opens the file in the browser
with every request that would leave the file refused. The report says at the top that a tool
failed and where; its explorer's "errors only" shows the failed call drawn red, and clicking it
shows the traceback, naming the user's function and line; the steps table links the failed
step to its messages.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.journeys.harness import ARTIFACTS, RED
from tests.journeys.team import BUG_LINE, IMPORT, PROMPT, TEAM
from tests.test_browser import _only_files


def test_the_failing_span_in_the_report_opened_offline(browser: Any, tmp_path: Path) -> None:
    script = tmp_path / "team.py"
    script.write_text("\n\n".join([*TEAM, f"lead.run_sync({PROMPT!r})"]) + "\n")
    bug_line = len(IMPORT.splitlines()) + 1 + BUG_LINE  # the tool's cell follows a blank line
    env = {**os.environ, "WORKBENCH_STORE": str(tmp_path / "runs.sqlite")}
    subprocess.run([sys.executable, str(script)], env=env, check=True, timeout=120)
    report = tmp_path / "report.html"
    workbench = [sys.executable, "-m", "workbench.cli", "report", "last", "-o", str(report)]
    subprocess.run(workbench, env=env, check=True, timeout=120, capture_output=True)

    page = browser.new_page()
    refused = _only_files(page)
    page.goto(report.as_uri())
    expect(page.get_by_role("row", name="agents lead, researcher, digger")).to_be_visible()
    said = page.get_by_text(re.compile(r"1 tool error.*apply_discount in digger")).first
    expect(said).to_be_visible()
    steps = page.get_by_role("heading", name="Steps")
    assert said.bounding_box()["y"] < steps.bounding_box()["y"]  # at the top: before the steps
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    page.screenshot(path=str(ARTIFACTS / "report-offline-1-summary.png"))

    explorer = page.locator("#wb-explorer")
    explorer.get_by_role("checkbox", name="errors only").check()
    failed = explorer.locator(".wbx-row", has_text="execute_tool apply_discount")
    expect(failed).to_have_count(1)
    expect(failed.locator(".wbx-bar")).to_have_css("background-color", RED)
    failed.click()
    detail = explorer.locator(".wbx-detail")
    expect(detail).to_contain_text("unsupported operand type(s) for /: 'str' and 'int'")
    frame = detail.get_by_text(re.compile(rf"team\.py.*line {bug_line}, in apply_discount")).first
    expect(frame).to_be_visible()
    explorer.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-offline-2-traceback.png"))

    # the steps' messages: the page fills each section from the boxes its explorer holds; the
    # steps table (drawn by the page from its columns, sorted by a click on a heading) links the
    # failed step to its section
    dug = page.locator("section.wb-step-section").filter(has_text="step 1 · digger")
    expect(dug).to_have_count(1)
    table = page.locator("div.wb-table").first
    headings = table.locator("th")
    time = headings.all_inner_texts().index("time (ms)")
    times = table.locator(f"tbody td:nth-child({time + 1})")
    for arrow in ("▼", "▲"):  # a heading's click sorts by it: the slowest step first, then last
        headings.nth(time).click()
        expect(headings.nth(time)).to_have_text(f"time (ms) {arrow}")
        shown = [float(t) for t in times.all_inner_texts()]
        assert len(shown) >= 5 and shown == sorted(shown, reverse=arrow == "▼")
    failing = table.get_by_role("row").filter(has_text="apply_discount (error)")
    expect(failing).to_have_count(1)
    expect(failing.get_by_role("cell").nth(1)).to_have_text("digger")
    failing.get_by_role("link").click()
    expect(dug).to_be_in_viewport()
    told = dug.locator(".wb-msg").filter(has_text="failed: TypeError: unsupported operand")
    expect(told).to_have_count(1)  # what the digger's model was told of its tool call
    dug.scroll_into_view_if_needed()
    page.screenshot(path=str(ARTIFACTS / "report-offline-3-step-messages.png"))
    assert refused == []
    page.close()
