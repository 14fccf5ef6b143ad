"""The Stepper's timeline draws the time the run worked, not the time a person spent reading."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import numpy as np
import pytest

import workbench as wb
from workbench._sync import portal
from workbench.notebook import Stepper
from workbench.notebook import stepper as stepper_module
from workbench.notebook.stepper import _TIMELINE_DELAY

R = wb.ModelResponse


def _numbers(encoded: Any) -> list[float]:
    """A plotly JSON array: a list, or typed ``{"dtype", "bdata"}`` (base64) as numpy sends it."""
    if isinstance(encoded, dict):
        return list(np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"]))
    return list(encoded)


def test_the_timeline_of_a_run_stepped_slowly_leaves_the_waits_out_and_says_so() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["one", "two"]), name="solo", store=False)
    stepper = Stepper(agent, "go")
    for _ in range(4):
        stepper.next_phase_button.click()
        time.sleep(0.2)  # the person reading between clicks: the time to leave out
    stepper.draw_timeline()  # at once, not a moment after the clicks pause
    figure = stepper.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    bars = [(_numbers(bar["base"]), _numbers(bar["x"])) for bar in figure["data"]]
    ends = [b + w for bases, widths in bars for b, w in zip(bases, widths, strict=True)]
    assert max(ends) < 300  # ms: the phases' own time, not the 0.6 s and more between them
    title = figure["layout"]["title"]["text"]
    assert title.endswith(" s waiting on you left out")  # said once, in its title
    assert figure["layout"]["xaxis"]["title"]["text"] == "ms running"


def test_the_timeline_follows_once_the_presses_pause_after_their_buttons() -> None:
    """Each press's status and buttons reach the page first; presses in a row redraw it once."""
    agent = wb.Agent(model=wb.ScriptedModel(["one"]), name="solo", store=False)
    stepper = Stepper(agent, "go")
    seen: list[str] = []
    drawn = threading.Event()

    def timeline_changed(_: object) -> None:
        seen.append("timeline")
        drawn.set()

    stepper.timeline.observe(timeline_changed, names="outputs")
    stepper.next_step_button.observe(
        lambda change: seen.append("enabled" if not change["new"] else "disabled"),
        names="disabled",
    )
    stepper.next_phase_button.click()
    stepper.next_phase_button.click()
    assert seen == ["disabled", "enabled", "disabled", "enabled"]  # no figure in between
    assert drawn.wait(30)  # then, once the clicks pause, the timeline: once for both
    assert seen[4:] == ["timeline"]
    figure = stepper.timeline.outputs[0]["data"]["application/vnd.plotly.v1+json"]
    assert figure["data"]


def _portal_held() -> tuple[threading.Event, threading.Event]:
    """Hold the portal loop in a callback of its own until the second event is set."""
    holding, release = threading.Event(), threading.Event()

    def hold() -> None:
        holding.set()
        release.wait(30)

    portal().call_soon_threadsafe(hold)
    assert holding.wait(30)
    return holding, release


def _after_a_drawing_would_be_due() -> None:
    """Wait on the portal until a timeline drawing armed by now would have run (timers run in
    the order they are due)."""
    due = threading.Event()
    portal().call_soon_threadsafe(portal().call_later, _TIMELINE_DELAY + 0.1, due.set)
    assert due.wait(30)


def test_a_closed_stepper_draws_nothing_more_on_the_portal(monkeypatch: pytest.MonkeyPatch) -> None:
    """A drawing asked for just before `close` (from another thread) is never armed.

    Left armed, it ran on the portal loop a moment later: in the next test, making spans there.
    """
    drawn: list[object] = []
    figure = stepper_module.timeline_figure
    monkeypatch.setattr(
        stepper_module, "timeline_figure", lambda *a, **k: drawn.append(a) or figure(*a, **k)
    )
    agent = wb.Agent(model=wb.ScriptedModel(["one"]), name="solo", store=False)
    stepper = Stepper(agent, "go")
    stepper.run.next_phase()  # drawn at once: the first drawing
    assert len(drawn) == 1
    _, release = _portal_held()
    stepper.run.abort()  # the run moved: its redraw asks the portal to arm a drawing
    stepper.close()  # before the portal got to it
    release.set()
    _after_a_drawing_would_be_due()
    assert len(drawn) == 1


def test_a_closed_stepper_is_not_told_of_its_run_driven_from_code() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["one"]), name="solo", store=False)
    stepper = Stepper(agent, "go")
    shown = stepper.status.value
    stepper.close()
    while stepper.run.next_phase() is not None:
        pass
    assert stepper.run.result.status is wb.ExecutionStatus.COMPLETED
    assert stepper.events == [] and stepper.status.value == shown


def test_a_stepper_used_in_a_with_block_is_closed_at_its_end() -> None:
    agent = wb.Agent(model=wb.ScriptedModel(["one"]), name="solo", store=False)
    with Stepper(agent, "go") as stepper:
        stepper.run.next_phase()
        assert stepper.comm is not None
    assert stepper.comm is None
