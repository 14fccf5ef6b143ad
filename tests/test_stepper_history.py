"""`Stepper.of(run)`: a run that has ended, in the Stepper's views (`StepperHistory`).

Driven from Python over the three-level team whose deepest tool crashes (tests/_failing_team.py),
stored and loaded back as a `RunsBrowser` opens it; the browser journey
(tests/journeys/test_find_the_run_that_failed.py) clicks the same "Step through" in chromium.
"""

from __future__ import annotations

import ipywidgets as widgets
import pytest

import workbench as wb
from tests._failing_team import BROKEN_LINE, team
from workbench.notebook import RunsBrowser, Stepper, StepperHistory


@pytest.fixture(scope="module")
def stored(tmp_path_factory: pytest.TempPathFactory) -> wb.RunStore:
    """A store holding the team's one run (its tree: three runs)."""
    store = wb.RunStore(tmp_path_factory.mktemp("runs") / "runs.sqlite")
    team(store=store).run_sync("What does the hat cost with 10% off?")
    return store


def _lead(store: wb.RunStore) -> wb.RunResult:
    (root,) = wb.runs(store, rollup=True)["run"]
    return store.load(root)


def test_it_opens_on_the_run_and_step_that_broke(stored: wb.RunStore) -> None:
    lead = _lead(stored)
    history = Stepper.of(lead)
    assert isinstance(history, StepperHistory) and history.result is lead
    labels = [label for label, _ in history.run_picker.options]
    assert labels == [
        "1. lead · completed · 2 steps",
        "2. researcher (depth 1) · completed · 2 steps",
        "3. digger (depth 2) · completed · 4 steps",
    ]
    assert history.picked.state.agent_name == "digger"  # where the first error is
    assert history.step_picker.label == "step 3"
    shown = history.messages.value
    assert "Step 3" in shown and "TypeError" in shown and BROKEN_LINE in shown  # its traceback
    assert "This run has ended" in history.status.value  # and why there are no buttons
    assert "apply_discount" in history.errors.value
    figure = history.timeline.outputs[0]["data"]
    assert "application/vnd.plotly.v1+json" in figure  # the whole tree's timeline


def test_any_run_and_step_of_the_tree_can_be_picked(stored: wb.RunStore) -> None:
    history = Stepper.of(_lead(stored))
    history.show(run=0)  # the lead: no error of its own, so its last step
    assert (history.picked.state.agent_name, history.step_picker.label) == ("lead", "step 2")
    assert "Step 2" in history.messages.value and "This run has ended" in history.status.value
    history.show(step=1)
    assert "Step 1" in history.messages.value and "research" in history.messages.value
    history.run_picker.value = 1  # as the picker does in the page
    assert history.picked.state.agent_name == "researcher"
    with pytest.raises(ValueError, match="researcher has no step 9"):
        history.show(step=9)


def test_a_run_with_no_steps_says_so() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["never"]), store=False)
    run = agent.start("hi")  # started, no phase run yet
    history = Stepper.of(run)
    assert "This run has not ended" in history.status.value
    assert history.step_picker.options == ()
    assert "never started a step" in history.messages.value
    assert "never started a step" in history.timeline.outputs[0]["data"]["text/html"]


def test_model_text_is_drawn_escaped() -> None:
    markup = "<img src=x onerror=alert(1)>"
    result = wb.Agent(model=wb.ScriptedModel([markup]), name=markup, store=False).run_sync(markup)
    shown = Stepper.of(result).messages.value
    assert markup not in shown and "&lt;img src=x onerror=alert(1)&gt;" in shown


def test_a_browser_row_steps_through_its_run(stored: wb.RunStore) -> None:
    browser = RunsBrowser(stored, live=False)
    try:
        with pytest.raises(ValueError, match="open a run first"):
            browser.step_through()
        browser.filter(rollup=True)
        browser.open_run(browser.table.rows[0]["id"])
        (buttons,) = [c for c in browser.pane.children if isinstance(c, widgets.HBox)]
        step_through = next(b for b in buttons.children if b.description == "Step through…")
        step_through.click()
        history = browser.history
        assert isinstance(history, StepperHistory) and browser.pane.children[-2] is history
        assert browser.pane.children[-1] is browser.explorer  # under the button, not 40 spans down
        assert history.picked.state.agent_name == "digger"
        assert browser.step_through() is history  # a second click shows it once
        browser.open_run(history.runs[1][0].run_id)  # another run opened: a fresh view
        assert browser.history is None and history not in browser.pane.children
    finally:
        browser.close()
