"""Journey 2: step through a three-level team with the Stepper, one click per cell.

Continue stops at a breakpoint in the digger, two sub-agents down. From then on every button is
clicked after later cells ran (as a person looks at the run between clicks), in the Stepper shown
again further down (twice: each view of it is one more for the page to keep up to date): Step
over (the digger's search, at the digger's level), Next step (the rest of the digger's step),
Step out (the digger goes on, and its note needs approval: Approve, in the row that says which
sub-agent asks), Step out again (back in the researcher), Step out (back in the lead), Next phase
(the lead's own phases), Step into (the researcher's second sub-run), Run to end.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import FRAMES, button, click
from tests.journeys.team import STEPPING

STEPPER = """stepper = Stepper(
    lead,
    "What do the coat and the shoes cost?",
    breakpoints=[wb.Break.on_tool("search")],
)
stepper"""

VIEWPORT = {"width": 1400, "height": 1000}
"""The harness's window (`harness.Jupyter`), back after a look at a narrower one."""
_CUT = """(row) => [...row.querySelectorAll('button, input')]  // a label or a box squeezed
  .filter((b) => b.scrollWidth > b.clientWidth + 1 || b.getBoundingClientRect().width < 120)
  .map((b) => b.textContent || b.placeholder)"""

LOOK = [  # what a person types between two clicks, to look at where the run is
    "stepper.run.subrun.pending_calls",  # the digger's search, waiting at the breakpoint
    "stepper",  # the Stepper shown again, further down
    "stepper.run.subrun.state.agent_name",
    "stepper.run.subrun.state.step",
    "stepper.run.state.status",  # approved, not yet going on
    "stepper",
    "stepper.run.subrun.state.agent_name",
    "stepper.run.state.next_phase",
    "stepper.run.state.next_phase",
    "stepper.run.state.next_phase",
    "stepper.run.pending_calls",  # the lead's second call of the researcher
]


def test_continue_into_a_sub_agent_then_every_button_from_later_cells(
    open_notebook: OpenNotebook,
) -> None:
    cells = [*STEPPING, "from workbench.notebook import Stepper", STEPPER, *LOOK]
    notebook = open_notebook("step-through-the-team", cells)
    notebook.run_until(len(STEPPING) + 1)
    stepper = notebook.run()
    click(stepper, "Continue")
    expect(stepper.locator(".wb-status")).to_contain_text("stopped at breakpoint")
    where = stepper.locator(".wb-subrun")
    expect(where).to_contain_text(re.compile(r"inside sub-run digger \(depth 2.*next phase tools"))
    notebook.shot("1-continue", stepper)

    notebook.run()
    stepper = notebook.run()  # the digger's search runs, the stepper stays in the digger
    click(stepper, "Step over")
    expect(stepper.locator(".wb-subrun")).to_contain_text(
        re.compile(r"inside sub-run digger \(depth 2.*next phase continuation")
    )
    expect(stepper.locator(".wb-phase-log")).to_contain_text(re.compile(r"digger .*tools"))
    notebook.shot("2-step-over", stepper)

    notebook.run()  # the rest of the digger's step, at the digger's level
    click(stepper, "Next step")
    expect(stepper.locator(".wb-subrun")).to_contain_text(
        re.compile(r"inside sub-run digger \(depth 2.*step 1 done, next phase prepare of step 2")
    )

    notebook.run()  # the digger goes on, and stops for its note's approval
    click(stepper, "Step out")
    expect(stepper.locator(".wb-status")).to_contain_text("paused")
    approval = stepper.locator(".wb-pending", has_text="save_note")
    expect(approval).to_be_visible()
    expect(stepper).to_contain_text("asked by sub-agent digger")
    notebook.shot("3-approval-in-the-digger", stepper)
    page = notebook.page  # beside the file browser at a 1,000 px window: its buttons whole
    page.set_viewport_size({"width": 1000, "height": 1000})
    page.evaluate(FRAMES)
    row = stepper.locator(".widget-hbox:has(.wb-pending)")  # it read 'Appro…', the call squeezed
    assert row.evaluate(_CUT) == [], row.evaluate(_CUT)
    notebook.shot("3-approval-at-1000", stepper)
    page.set_viewport_size(VIEWPORT)
    click(stepper, "Approve")
    expect(stepper.locator(".wb-status")).to_contain_text("1 approved")

    notebook.run()
    stepper = notebook.run()  # the digger finishes: back in the researcher
    click(stepper, "Step out")
    expect(stepper.locator(".wb-subrun")).to_contain_text(
        re.compile(r"inside sub-run researcher \(depth 1.*next phase continuation")
    )
    notebook.shot("4-step-out-to-the-researcher", stepper)

    notebook.run()  # the researcher finishes: back in the lead
    click(stepper, "Step out")
    expect(stepper.locator(".wb-subrun")).to_have_count(0)
    expect(stepper.locator(".wb-status")).to_contain_text(re.compile(r"next phase continuation"))
    notebook.shot("5-step-out-to-the-lead", stepper)

    for phase in ("prepare", "inference", "tools"):  # the lead's own phases, one a click
        notebook.run()
        click(stepper, "Next phase")
        expect(stepper.locator(".wb-status")).to_contain_text(f"next phase {phase}")
    notebook.shot("6-next-phase", stepper)

    notebook.run()  # the lead asks the researcher again: go in
    click(stepper, "Step into")
    expect(stepper.locator(".wb-subrun")).to_contain_text(
        re.compile(r"inside sub-run researcher \(depth 1.*step 1, next phase inference")
    )
    notebook.shot("7-step-into", stepper)

    click(stepper, "Run to end")
    expect(stepper.locator(".wb-status")).to_contain_text("completed")
    expect(stepper).to_contain_text("The coat costs 120 and the shoes 80.")
    expect(button(stepper, "Next phase")).to_be_disabled()
    # the timeline follows a moment later: the whole run, no longer "so far"
    title = stepper.locator(".js-plotly-plot .gtitle")
    expect(title).to_have_text(re.compile(r"^Timeline: \d+ steps of 3 agents"))
    expect(title).not_to_contain_text("so far")
    notebook.shot("8-run-to-end", stepper)
