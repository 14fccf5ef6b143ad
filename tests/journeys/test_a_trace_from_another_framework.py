"""A person loads the trace of a pydantic-ai agent whose tool crashed, and looks at it.

The trace is pydantic-ai's own (its instrumentation, written as OTLP/JSON): the tool raised and
pydantic-ai let the exception out of the run, so its tool and agent spans failed, each with a
traceback holding every pydantic-ai frame between the run and the tool. The loaded trace as a
cell's value says what went wrong at the top (its text repr named only the id and the number of
spans), and there, and in TraceView, the frame of the person's tool shows in the traceback's
box without scrolling past pydantic-ai's (folded, one click away).
"""

from __future__ import annotations

import json
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Any

from playwright.sync_api import expect

from tests.foreign.pydantic_ai_agent import failing_spans
from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import Jupyter
from workbench.telemetry.files import otlp_json

CELLS = [
    'import workbench as wb\ntrace = wb.load_trace("pydantic-ai.otlp.json")',
    "trace",
    "from workbench.notebook import TraceView\nTraceView(trace)",
]
SUMMARY = "failed, 1 tool error: step 1, get_weather in weather"

_IN_VIEW = """(frame) => {
  const box = frame.closest("pre").getBoundingClientRect();
  const line = frame.getBoundingClientRect();
  return line.height > 0 && line.top >= box.top && line.bottom <= box.bottom;
}"""
"""Whether a line of a traceback is inside its box as drawn (not scrolled out of it)."""


def _tool_frame_in_view(output: Any) -> None:
    traceback = output.locator("details.wb-traceback[open] pre").first
    frame = traceback.locator("b", has_text="in no_station")
    expect(frame).to_have_count(1)
    assert frame.evaluate(_IN_VIEW), "the tool's frame is scrolled out of the traceback's box"
    folded = traceback.locator("details.wb-frames summary")
    expect(folded).to_contain_text("frames in pydantic_ai")
    expect(traceback).to_contain_text("ValueError: no weather station in")


def test_a_loaded_pydantic_ai_trace_says_what_went_wrong_and_shows_the_tools_frame(
    open_notebook: OpenNotebook, jupyter: Jupyter
) -> None:
    with ThreadPoolExecutor(1) as thread:  # pydantic-ai runs its own loop; Playwright's is running
        spans = thread.submit(failing_spans).result()
    Path(jupyter.root, "pydantic-ai.otlp.json").write_text(json.dumps(otlp_json(spans)))
    notebook = open_notebook("a-trace-from-another-framework", CELLS)
    notebook.run()

    shown = notebook.run().locator(".jp-OutputArea-output")
    expect(shown.locator(".wb-summary-line")).to_have_text(SUMMARY)
    expect(shown).to_contain_text("2 marked failed")
    _tool_frame_in_view(shown)
    notebook.shot("1-trace", shown)

    view = notebook.run().locator(".jp-Cell-outputArea")
    expect(view.locator(".wb-summary-line").first).to_have_text(SUMMARY)
    _tool_frame_in_view(view)
    notebook.shot("2-traceview", view)
