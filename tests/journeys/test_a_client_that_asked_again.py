"""Journey: an agent of the openai SDK, through the recording proxy, whose server failed twice.

The SDK asked again after each 500 and got its answer at the third try. A person opens the
recorded run: one step 2 tried three times, not steps 2, 3 and 4 of the same request. The
run's cell, TraceView (its steps table's "model tries", the waterfall's three model calls under
step 2, two of them failed) and the Stepper's history all say so, each try's error named.
"""

from __future__ import annotations

from typing import Any

from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import Jupyter
from tests.test_proxy_retries import recorded

CELLS = [
    'import workbench as wb\nstore = wb.RunStore("runs.db")',
    'run = store.load(store.resolve("last"))',
    "run",
    "from workbench.notebook import TraceView\nview = TraceView(run)\nview",
    "from workbench.notebook import Stepper\nStepper.of(run)",
]
TRIES = ("step 2, try 1 in OpenAI", "step 2, try 2 in OpenAI")


def test_a_step_the_client_asked_again_is_one_step_tried_three_times(
    open_notebook: OpenNotebook, jupyter: Jupyter
) -> None:
    import workbench as wb

    recorded(wb.RunStore(jupyter.root / "runs.db"))
    notebook = open_notebook("a-client-that-asked-again", CELLS)
    notebook.run_until(2)

    shown = notebook.run().locator(".jp-OutputArea-output").first
    expect(shown).to_contain_text("completed, 2 model errors; first: step 2, try 1 in OpenAI")
    for where in TRIES:
        expect(shown).to_contain_text(where)
    notebook.shot("1-run", shown)

    view = notebook.run().locator(".jp-OutputArea-output").first
    steps = view.locator("div.wb-table").first
    expect(steps.locator("th", has_text="model tries")).to_have_count(1)
    rows = steps.locator("tbody tr:not(.wb-gap)")  # a gap row stands for rows not drawn
    expect(rows).to_have_count(2)  # two steps, not four
    tries = rows.nth(1).locator("td").nth(_column(steps, "model tries"))
    expect(tries).to_have_text("3")
    waterfall = view.locator(".jp-RenderedPlotly").first  # its rows say which try is which
    for number in (1, 2, 3):
        expect(waterfall).to_contain_text(f"chat m · try {number}")
    steps.scroll_into_view_if_needed()
    notebook.shot("2-trace-view", view)

    history = notebook.run().locator(".wb-history")
    expect(history.locator(".wb-step-head")).to_contain_text("Step 2 · completed")
    expect(history.locator(".wb-step-head")).to_contain_text("3 model tries")
    for where in TRIES:
        expect(history).to_contain_text(where)
    notebook.shot("3-history", history)


def _column(table: Any, heading: str) -> int:
    """The index of the column whose heading is ``heading``."""
    headings = [h.strip() for h in table.locator("th").all_inner_texts()]
    return headings.index(heading)
