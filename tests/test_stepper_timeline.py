"""The Stepper's timeline draws the time the run worked, not the time a person spent reading."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import numpy as np

import workbench as wb
from workbench.notebook import Stepper

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
