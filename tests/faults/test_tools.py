"""Fault table: tools that raise, hang, cancel themselves, exit, or return what cannot be stored.

Already covered elsewhere and not repeated here (``tests/test_loop.py``): a tool that raises (the
model reads the error), `RunFatalError` (the run fails), a tool past its timeout and `ToolRetry`
(retry prompts, then the retry limit fails the run), a 10 MB result (truncated with a notice),
unknown tools and bad arguments (retry prompts).
"""

from __future__ import annotations

import asyncio
import os
from pathlib import Path

import pytest

import workbench as wb

pytestmark = pytest.mark.timeout(60)

R = wb.ModelResponse


def agent(*tools: wb.Tool, **kwargs: object) -> wb.Agent:
    script = [R.tool_call(tools[0].name, {}), R.text("the model read it")]
    return wb.Agent(model=wb.ScriptedModel(script), tools=list(tools), **kwargs)  # type: ignore[arg-type]


def tool_answer(result: wb.RunResult) -> str:
    (outcome,) = result.steps[0].tool_outcomes
    return f"{outcome.status}: {outcome.content}"


# --- issue 15 #6: a tool that raises CancelledError itself --------------------------------------


@wb.tool
async def cancels_itself() -> str:
    """Wait on a task that something else cancelled, as a client library might."""
    inner = asyncio.ensure_future(asyncio.sleep(10))
    inner.cancel()
    return await inner  # raises CancelledError into the tool, though nobody cancelled the run


@wb.tool
def cancels_in_a_thread() -> str:
    """A sync tool that raises CancelledError from its worker thread."""
    raise asyncio.CancelledError("a future it waited on was cancelled")


@pytest.mark.parametrize("tool", [cancels_itself, cancels_in_a_thread], ids=["async", "sync"])
def test_a_tool_raising_cancelled_error_is_a_tool_failure_the_model_reads(tool: wb.Tool) -> None:
    result = agent(tool).run_sync("go")
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert result.output == "the model read it"
    assert tool_answer(result).startswith("error: ")
    assert "CancelledError" in tool_answer(result)


async def test_cancelling_the_run_while_a_tool_runs_still_cancels() -> None:
    """The fix above must not swallow a real cancellation: the caller's cancel propagates."""
    started = asyncio.Event()

    @wb.tool
    async def slow() -> str:
        """Wait for a long time."""
        started.set()
        await asyncio.sleep(30)
        return "never"

    task = asyncio.create_task(agent(slow).run("go"))
    await asyncio.wait_for(started.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task


# --- beyond the issue: a tool that exits ---------------------------------------------------------


@wb.tool
def parses_argv() -> str:
    """A tool wrapping a command line parser, which exits on bad input."""
    import argparse

    argparse.ArgumentParser(prog="tool").parse_args(["--no-such-flag"])
    return "unreachable"


def test_a_tool_calling_sys_exit_is_a_tool_failure_not_the_end_of_the_process(
    capsys: pytest.CaptureFixture[str],
) -> None:
    result = agent(parses_argv).run_sync("go")
    assert result.output == "the model read it"
    assert "SystemExit" in tool_answer(result) and "2" in tool_answer(result)


def test_a_tool_raising_keyboard_interrupt_is_a_tool_failure() -> None:
    @wb.tool
    def interrupted() -> str:
        """Raise what Ctrl+C raises; a real Ctrl+C reaches the main thread, never a tool's."""
        raise KeyboardInterrupt

    result = agent(interrupted).run_sync("go")
    assert "KeyboardInterrupt" in tool_answer(result)
    # and the portal loop every sync call runs on is alive: the next run works
    assert agent(interrupted).run_sync("again").output == "the model read it"


# --- beyond the issue: a result that is not valid Unicode ----------------------------------------


@wb.tool
def list_files() -> list[str]:
    """List a directory holding a file whose name is not UTF-8, as Python decodes it."""
    return [os.fsdecode(b"report-\xff.txt"), "notes.txt"]


@wb.tool
def read_name() -> str:
    """Return such a name as text."""
    return "found " + os.fsdecode(b"report-\xff.txt")


@pytest.mark.parametrize("tool", [read_name, list_files], ids=["text", "json"])
def test_a_result_with_lone_surrogates_is_stored_serialized_and_exported(
    tool: wb.Tool, tmp_path: Path
) -> None:
    """Before, the store could not record the run (it stayed "running" with no step), the
    state could not be serialized, and the spans could not be encoded for export."""
    store = wb.RunStore(tmp_path / "runs.sqlite")
    telemetry = wb.Telemetry(capture_content=True)
    result = agent(tool, store=store, telemetry=telemetry).run_sync("go")
    assert result.output == "the model read it"
    assert "report-\ufffd.txt" in tool_answer(result)
    assert wb.AgentState.from_json(result.state.to_json()) == result.state
    stored = store.load(result.run_id)
    assert stored.status is wb.ExecutionStatus.COMPLETED and len(stored.steps) == 2
    telemetry.write_otlp_json(tmp_path / "run.otlp.json")
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans

    assert encode_spans(telemetry.spans).SerializeToString()
