"""The Stepper's timeline draws the time the run worked, not the time a person spent reading."""

from __future__ import annotations

import base64
import threading
import time
from typing import Any

import numpy as np

import workbench as wb
from workbench.notebook import Stepper
from workbench.notebook.spans import idle_closed
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.trace import Trace

R = wb.ModelResponse


def _span(span_id: str, start: int, end: int, parent: str | None = "root") -> SpanData:
    return SpanData(
        trace_id="t", span_id=span_id, parent_id=parent, name=span_id, start_ns=start, end_ns=end
    )


def _numbers(encoded: Any) -> list[float]:
    """A plotly JSON array: a list, or typed ``{"dtype", "bdata"}`` (base64) as numpy sends it."""
    if isinstance(encoded, dict):
        return list(np.frombuffer(base64.b64decode(encoded["bdata"]), dtype=encoded["dtype"]))
    return list(encoded)


def test_the_gaps_between_busy_stretches_are_closed_and_containers_shrink() -> None:
    trace = Trace.of(
        [
            _span("root", 0, 100, parent=None),
            _span("a", 0, 10),
            _span("b", 50, 60),
            _span("c", 55, 70),  # overlaps b: one busy stretch 50-70
            _span("d", 90, 100),
        ]
    )
    closed, idle = idle_closed(trace)
    assert idle == 60e-9  # 10-50 and 70-90
    bounds = {s.span_id: (s.start_ns, s.end_ns) for s in closed.spans}
    assert bounds == {"root": (0, 40), "a": (0, 10), "b": (10, 20), "c": (15, 30), "d": (30, 40)}
    assert idle_closed(closed) == (closed, 0.0)  # nothing left to close


def test_a_run_stopped_for_now_ends_with_its_work_not_with_the_reading_since() -> None:
    open_root = _span("root", 0, 100, parent=None).model_copy(update={"in_progress": True})
    trace = Trace.of([open_root, _span("a", 0, 10), _span("b", 30, 40)])
    closed, idle = idle_closed(trace)
    assert idle == 80e-9  # 10-30, and 40-100: "now" came long after the last work
    bounds = {s.span_id: (s.start_ns, s.end_ns) for s in closed.spans}
    assert bounds == {"root": (0, 20), "a": (0, 10), "b": (10, 20)}


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
    axis = figure["layout"]["xaxis"]["title"]["text"]
    assert axis.startswith("ms running (") and "s idle between phases left out)" in axis


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
