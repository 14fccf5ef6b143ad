"""Journey: step an agent on a real model, then ask it again from step 1 and compare.

The model is the project's local server (llama.cpp with Gemma 3 270M, `scripts/llm-server`),
set up as `notebooks/05_real_model` sets it up: three worked examples make the base model call
``add``. A person clicks through the phases (the answer streams in; the examples stay folded, so
the question and the model's call are in sight), runs to the end, looks at
the trace, then re-runs step 1 with another question and reads the diff. Every model call here
is a real one over HTTP, streamed.
"""

from __future__ import annotations

import re
from typing import Any

import pytest
from playwright.sync_api import expect

from tests.journeys.conftest import OpenNotebook
from tests.journeys.harness import click
from tests.live.fewshot import BASE_URL, server_down_reason

pytestmark = pytest.mark.live

AGENT = f'''import workbench as wb
from workbench.models import OpenAIModel
from workbench.notebook import Stepper, TraceView


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


examples = []
for n, (a, b) in enumerate([(2, 3), (10, 4), (7, 8)], start=1):
    examples += [
        wb.Message.user(f"What is {{a}} + {{b}}?"),
        wb.Message.assistant_tool_call("add", {{"a": a, "b": b}}, call_id=f"ex{{n}}"),
        wb.Message.tool_result(f"ex{{n}}", str(a + b), name="add"),
        wb.Message.assistant(f"{{a}} + {{b}} = {{a + b}}"),
    ]

telemetry = wb.Telemetry(capture_content=True)
agent = wb.Agent(
    model=OpenAIModel("gemma-3-270m", base_url="{BASE_URL}", api_key="none"),
    tools=[add],
    stop=wb.MaxSteps(4),
    settings={{"temperature": 0, "seed": 1, "max_tokens": 64, "stop": ["\\n"], "stream": True}},
    telemetry=telemetry,
    store=False,
)'''

CELLS = [
    AGENT,
    'stepper = Stepper(agent, "What is 17 + 25?", history=examples)\nstepper',
    "stepper.run.pending_calls",
    "TraceView(stepper, telemetry=telemetry)",
    """question = wb.Message.user("What is 100 + 1?")
again = await agent.rerun(stepper.result.snapshot(step=1), messages=[*examples, question])
wb.diff(stepper.result, again)""",
]


def test_step_a_real_model_then_ask_again_from_step_1(open_notebook: OpenNotebook) -> None:
    if (reason := server_down_reason(BASE_URL)) is not None:
        pytest.skip(reason)
    notebook = open_notebook("step-a-real-model", CELLS)
    notebook.run()
    stepper = notebook.run()
    status = stepper.locator(".wb-status")

    click(stepper, "Next phase")
    expect(status).to_contain_text("next phase inference")
    click(stepper, "Next phase")  # the model's answer streams in
    expect(status).to_contain_text("next phase tools", timeout=120_000)
    # the worked examples are folded: the model's call is in sight with the status, not a
    # screenful of examples below it (a window is 1,000 px high)
    expect(stepper.locator(".wb-earlier > summary")).to_have_text("12 earlier messages")
    call = stepper.locator(".wb-msg", has_text='{"a": 17, "b": 25}')
    expect(call).to_contain_text("add")
    assert _top(call) - _top(status) < 500
    notebook.shot("1-the-model-called-add", stepper)

    pending = notebook.run()  # the call the model made, as the run holds it
    expect(pending).to_contain_text(re.compile(r"add.*'a': 17, 'b': 25"))

    click(stepper, "Run to end")
    expect(status).to_contain_text("completed", timeout=120_000)
    expect(stepper).to_contain_text("17 + 25 = 42")
    notebook.shot("2-run-to-end", stepper)

    trace = notebook.run()
    expect(trace).to_contain_text("2 steps")
    expect(trace.locator(".js-plotly-plot").first).to_contain_text("chat gemma-3-270m")
    notebook.shot("3-trace", trace)

    diff = notebook.run()  # step 1 again, with another question: the model is asked anew
    expect(diff).to_contain_text("b is a re-run of a from step 1")
    expect(diff).to_contain_text("text 'What is 17 + 25?' → text 'What is 100 + 1?'")
    expect(diff).to_contain_text("first divergence: step 1")
    notebook.shot("4-diff", diff)


def _top(element: Any) -> float:
    box = element.bounding_box()
    assert box is not None
    return float(box["y"])
