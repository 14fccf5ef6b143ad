"""RunResult, RunError, PhaseEvent and RunDiff: short reprs, and an HTML summary in a notebook."""

from __future__ import annotations

from typing import Any

from jupyter_client.manager import start_new_kernel

import workbench as wb
from workbench.demo import DEMO_PROMPT, demo_agent


def long_run() -> wb.RunResult:
    answers = [wb.ModelResponse.text("<b>not bold</b> " + "x" * 20_000)]
    agent = wb.Agent(model=wb.ScriptedModel(answers), name="<agent>", store=False)
    return agent.run_sync("hello " * 2_000)


def test_phase_event_repr_is_one_short_line_and_html_says_where_the_run_is() -> None:
    run = demo_agent(store=False).start(DEMO_PROMPT)
    event = run.next_phase()
    text = repr(event)
    assert text.startswith("PhaseEvent(phase=prepare, step=1, status=running")
    assert "next_phase=inference" in text and len(text) < 120
    html = event._repr_html_()
    assert "<b>prepare</b> of step 1" in html and "next phase <b>inference</b>" in html


def test_a_phase_event_at_a_breakpoint_says_where_which_breakpoint_and_what_failed() -> None:
    from tests._failing_team import team

    run = team().start("price the hat", breakpoints=[wb.Break.on_error()])
    stopped = run.run_to_breakpoint()
    assert stopped is not None
    html = stopped._repr_html_()
    assert "digger (depth 2) · <b>tools</b> of step 3" in html
    assert "stopped at breakpoint on a tool error" in html
    assert "<b>apply_discount</b>: Tool &#x27;apply_discount&#x27; failed: TypeError" in html
    going_on = run.next_phase()
    assert going_on is not None
    html = going_on._repr_html_()
    assert "<b>continuation</b> of step 3" in html
    assert "breakpoint" not in html and "TypeError" not in html
    run.run_to_end()  # a run left stopped in a sub-run is not closed cleanly when collected


@wb.tool
def flaky(x: int) -> int:
    """Asks for another x."""
    raise wb.ToolRetry("try x=2")


@wb.tool
def boom(x: int) -> int:
    """Crashes."""
    raise ValueError("boom")


@wb.tool
def remove(path: str) -> str:
    """Removes a file."""
    return "removed"


def _refuse_remove(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
    if call.name == "remove":
        return wb.ToolPermission.DENY, "not here"
    return wb.ToolPermission.ALLOW


def test_a_tools_phase_says_which_calls_failed_apart_from_its_retries_and_denials() -> None:
    """As the step table and the report say them: a retry or a denial is no error (a denial was
    listed, in red, among the calls that failed)."""
    calls = [("flaky", {"x": 1}), ("boom", {"x": 1}), ("remove", {"path": "/"})]
    model = wb.ScriptedModel([wb.ModelResponse.tool_calls(calls), wb.ModelResponse.text("ok")])
    agent = wb.Agent(model=model, tools=[flaky, boom, remove], guards=[_refuse_remove], store=False)
    run = agent.start("go")
    event = run.next_phase()
    while event is not None and event.phase is not wb.Phase.TOOLS:
        event = run.next_phase()
    assert event is not None
    assert [(o.name, o.status, o.is_error) for o in event.outcomes] == [
        ("flaky", "retry", False),
        ("boom", "error", True),
        ("remove", "denied", False),
    ]
    html = event._repr_html_()
    failed = html.split("color:#c62828")[1:]
    assert len(failed) == 1 and failed[0].startswith("'><b>boom</b>: Tool &#x27;boom&#x27; failed")
    assert "<b>flaky (retry)</b>: try x=2" in html
    assert "<b>remove (denied)</b>: Permission denied: not here" in html
    result = run.run_to_end()
    (error,) = result.errors  # the run's errors agree: the crash, not the retry or the denial
    assert (error.kind, error.name) == ("tool", "boom")


def test_run_result_html_summarises_and_escapes() -> None:
    result = long_run()
    assert len(repr(result)) < 300
    html = result._repr_html_()
    assert "&lt;b&gt;not bold&lt;/b&gt;" in html and "<b>not bold</b>" not in html
    assert "&lt;agent&gt;" in html and "completed" in html and ">1 step<" in html


def test_a_paused_result_shows_what_it_waits_on() -> None:
    paused = demo_agent(store=False).run_sync(DEMO_PROMPT)
    assert paused.status.value == "paused"
    assert "wb-pending" in paused._repr_html_() and "save_result" in paused._repr_html_()


def test_one_error_as_a_cells_value_shows_its_traceback() -> None:
    """``result.errors[0]`` in a cell: where, what, and the traceback open, not one repr line."""
    from tests._failing_team import BROKEN_LINE, team

    (error,) = team().run_sync("price the hat").errors
    assert repr(error).startswith("RunError(tool, ")
    html = error._repr_html_()
    assert html is not None
    assert "<b>step 3, apply_discount in digger</b>" in html
    assert '<details class="wb-traceback" open>' in html
    assert "in apply_discount</b>" in html and BROKEN_LINE in html


def test_run_diff_repr_is_short_and_html_marks_the_first_divergence() -> None:
    a = demo_agent(store=False).run_sync(DEMO_PROMPT)
    b = wb.Agent(model=wb.ScriptedModel(["<i>other</i>"]), store=False).run_sync(DEMO_PROMPT)
    changes = wb.diff(a, b)
    text = repr(changes)
    assert text.startswith("RunDiff(a=") and "first_divergence=1" in text and len(text) < 200
    html = changes._repr_html_()
    assert "first divergence: step 1" in html and "changed" in html
    assert "&lt;i&gt;other&lt;/i&gt;" in html and "<i>other</i>" not in html
    assert "agree on every step" in wb.diff(a, a)._repr_html_()


def test_printing_a_run_its_state_or_a_snapshot_shows_no_metadata_or_conversation() -> None:
    key = "sk-" + "q" * 24
    agent = wb.Agent(model=wb.ScriptedModel(["the answer"]), store=False)
    result = agent.run_sync("a private question", metadata={"api_key": key})
    shown = [result, result.state, result.snapshots[0], result.steps[0]]
    for text in [*map(str, shown), *map(repr, shown)]:
        assert key not in text and "private question" not in text
        assert len(text) < 300
    assert str(result.state) == repr(result.state)
    assert "status=completed" in repr(result.state) and "messages=2" in repr(result.state)
    assert repr(result.snapshots[0]).startswith("StepContext(id='snap_")


def test_a_result_is_drawn_as_html_in_a_fresh_kernel_without_importing_the_notebook() -> None:
    """The last expression of a cell, in a kernel where only ``import workbench`` was run."""
    manager, client = start_new_kernel(kernel_name="python3", startup_timeout=60)
    try:
        cell = (
            "import sys\nimport workbench as wb\n"
            "from workbench.demo import DEMO_PROMPT, demo_agent\n"
            "result = demo_agent(store=False).run_sync(DEMO_PROMPT)\n"
            "print('workbench.notebook' in sys.modules)"
        )
        assert _outputs(client, cell)["stdout"] == "False\n"  # nothing imported the views yet
        shown = _outputs(client, "result")["execute_result"]
    finally:
        client.stop_channels()
        manager.shutdown_kernel(now=True)
    assert "paused" in shown["text/plain"]
    html = shown["text/html"]
    assert "wb-pending" in html and "save_result" in html  # the call waiting for an approval


def _outputs(client: Any, code: str) -> dict[str, Any]:
    """What a cell printed (``stdout``) and its value's data by MIME type (``execute_result``)."""
    found: dict[str, Any] = {"stdout": "", "execute_result": {}}
    errors: list[str] = []

    def hook(msg: dict[str, Any]) -> None:
        kind, content = msg["msg_type"], msg["content"]
        if kind == "stream" and content["name"] == "stdout":
            found["stdout"] += content["text"]
        elif kind == "execute_result":
            found["execute_result"] = content["data"]
        elif kind == "error":
            errors.append("\n".join(content["traceback"]))

    reply = client.execute_interactive(code, output_hook=hook, timeout=120)
    assert reply["content"]["status"] == "ok", "\n".join(errors)
    return found
