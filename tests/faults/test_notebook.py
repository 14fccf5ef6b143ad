"""Fault table: the notebook views in a real Jupyter kernel, meeting what a fork or a trace holds.

A re-run must not do what the original run had to ask for (issue 15 #9), and nothing in a run's
data may become live markup in a widget (issue 15 #11 is tested on the figures themselves in
``tests/faults/test_untrusted_text.py``; here, the secret in a widget's synced state).
The kernel and its helpers are those of ``tests/test_widgets_kernel.py``.
"""

from __future__ import annotations

import json

import pytest

from tests.test_widgets_kernel import DELETE_FILE_PANEL, Kernel, kernel

__all__ = ["kernel"]  # the module-scoped fixture, used by name below

pytestmark = pytest.mark.timeout(300)

FORK_SETUP = (
    DELETE_FILE_PANEL
    + """
def decide(messages, request):
    if messages[-1].role == "tool":
        return R.text("done")
    return R.tool_call("delete_file", {"path": "/important"})

agent = wb.Agent(model=wb.FunctionModel(decide), tools=[delete_file], store=False)
paused = agent.run_sync("clean up")
original = agent.resume_sync(paused.state, approvals={paused.pending[0].call_id: True})
assert deleted == ["/important"]
deleted.clear()
panel = RerunPanel([paused, original], agent)
panel.step_picker.value = 0

def shown():
    return {
        "deleted": list(deleted),
        "fork": panel.fork.status.value if panel.fork else None,
        "rows": [r.pending.tool for r in panel.approval_rows],
        "rows_on_screen": len(panel.approvals.children),
        "checkbox": panel.approve_all.value,
        "checkbox_on_screen": panel.approve_all in panel.children[0].children,
        "status": panel.status.value,
        "error": panel.error.value,
    }
"""
)


def test_a_rerun_asks_for_approval_as_the_original_did(kernel: Kernel) -> None:
    """Issue 15 #9: the fork ran delete_file('/important') with nothing on screen."""
    kernel.run(FORK_SETUP)
    out, _ = kernel.run(
        "panel.rerun_button.click()\nawait panel.wait()\nprint(json.dumps(shown()))"
    )
    asked = json.loads(out.strip().splitlines()[-1])
    assert asked["deleted"] == []  # nothing ran without asking
    assert asked["fork"] == "paused" and asked["rows"] == ["delete_file"]
    assert asked["rows_on_screen"] == 1 and "wait for your approval" in asked["status"]
    assert asked["checkbox"] is False and asked["checkbox_on_screen"] is True

    out, _ = kernel.run(
        "panel.approval_rows[0].approve_button.click()\nawait panel.wait()\n"
        "print(json.dumps(shown()))"
    )
    approved = json.loads(out.strip().splitlines()[-1])
    assert approved["deleted"] == ["/important"] and approved["fork"] == "completed"
    assert approved["rows"] == [] and approved["error"] == ""


def test_a_denial_in_the_panel_reaches_the_fork_and_nothing_runs(kernel: Kernel) -> None:
    kernel.run(FORK_SETUP)
    out, _ = kernel.run(
        "panel.rerun_button.click()\nawait panel.wait()\n"
        "panel.approval_rows[0].reason.value = 'not in a fork'\n"
        "panel.approval_rows[0].deny_button.click()\nawait panel.wait()\n"
        "print(json.dumps(shown()))"
    )
    denied = json.loads(out.strip().splitlines()[-1])
    assert denied["deleted"] == [] and denied["fork"] == "completed"


def test_approving_everything_is_the_users_visible_choice(kernel: Kernel) -> None:
    kernel.run(FORK_SETUP)
    out, _ = kernel.run(
        "panel.approve_all.value = True\n"
        "panel.rerun_button.click()\nawait panel.wait()\nprint(json.dumps(shown()))"
    )
    approved = json.loads(out.strip().splitlines()[-1])
    assert approved["checkbox"] is True and approved["checkbox_on_screen"] is True
    assert approved["deleted"] == ["/important"] and approved["fork"] == "completed"
    assert approved["rows"] == []


SECRET_WIDGETS = """
import json
import ipywidgets.widgets.widget as registry
import workbench as wb
from workbench.notebook import Stepper, TraceView

model = wb.OpenAIModel("m", base_url={url!r}, api_key={key!r}, max_retries=0)
stepper = Stepper(wb.Agent(model=model, store=False), "hi")
stepper.run_button.click()
await stepper.wait()
view = TraceView(stepper)
synced = json.dumps([w.get_state() for w in list(registry._instances.values())], default=repr)
state = stepper.run.state
print(json.dumps({{"status": state.status.value, "error": state.error.message,
                   "widgets": len(registry._instances), "leaks": synced.count({key!r})}}))
"""


def test_an_echoed_api_key_is_in_no_widgets_synced_state(kernel: Kernel) -> None:
    """What a widget syncs to the browser is a path out: the key echoed by a server is not in it."""
    from tests.faults.server import reply, serving

    key = "h7Qz9"
    with serving() as server:
        server.answer(reply(200, {"error": {"message": f"your key {key} is revoked"}}))
        out, updates = kernel.run(SECRET_WIDGETS.format(url=server.url, key=key))
    shown = json.loads(out.strip().splitlines()[-1])
    assert shown["status"] == "failed" and "[REDACTED]" in shown["error"]
    assert shown["widgets"] > 10 and shown["leaks"] == 0
    assert key not in json.dumps(updates)
