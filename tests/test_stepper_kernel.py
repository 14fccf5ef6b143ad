"""The Stepper across cells in a real kernel, with clicks delivered as JupyterLab delivers them.

JupyterLab 4.4+ sends widget messages on a kernel subshell of their own, and ipykernel 7 runs
each subshell on its own thread with its own event loop: a click may arrive on another thread
and loop than the cell before it, or than the click before it. These tests send each click as
the front end does (a ``comm_msg`` on the shell channel, on a subshell when the front end would),
wait for the kernel to have handled it, and read what the widget shows from the next cell.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest
from jupyter_client.manager import start_new_kernel

from tests.test_widgets_kernel import Kernel

TREE = '''
import json
import threading
import workbench as wb
from workbench.notebook import Stepper

R = wb.ModelResponse

@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"

def team():
    """lead -> research (researcher) -> dig (digger) -> search."""
    digger = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("search", {"query": "deep"}, call_id="s1"), "dug"]),
        name="digger", tools=[search], store=False)
    researcher = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("dig", {"task": "dig it"}, call_id="d1"), "it is"]),
        name="researcher", tools=[digger.as_tool("dig")], store=False)
    return wb.Agent(
        model=wb.ScriptedModel([R.tool_call("research", {"task": "look"}, call_id="r1"), "done"]),
        name="lead", tools=[researcher.as_tool("research")], store=False)

stepper = Stepper(team(), "go", breakpoints=[wb.Break.on_tool("search")])
clicked = []  # the thread each click arrived on

def note_thread(_):
    clicked.append(threading.current_thread().name)

BUTTONS = ("continue_button", "step_into_button", "step_out_button", "next_phase_button",
           "next_step_button", "run_button", "stop_button")
for name in BUTTONS:
    getattr(stepper, name).on_click(note_thread)

def shown():
    s = stepper
    last = s.events[-1] if s.events else None
    return {
        "errors": s.errors,
        "status": s.run.state.status.value,
        "last": last and [last.state.agent_name, last.depth, last.phase.value],
        "inside": s.run.subrun.state.agent_name if s.run.subrun else None,
        "events": len(s.events),
        "status_html": s.status.value,
        "threads": clicked,
    }

print(json.dumps({name: getattr(stepper, name).model_id for name in BUTTONS}))
'''


class Front:
    """What JupyterLab does with a kernel: run cells, and send widget clicks on a subshell."""

    def __init__(self, kernel: Kernel) -> None:
        self.kernel = kernel
        self.ids: dict[str, str] = {}
        reply = self._control("create_subshell_request", {})
        self.subshell: str = reply["content"]["subshell_id"]

    def _control(self, kind: str, content: dict[str, Any]) -> dict[str, Any]:
        client = self.kernel.client
        message = client.session.msg(kind, content)
        client.control_channel.send(message)
        while True:
            reply: dict[str, Any] = client.control_channel.get_msg(timeout=30)
            if reply["parent_header"].get("msg_id") == message["header"]["msg_id"]:
                return reply

    def start(self, code: str) -> None:
        out, _ = self.kernel.run(code)
        self.ids = json.loads(out.strip().splitlines()[-1])

    def click(self, button: str, *, on_subshell: bool = True) -> None:
        """Click ``button`` as the page does, and wait until the kernel has handled the click.

        The click's work goes on after that (it is scheduled); the next cell waits for it.
        """
        client = self.kernel.client
        data = {"method": "custom", "content": {"event": "click"}}
        message = client.session.msg("comm_msg", {"comm_id": self.ids[button], "data": data})
        if on_subshell:
            message["header"]["subshell_id"] = self.subshell
        client.shell_channel.send(message)
        sent = message["header"]["msg_id"]
        while True:  # the kernel says idle for a message once its handler has returned
            reply = client.get_iopub_msg(timeout=60)
            if reply["parent_header"].get("msg_id") != sent:
                continue
            if reply["msg_type"] == "status" and reply["content"]["execution_state"] == "idle":
                return

    def shown(self) -> dict[str, Any]:
        out, _ = self.kernel.run("await stepper.wait()\nprint(json.dumps(shown()))")
        result: dict[str, Any] = json.loads(out.strip().splitlines()[-1])
        return result


@pytest.fixture
def front() -> Iterator[Front]:
    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        yield Front(Kernel(manager, client))
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)


def test_every_button_works_after_continue_stopped_inside_a_sub_agent(front: Front) -> None:
    front.start(TREE)
    front.click("continue_button", on_subshell=False)  # the first click: on the main shell
    stopped = front.shown()
    assert stopped["errors"] == [] and stopped["inside"] == "digger"
    assert stopped["last"] == ["digger", 2, "inference"]
    assert "stopped at breakpoint on tool &#x27;search&#x27; in digger" in stopped["status_html"]

    presses = [  # each a later click, sent on the subshell as the page sends it
        ("step_into_button", ["digger", 2, "tools"], "digger"),  # search is a plain tool
        ("next_phase_button", ["digger", 2, "continuation"], "digger"),  # step over, at depth 2
        ("next_step_button", ["digger", 2, "continuation"], "digger"),  # its step 2: it ends
        ("step_out_button", ["researcher", 1, "tools"], "researcher"),  # its dig call returned
        ("step_out_button", ["lead", 0, "tools"], None),
    ]
    for button, last, inside in presses:
        front.click(button)
        after = front.shown()
        assert after["errors"] == [], button
        assert (after["last"], after["inside"]) == (last, inside), button
    front.click("run_button")
    done = front.shown()
    assert done["errors"] == [] and done["status"] == "completed"
    # ipykernel routes a click to the thread that last sent the widget's updates: the run was
    # driven from the main thread's loop and from the subshell's
    threads = done["threads"]
    assert threads[0] == "MainThread" and any(t.startswith("subshell-") for t in threads)


SLOW_TOOL = '''
import asyncio
import json
import threading
import workbench as wb
from workbench.notebook import Stepper

started, release = threading.Event(), threading.Event()

@wb.tool
def slow_lookup(query: str) -> str:
    """Look something up, slowly."""
    started.set()
    release.wait(60)  # in flight until the test lets it finish
    return f"found {query}"

script = [wb.ModelResponse.tool_call("slow_lookup", {"query": "q"}), "never reached"]
agent = wb.Agent(model=wb.ScriptedModel(script), tools=[slow_lookup], store=False)
stepper = Stepper(agent, "go")

def shown():
    return {"busy": stepper.busy, "status": stepper.run.state.status.value,
            "status_html": stepper.status.value, "errors": stepper.errors,
            "phases": [e.phase.value for e in stepper.events]}

print(json.dumps({name: getattr(stepper, name).model_id for name in ("run_button", "stop_button")}))
'''


def test_stop_clicked_while_a_tool_runs_ends_the_run_after_that_tool(front: Front) -> None:
    front.start(SLOW_TOOL)
    front.click("run_button", on_subshell=False)
    front.kernel.run("assert await asyncio.to_thread(started.wait, 30)")
    front.click("stop_button")  # handled while the tool still runs
    out, _ = front.kernel.run("print(json.dumps(shown()))")
    during = json.loads(out.strip().splitlines()[-1])
    assert during["busy"] is True and "stopping after the current phase" in during["status_html"]
    front.kernel.run("release.set()")
    after = front.shown()
    assert after["status"] == "aborted" and after["errors"] == []
    assert after["phases"] == ["prepare", "inference", "tools"]  # the tool finished, no more


def test_the_stepper_shows_what_code_in_a_later_cell_does_to_its_run(front: Front) -> None:
    front.start(TREE)
    front.click("continue_button")
    assert front.shown()["inside"] == "digger"
    _, updates = front.kernel.run("stepper.run.step_out()")  # code, not a button
    sent = [u["value"] for u in updates if "value" in u and "wb-status" in str(u["value"])]
    assert sent and "ran researcher (depth 1) tools of step 1" in sent[-1]
    _, updates = front.kernel.run("stepper.run.run_to_end()")
    sent = [u["value"] for u in updates if "value" in u and "wb-status" in str(u["value"])]
    assert sent and "completed" in sent[-1] and "step <b>2</b>" in sent[-1]
    assert front.shown()["errors"] == []
