"""A Stepper shows a run a cell drives step by step; its views say the Stepper's drawing as such.

A person drives the run from code (``run.next_step()`` in a loop) while the Stepper above shows
it: the Stepper follows the run to its end, and the run keeps a drawing of the Stepper's a step
(the end of each call), not one a phase. Drawn at every phase, a 61-step run kept five waits a
step and TraceView's heading read "0.2 s waiting on you left out" of a run nobody waited on;
now it reads "0.1 s drawing the views left out" (the words are checked by
tests/test_recorded_waits.py: here they depend on how fast the machine draws).
"""

from __future__ import annotations

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook

AGENT = '''@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"

R = wb.ModelResponse
script = [R.tool_call("search", {"query": f"tides {i}"}) for i in range(60)]
agent = wb.Agent(model=wb.ScriptedModel([*script, "Go at noon."]), name="tides",
                 tools=[search], stop=wb.MaxSteps(100))'''

CELLS = [
    "import workbench as wb\nfrom workbench.notebook import Stepper, TraceView",
    AGENT,
    'stepper = Stepper(agent, "When can we swim?")\nstepper',
    "run = stepper.run\nwhile run.next_step() is not None:  # this cell drives the run\n    pass\n"
    "steps = run.result.steps\nround(sum(len(step.waits) for step in steps) / len(steps), 2)",
    "TraceView(run.result)",
]


def test_a_run_a_cell_drives_is_shown_and_keeps_a_drawing_a_step(
    open_notebook: OpenNotebook,
) -> None:
    notebook = open_notebook("stepper-driven-from-a-cell", CELLS)
    notebook.run_until(2)
    shown = notebook.run()
    status = shown.locator(".wb-status")
    expect(status).to_contain_text("pending")
    driven = notebook.run()
    expect(status).to_contain_text("completed")  # the Stepper followed the cell's run
    expect(status).to_contain_text("step 61")
    # Waits a step: a drawing as each call ends (5 before: one a phase too). A machine under
    # load may stall the cell's loop past waits.SHORTEST between two calls, or draw once more
    # inside a step slower than a quarter second: never five.
    waits = float(driven.locator(".jp-OutputArea-output").inner_text())
    assert 0 < waits <= 2, waits
    notebook.shot("1-stepper", shown)
    view = notebook.run()
    heading = view.locator(".jp-OutputArea-output").first
    expect(heading).to_contain_text("61 steps")
    notebook.shot("2-traceview", view)
