"""Fault table: command hooks that misbehave, as real subprocesses.

Already covered in ``tests/test_hooks.py`` and not repeated: a hook past its timeout (it and its
children killed), bad JSON, a flood of output, a missing or non-executable command, a crashing
script, a wrong-typed answer, exit 2 blocking with stderr, in-process hooks that raise or
overreach. Here: what those tests do not reach (a reason or context too long for the model is
cut to what Claude Code inlines). In every case the run goes on: a hook never
breaks a run, its failure is recorded, and what it blocked stays blocked.
"""

from __future__ import annotations

import shlex
import sys
import time

import pytest

import workbench as wb

pytestmark = pytest.mark.timeout(60)

BIG = "x" * 2_000_000  # more than a pipe holds: the hook must read it, or we must not care


@wb.tool
def echo(text: str) -> str:
    """Say how much text came."""
    return f"{len(text)} characters"


def run_with(command: str, timeout: float = 2.0) -> wb.RunResult:
    hook = wb.CommandHook("PreToolUse", command, timeout=timeout)
    script = [wb.ModelResponse.tool_call("echo", {"text": BIG}), wb.ModelResponse.text("ok")]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[echo], hooks=[hook])
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "ok"
    return result


def outcome(result: wb.RunResult) -> tuple[str, str, tuple[str, ...]]:
    (call,) = result.steps[0].tool_outcomes
    return call.status, call.content, result.steps[0].hook_errors


def test_a_hook_that_never_reads_its_big_input_neither_blocks_nor_breaks_the_run() -> None:
    status, content, errors = outcome(run_with("true"))
    assert (status, content, errors) == ("ok", f"{len(BIG)} characters", ())


def test_exit_2_without_reading_the_input_still_blocks() -> None:
    status, content, _ = outcome(run_with("echo 'not this one' >&2; exit 2"))
    assert status == "denied" and "not this one" in content


def test_bytes_that_are_not_utf8_are_read_as_text() -> None:
    status, content, _ = outcome(run_with("printf '\\377\\376 refused' >&2; exit 2"))
    assert status == "denied" and "refused" in content and "\ufffd" in content


@pytest.mark.parametrize("answer", ["null", "[1, 2]", '"allow"', "42"])
def test_json_that_is_not_an_object_is_plain_text_as_in_claude_code(answer: str) -> None:
    """Claude Code reads JSON only from an object; other stdout on exit 0 is text for the user."""
    run = run_with(f"echo '{answer}'")
    status, _, errors = outcome(run)
    assert status == "ok" and errors == ()
    (message,) = run.steps[0].hook_messages
    assert message.endswith(f": {answer}")


def test_an_object_that_does_not_parse_is_a_recorded_hook_error() -> None:
    status, _, errors = outcome(run_with("echo '{\"decision\": '"))
    assert status == "ok"
    (error,) = errors
    assert "stdout is not JSON" in error


@pytest.mark.parametrize(
    "command",
    ["sleep 30 & echo '{}'", "exec 1>&-; sleep 30"],
    ids=["a child keeps stdout open", "stdout closed, still running"],
)
def test_a_hook_that_lingers_is_bounded_by_its_timeout(command: str) -> None:
    started = time.monotonic()
    status, _, errors = outcome(run_with(command, timeout=1.0))
    assert status == "ok" and "timed out after 1s" in errors[0]
    assert time.monotonic() - started < 15


PYTHON = shlex.quote(sys.executable)


@pytest.mark.parametrize(
    "program",
    [
        "import json; print(json.dumps({'decision': 'block', 'reason': 'r' * 900000}))",
        "import sys; sys.stderr.write('r' * 900000); sys.exit(2)",
    ],
    ids=["a JSON reason", "stderr of exit 2"],
)
def test_a_hook_s_long_reason_reaches_the_model_cut_to_what_claude_code_inlines(
    program: str,
) -> None:
    """900 KB of reason (under the 1 MiB a hook may print) went whole to the model as the call's
    result, to the store and to the spans; cut, with a notice, it costs what Claude Code's does."""
    run = run_with(f'{PYTHON} -c "{program}"', timeout=30)
    status, content, errors = outcome(run)
    assert status == "denied" and errors == ()
    assert content.startswith("Permission denied: rrrr")
    notice = "[truncated: showing the first 10,000 of 900,000 characters; 890,000 cut]"
    assert content.endswith(notice) and len(content) < 10_200
    (sent,) = [p for m in run.messages for p in m.parts if isinstance(p, wb.ToolResult)]
    assert sent.content == content  # what the model read


def test_a_post_tool_hook_s_long_context_is_cut_too() -> None:
    program = (
        "import json, sys; sys.stdin.read(); print(json.dumps({'hookSpecificOutput': "
        "{'hookEventName': 'PostToolUse', 'additionalContext': 'c' * 50000}}))"
    )
    hook = wb.CommandHook("PostToolUse", f'{PYTHON} -c "{program}"', timeout=30)
    script = [wb.ModelResponse.tool_call("echo", {"text": "hi"}), wb.ModelResponse.text("ok")]
    run = wb.Agent(model=wb.ScriptedModel(script), tools=[echo], hooks=[hook]).run_sync("go")
    status, content, errors = outcome(run)
    assert (status, errors) == ("ok", ())
    assert content.startswith("2 characters\n\ncccc")
    assert content.endswith(
        "[truncated: showing the first 10,000 of 50,000 characters; 40,000 cut]"
    )
