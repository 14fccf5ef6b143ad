"""Journey 4: the digger's tool was wrong. Fix it, re-run from its step in one call, see the diff.

The person redefines the tool in a new cell and re-runs the digger's run from step 1 with
``rerun_sync(snapshot, tools=[fixed])`` (the README's recipe): the recorded model answer of step 1
is replayed, the fixed tool runs on the very call that failed, and the digger's own model goes
on. The re-run's display says it completed without a tool error, and the printed diff says the
tool failed in the first run and succeeds in the re-run, on the same call.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.team import FIXED_TOOL, RUN, TEAM

FAILING = """failing = result.children[0].children[0]  # the digger's run, where the error was
failing"""

RERUN = """fixed = digger.rerun_sync(failing.snapshot(step=1), tools=[apply_discount])
fixed"""


def test_fix_the_tool_and_rerun_from_its_step_then_the_diff(open_notebook: OpenNotebook) -> None:
    notebook = open_notebook(
        "fix-and-rerun", [*TEAM, RUN, FAILING, FIXED_TOOL, RERUN, "print(wb.diff(failing, fixed))"]
    )
    notebook.run_until(len(TEAM) + 1)
    failing = notebook.run().locator(".jp-OutputArea-output")
    expect(failing).to_contain_text("digger")
    expect(failing).to_contain_text("1 tool error")
    notebook.shot("1-the-failing-run", failing)

    notebook.run()  # the fixed tool
    fixed = notebook.run().locator(".jp-OutputArea-output")
    expect(fixed).to_contain_text("completed")
    expect(fixed).to_contain_text("apply_discount says: 90.0")
    expect(fixed).not_to_contain_text("tool error")
    diff = notebook.run().locator(".jp-OutputArea-output")
    expect(diff).to_contain_text("b is a re-run of a from step 1")
    expect(diff).to_contain_text(
        re.compile(r"tool apply_discount failed in a \(.*TypeError.*\); succeeds in b: '90\.0'")
    )
    # the recorded answer of step 1 was replayed: the fixed tool ran on the very call that failed
    expect(diff).to_contain_text(re.compile(r"result of (call_\w+) \(error\).*→ result of \1 '90"))
    notebook.shot("2-the-diff", diff)
