"""A failed tool three agents deep, found in the report as a person finds it, in chromium, offline.

``workbench report last`` (no ``-o``) writes the three-level team's report; chromium opens the
file at 1,100 px wide with every request that would leave it refused. The failed span is drawn
red, the traceback names the user's function and line, the axis labels do not overlap and the
span names are whole. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.test_browser import ARTIFACTS, _only_files

pytestmark = pytest.mark.browser

RED = "rgb(198, 40, 40)"  # FAILED_COLOUR, as the browser computes it

WRITE_RUN = """
import workbench as wb
from tests._failing_team import team
store = wb.RunStore({store!r})
team(store=store, telemetry=wb.Telemetry(capture_content=True)).run_sync("price the hat")
store.close()
"""


def _report(tmp_path: Path) -> Path:
    """The team's run stored by one process, its report written by ``workbench report last``."""
    store = tmp_path / "runs.sqlite"
    root = Path(__file__).resolve().parent.parent
    env = {**os.environ, "PYTHONPATH": str(root)}
    code = WRITE_RUN.format(store=str(store))
    subprocess.run([sys.executable, "-c", code], env=env, check=True, timeout=120)
    done = subprocess.run(
        [sys.executable, "-m", "workbench.cli", "report", "last", "--store", str(store)],
        cwd=tmp_path,
        env=env,
        check=True,
        capture_output=True,
        text=True,
        timeout=120,
    )
    (written,) = tmp_path.glob("report-run_*.html")
    assert f"wrote {written}" in done.stdout
    return written


def _overlapping(boxes: list[dict[str, float]]) -> list[int]:
    """Indexes of boxes (left to right) that run into the next one."""
    return [
        i for i in range(len(boxes) - 1) if boxes[i]["x"] + boxes[i]["width"] > boxes[i + 1]["x"]
    ]


def test_the_failed_span_is_red_and_its_traceback_is_there_offline(
    browser: Any,
    tmp_path: Path,
) -> None:
    from playwright.sync_api import expect

    report = _report(tmp_path)
    page = browser.new_page()
    page.set_viewport_size({"width": 1100, "height": 900})
    leaving = _only_files(page)
    page.goto(report.as_uri())
    # the first thing on the page says what went wrong, in red, with the traceback open
    summary = page.locator(".wb-summary-line").first
    expect(summary).to_have_text("completed, 1 tool error: step 3, apply_discount in digger")
    assert summary.evaluate("n => getComputedStyle(n).color") == RED
    top = page.locator("ul.wb-errors details.wb-traceback pre").first
    expect(top).to_be_visible()
    expect(top).to_contain_text("in apply_discount")
    assert top.bounding_box()["y"] < page.locator("#wb-explorer").bounding_box()["y"]
    page.screenshot(path=str(ARTIFACTS / "browser-report-errors-first-1100.png"))

    explorer = page.locator("#wb-explorer")
    rows = explorer.locator(".wbx-row")
    expect(explorer.locator(".wbx-count")).to_contain_text("shown")

    # at 1,100 px: the axis labels stand apart and no span name is cut
    ticks = explorer.locator(".wbx-tick")
    assert ticks.count() >= 2
    assert _overlapping([ticks.nth(i).bounding_box() for i in range(ticks.count())]) == []
    cut = explorer.locator(".wbx-name").evaluate_all(
        "names => names.filter(n => n.scrollWidth > n.clientWidth).map(n => n.textContent)"
    )
    assert cut == []

    explorer.locator(".wbx-errors").check()  # "errors only": the failure and where it sits
    failed = rows.filter(has_text="execute_tool apply_discount")
    expect(failed).to_have_count(1)
    expect(failed).to_have_class(re.compile(r"\bwbx-error\b"))
    assert failed.locator(".wbx-label").evaluate("n => getComputedStyle(n).color") == RED
    bar = failed.locator(".wbx-bar").evaluate("n => getComputedStyle(n).backgroundColor")
    assert bar == RED
    for agent in ("invoke_agent lead", "invoke_agent researcher", "invoke_agent digger"):
        expect(rows.filter(has_text=agent)).to_have_count(1)  # the path down to it

    failed.click()
    detail = explorer.locator(".wbx-detail")
    expect(detail.locator(".wb-detail-head")).to_contain_text("failed")
    expect(detail.locator(".wb-failure")).to_have_text(
        "TypeError: unsupported operand type(s) for -: 'str' and 'float'"
    )
    trace = detail.locator("details.wb-traceback pre").first  # open: no click needed
    expect(trace).to_be_visible()
    expect(trace).to_contain_text("_failing_team.py")
    expect(trace).to_contain_text("in apply_discount")
    expect(trace).to_contain_text("return price - float(price) * rate")
    explorer.screenshot(path=str(ARTIFACTS / "browser-report-failed-span-1100.png"))
    assert leaving == []
    page.close()
