"""The Stepper in a real Jupyter kernel, driven by its buttons through a whole run with an approval.

Each step clicks a button in the kernel (``.click()`` runs the same callback a browser click
does), waits for the work the click scheduled on the kernel's event loop, and reads back what the
widget shows. Besides the Python-side state, the test collects the ``comm_msg`` updates the kernel
sent on iopub: that is what a browser would receive, so it proves the display is synced, not only
computed.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.blocking.client import BlockingKernelClient
from jupyter_client.manager import KernelManager, start_new_kernel

SETUP = """
import json
from workbench.demo import DEMO_PROMPT, demo_agent
from workbench.notebook import RerunPanel, Stepper, TraceView

stepper = Stepper(demo_agent(store=False), DEMO_PROMPT)
ids = {name: getattr(stepper, name).model_id
       for name in ("status", "messages", "timeline", "step_picker", "next_phase_button")}

def shown():
    s = stepper
    outputs = s.timeline.outputs
    figure = outputs[0]["data"].get("application/vnd.plotly.v1+json") if outputs else None
    note = outputs[0]["data"].get("text/html", "") if outputs and not figure else ""
    return {
        "status": s.run.state.status.value,
        "step": s.run.state.step,
        "next_phase": s.run.next_phase_name and s.run.next_phase_name.value,
        "pending": [p.tool for p in s.run.state.pending],
        "approval_rows": [r.pending.tool for r in s.approval_rows],
        "disabled": [b.disabled for b in (s.next_phase_button, s.next_step_button,
                                          s.run_button, s.stop_button)],
        "picker": [label for label, _ in s.step_picker.options],
        "picked": s.step_picker.value,
        "status_html": s.status.value,
        "messages_html": s.messages.value,
        "timeline_traces": [t["name"] for t in figure["data"]] if figure else [],
        "timeline_note": note,
        "busy": s.busy,
        "errors": s.errors,
    }

print(json.dumps(ids))
"""


DELETE_FILE_PANEL = """
import json
import workbench as wb
from workbench.notebook import RerunPanel

R = wb.ModelResponse
deleted = []

@wb.tool(requires_approval=True)
def delete_file(path: str) -> str:
    \"\"\"Delete a file.\"\"\"
    deleted.append(path)
    return f"deleted {path}"
"""
"""A kernel's start for the `RerunPanel` tests: a tool that needs approval and records what
it deleted (``deleted``), so a test can see whether a fork ran it."""


class Kernel:
    """A real IPython kernel; `run` executes code and returns its stdout and the comm updates."""

    def __init__(self, manager: KernelManager, client: BlockingKernelClient) -> None:
        self.manager = manager
        self.client = client

    def run(self, code: str) -> tuple[str, list[dict[str, Any]]]:
        stdout: list[str] = []
        updates: list[dict[str, Any]] = []
        errors: list[str] = []

        def hook(msg: dict[str, Any]) -> None:
            kind, content = msg["msg_type"], msg["content"]
            if kind == "stream" and content["name"] == "stdout":
                stdout.append(content["text"])
            elif kind == "error":
                errors.append("\n".join(content["traceback"]))
            elif kind == "comm_msg" and content["data"].get("method") == "update":
                updates.append({"id": content["comm_id"], **content["data"]["state"]})

        reply = self.client.execute_interactive(code, output_hook=hook, timeout=120)
        assert reply["content"]["status"] == "ok", "\n".join(errors)
        return "".join(stdout), updates

    def shown(self, code: str) -> tuple[dict[str, Any], list[dict[str, Any]]]:
        out, updates = self.run(f"{code}\nprint(json.dumps(shown()))")
        return json.loads(out.strip().splitlines()[-1]), updates


@pytest.fixture(scope="module")
def kernel() -> Iterator[Kernel]:
    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        yield Kernel(manager, client)
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def last_value(updates: list[dict[str, Any]], model_id: str, key: str = "value") -> Any:
    values = [u[key] for u in updates if u["id"] == model_id and key in u]
    assert values, f"no {key!r} update was sent for {model_id}"
    return values[-1]


def test_stepper_buttons_drive_a_whole_run_with_an_approval(kernel: Kernel) -> None:
    out, _ = kernel.run(SETUP)
    ids = json.loads(out.strip().splitlines()[-1])
    before, _ = kernel.shown("")
    assert before["status"] == "pending" and before["next_phase"] == "prepare"
    assert before["disabled"] == [False, False, False, False]
    assert "has not started" in before["messages_html"]
    assert "What is 17 + 25" in before["messages_html"]
    assert before["timeline_traces"] == []
    assert "appears when the first phase ends" in before["timeline_note"]  # no empty chart

    # Next phase: PREPARE of step 1. The click only schedules the work (on the workbench's loop:
    # the slow model's test below shows the kernel answering while it runs).
    shown, updates = kernel.shown("stepper.next_phase_button.click()\nawait stepper.wait()")
    assert shown["status"] == "running" and shown["step"] == 1
    assert shown["next_phase"] == "inference" and not shown["busy"]
    assert "step <b>1</b>" in last_value(updates, ids["status"])
    assert "wb-role-system" in shown["messages_html"]  # the prompt stays in view
    assert "What is 17 + 25" in shown["messages_html"]
    assert "next phase <b>inference</b>" in last_value(updates, ids["status"])
    disabled = [u["disabled"] for u in updates if u["id"] == ids["next_phase_button"]]
    assert disabled[:1] == [True] and disabled[-1] is False  # disabled while busy, then back

    # Next phase again: INFERENCE; the model's bad call shows in the live message panel.
    shown, updates = kernel.shown("stepper.next_phase_button.click()\nawait stepper.wait()")
    assert shown["next_phase"] == "tools"
    assert "twenty-five" in last_value(updates, ids["messages"])
    assert "The next phase runs these calls" in shown["messages_html"]

    # Next step: TOOLS (a retry prompt) and CONTINUATION; step 1's record is picked and drawn.
    shown, updates = kernel.shown("stepper.next_step_button.click()\nawait stepper.wait()")
    assert shown["step"] == 1 and shown["next_phase"] == "prepare"
    assert shown["picker"] == ["step 1", "live"]
    assert "wb-retry" in shown["messages_html"] and "Invalid arguments" in shown["messages_html"]
    traces = set(shown["timeline_traces"])  # the one tool call so far was sent back: failed
    assert {"agent", "step", "model", "failed"} <= traces and "tool" not in traces
    timeline = last_value(updates, ids["timeline"], "outputs")
    assert timeline[0]["data"]["application/vnd.plotly.v1+json"]["data"]

    # Run to end: steps 2 and 3; the run pauses for the approval of save_result.
    shown, updates = kernel.shown("stepper.run_button.click()\nawait stepper.wait()")
    assert shown["status"] == "paused" and shown["pending"] == ["save_result"]
    assert shown["approval_rows"] == ["save_result"]
    assert shown["disabled"] == [True, True, True, False]  # only Stop while it waits
    assert shown["picker"] == ["step 1", "step 2", "step 3", "live"]
    assert shown["picked"] == 2  # the paused step is shown, with the call waiting
    assert (
        ">pending<" in shown["messages_html"] and "tool requires approval" in shown["messages_html"]
    )
    assert "paused" in last_value(updates, ids["status"])

    # Approve: the run takes the answer in place; the buttons come back.
    shown, updates = kernel.shown("stepper.approval_rows[0].approve_button.click()")
    assert shown["status"] == "paused" and shown["pending"] == []
    assert shown["approval_rows"] == [] and shown["disabled"] == [False, False, False, False]
    assert "1 approved, 0 denied" in last_value(updates, ids["status"])

    # Run to end: the approved call runs, then the final answer.
    shown, updates = kernel.shown("stepper.run_button.click()\nawait stepper.wait()")
    assert shown["status"] == "completed" and shown["errors"] == []
    assert "stop reason <b>completed</b>" in shown["status_html"]
    assert shown["picker"] == ["step 1", "step 2", "step 3", "step 3 (resumed)", "step 4", "live"]
    assert shown["picked"] == 4
    assert "doubled that is 84" in last_value(updates, ids["messages"])
    assert shown["disabled"] == [True, True, True, True]

    # Picking an earlier step shows it, with the diff against the step before.
    shown, updates = kernel.shown("stepper.step_picker.value = 1")
    assert "Step 2" in shown["messages_html"] and "against step 1" in shown["messages_html"]
    assert "against step 1" in last_value(updates, ids["messages"])


def test_stop_button_ends_a_paused_run_as_aborted(kernel: Kernel) -> None:
    kernel.run(SETUP)
    shown, _ = kernel.shown(
        "stepper = Stepper(demo_agent(store=False), DEMO_PROMPT)\n"
        "stepper.run_button.click()\nawait stepper.wait()\n"
        "assert stepper.run.state.status.value == 'paused'\n"
        "stepper.stop_button.click()\nawait stepper.wait()"
    )
    assert shown["status"] == "aborted" and shown["pending"] == []
    assert "stop reason <b>aborted</b>" in shown["status_html"]
    assert shown["disabled"] == [True, True, True, True]


def test_trace_view_and_rerun_panel_in_the_kernel(kernel: Kernel) -> None:
    kernel.run(SETUP)
    out, _ = kernel.run(
        "stepper.run_button.click()\nawait stepper.wait()\nstepper.stop_button.click()\n"
        "await stepper.wait()\n"
        "view = TraceView(stepper)\n"
        "panel = RerunPanel(stepper)\n"
        "panel.editor.value = panel.editor.value.replace('## user', '## nobody', 1)\n"
        "panel.rerun_button.click()\n"
        "print(json.dumps({'outputs': {k: len(o.outputs) for k, o in view.outputs.items()},\n"
        "                  'rows': len(view.table), 'error': panel.error.value,\n"
        "                  'task': panel.task is not None}))"
    )
    shown = json.loads(out.strip().splitlines()[-1])
    assert shown["outputs"] == {"table": 1, "waterfall": 1, "timing": 1, "tokens": 1}
    assert shown["rows"] == 3  # aborted while paused: steps 1-3, the abort adds no step
    assert "unknown role &#x27;nobody&#x27;" in shown["error"] and not shown["task"]


SLOW_MODEL = """
import asyncio
import json
import threading
import workbench as wb
from workbench.notebook import Stepper

# Threading events: the model runs on the workbench's loop, on its own thread, not the cell's.
release = threading.Event()
streamed_before_release = threading.Event()

async def slow(messages, request):
    for token in ("The ", "answer ", "is "):
        request.on_text_delta(token)
    streamed_before_release.set()
    await asyncio.to_thread(release.wait)  # the model call is in flight until the test says
    request.on_text_delta("42.")
    return "The answer is 42."

slow_stepper = Stepper(wb.Agent(model=wb.FunctionModel(slow, name="slow"), store=False), "Q?")
slow_stepper.next_step_button.click()
assert await asyncio.to_thread(streamed_before_release.wait, 30)
"""


def test_a_model_call_leaves_the_kernel_responsive_and_streams(kernel: Kernel) -> None:
    kernel.run(SLOW_MODEL)
    # A new request is served while the model call is still under way: the kernel is not blocked.
    out, _ = kernel.run(
        "for _ in range(3000):  # the phase is drawn a moment after it began (_REDRAW_EVERY)\n"
        "    if '<b>inference</b> under way' in slow_stepper.status.value:\n"
        "        break\n"
        "    await asyncio.sleep(0.01)\n"
        "print(json.dumps({'busy': slow_stepper.busy, 'streamed': slow_stepper.streamed,\n"
        "  'disabled': slow_stepper.run_button.disabled, 'status': slow_stepper.status.value,\n"
        "  'stream_html': slow_stepper.stream.value}))"
    )
    during = json.loads(out.strip().splitlines()[-1])
    assert during["busy"] is True and during["disabled"] is True
    assert during["streamed"] == "The answer is "
    assert "The answer is " in during["stream_html"]
    assert "<b>inference</b> under way…" in during["status"]  # not a run waiting on a click
    out, _ = kernel.run(
        "release.set()\nawait slow_stepper.wait()\n"
        "print(json.dumps({'busy': slow_stepper.busy, 'streamed': slow_stepper.streamed,\n"
        "  'status': slow_stepper.run.state.status.value, 'output': slow_stepper.result.output}))"
    )
    after = json.loads(out.strip().splitlines()[-1])
    assert after == {
        "busy": False,
        "streamed": "The answer is 42.",
        "status": "completed",
        "output": "The answer is 42.",
    }


def test_deny_with_a_reason_goes_back_to_the_model(kernel: Kernel) -> None:
    kernel.run(SETUP)
    shown, _ = kernel.shown(
        "stepper.run_button.click()\nawait stepper.wait()\n"
        "row = stepper.approval_rows[0]\nrow.reason.value = 'not today'\n"
        "row.deny_button.click()\nstepper.run_button.click()\nawait stepper.wait()\n"
        "stepper.step_picker.value = 3"
    )
    assert shown["status"] == "completed"
    assert shown["picker"] == ["step 1", "step 2", "step 3", "step 4", "live"]
    assert "result (error) #call_" in shown["messages_html"]  # what step 4's model saw
    assert "The user denied this call: not today." in shown["messages_html"]


def test_rerun_panel_switches_between_text_and_json(kernel: Kernel) -> None:
    kernel.run(SETUP)
    out, _ = kernel.run(
        "stepper.run_button.click()\nawait stepper.wait()\n"
        "panel = RerunPanel(stepper)\n"
        "text = panel.editor.value\n"
        "panel.format_picker.value = 'json'\n"
        "as_json = json.loads(panel.editor.value)\n"
        "panel.format_picker.value = 'text'\n"
        "print(json.dumps({'roles': [m['role'] for m in as_json],\n"
        "                  'back': panel.editor.value == text, 'first': text.splitlines()[0],\n"
        "                  'steps': len(panel.step_picker.options)}))"
    )
    shown = json.loads(out.strip().splitlines()[-1])
    assert shown["roles"] == ["system", "user", "assistant", "tool", "assistant", "tool"]
    assert shown["back"] is True and shown["first"] == "## system"
    assert shown["steps"] == 3


def test_stop_during_a_model_call_ends_the_run_after_that_phase(kernel: Kernel) -> None:
    kernel.run(SLOW_MODEL.replace("next_step_button", "run_button"))
    out, _ = kernel.run(
        "slow_stepper.stop_button.click()\n"
        "print(json.dumps({'busy': slow_stepper.busy, 'status': slow_stepper.status.value}))"
    )
    during = json.loads(out.strip().splitlines()[-1])
    assert during["busy"] is True and "stopping after the current phase" in during["status"]
    out, _ = kernel.run(
        "release.set()\nawait slow_stepper.wait()\n"
        "print(json.dumps({'status': slow_stepper.run.state.status.value,\n"
        "  'phases': [e.phase.value for e in slow_stepper.events]}))"
    )
    after = json.loads(out.strip().splitlines()[-1])
    assert after == {"status": "aborted", "phases": ["prepare", "inference"]}


def test_continue_stops_at_a_breakpoint_added_in_the_stepper(kernel: Kernel) -> None:
    kernel.run(SETUP)
    out, _ = kernel.run(
        "stepper = Stepper(demo_agent(store=False), DEMO_PROMPT)\n"
        "stepper.add_breakpoint('before:tools')\n"
        "stepper.add_breakpoint('nonsense')\n"
        "print(json.dumps({'list': list(stepper.break_list.options), "
        "'note': stepper.status.value}))\n"
        "stepper.continue_button.click()\nawait stepper.wait()\n"
        "print(json.dumps({'phase': stepper.events[-1].phase.value, "
        "'next': stepper.run.next_phase_name.value, 'stopped': str(stepper.stopped_at), "
        "'status': stepper.status.value}))\n"
        "stepper.break_list.index = 0\nstepper.remove_breakpoint()\n"
        "stepper.continue_button.click()\nawait stepper.wait()\n"
        "print(json.dumps({'left': list(stepper.break_list.options), "
        "'state': stepper.run.state.status.value}))\n"
    )
    first, second, third = (json.loads(line) for line in out.strip().splitlines()[-3:])
    assert first["list"] == ["before tools"]
    assert "not a breakpoint" in first["note"]
    assert (second["phase"], second["next"]) == ("inference", "tools")
    assert second["stopped"] == "before tools" and "stopped at breakpoint" in second["status"]
    assert third == {"left": [], "state": "paused"}  # on to the demo's approval


TEAM = """
import workbench as wb
from workbench.notebook import Stepper

R = wb.ModelResponse

@wb.tool(requires_approval=True)
def wipe(path: str) -> str:
    \"\"\"Wipe a folder.\"\"\"
    return f"wiped {path}"

cleaner = wb.Agent(
    model=wb.ScriptedModel([R.tool_call("wipe", {"path": "/b"}, call_id="w1"), "Wiped."]),
    name="cleaner", tools=[wipe], store=False,
)
researcher = wb.Agent(model=wb.ScriptedModel(["noon"]), name="researcher", store=False)
calls = [("research", {"task": "tide"}), ("clean", {"task": "b"})]
both = R.tool_calls(calls, call_ids=["r1", "c1"])
lead = wb.Agent(
    model=wb.ScriptedModel([both, "All clean."]),
    name="lead", tools=[researcher.as_tool("research"), cleaner.as_tool("clean")], store=False,
)
stepper = Stepper(lead, "go")
presses = 0
while not stepper.run.done and presses < 20:
    stepper.step_into_button.click()
    await stepper.wait()
    presses += 1
"""
"""A kernel's start: a lead calls two sub-agents at once, one of whose calls needs approval;
Step into is pressed until the run waits for it."""


def test_step_into_shows_a_sub_agents_approval_and_the_next_press_goes_on(kernel: Kernel) -> None:
    kernel.run(SETUP)
    shown, _ = kernel.shown(TEAM)
    assert shown["status"] == "paused" and shown["approval_rows"] == ["wipe"]
    assert shown["disabled"] == [True, True, True, False]  # only Stop while it waits
    out, _ = kernel.run("print(stepper.approval_rows[0].label.value)")
    assert "asked by sub-agent <b>cleaner</b>, via lead's clean" in out  # no call id to read

    shown, _ = kernel.shown(
        "stepper.approval_rows[0].approve_button.click()\n"
        "stepper.run_button.click()\nawait stepper.wait()"
    )
    assert shown["status"] == "completed" and shown["errors"] == []
