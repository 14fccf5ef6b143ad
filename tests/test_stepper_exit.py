"""A script that ends with a Stepper stopped inside a sub-run exits, and promptly."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

import pytest

import workbench as wb

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


DROPPED = textwrap.dedent(
    """
    import gc, sys
    sys.path.insert(0, sys.argv[2])
    import workbench as wb
    from tests._failing_team import team

    store = wb.RunStore(sys.argv[1])
    for _ in range(2):  # a cell that starts a run and steps into the error, run twice
        run = team(store=store).start("hat", breakpoints=[wb.Break.on_error()])
        run.run_to_breakpoint()
        assert run.subrun is not None and run.subrun.state.agent_name == "digger"
        print(run.state.run_id, flush=True)
    del run
    gc.collect()
    print("dropped", flush=True)
    """
)


def test_a_run_dropped_while_stopped_inside_a_sub_run_is_ended_at_exit_not_collected(
    tmp_path: Path,
) -> None:
    """The first run is dropped when the cell runs again: its phase is not destroyed pending
    (errors printed under a later cell, and in pytest a failed session), but kept, and its
    sub-runs end as ABORTED at exit, as those of the run still in hand do."""
    path = tmp_path / "runs.sqlite"
    root = str(Path(__file__).resolve().parent.parent)
    done = subprocess.run(
        [sys.executable, "-c", DROPPED, str(path), root],
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 0, done.stderr
    *ids, last = done.stdout.split()
    assert last == "dropped" and len(ids) == 2
    for said in ("Exception ignored", "destroyed", "Traceback", "different Context"):
        assert said not in done.stderr, done.stderr
    with wb.RunStore(path) as store:
        runs = wb.runs(store)
    below = runs[runs["depth"] > 0]
    assert len(below) == 4 and set(below["status"]) == {"aborted"}  # a researcher, a digger each
    assert set(below[below["depth"] == 1]["parent"]) == set(ids)
