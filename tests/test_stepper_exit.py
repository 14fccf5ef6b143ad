"""A script that ends with a Stepper stopped inside a sub-run exits, and promptly."""

from __future__ import annotations

import subprocess
import sys
import textwrap

import pytest

SCRIPT = textwrap.dedent(
    """
    import atexit, sys
    import workbench as wb
    from workbench import stepping
    from workbench.notebook import Stepper

    R = wb.ModelResponse
    helper = wb.Agent(model=wb.ScriptedModel(["helped"]), name="helper", store=False)
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("help", {"task": "x"}, call_id="h1"), "done"]),
        name="lead", tools=[helper.as_tool("help")], store=False,
    )
    st = Stepper(lead, "go")
    for _ in range(3):
        st.step_into_button.click()
    assert st.run.subrun is not None and st.run.subrun.state.agent_name == "helper"
    if sys.argv[1] == "finalizer":  # as if exit came before the hook: the widget's __del__
        atexit.unregister(stepping._abort_at_exit)
    print("inside", flush=True)
    """
)


@pytest.mark.parametrize("way", ["atexit", "finalizer"])
def test_a_script_ending_inside_a_sub_run_exits(way: str) -> None:
    done = subprocess.run(
        [sys.executable, "-c", SCRIPT, way], capture_output=True, text=True, timeout=30
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout == "inside\n"
    if way == "atexit":  # the phase ended before exit: nothing destroyed while pending
        assert "destroyed" not in done.stderr and "Traceback" not in done.stderr
