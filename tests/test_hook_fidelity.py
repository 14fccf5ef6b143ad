"""Claude Code hook protocol fidelity: what published hook scripts expect of the host.

Real scripts run as subprocesses: a plugin's Stop hook that reads the transcript with jq (python3
where jq is missing), plain-text answers, the ``defer`` decision, settings with events workbench
never fires, plugin environment variables, and a deny that gives no reason.
"""

from __future__ import annotations

import json
import os
import shlex
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.hooks import PROTOCOL_VERSION
from workbench.hooks.transcript import Transcript

R = wb.ModelResponse
E = wb.HookEvent
HOOKS = Path(__file__).parent / "hooks"
PLUGIN = HOOKS / "plugin"


@pytest.fixture(autouse=True)
def _scripts_use_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """``python3`` in the scripts is the test interpreter (no shims)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(responses: list[R | str], hooks: list[wb.CommandHook]) -> wb.Agent:
    return wb.Agent(wb.ScriptedModel(responses), tools=[add], hooks=hooks, store=False)


def hook_errors(result: wb.RunResult) -> list[str]:
    return [error for step in result.steps for error in step.hook_errors]


def tool_text(result: wb.RunResult) -> str:
    parts = [p for m in result.messages for p in m.parts if isinstance(p, wb.ToolResult)]
    return parts[0].content


# -- the transcript ----------------------------------------------------------------------------


def conversation() -> list[wb.Message]:
    call = wb.ToolCall(name="add", arguments={"a": 1, "b": 2}, call_id="toolu_1")
    return [
        wb.Message.system("You add numbers."),
        wb.Message.user("What is 1 + 2?"),
        wb.Message(role="assistant", parts=(wb.TextPart(text="Let me add."), call)),
        wb.Message.tool_result("toolu_1", "3", name="add"),
        wb.Message(role="tool", parts=(wb.RetryPrompt(content="try again", call_id="toolu_1"),)),
        wb.Message.assistant("1 + 2 = 3"),
    ]


def test_transcript_is_written_in_claude_codes_layout(tmp_path: Path) -> None:
    transcript = Transcript()
    path = Path(transcript.write(conversation(), session_id="run_1", cwd=str(tmp_path)))
    raw = path.read_text().splitlines()
    lines = [json.loads(line) for line in raw]
    assert [line["type"] for line in lines] == [
        "system",
        "user",
        "assistant",
        "user",
        "user",
        "assistant",
    ]
    assert all('"role":"' in line for line in raw)  # compact JSON, as `grep` in hooks expects
    first, assistant, result, retry = lines[1], lines[2], lines[3], lines[4]
    assert first["message"] == {
        "role": "user",
        "content": [{"type": "text", "text": "What is 1 + 2?"}],
    }
    assert assistant["message"]["content"] == [
        {"type": "text", "text": "Let me add."},
        {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 1, "b": 2}},
    ]
    assert assistant["message"]["stop_reason"] == "tool_use"
    assert lines[5]["message"]["stop_reason"] == "end_turn"
    assert result["message"]["content"] == [
        {"type": "tool_result", "tool_use_id": "toolu_1", "content": "3", "is_error": False}
    ]
    assert retry["message"]["content"][0]["is_error"] is True
    assert [line["parentUuid"] for line in lines[1:]] == [line["uuid"] for line in lines[:-1]]
    assert {line["sessionId"] for line in lines} == {"run_1"}
    assert {line["version"] for line in lines} == {PROTOCOL_VERSION}
    assert lines[0]["cwd"] == str(tmp_path) and lines[0]["timestamp"].endswith("Z")
    more = [*conversation(), wb.Message.user("and 2 + 2?")]
    transcript.write(more, session_id="run_1", cwd=str(tmp_path))
    appended = [json.loads(line) for line in path.read_text().splitlines()]
    assert len(appended) == 7 and appended[6]["parentUuid"] == lines[5]["uuid"]
    transcript.remove()
    assert not path.exists()


@pytest.mark.skipif(shutil.which("jq") is None, reason="the jq filter itself needs jq")
def test_the_jq_filter_of_published_hooks_reads_every_line(tmp_path: Path) -> None:
    transcript = Transcript()
    path = transcript.write(conversation(), session_id="run_1", cwd=str(tmp_path))
    filtered = subprocess.run(
        ["jq", "-r", '.message.content[] | select(.type=="text") | .text', path],
        capture_output=True,
        text=True,
        check=True,
    )
    assert filtered.stdout.splitlines() == [
        "You add numbers.",
        "What is 1 + 2?",
        "Let me add.",
        "1 + 2 = 3",
    ]
    transcript.remove()


def test_a_published_plugin_stop_hook_reads_the_transcript(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "seen.jsonl"
    monkeypatch.setenv("HOOK_RECORD", str(record))  # the hook's subprocess inherits it
    hooks = wb.hooks_from_plugin(PLUGIN)
    answers: list[R | str] = ["Working on it.", "All added. <promise>DONE</promise>"]
    result = agent(answers, hooks).run_sync("add things")
    assert hook_errors(result) == []
    assert result.output == "All added. <promise>DONE</promise>"
    assert len(result.steps) == 2  # the hook refused the first stop
    assert "Not done yet" in result.messages[-2].text
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    assert [s["last"] for s in seen] == ["Working on it.", "All added. <promise>DONE</promise>"]
    assert {s["plugin_root"] for s in seen} == {str(PLUGIN.resolve())}
    assert seen[0]["project_dir"] == os.getcwd()


def test_the_stop_hook_falls_back_to_python_without_jq(tmp_path: Path) -> None:
    bin_dir = tmp_path / "bin"  # a PATH with the tools the script needs, but no jq
    bin_dir.mkdir()
    for tool in ("bash", "cat", "grep", "tail"):
        found = shutil.which(tool)
        assert found is not None
        (bin_dir / tool).symlink_to(found)
    (bin_dir / "python3").symlink_to(sys.executable)
    stop_hook = shlex.quote(str(PLUGIN / "hooks" / "stop-hook.sh"))
    hooks = [wb.CommandHook(E.STOP, f"PATH={shlex.quote(str(bin_dir))} {stop_hook}")]
    result = agent(["not yet", "<promise>DONE</promise>"], hooks).run_sync("go")
    assert hook_errors(result) == [] and len(result.steps) == 2


def test_plugin_hooks_json_given_to_hooks_from_settings_is_read_as_the_plugins() -> None:
    (hook,) = wb.hooks_from_settings(PLUGIN / "hooks" / "hooks.json")
    assert hook.env == {"CLAUDE_PLUGIN_ROOT": str(PLUGIN.resolve())}
    assert hook.command == "${CLAUDE_PLUGIN_ROOT}/hooks/stop-hook.sh"
    assert str(PLUGIN.resolve()) not in repr(hook)  # the environment is not shown


# -- plain text, defer, a deny without a reason -------------------------------------------------


@pytest.mark.parametrize("event", [E.PRE_TOOL_USE, E.POST_TOOL_USE, E.STOP])
def test_plain_text_on_stdout_with_exit_0_is_a_success(event: wb.HookEvent) -> None:
    hook = wb.CommandHook(event, "echo 'checked: all good'")
    result = agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], [hook]).run_sync("add")
    assert hook_errors(result) == []
    notes = [n for s in result.steps for n in s.hook_messages]
    assert notes == [f"{event.value} hook {hook.name!r}: checked: all good"]
    assert tool_text(result) == "3"  # shown to the user, not added for the model


def test_defer_pauses_the_call_for_whoever_resumes_the_run() -> None:
    decide = shlex.join([str(HOOKS / "decide.py"), "defer", "a human decides"])
    hooks = [wb.CommandHook(E.PRE_TOOL_USE, decide)]
    paused = agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], hooks).run_sync("add")
    assert paused.status is wb.ExecutionStatus.PAUSED
    assert paused.state.pending[0].reason == "a human decides"
    silent = shlex.join([str(HOOKS / "decide.py"), "defer"])
    hooks = [wb.CommandHook(E.PRE_TOOL_USE, silent)]
    paused = agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], hooks).run_sync("add")
    assert paused.state.pending[0].reason == f"PreToolUse hook {silent!r} deferred the call"


def test_a_deny_without_a_reason_names_the_hook_that_refused() -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny"}}
    command = f"echo {shlex.quote(json.dumps(answer))}"
    result = agent(
        [R.tool_call("add", {"a": 1, "b": 2}), "ok"], [wb.CommandHook(E.PRE_TOOL_USE, command)]
    ).run_sync("add")
    assert tool_text(result) == (
        f"Permission denied: PreToolUse hook {wb.CommandHook(E.PRE_TOOL_USE, command).name!r} "
        "refused the call (no reason given)"
    )


def test_an_ask_without_a_reason_names_the_hook_too() -> None:
    ask = shlex.join([str(HOOKS / "decide.py"), "ask"])
    paused = agent(
        [R.tool_call("add", {"a": 1, "b": 2}), "3"], [wb.CommandHook(E.PRE_TOOL_USE, ask)]
    ).run_sync("x")
    assert (
        paused.state.pending[0].reason
        == f"PreToolUse hook {ask!r} asks for approval (no reason given)"
    )


# -- settings of the current protocol -----------------------------------------------------------


def settings_with(events: dict[str, Any], path: Path) -> Path:
    path.write_text(json.dumps({"hooks": events}))
    return path


def test_events_workbench_never_fires_load_with_a_warning_not_an_error(tmp_path: Path) -> None:
    group = [{"hooks": [{"type": "command", "command": "true"}]}]
    path = settings_with(
        {
            "PermissionRequest": group,
            "PermissionDenied": group,
            "Setup": group,
            "PostCompact": group,
            "PreToolUse": [{"matcher": "add", "hooks": [{"type": "command", "command": "true"}]}],
        },
        tmp_path / "settings.json",
    )
    with pytest.warns(wb.HookSettingsWarning) as caught:
        hooks = wb.hooks_from_settings(path)  # strict: still loads
    assert [(h.event, h.matcher) for h in hooks] == [
        (E.PERMISSION_REQUEST, None),
        (E.PERMISSION_DENIED, None),
        (E.PRE_TOOL_USE, "add"),
    ]
    messages = [str(w.message) for w in caught]
    assert len(messages) == 2
    assert "Setup hooks skipped: it fires for `claude --init`" in messages[0]
    assert "PostCompact hooks skipped" in messages[1]
    assert hooks[0].env == {}  # not a plugin: no CLAUDE_PLUGIN_ROOT


def test_updated_input_with_ask_is_what_waits_for_approval() -> None:
    answer = {
        "hookSpecificOutput": {
            "hookEventName": "PreToolUse",
            "permissionDecision": "ask",
            "permissionDecisionReason": "check the numbers",
            "updatedInput": {"a": 10, "b": 20},
        }
    }
    hook = wb.CommandHook(E.PRE_TOOL_USE, f"echo {shlex.quote(json.dumps(answer))}")
    paused = agent([R.tool_call("add", {"a": 1, "b": 2}), "30"], [hook]).run_sync("add")
    (pending,) = paused.state.pending
    assert (pending.arguments, pending.reason) == ({"a": 10, "b": 20}, "check the numbers")
