"""The notebook workbench and the HTML report in a real browser: headless Debian chromium.

JupyterLab serves a copy of ``notebooks/01_quickstart.ipynb``; Playwright (from PyPI, driving the
system ``/usr/bin/chromium`` through ``executable_path``: its own browser download does not work
here) runs every cell, clicks the last Stepper's buttons through a run with an approval, and checks
that the widgets and the plotly figures rendered in the page. Then it opens the ``run.html`` that
``workbench report`` wrote, with every request that would leave the file refused, and checks that
the explorer, the charts and the messages are there, and the report ``workbench trace -o`` wrote
of another framework's trace whose content is markup. Screenshots go to ``test-artifacts/``.

Chromium comes from ``scripts/install-browser``; the tests skip, saying why, only when it cannot
be installed. Waiting is on page conditions (Playwright's ``expect``), never on sleeps.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.journeys.harness import TIMEOUT_MS, Jupyter

pytestmark = pytest.mark.browser

ROOT = Path(__file__).resolve().parent.parent
ARTIFACTS = ROOT / "test-artifacts"


@pytest.fixture(scope="module")
def jupyterlab(jupyter: Jupyter) -> str:
    """The session's JupyterLab, serving copies of the notebooks; 01_quickstart's URL."""
    ARTIFACTS.mkdir(exist_ok=True)
    for name in ("01_quickstart.ipynb", "08_trace_explorer.ipynb"):
        shutil.copy(ROOT / "notebooks" / name, jupyter.root)
    return jupyter.url("lab/tree/01_quickstart.ipynb")


def test_quickstart_in_jupyterlab(browser: Any, jupyterlab: str) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(jupyterlab)
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')")
    expect(page.locator(".jp-Notebook .jp-Cell").first).to_be_visible()
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel"
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")

    last = page.locator(".jp-Notebook .jp-CodeCell").last
    status = last.locator(".wb-status")
    expect(status).to_contain_text("pending")
    plots = page.locator(".jp-OutputArea .js-plotly-plot")
    expect(plots).to_have_count(4)  # the TraceView's three figures, the first Stepper's timeline
    expect(page.locator(".wb-status").first).to_contain_text("completed")
    page.screenshot(path=str(ARTIFACTS / "browser-quickstart-ran.png"), full_page=False)

    last.scroll_into_view_if_needed()
    last.get_by_role("button", name="Next phase").click()
    expect(status).to_contain_text("next phase inference")
    last.get_by_role("button", name="Run to end").click()
    expect(status).to_contain_text("paused")
    approve = last.get_by_role("button", name="Approve")
    expect(approve).to_be_visible()
    expect(last.locator(".wb-pending")).to_contain_text("save_result")
    last.screenshot(path=str(ARTIFACTS / "browser-stepper-paused.png"))

    approve.click()
    expect(status).to_contain_text("1 approved, 0 denied")
    last.get_by_role("button", name="Run to end").click()
    expect(status).to_contain_text("completed")
    expect(last.locator(".wb-step")).to_contain_text("doubled that is 84")
    expect(last.get_by_role("button", name="Next phase")).to_be_disabled()

    timeline = last.locator(".js-plotly-plot")
    expect(timeline).to_have_count(1)
    # a bar per span of the run (waited for: the timeline follows a moment after the press)
    expect(timeline.locator(".barlayer .point").nth(19)).to_be_attached()
    expect(timeline.locator(".legendtext", has_text="tool")).to_have_count(1)
    last.screenshot(path=str(ARTIFACTS / "browser-stepper-completed.png"))

    waterfall = plots.nth(1)  # the TraceView's waterfall (after the first Stepper's timeline)
    waterfall.scroll_into_view_if_needed()
    expect(waterfall.locator(".gtitle")).to_contain_text("Spans")
    assert waterfall.locator(".barlayer .point").count() >= 20
    page.screenshot(path=str(ARTIFACTS / "browser-traceview-waterfall.png"))
    page.close()


def _only_files(page: Any) -> list[str]:
    """Refuse every request of ``page`` that would leave the file; the list of those refused."""
    leaving: list[str] = []

    def only_the_file(route: Any) -> None:
        if route.request.url.startswith("file://"):
            route.continue_()
        else:
            leaving.append(route.request.url)
            route.abort()

    page.route("**/*", only_the_file)
    return leaving


def test_report_opens_offline(browser: Any, tmp_path: Path) -> None:
    from playwright.sync_api import expect

    store = tmp_path / "runs.sqlite"
    demo = [sys.executable, "-c", "from workbench.demo import run_demo; run_demo()"]
    env = {**os.environ, "WORKBENCH_STORE": str(store)}
    subprocess.run(demo, env=env, check=True, timeout=120)
    report = tmp_path / "run.html"
    subprocess.run(
        [sys.executable, "-m", "workbench.cli", "report", "last", "-o", str(report)],
        env=env,
        check=True,
        timeout=120,
    )

    page = browser.new_page()
    leaving = _only_files(page)
    page.goto(report.as_uri())
    bars = page.locator(".wb-bars .wb-bar")
    expect(bars).to_have_count(10)  # time and tokens, a bar per step record
    assert bars.first.bounding_box()["width"] > 100
    expect(page.locator("section.wb-step-section")).to_have_count(5)
    expect(page.locator("body")).to_contain_text("doubled that is 84")
    page.screenshot(path=str(ARTIFACTS / "browser-report.png"), full_page=True)
    steps = page.locator("div.wb-table").first  # a heading's click sorts: empty cells last
    headings = steps.locator("th")
    tools = headings.all_inner_texts().index("tool calls")
    headings.nth(tools).click()
    expect(headings.nth(tools)).to_have_text("tool calls ▲")
    called = steps.locator(f"tbody td:nth-child({tools + 1})").all_inner_texts()
    assert called[0] and called[-1] == "", called  # the last step answered, calling none

    explorer = page.locator("#wb-explorer")  # the same explorer, answered in the page
    rows, count = explorer.locator(".wbx-row"), explorer.locator(".wbx-count")
    expect(count).to_contain_text("shown")
    total = rows.count()
    assert total >= 15
    rows.filter(has_text="chat").nth(1).click()
    expect(explorer.locator(".wbx-detail .wb-retry")).to_contain_text("twenty-five")
    explorer.locator(".wbx-scroll").focus()
    page.keyboard.press("ArrowDown")
    expect(explorer.locator(".wbx-row.wbx-selected")).to_contain_text("execute_tool")
    explorer.locator(".wbx-search").fill("multiply")
    expect(count).to_contain_text("matched")
    expect(rows.filter(has_text="execute_tool multiply")).to_have_count(1)
    explorer.locator(".wbx-search").fill("")
    expect(rows).to_have_count(total)
    explorer.locator(".wbx-errors").check()
    expect(rows.filter(has_text="execute_tool add")).to_have_count(1)  # the retried call
    expect(explorer.locator(".wbx-row.wbx-error")).to_have_count(1)
    explorer.locator(".wbx-errors").uncheck()
    expect(rows).to_have_count(total)
    rows.filter(has_text="chat").last.click()  # its conversation, joined from the page's parts
    prompt = explorer.locator(".wbx-detail .wb-role-user").first
    expect(prompt).to_contain_text("What is 17 + 25, doubled?")
    rows.filter(has_text="workbench.step 1").locator(".wbx-fold").click()
    expect(rows).not_to_have_count(total)
    explorer.screenshot(path=str(ARTIFACTS / "browser-report-explorer.png"))
    assert leaving == []
    page.close()


def test_a_foreign_trace_report_opens_offline_with_its_text_as_text(
    browser: Any, tmp_path: Path
) -> None:
    """``workbench trace FILE -o`` on another framework's trace whose content is markup."""
    import json

    from playwright.sync_api import expect

    from tests.test_trace_cli import foreign_trace

    markup = "<img src=x onerror=alert(1)><script>alert(2)</script>"
    trace = tmp_path / "foreign.json"
    trace.write_text(json.dumps(foreign_trace(["Hello", markup], name=f"chat {markup}")))
    report = tmp_path / "trace.html"
    subprocess.run(
        [sys.executable, "-m", "workbench.cli", "trace", str(trace), "-o", str(report)],
        check=True,
        timeout=120,
        capture_output=True,
    )

    page = browser.new_page()
    dialogs: list[str] = []
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    leaving = _only_files(page)
    page.goto(report.as_uri())
    expect(page.locator(".wb-bars .wb-bar")).to_have_count(4)  # time and tokens, per call
    expect(page.locator("section.wb-step-section")).to_have_count(2)
    expect(page.locator("section.wb-step-section").nth(1)).to_contain_text(markup)
    rows = page.locator("#wb-explorer .wbx-row")
    expect(rows).to_have_count(2)
    rows.nth(1).click()
    expect(page.locator("#wb-explorer .wbx-detail")).to_contain_text(markup)
    page.screenshot(path=str(ARTIFACTS / "browser-trace-report.png"), full_page=True)
    assert page.locator("img[src=x]").count() == 0 and dialogs == [] and leaving == []
    page.close()


def _run_all(page: Any, url: str, notebook: str) -> None:
    """Open ``notebook`` and run all its cells (once it, not a restored tab, is the current one)."""
    page.goto(url)
    page.wait_for_function("() => window.jupyterapp && document.querySelector('.jp-Notebook')")
    page.wait_for_function(
        "name => window.jupyterapp.shell.currentWidget?.context?.path === name",
        arg=notebook,
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel"
    )
    page.evaluate("() => window.jupyterapp.commands.execute('notebook:run-all-cells')")


def test_trace_explorer_in_jupyterlab(browser: Any, jupyterlab: str) -> None:
    """The explorer on a run with tools, a retry, hooks and a sub-run: click, read, search, fold."""
    from playwright.sync_api import expect

    page = browser.new_page()
    _run_all(page, jupyterlab.replace("01_quickstart", "08_trace_explorer"), NOTEBOOK)
    explorer = page.locator(".wbx").first
    rows = explorer.locator(".wbx-row")
    count = explorer.locator(".wbx-count")
    expect(count).to_contain_text("28 of 28 spans shown", timeout=TIMEOUT_MS)  # after Run All
    # select() from Python (a later cell) moved the page's selection and filled the detail pane
    expect(explorer.locator(".wbx-row.wbx-selected")).to_contain_text("execute_tool add")
    detail = explorer.locator(".wbx-detail")
    expect(detail).to_contain_text("twenty-five")
    # the sub-run sits under the tool call that ran it, the hook and the retry are there
    call = rows.filter(has_text="execute_tool research")
    sub = rows.filter(has_text="invoke_agent researcher")
    expect(sub).to_have_count(1)
    assert _indent(sub) > _indent(call)
    expect(rows.filter(has_text="workbench.hook PreToolUse")).to_have_count(3)
    explorer.screenshot(path=str(ARTIFACTS / "browser-explorer-open.png"))

    rows.filter(has_text="chat scripted-lead").nth(1).click()  # step 2's model call
    expect(rows.filter(has_text="chat scripted-lead").nth(1)).to_have_class(re.compile("selected"))
    expect(detail).to_contain_text("Sent to the model")
    expect(detail.locator(".wb-retry")).to_contain_text(
        "Invalid arguments for tool 'add': argument 'b': Input should be a valid integer"
    )  # the retry prompt, whole, as a message
    expect(detail.locator(".wb-role-user")).to_contain_text("Ask the researcher about it.")
    explorer.screenshot(path=str(ARTIFACTS / "browser-explorer-detail.png"))

    active = page.evaluate(_ACTIVE_CELL)
    page.keyboard.press("ArrowDown")
    expect(explorer.locator(".wbx-row.wbx-selected")).to_contain_text("execute_tool add")
    expect(detail.locator(".wb-outcomes")).to_contain_text("42")
    assert page.evaluate(_ACTIVE_CELL) == active  # the key moved the explorer, not the notebook

    search = explorer.locator(".wbx-search")
    cells = page.locator(".jp-Notebook .jp-Cell").count()
    search.press_sequentially("dd")  # typed into the explorer, not notebook shortcuts
    expect(count).to_contain_text("matched")
    assert page.locator(".jp-Notebook .jp-Cell").count() == cells
    search.fill("researcher")
    expect(rows).not_to_have_count(28)  # waits for the answer to this search, not the last one
    expect(count).to_contain_text("matched")
    expect(rows.filter(has_text="invoke_agent researcher")).to_have_count(1)
    explorer.screenshot(path=str(ARTIFACTS / "browser-explorer-search.png"))
    search.fill("")
    expect(count).to_contain_text("28 of 28 spans shown")

    step_one = rows.filter(has_text="workbench.step 1").first  # the lead's (the sub-run has one)
    step_one.locator(".wbx-fold").click()
    expect(count).to_contain_text("23 of 28 spans shown")
    expect(step_one.locator(".wbx-fold")).to_have_text("▸")
    explorer.screenshot(path=str(ARTIFACTS / "browser-explorer-folded.png"))
    page.close()


NOTEBOOK = "08_trace_explorer.ipynb"
_ACTIVE_CELL = "() => window.jupyterapp.shell.currentWidget.content.activeCellIndex"


def _indent(row: Any) -> float:
    padding: str = row.locator(".wbx-name").evaluate("n => getComputedStyle(n).paddingLeft")
    return float(padding.removesuffix("px"))
