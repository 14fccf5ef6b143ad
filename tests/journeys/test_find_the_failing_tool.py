"""Journeys 1 and 6: a three-level team answered, but a tool two sub-agents down crashed. Find it.

The result's own display says so at the top (which tool, which agent, which step), and so does
the trace explorer's first line; its "errors only" shows the failed span, drawn red, and clicking
it shows the traceback, naming the user's function and the line of their cell. The same journey
runs in JupyterLab and in the classic Notebook 7 interface.
"""

from __future__ import annotations

import re

import pytest
from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import RED, Interface
from tests.journeys.team import BUG_LINE, BUGGY_TOOL, RUN, TEAM


@pytest.mark.parametrize("ui", ["lab", "notebook"], ids=["jupyterlab", "notebook7"])
def test_find_the_failing_tool_from_the_result_then_its_traceback(
    open_notebook: OpenNotebook, ui: Interface
) -> None:
    notebook = open_notebook(
        f"find-the-failing-tool-{ui}",
        [*TEAM, RUN, "from workbench.notebook import TraceExplorer", "TraceExplorer(result)"],
        ui=ui,
    )
    notebook.run_until(len(TEAM))
    ran = notebook.run()  # the run, and its result on screen
    summary = ran.locator(".jp-OutputArea-output")
    expect(summary).to_contain_text("1 tool error")
    expect(summary).to_contain_text(re.compile(r"step 1, apply_discount in digger"))
    notebook.shot("1-result", ran)

    notebook.run()
    explorer = notebook.run().locator(".wbx")
    expect(explorer.locator(".wbx-count")).to_contain_text("spans shown")
    said = explorer.locator(".wbx-summary")  # what went wrong, before any span is looked at
    expect(said).to_contain_text("1 tool error: step 1, apply_discount in digger")
    expect(said).to_have_css("color", RED)
    explorer.get_by_role("checkbox", name="errors only").check()
    failed = explorer.locator(".wbx-row", has_text="execute_tool apply_discount")
    expect(failed).to_have_count(1)
    expect(failed.locator(".wbx-bar")).to_have_css("background-color", RED)
    notebook.shot("2-errors-only", explorer)

    failed.click()
    detail = explorer.locator(".wbx-detail")
    expect(detail).to_contain_text("TypeError")
    expect(detail).to_contain_text("unsupported operand type(s) for /: 'str' and 'int'")
    expect(detail).to_contain_text("What went wrong")  # at the top, its traceback open
    # the tool's cell, the second one run, named as the notebook shows it (not the kernel's file)
    tool_cell = TEAM.index(BUGGY_TOOL) + 1
    frame = detail.get_by_text(
        re.compile(rf'File "Cell In\[{tool_cell}\]", line {BUG_LINE}, in apply_discount')
    ).first
    expect(frame).to_be_visible()
    expect(detail).to_contain_text("return price * (1 - discount / 100)")
    notebook.shot("3-traceback", explorer)
