"""A run stopped inside a sub-agent shows its spans so far, in JupyterLab through chromium.

A notebook typed as a person types it, one action per cell: a lead → scout → digger team and its
Stepper with a breakpoint on ``search``; Continue is clicked in the page (the run stops in the
digger, two sub-runs down, in the lead's first step); the next cell opens the trace explorer of
the stepped run, which shows every span so far (not "0 of 0 spans"), the open ones in italics with
their time so far; a click on the digger's call says it is in progress. After Run to end, a new
explorer shows the whole run. Screenshots go to ``test-artifacts/``.
"""

from __future__ import annotations

import re
from typing import Any
from urllib.parse import urlsplit

import httpx
import pytest

from tests.test_browser import (  # noqa: F401 (a fixture)
    ARTIFACTS,
    TIMEOUT_MS,
    jupyterlab,
)

pytestmark = pytest.mark.browser

NOTEBOOK = "so_far.ipynb"
CELLS = [
    """import workbench as wb
from workbench.notebook import Stepper, TraceExplorer

R = wb.ModelResponse


@wb.tool
def search(query: str) -> str:
    \"\"\"Look something up.\"\"\"
    return f"found: {query}"


digger = wb.Agent(model=wb.ScriptedModel([R.tool_call("search", {"query": "tides"}), "noon"]),
                  name="digger", tools=[search], store=False)
scout = wb.Agent(model=wb.ScriptedModel([R.tool_call("dig", {"task": "tables"}), "noon"]),
                 name="scout", tools=[digger.as_tool("dig", "Dig.")], store=False)
lead = wb.Agent(model=wb.ScriptedModel([R.tool_call("scout", {"task": "tide?"}), "Swim."]),
                name="lead", tools=[scout.as_tool("scout", "Find out.")], store=False)""",
    """stepper = Stepper(lead, "When can we swim?", breakpoints=[wb.Break.on_tool("search")])
stepper""",
    "TraceExplorer(stepper.run)",
    "TraceExplorer(stepper.run)",
]


def _notebook() -> dict[str, Any]:
    cell = {"cell_type": "code", "metadata": {}, "outputs": [], "execution_count": None}
    return {
        "nbformat": 4,
        "nbformat_minor": 5,
        "metadata": {"kernelspec": {"name": "python3", "display_name": "Python 3"}},
        "cells": [{**cell, "id": f"c{i}", "source": source} for i, source in enumerate(CELLS)],
    }


def _upload(lab_url: str) -> str:
    """Put the notebook on the server through its contents API; its URL."""
    parts = urlsplit(lab_url)
    token = parts.query.removeprefix("token=")
    base = f"{parts.scheme}://{parts.netloc}"
    answer = httpx.put(
        f"{base}/api/contents/{NOTEBOOK}",
        params={"token": token},
        json={"type": "notebook", "format": "json", "content": _notebook()},
        timeout=30,
    )
    answer.raise_for_status()
    return f"{base}/lab/tree/{NOTEBOOK}?token={token}"


def _run_cell(page: Any, index: int) -> None:
    """Select cell ``index`` and run it, as shift+enter does."""
    page.evaluate(
        """index => {
            const notebook = window.jupyterapp.shell.currentWidget.content;
            notebook.activeCellIndex = index;
            return window.jupyterapp.commands.execute('notebook:run-cell');
        }""",
        index,
    )


def test_a_run_stopped_in_a_sub_agent_shows_its_spans_so_far(
    browser: Any,
    jupyterlab: str,  # noqa: F811 (the fixture)
) -> None:
    from playwright.sync_api import expect

    page = browser.new_page()
    page.goto(_upload(jupyterlab))
    page.wait_for_function(
        "name => window.jupyterapp?.shell.currentWidget?.context?.path === name", arg=NOTEBOOK
    )
    page.wait_for_function(
        "() => window.jupyterapp.shell.currentWidget?.sessionContext?.session?.kernel"
    )
    cells = page.locator(".jp-Notebook .jp-CodeCell")
    _run_cell(page, 0)
    _run_cell(page, 1)
    stepper = cells.nth(1)
    stepper.get_by_role("button", name="Continue").click()
    expect(stepper.locator(".wb-status")).to_contain_text(
        "stopped at breakpoint", timeout=TIMEOUT_MS
    )

    _run_cell(page, 2)
    explorer = cells.nth(2).locator(".wbx")
    expect(explorer.locator(".wbx-count")).to_contain_text(
        "14 of 14 spans shown", timeout=TIMEOUT_MS
    )
    rows = explorer.locator(".wbx-row")
    open_rows = explorer.locator(".wbx-row.wbx-open")
    expect(open_rows).to_have_count(8)  # 3 runs, 3 steps, 2 calls, all still under way
    expect(open_rows.first).to_contain_text("invoke_agent lead")
    label = open_rows.first.locator(".wbx-label")
    assert label.evaluate("n => getComputedStyle(n).fontStyle") == "italic"
    expect(open_rows.first).to_have_attribute("title", re.compile("in progress"))
    hatched = open_rows.first.locator(".wbx-bar").evaluate(
        "n => getComputedStyle(n).backgroundImage"
    )
    assert "repeating-linear-gradient" in hatched
    digger = rows.filter(has_text="invoke_agent digger")
    expect(digger).to_have_count(1)
    rows.filter(has_text="execute_tool dig").click()
    expect(explorer.locator(".wbx-detail")).to_contain_text("in progress")
    explorer.screenshot(path=str(ARTIFACTS / "browser-explorer-so-far.png"))
    timeline = stepper.locator(".js-plotly-plot")
    expect(timeline.locator(".gtitle")).to_contain_text("so far")
    stepper.screenshot(path=str(ARTIFACTS / "browser-stepper-timeline-so-far.png"))

    stepper.get_by_role("button", name="Run to end").click()
    expect(stepper.locator(".wb-status")).to_contain_text("completed", timeout=TIMEOUT_MS)
    _run_cell(page, 3)
    whole = cells.nth(3).locator(".wbx")
    expect(whole.locator(".wbx-count")).to_contain_text("30 of 30 spans shown", timeout=TIMEOUT_MS)
    expect(whole.locator(".wbx-row.wbx-open")).to_have_count(0)
    page.close()
