"""What-if checks: a recorded run's tool calls through new guards and real hook scripts."""

from __future__ import annotations

import json
import os
import shlex
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

import workbench as wb

R = wb.ModelResponse
HOOKS = Path(__file__).parent / "hooks"
EXECUTED: list[tuple[str, dict[str, Any]]] = []


@pytest.fixture(autouse=True)
def _scripts_use_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def Bash(command: str) -> str:  # named as Claude Code's tool, which hooks match
    """Run a shell command (pretend)."""
    EXECUTED.append(("Bash", {"command": command}))
    return "done"


def Write(file_path: str, content: str) -> str:
    """Write a file (pretend)."""
    EXECUTED.append(("Write", {"file_path": file_path}))
    return "written"


CALLS = [
    R.tool_call("Bash", {"command": "grep -r TODO src"}, call_id="c1"),
    R.tool_call("Bash", {"command": "ls -la"}, call_id="c2"),
    R.tool_call("Write", {"file_path": "app/.env", "content": "KEY=1"}, call_id="c3"),
    R.tool_call("Bash", {"command": "rm -rf build"}, call_id="c4"),
    "All done.",
]


def no_dotfiles(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
    """The guard the run had: no writes to dotfiles."""
    path = str(call.arguments.get("file_path", ""))
    if Path(path).name.startswith("."):
        return wb.ToolPermission.DENY, f"dotfile {path}"
    return wb.ToolPermission.ALLOW


def agent(store: wb.RunStore | bool = False) -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(CALLS),
        name="coder",
        tools=[wb.tool(Bash), wb.tool(Write)],
        guards=[no_dotfiles],
        store=store,
    )


def hook_inputs(path: Path) -> list[dict[str, Any]]:
    """What a ``decide.py`` hook was given, one input a call."""
    return [json.loads(line) for line in path.read_text().splitlines()]


def script(name: str, *args: str, record: Path | None = None) -> str:
    command = shlex.join([str(HOOKS / name), *args])
    return f"HOOK_RECORD={shlex.quote(str(record))} {command}" if record else command


@pytest.fixture
def run(tmp_path: Path) -> wb.RunResult:
    """The run, recorded in a store and loaded back, as a check of yesterday's run would read it."""
    EXECUTED.clear()
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        result = agent(store).run_sync("Tidy the project.")
        loaded = store.load(result.run_id)
    assert result.status is wb.ExecutionStatus.COMPLETED and len(EXECUTED) == 3
    EXECUTED.clear()
    return loaded


def test_two_claude_code_hook_scripts_decide_without_running_any_tool(run: wb.RunResult) -> None:
    hooks = [
        wb.CommandHook("PreToolUse", script("bash_validator.py"), matcher="Bash"),
        wb.CommandHook("PreToolUse", script("protect_files.py")),
    ]
    frame = wb.recheck(run, hooks=hooks)

    assert EXECUTED == []  # nothing ran: only the hooks did
    assert list(frame.columns[:6]) == [
        "step",
        "tool",
        "arguments",
        "decision_then",
        "decision_now",
        "reason",
    ]
    rows = frame[["step", "tool", "decision_then", "decision_now", "changed"]]
    assert rows.values.tolist() == [
        [1, "Bash", "allow", "deny", True],
        [2, "Bash", "allow", "allow", False],
        [3, "Write", "deny", "deny", False],
        [4, "Bash", "allow", "ask", True],
    ]
    reasons = frame["reason"].tolist()
    assert reasons[0] == "• Use 'rg' (ripgrep) instead of 'grep' for better performance"
    assert reasons[2] == "app/.env is a protected file"
    assert reasons[3] == "destructive command: rm -rf build"
    assert frame["reason_then"][2] == "Permission denied: dotfile app/.env"
    assert frame["arguments"][0] == {"command": "grep -r TODO src"}
    assert set(frame["run_id"]) == {run.run_id}

    summary = frame.attrs["summary"]
    assert (summary.calls, summary.changed) == (4, 2)
    assert summary.transitions == {"allow → deny": 1, "allow → ask": 1}
    assert str(summary) == (
        "2 of 4 tool calls would be decided differently (1 allow → deny, 1 allow → ask)\n"
        "  step 1 Bash {'command': 'grep -r TODO src'}: allow → deny: "
        "• Use 'rg' (ripgrep) instead of 'grep' for better performance\n"
        "  step 4 Bash {'command': 'rm -rf build'}: allow → ask: destructive command: rm -rf build"
    )


def test_hooks_read_the_run_as_it_was_at_the_call(run: wb.RunResult, tmp_path: Path) -> None:
    log = tmp_path / "inputs.jsonl"
    hook = wb.CommandHook("PreToolUse", script("decide.py", "none", record=log))
    frame = wb.recheck(run, hooks=[hook])
    assert frame["decision_now"].tolist() == ["allow"] * 4
    seen = hook_inputs(log)
    assert [s["tool_use_id"] for s in seen] == ["c1", "c2", "c3", "c4"]
    assert {s["session_id"] for s in seen} == {run.run_id}
    assert seen[3]["tool_input"] == {"command": "rm -rf build"}
    # the transcript grows with the run: each call sees the conversation up to its own answer
    lines = [s["_transcript_lines"] for s in seen]
    assert lines == sorted(lines) and lines[0] < lines[3]


def test_guards_are_asked_with_the_step_of_the_call(run: wb.RunResult) -> None:
    steps: list[int] = []

    def ask_after_two(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        steps.append(ctx.step)
        if ctx.step > 2:
            return wb.ToolPermission.ASK, "late in the run"
        return wb.ToolPermission.ALLOW

    frame = wb.recheck(run, guards=[ask_after_two])
    assert steps == [1, 2, 3, 4]
    assert frame["decision_now"].tolist() == ["allow", "allow", "ask", "ask"]
    assert frame["changed"].tolist() == [False, False, True, True]
    assert str(frame.attrs["summary"]).startswith("2 of 4 tool calls would be decided differently")


def test_a_guard_deny_comes_before_the_hooks(run: wb.RunResult, tmp_path: Path) -> None:
    log = tmp_path / "inputs.jsonl"
    hook = wb.CommandHook("PreToolUse", script("decide.py", "ask", "hook asks", record=log))

    def deny_bash(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return (
            (wb.ToolPermission.DENY, "no shell") if call.name == "Bash" else wb.ToolPermission.ALLOW
        )

    frame = wb.recheck(run, guards=[deny_bash], hooks=[hook])
    assert frame["decision_now"].tolist() == ["deny", "deny", "ask", "deny"]
    assert frame["reason"].tolist()[:3] == ["no shell", "no shell", "hook asks"]
    assert [s["tool_use_id"] for s in hook_inputs(log)] == ["c3"]  # denied calls never reach it


def test_the_same_policy_changes_nothing(run: wb.RunResult) -> None:
    frame = wb.recheck(run, guards=[no_dotfiles])
    assert not frame["changed"].any()
    assert str(frame.attrs["summary"]) == "4 tool calls rechecked: every decision is the same"


def test_a_broken_hook_is_reported_and_does_not_decide(run: wb.RunResult) -> None:
    hook = wb.CommandHook("PreToolUse", script("decide.py", "crash"), matcher="Write")
    frame = wb.recheck(run, hooks=[hook])
    assert frame["decision_now"].tolist() == ["allow"] * 4
    assert frame["hook_errors"][0] == ""
    assert "RuntimeError: the hook script crashed" in frame["hook_errors"][2]
    failed = frame.attrs["summary"].failed  # the summary said nothing of them
    assert len(failed) == (frame["hook_errors"] != "").sum() > 0
    assert failed[0].startswith("step 3 Write: ") and "the hook script crashed" in failed[0]
    said = str(frame.attrs["summary"])
    assert f"\na hook failed on {len(failed)} of them, decided without it (hook_errors):\n" in said


def test_a_hook_that_hangs_is_said_in_the_summary_too(run: wb.RunResult) -> None:
    frame = wb.recheck(run, hooks=[wb.CommandHook("PreToolUse", "sleep 30", timeout=0.5)])
    summary = frame.attrs["summary"]
    assert len(summary.failed) == 4 and "timed out after 0.5s" in summary.failed[0]
    assert "a hook failed on 4 of them" in str(summary)


def test_hooks_of_other_events_are_not_run(run: wb.RunResult, tmp_path: Path) -> None:
    log = tmp_path / "inputs.jsonl"
    hooks = [
        wb.CommandHook("PostToolUse", script("decide.py", "block", "no", record=log)),
        wb.CommandHook("Stop", script("decide.py", "block", "no", record=log)),
    ]
    frame = wb.recheck(run, hooks=hooks)
    assert frame["decision_now"].tolist() == ["allow"] * 4
    assert not log.exists()


def test_permission_request_hooks_answer_the_calls_that_would_wait(run: wb.RunResult) -> None:
    def ask_about_bash(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        if call.name == "Bash":
            return wb.ToolPermission.ASK, "shell commands need a look"
        return wb.ToolPermission.ALLOW

    assert wb.recheck(run, guards=[ask_about_bash])["decision_now"].tolist() == [
        "ask",
        "ask",
        "allow",
        "ask",
    ]
    answer = {
        "hookEventName": "PermissionRequest",
        "decision": {"behavior": "deny", "message": "no"},
    }
    refusing = wb.CommandHook(
        "PermissionRequest", f"echo {shlex.quote(json.dumps({'hookSpecificOutput': answer}))}"
    )
    frame = wb.recheck(run, guards=[ask_about_bash], hooks=[refusing])
    assert frame["decision_now"].tolist() == ["deny", "deny", "allow", "deny"]
    assert set(frame["reason"][frame["tool"] == "Bash"]) == {"no"}
    rm_hook = wb.Hook(
        "PermissionRequest",
        lambda data: (
            wb.HookResult(decision="deny", reason="no rm")
            if "rm " in str(data.tool_input)  # type: ignore[attr-defined]
            else wb.HookResult(decision="allow")
        ),
        matcher="Bash",
    )
    frame = wb.recheck(run, guards=[ask_about_bash], hooks=[rm_hook])
    assert frame["decision_now"].tolist() == ["allow", "allow", "allow", "deny"]
    assert frame["reason"].tolist()[3] == "no rm"
    assert EXECUTED == []


@dataclass
class Tree:
    """A run with sub-runs, as `RunResult.children` holds them."""

    result: wb.RunResult
    children: list[Any] = field(default_factory=list)

    @property
    def state(self) -> wb.AgentState:
        return self.result.state

    @property
    def steps(self) -> tuple[wb.StepRecord, ...]:
        return self.result.steps

    @property
    def snapshots(self) -> tuple[wb.StepContext, ...]:
        return self.result.snapshots


def test_sub_runs_are_rechecked_after_their_parent(run: wb.RunResult) -> None:
    child = agent().run_sync("Tidy the sub-project.")
    tree = Tree(run, [Tree(child)])
    hooks = [wb.CommandHook("PreToolUse", script("bash_validator.py"), matcher="Bash")]
    frame = wb.recheck(tree, hooks=hooks)
    assert frame["run_id"].tolist() == [run.run_id] * 4 + [child.run_id] * 4
    assert frame["decision_now"].tolist() == ["deny", "allow", "allow", "allow"] * 2
    assert frame.attrs["summary"].transitions == {"allow → deny": 2, "deny → allow": 2}


async def test_recheck_in_async_code(run: wb.RunResult) -> None:
    frame = await wb.arecheck(run, guards=[no_dotfiles])
    assert len(frame) == 4 and EXECUTED == []


def test_the_summary_is_inert_text(run: wb.RunResult) -> None:
    hook = wb.CommandHook(
        "PreToolUse", script("decide.py", "deny", "\x1b[31mred\nline"), matcher="Bash"
    )
    summary = str(wb.recheck(run, hooks=[hook]).attrs["summary"])
    assert "\x1b" not in summary and "\\x1b[31mred\\nline" in summary


def test_a_call_that_waited_for_approval_was_an_ask() -> None:
    EXECUTED.clear()
    paused = wb.Agent(
        model=wb.ScriptedModel([CALLS[3]]),
        tools=[wb.tool(Bash, requires_approval=True)],
        store=False,
    ).run_sync("Clean up.")
    assert paused.status is wb.ExecutionStatus.PAUSED
    hooks = [wb.CommandHook("PreToolUse", script("protect_files.py"))]
    frame = wb.recheck(paused, hooks=hooks)
    row = frame.iloc[0]
    assert (row["decision_then"], row["decision_now"], row["changed"]) == ("ask", "ask", False)
    assert row["reason_then"] == "tool requires approval"
    assert EXECUTED == []


def test_calls_of_tools_not_offered_are_not_changes_of_policy() -> None:
    def no_write_after_step_1(tool: wb.Tool, view: wb.RunView) -> bool | str:
        return tool.name != "Write" or view.steps_completed < 1 or "writes only in step 1"

    script = [
        R.tool_call("Bash", {"command": "ls"}, call_id="c1"),
        R.tool_call("Write", {"file_path": "a.txt", "content": "x"}, call_id="c2"),
        R.tool_call("Deploy", {}, call_id="c3"),  # never a tool of this agent
        "done",
    ]
    tools = wb.Toolset([Bash, Write]).filtered(no_write_after_step_1)
    run = wb.Agent(model=wb.ScriptedModel(script), tools=[tools], store=False).run_sync("go")
    EXECUTED.clear()
    frame = wb.recheck(run, guards=[no_dotfiles])
    rows = frame[["tool", "decision_then", "decision_now", "changed"]].values.tolist()
    assert rows == [
        ["Bash", "allow", "allow", False],
        ["Write", "not offered", "not offered", False],  # hidden by the filter, as recorded
        ["Deploy", "not offered", "not offered", False],
    ]
    assert frame["reason"][1] == "not offered in step 2: writes only in step 1"
    assert frame["reason"][2] == "not offered in step 3"
    assert str(frame.attrs["summary"]) == "3 tool calls rechecked: every decision is the same"


def test_the_summary_keeps_secrets_in_arguments_and_reasons_out() -> None:
    key = "sk-live0123456789abcdefghij"
    call = R.tool_call("Bash", {"command": f"curl -H 'Authorization: Bearer {key}' x"})
    run = wb.Agent(model=wb.ScriptedModel([call, "done"]), tools=[Bash], store=False).run_sync("go")
    EXECUTED.clear()

    def no_curl(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return wb.ToolPermission.DENY, f"no curl: {call.arguments['command']}"

    frame = wb.recheck(run, guards=[no_curl])
    summary = str(frame.attrs["summary"])
    assert "allow → deny" in summary and "Bearer [REDACTED]" in summary
    assert key not in summary and key not in repr(frame.attrs["summary"])
    assert key in frame["arguments"][0]["command"]  # the frame is the run's data, as recorded
