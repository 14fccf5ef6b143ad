"""Hooks: where each event fires, what hooks may change, and command hooks run as real scripts.

The scripts in tests/hooks are real executables (Python and bash) run as subprocesses, speaking
Claude Code's hook protocol; nothing here mocks the hook machinery.
"""

from __future__ import annotations

import asyncio
import gc
import json
import os
import select
import shlex
import sys
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.hooks.command import _Capture

R = wb.ModelResponse
E = wb.HookEvent
HOOKS = Path(__file__).parent / "hooks"
ADD_THEN_ANSWER = [R.tool_call("add", {"a": 1, "b": 2}, call_id="c1"), "1 + 2 = 3"]


@pytest.fixture(autouse=True)
def _scripts_use_this_python(monkeypatch: pytest.MonkeyPatch) -> None:
    """``#!/usr/bin/env python3`` in the scripts finds the test interpreter first (no shims)."""
    monkeypatch.setenv("PATH", f"{Path(sys.executable).parent}{os.pathsep}{os.environ['PATH']}")


def script(name: str, *args: str, record: Path | None = None) -> str:
    command = shlex.join([str(HOOKS / name), *args])
    return f"HOOK_RECORD={shlex.quote(str(record))} {command}" if record else command


def recorded(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def calculator(
    responses: list[R | str], hooks: list[wb.Hook | wb.CommandHook], **options: Any
) -> tuple[wb.Agent, list[dict[str, int]]]:
    """An agent with an `add` tool that records the arguments it really received."""
    received: list[dict[str, int]] = []

    @wb.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        received.append({"a": a, "b": b})
        return a + b

    @wb.tool(requires_approval=True)
    def delete_file(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    model = wb.ScriptedModel(responses)
    agent = wb.Agent(model, tools=[add, delete_file], hooks=hooks, store=False, **options)
    return agent, received


def tool_result(result: wb.RunResult, call_id: str = "c1") -> wb.ToolResult:
    for message in result.messages:
        for part in message.parts:
            if isinstance(part, wb.ToolResult) and part.call_id == call_id:
                return part
    raise AssertionError(f"no result for {call_id}")


def hook_errors(result: wb.RunResult) -> list[str]:
    return [error for step in result.steps for error in step.hook_errors]


def process_ended(pid: int, timeout: float = 10.0) -> bool:
    """True once ``pid`` has exited (waits on a pidfd, which is readable when it ends)."""
    try:
        fd = os.pidfd_open(pid)
    except ProcessLookupError:
        return True
    try:
        readable, _, _ = select.select([fd], [], [], timeout)
        return bool(readable)
    finally:
        os.close(fd)


# -- PreToolUse: allow, deny, ask, rewrite --------------------------------------------------------


def test_command_hook_allow_runs_the_tool_and_times_the_hook(tmp_path: Path) -> None:
    record = tmp_path / "inputs.jsonl"
    hook = wb.CommandHook(E.PRE_TOOL_USE, script("decide.py", "allow", record=record))
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = agent.run_sync("What is 1 + 2?")
    assert (result.status, result.output, received) == (
        wb.ExecutionStatus.COMPLETED,
        "1 + 2 = 3",
        [{"a": 1, "b": 2}],
    )
    assert tool_result(result).content == "3"
    step = result.steps[0]
    assert [(t.event, t.hook) for t in step.timing.per_hook] == [("PreToolUse", hook.name)]
    assert step.timing.hooks >= step.timing.per_hook[0].duration > 0
    assert step.hook_errors == () and result.steps[1].timing.per_hook == ()
    (sent,) = recorded(record)  # Claude Code's field names on stdin
    assert sent["session_id"] == result.run_id
    assert sent["hook_event_name"] == "PreToolUse"
    assert (sent["tool_name"], sent["tool_input"], sent["tool_use_id"]) == (
        "add",
        {"a": 1, "b": 2},
        "c1",
    )
    assert sent["cwd"] == os.getcwd() and sent["permission_mode"] == "default"
    assert sent["_transcript_lines"] == 2  # the prompt and the assistant's call, as JSONL
    assert not Path(sent["transcript_path"]).exists()  # removed when the execution ended


@pytest.mark.parametrize(
    ("command", "reason"),
    [
        (script("decide.py", "deny", "no adding today"), "no adding today"),
        (script("deny.sh"), "denied by deny.sh"),
    ],
)
async def test_deny_gives_the_model_the_reason(command: str, reason: str) -> None:
    agent, received = calculator(ADD_THEN_ANSWER, [wb.CommandHook(E.PRE_TOOL_USE, command)])
    result = await agent.run("What is 1 + 2?")
    assert received == []
    answer = tool_result(result)
    assert (answer.content, answer.is_error) == (f"Permission denied: {reason}", True)
    assert result.steps[0].tool_outcomes[0].status == "denied"
    assert result.status is wb.ExecutionStatus.COMPLETED


async def test_exit_2_blocks_and_the_model_sees_stderr() -> None:
    hook = wb.CommandHook(E.PRE_TOOL_USE, script("exit2.sh", "adding is off limits"))
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert received == []
    assert tool_result(result).content == "Permission denied: adding is off limits"
    assert hook_errors(result) == []


async def test_ask_pauses_for_approval_and_resume_runs_the_call_once(tmp_path: Path) -> None:
    record = tmp_path / "inputs.jsonl"
    hooks = [
        wb.CommandHook(E.PRE_TOOL_USE, script("decide.py", "ask", "big numbers", record=record)),
        wb.CommandHook(E.NOTIFICATION, script("decide.py", "none", record=record)),
    ]
    agent, received = calculator(ADD_THEN_ANSWER, hooks)
    paused = await agent.run("What is 1 + 2?")
    assert paused.status is wb.ExecutionStatus.PAUSED
    assert paused.pending == (
        wb.PendingCall(call_id="c1", tool="add", arguments={"a": 1, "b": 2}, reason="big numbers"),
    )
    assert received == []
    notification = recorded(record)[1]
    assert notification["hook_event_name"] == "Notification"
    assert notification["notification_type"] == "permission_prompt"
    assert "add (c1)" in notification["message"]
    state = wb.AgentState.from_json(paused.state.to_json())
    done = await agent.resume(state, approvals={"c1": True})
    assert (done.status, done.output, received) == (
        wb.ExecutionStatus.COMPLETED,
        "1 + 2 = 3",
        [{"a": 1, "b": 2}],
    )
    events = [r["hook_event_name"] for r in recorded(record)]
    assert events == ["PreToolUse", "Notification"]  # an approved call is not asked again


async def test_updated_input_replaces_the_arguments_the_tool_gets() -> None:
    hook = wb.CommandHook(E.PRE_TOOL_USE, script("decide.py", "rewrite", '{"a": 10, "b": 20}'))
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert received == [{"a": 10, "b": 20}]
    assert tool_result(result).content == "30"
    step = result.steps[0]
    assert step.tool_outcomes[0].arguments == {"a": 10, "b": 20}
    assert result.messages[1].tool_calls[0].arguments == {"a": 10, "b": 20}  # history shows it
    assert step.response is not None
    assert step.response.calls[0].arguments == {"a": 1, "b": 2}  # what the model said


async def test_ask_with_updated_input_runs_the_rewritten_call_after_resume() -> None:
    def ask_smaller(data: wb.PreToolUseInput) -> wb.HookResult:
        return wb.HookResult(decision="ask", reason="check", updated_input={"a": 5, "b": 5})

    agent, received = calculator(ADD_THEN_ANSWER, [wb.Hook(E.PRE_TOOL_USE, ask_smaller)])
    paused = await agent.run("What is 1 + 2?")
    assert paused.pending[0].arguments == {"a": 5, "b": 5}
    state = wb.AgentState.from_json(paused.state.to_json())
    done = await agent.resume(state, approvals={"c1": True})
    assert received == [{"a": 5, "b": 5}]
    assert tool_result(done).content == "10"


async def test_hook_allow_does_not_lift_a_required_approval() -> None:
    allow = wb.Hook(E.PRE_TOOL_USE, lambda data: wb.HookResult(decision="allow"))
    script_ = [R.tool_call("delete_file", {"path": "/tmp/x"}, call_id="d1"), "done"]
    agent, _ = calculator(script_, [allow])
    paused = await agent.run("delete /tmp/x")
    assert paused.status is wb.ExecutionStatus.PAUSED
    assert paused.pending[0].reason == "tool requires approval"


async def test_most_restrictive_decision_wins() -> None:
    def answer(decision: str, reason: str) -> wb.Hook:
        result = wb.HookResult(decision=decision, reason=reason)  # type: ignore[arg-type]
        return wb.Hook(E.PRE_TOOL_USE, lambda data: result, name=reason)

    agent, _ = calculator(ADD_THEN_ANSWER, [answer("allow", "a"), answer("ask", "b")])
    paused = await agent.run("What is 1 + 2?")
    assert paused.pending[0].reason == "b"
    hooks = [answer("ask", "b"), answer("deny", "c"), answer("allow", "a"), answer("deny", "d")]
    agent, received = calculator(ADD_THEN_ANSWER, hooks)
    result = await agent.run("What is 1 + 2?")
    assert tool_result(result).content == "Permission denied: c; d"
    assert received == []


async def test_hooks_of_one_event_run_concurrently() -> None:
    first, second = asyncio.Event(), asyncio.Event()

    async def wait_for_second(data: wb.HookInput) -> None:
        first.set()
        await second.wait()  # only returns if the other hook runs at the same time

    async def wait_for_first(data: wb.HookInput) -> None:
        second.set()
        await first.wait()

    hooks = [
        wb.Hook(E.PRE_TOOL_USE, wait_for_second, timeout=10),
        wb.Hook(E.PRE_TOOL_USE, wait_for_first, timeout=10),
    ]
    agent, received = calculator(ADD_THEN_ANSWER, hooks)
    result = await agent.run("What is 1 + 2?")
    assert hook_errors(result) == [] and received == [{"a": 1, "b": 2}]
    assert len(result.steps[0].timing.per_hook) == 2


async def test_matcher_selects_tools_by_full_regex_match() -> None:
    seen: list[str] = []

    def note(data: wb.PreToolUseInput) -> None:
        seen.append(data.tool_name)

    calls = R.tool_calls(
        [("add", {"a": 1, "b": 1}), ("delete_file", {"path": "/x"})], call_ids=["c1", "d1"]
    )
    hooks = [
        wb.Hook(E.PRE_TOOL_USE, note, matcher="add|multiply"),
        wb.Hook(E.PRE_TOOL_USE, note, matcher="ad"),  # full match only: never fires
    ]
    agent, _ = calculator([calls, "done"], hooks)
    await agent.run("go")
    assert seen == ["add"]
    with pytest.raises(ValueError, match="not a valid regex"):
        wb.Hook(E.PRE_TOOL_USE, note, matcher="(")
    with pytest.raises(ValueError, match="unknown hook event 'PreTool'"):
        wb.CommandHook("PreTool", "true")  # type: ignore[arg-type]


async def test_hooks_get_copies_they_cannot_use_to_change_the_run() -> None:
    def meddle(data: wb.PreToolUseInput) -> None:
        data.tool_input["a"] = 999
        data.tool_name = "delete_file"  # frozen: raises, and the error is recorded

    agent, received = calculator(ADD_THEN_ANSWER, [wb.Hook(E.PRE_TOOL_USE, meddle)])
    result = await agent.run("What is 1 + 2?")
    assert received == [{"a": 1, "b": 2}]
    (error,) = hook_errors(result)
    assert error.startswith("PreToolUse hook 'meddle': failed: ValidationError")


# -- PostToolUse, PostToolUseFailure, UserPromptSubmit, SessionStart -------------------------------


async def test_post_tool_use_adds_context_to_the_result() -> None:
    hook = wb.CommandHook(E.POST_TOOL_USE, script("decide.py", "context", "verified by a linter"))
    agent, _ = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert tool_result(result).content == "3\n\nverified by a linter"
    assert result.steps[0].tool_outcomes[0].content == "3\n\nverified by a linter"


async def test_post_tool_use_failure_sees_the_error_and_may_add_context() -> None:
    seen: list[str] = []

    def explain(data: wb.PostToolUseFailureInput) -> wb.HookResult:
        seen.append(data.error)
        return wb.HookResult(additional_context="hint: b must be an integer")

    bad = [R.tool_call("add", {"a": 1, "b": "two"}, call_id="c1"), "sorry"]
    agent, _ = calculator(bad, [wb.Hook(E.POST_TOOL_USE_FAILURE, explain)])
    result = await agent.run("What is 1 + two?")
    assert len(seen) == 1 and "Invalid arguments for tool 'add'" in seen[0]
    retry = result.messages[2].parts[0]
    assert isinstance(retry, wb.RetryPrompt)
    assert retry.content.endswith("\n\nhint: b must be an integer")


async def test_user_prompt_submit_plain_stdout_is_context_for_the_model() -> None:
    hooks = [
        wb.CommandHook(E.USER_PROMPT_SUBMIT, script("decide.py", "plain", "Today is Tuesday.")),
        wb.CommandHook(E.SESSION_START, script("decide.py", "context", "You are in tests.")),
    ]
    agent, _ = calculator(["It is Tuesday."], hooks)
    result = await agent.run("What day is it?")
    sent = result.steps[0].messages_in
    assert [(m.role, m.text) for m in sent] == [
        ("user", "What day is it?"),
        ("user", "You are in tests.\n\nToday is Tuesday."),
    ]


async def test_user_prompt_submit_block_ends_the_run_before_any_model_call() -> None:
    hook = wb.CommandHook(E.USER_PROMPT_SUBMIT, script("exit2.sh", "no secrets in prompts"))
    agent, _ = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("my password is hunter2")
    assert (result.status, result.stop_reason) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.HOOK_STOP,
    )
    assert isinstance(agent.model, wb.ScriptedModel) and agent.model.calls == []
    (record,) = result.steps
    assert record.index == 0 and record.response is None
    assert record.hook_messages == (
        "UserPromptSubmit hook refused the prompt: no secrets in prompts",
    )


# -- Stop, continue: false ------------------------------------------------------------------------


async def test_stop_hook_forces_one_more_turn(tmp_path: Path) -> None:
    record = tmp_path / "stops.jsonl"
    hooks = [
        wb.CommandHook(E.STOP, script("decide.py", "none", record=record)),
        wb.Hook(E.STOP, _block_first_stop(), name="reviewer"),
    ]
    agent, _ = calculator(["3", "1 + 2 = 3, checked"], hooks)
    result = await agent.run("What is 1 + 2?")
    assert (result.status, result.stop_reason, result.output) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.COMPLETED,
        "1 + 2 = 3, checked",
    )
    assert [(m.role, m.text) for m in result.messages] == [
        ("user", "What is 1 + 2?"),
        ("assistant", "3"),
        ("user", "Check your work."),
        ("assistant", "1 + 2 = 3, checked"),
    ]
    assert [r["stop_hook_active"] for r in recorded(record)] == [False, True]


def _block_first_stop() -> wb.hooks.HookFunction:
    def review(data: wb.StopInput) -> wb.HookResult | None:
        if data.stop_hook_active:
            return None
        return wb.HookResult(decision="block", reason="Check your work.")

    return review


async def test_stop_hook_turns_are_bounded() -> None:
    hook = wb.CommandHook(E.STOP, script("decide.py", "block", "Keep going."))
    model = wb.FunctionModel(lambda messages, request: f"answer {len(messages)}")
    agent = wb.Agent(model, hooks=[hook], max_hook_turns=2, store=False)
    result = await agent.run("Go.")
    assert (result.status, result.stop_reason) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.COMPLETED,
    )
    assert len(result.steps) == 3 and len(model.calls) == 3
    assert [m.text for m in result.messages if m.role == "user"] == [
        "Go.",
        "Keep going.",
        "Keep going.",
    ]
    assert hook_errors(result) == [
        "a Stop hook asked for another turn after 2 forced turns; the run ends"
    ]


async def test_stop_hook_bound_holds_across_a_pause() -> None:
    @wb.tool(requires_approval=True)
    def publish() -> str:
        """Publish."""
        return "published"

    def respond(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        if len(messages) == 3:  # after "Keep going." once: ask for something that pauses
            return wb.ModelResponse.tool_call("publish", {}, call_id="p1")
        return wb.ModelResponse.text(f"answer {len(messages)}")

    hook = wb.Hook(E.STOP, lambda data: wb.HookResult(decision="block", reason="Keep going."))
    agent = wb.Agent(
        wb.FunctionModel(respond), tools=[publish], hooks=[hook], max_hook_turns=2, store=False
    )
    paused = await agent.run("Go.")
    assert paused.status is wb.ExecutionStatus.PAUSED and paused.state.hook_turns == 1
    restored = wb.AgentState.from_json(paused.state.to_json())
    done = await agent.resume(restored, approvals={"p1": True})
    assert done.state.hook_turns == 2  # one more forced turn after the resume, not two
    assert [m.text for m in done.messages if m.role == "user"] == [
        "Go.",
        "Keep going.",
        "Keep going.",
    ]


@pytest.mark.parametrize("event", [E.PRE_TOOL_USE, E.POST_TOOL_USE, E.SESSION_START])
async def test_continue_false_ends_the_run_with_hook_stop(event: wb.HookEvent) -> None:
    hook = wb.CommandHook(event, script("decide.py", "stop", "budget review"))
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert (result.status, result.stop_reason) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.HOOK_STOP,
    )
    assert received == ([{"a": 1, "b": 2}] if event is E.POST_TOOL_USE else [])
    notes = [note for step in result.steps for note in step.hook_messages]
    assert notes == ["a hook stopped the run: budget review"]
    assert isinstance(agent.model, wb.ScriptedModel)
    assert len(agent.model.calls) == (0 if event is E.SESSION_START else 1)


async def test_continue_false_instead_of_a_pause_ends_the_run() -> None:
    hooks = [
        wb.CommandHook(E.NOTIFICATION, script("decide.py", "stop", "nobody is around")),
    ]
    script_ = [R.tool_call("delete_file", {"path": "/tmp/x"}, call_id="d1"), "done"]
    agent, _ = calculator(script_, hooks)
    result = await agent.run("delete /tmp/x")
    assert (result.status, result.stop_reason, result.pending) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.HOOK_STOP,
        (),
    )


# -- hooks never break a run ----------------------------------------------------------------------


async def test_timeout_kills_the_hook_and_its_children(tmp_path: Path) -> None:
    pids = tmp_path / "pids"
    hook = wb.CommandHook(E.PRE_TOOL_USE, script("sleep_tree.sh", str(pids)), timeout=0.5)
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert received == [{"a": 1, "b": 2}]  # the run went on, as Claude Code would
    (error,) = hook_errors(result)
    assert error == (
        f"PreToolUse hook {hook.name!r}: timed out after 0.5s; its process group was killed"
    )
    shell, child = (int(pid) for pid in pids.read_text().split())
    assert process_ended(shell) and process_ended(child)


@pytest.mark.parametrize(
    ("command", "error"),
    [
        (script("garbage.sh"), "stdout is not JSON: '{this is not json'"),
        (script("flood.sh"), "printed more than 1,048,576 bytes on stdout; killed"),
        (str(HOOKS / "no-such-hook.sh"), "exit 127: "),
        (script("not_executable.sh"), "exit 126: "),
        (script("decide.py", "crash"), "exit 1: Traceback"),
        ("echo '{\"decision\": 42}'", "stdout is not a hook answer (decision: "),
    ],
)
async def test_broken_hooks_are_recorded_and_the_run_goes_on(command: str, error: str) -> None:
    hook = wb.CommandHook(E.PRE_TOOL_USE, command)
    agent, received = calculator(ADD_THEN_ANSWER, [hook])
    result = await agent.run("What is 1 + 2?")
    assert (result.status, result.output, received) == (
        wb.ExecutionStatus.COMPLETED,
        "1 + 2 = 3",
        [{"a": 1, "b": 2}],
    )
    (recorded_error,) = result.steps[0].hook_errors
    assert recorded_error.startswith(f"PreToolUse hook {hook.name!r}: {error}")


async def test_output_past_the_limit_is_read_to_its_end_after_the_kill() -> None:
    # Left unread, a full pipe pauses its transport, which then never sees the end of the pipe and
    # stays open after the hook is gone: it warns (and fails whichever test is running) whenever
    # it is collected. So the rest is read and dropped.
    stream = asyncio.StreamReader()
    stream.feed_data(b"x" * 300_000)
    stream.feed_eof()
    kills: list[bool] = []
    capture = _Capture(limit=100_000)
    await capture.drain(stream, lambda: kills.append(True))
    assert (capture.overflow, len(capture.data), kills) == (True, 65_536, [True])
    assert stream.at_eof()


async def test_in_process_hook_errors_and_rights_are_recorded() -> None:
    def crash(data: wb.HookInput) -> None:
        raise RuntimeError("boom")

    def overreach(data: wb.HookInput) -> wb.HookResult:
        return wb.HookResult(decision="deny", updated_input={"a": 0}, additional_context="x")

    hooks = [
        wb.Hook(E.PRE_TOOL_USE, crash),
        wb.Hook(E.SESSION_END, overreach),
        wb.Hook(E.POST_TOOL_USE, lambda data: "not a result", name="wrong_type"),
    ]
    agent, received = calculator(ADD_THEN_ANSWER, hooks)
    result = await agent.run("What is 1 + 2?")
    assert received == [{"a": 1, "b": 2}] and result.output == "1 + 2 = 3"
    assert hook_errors(result) == [
        "PreToolUse hook 'crash': failed: RuntimeError: boom",
        "PostToolUse hook 'wrong_type': returned 'not a result', not a HookResult or None",
        "SessionEnd hook 'overreach': SessionEnd hooks cannot decide 'deny'; ignored; "
        "SessionEnd hooks cannot rewrite tool input; ignored; "
        "SessionEnd hooks cannot add context; ignored",
    ]


async def test_observers_get_every_hook_invocation() -> None:
    calls: list[tuple[int, str, str, str | None]] = []

    class Watcher(wb.RunObserver):
        def hook_called(
            self, step: int, timing: wb.HookTiming, started_at: float, error: str | None
        ) -> None:
            calls.append((step, timing.event, timing.hook, error))

    hooks = [
        wb.Hook(E.SESSION_START, lambda data: None, name="hello"),
        wb.CommandHook(E.PRE_TOOL_USE, script("garbage.sh")),
    ]
    agent, _ = calculator(ADD_THEN_ANSWER, hooks, observers=[Watcher()])
    await agent.run("What is 1 + 2?")
    assert [(s, e, h) for s, e, h, _ in calls] == [
        (0, "SessionStart", "hello"),
        (1, "PreToolUse", hooks[1].name),
    ]
    assert calls[0][3] is None and "not JSON" in (calls[1][3] or "")


# -- settings files and Claude Code scripts -------------------------------------------------------


def write_settings(path: Path, hooks: dict[str, Any]) -> Path:
    path.write_text(json.dumps({"permissions": {"allow": []}, "hooks": hooks}))
    return path


async def test_hooks_from_settings_runs_claude_code_scripts(tmp_path: Path) -> None:
    settings = write_settings(
        tmp_path / "settings.json",
        {
            "PreToolUse": [
                {
                    "matcher": "Bash",
                    "hooks": [{"type": "command", "command": script("bash_validator.py")}],
                },
                {"matcher": "add", "hooks": [{"type": "command", "command": "true", "timeout": 5}]},
            ],
            "Stop": [{"hooks": [{"type": "command", "command": script("decide.py")}]}],
        },
    )
    hooks = wb.hooks_from_settings(settings)
    assert [(h.event, h.matcher, h.timeout) for h in hooks] == [
        (E.PRE_TOOL_USE, "Bash", 60.0),
        (E.PRE_TOOL_USE, "add", 5.0),
        (E.STOP, None, 60.0),
    ]
    ran: list[str] = []

    @wb.tool(name="Bash")
    def bash(command: str) -> str:
        """Run a shell command."""
        ran.append(command)
        return "ok"

    calls = R.tool_calls(
        [("Bash", {"command": "grep -r foo ."}), ("Bash", {"command": "ls"})],
        call_ids=["b1", "b2"],
    )
    agent = wb.Agent(wb.ScriptedModel([calls, "done"]), tools=[bash], hooks=hooks, store=False)
    result = await agent.run("find foo")
    assert ran == ["ls"]
    assert tool_result(result, "b1").content == (
        "Permission denied: • Use 'rg' (ripgrep) instead of 'grep' for better performance"
    )
    assert hook_errors(result) == []


def test_hooks_from_settings_refuses_what_it_cannot_run(tmp_path: Path) -> None:
    unknown = write_settings(
        tmp_path / "a.json",
        {"NoSuchEvent": [{"hooks": [{"type": "command", "command": "true"}]}]},
    )
    with pytest.raises(ValueError, match="unknown hook event 'NoSuchEvent'"):
        wb.hooks_from_settings(unknown)
    prompt = write_settings(
        tmp_path / "b.json", {"Stop": [{"hooks": [{"type": "prompt", "prompt": "ok?"}]}]}
    )
    with pytest.raises(ValueError, match="Stop hook of type 'prompt' is not supported"):
        wb.hooks_from_settings(prompt)
    assert wb.hooks_from_settings(unknown, strict=False) == []
    assert wb.hooks_from_settings(prompt, strict=False) == []
    broken = tmp_path / "c.json"
    broken.write_text('{"hooks": {"Stop": "not a list"}}')
    with pytest.raises(ValueError, match="not a hooks settings file"):
        wb.hooks_from_settings(broken)
    assert wb.hooks_from_settings(write_settings(tmp_path / "d.json", {})) == []


def test_a_settings_file_with_a_bad_hook_names_the_file_and_the_hook(tmp_path: Path) -> None:
    """Bytes that are not UTF-8 raised a bare UnicodeDecodeError; a bad matcher or timeout named
    neither the file nor the hook; a command hook without a command was 'of type 'command' is
    not supported (only "command" hooks ...)'."""
    garbled = tmp_path / "garbled.json"
    garbled.write_bytes(b'{"hooks": {"\xff": []}}')
    with pytest.raises(ValueError, match=r"garbled.json: not a hooks settings file \(<root>: Inv"):
        wb.hooks_from_settings(garbled)
    token = "Bearer sk-abcdefghijklmnopqrstuvwxyz123456"
    for spec, said in [
        (
            {"matcher": "(", "hooks": [{"type": "command", "command": f"curl -H '{token}'"}]},
            "regex",
        ),
        ({"hooks": [{"type": "command", "command": "true", "timeout": -1}]}, "must be positive"),
        ({"hooks": [{"type": "command"}]}, "a PreToolUse command hook without a command"),
    ]:
        path = write_settings(tmp_path / "s.json", {"PreToolUse": [spec]})
        with pytest.raises(ValueError, match=f"s.json: .*{said}") as raised:
            wb.hooks_from_settings(path)
        assert "sk-abcdefghij" not in str(raised.value)


# -- where each event fires -----------------------------------------------------------------------


class PhaseLog(wb.RunObserver):
    def __init__(self, log: list[str]) -> None:
        self.log = log

    def phase_ended(self, event: wb.PhaseEvent, started_at: float) -> None:
        self.log.append(f"{event.step}:{event.phase.value}")


def every_event(log: list[str]) -> list[wb.Hook]:
    def note(data: wb.HookInput) -> None:
        detail = f" {data.match_value}" if data.match_value else ""
        log.append(f"{data.step}:{data.hook_event_name}{detail}")

    return [wb.Hook(event, note) for event in wb.HookEvent]


async def test_golden_where_each_event_fires_in_a_two_step_run() -> None:
    log: list[str] = []
    agent, _ = calculator(
        ADD_THEN_ANSWER,
        every_event(log),
        observers=[PhaseLog(log)],
        history_processors=[wb.KeepLast(2)],  # drops the prompt in step 2: PreCompact
    )
    result = await agent.run("What is 1 + 2?")
    assert log == [
        "0:SessionStart startup",
        "0:UserPromptSubmit",
        "1:prepare",
        "1:inference",
        "1:PreToolUse add",
        "1:PostToolUse add",
        "1:tools",
        "1:continuation",
        "2:PreCompact auto",
        "2:prepare",
        "2:inference",
        "2:tools",
        "2:Stop",
        "2:continuation",
        "2:SessionEnd",
    ]
    assert [[t.event for t in s.timing.per_hook] for s in result.steps] == [
        ["SessionStart", "UserPromptSubmit", "PreToolUse", "PostToolUse"],
        ["PreCompact", "Stop", "SessionEnd"],
    ]


async def test_golden_events_around_a_pause_and_resume() -> None:
    log: list[str] = []
    script_ = [R.tool_call("delete_file", {"path": "/tmp/x"}, call_id="d1"), "deleted"]
    agent, _ = calculator(script_, every_event(log), observers=[PhaseLog(log)])
    paused = await agent.run("delete /tmp/x")
    log.append("-- resume --")
    await agent.resume(paused.state, approvals={"d1": True})
    assert log == [
        "0:SessionStart startup",
        "0:UserPromptSubmit",
        "1:prepare",
        "1:inference",
        "1:PreToolUse delete_file",
        "1:PermissionRequest delete_file",  # no answer: the run pauses for the user
        "1:Notification permission_prompt",
        "1:tools",
        "1:SessionEnd",
        "-- resume --",
        "1:SessionStart resume",
        "1:PostToolUse delete_file",
        "1:tools",
        "1:continuation",
        "2:prepare",
        "2:inference",
        "2:tools",
        "2:Stop",
        "2:continuation",
        "2:SessionEnd",
    ]


# -- subagents ------------------------------------------------------------------------------------


class Starts(wb.RunObserver):
    def __init__(self) -> None:
        self.states: list[wb.AgentState] = []

    def run_started(self, state: wb.AgentState) -> None:
        self.states.append(state)


async def test_subagent_runs_with_its_parent_and_fires_subagent_events() -> None:
    child_runs = Starts()
    researcher = wb.Agent(
        wb.ScriptedModel(["Paris"]), name="researcher", observers=[child_runs], store=False
    )
    parent_model = wb.ScriptedModel(
        [R.tool_call("researcher", {"task": "Capital of France?"}, call_id="s1"), "It is Paris."]
    )
    log: list[str] = []
    seen: list[wb.HookInput] = []

    def keep(data: wb.HookInput) -> None:
        seen.append(data)

    hooks = [*every_event(log), wb.Hook(E.SUBAGENT_START, keep), wb.Hook(E.SUBAGENT_STOP, keep)]
    parent = wb.Agent(parent_model, tools=[researcher.as_tool()], hooks=hooks, store=False)
    result = await parent.run("What is the capital of France?")
    assert result.output == "It is Paris." and tool_result(result, "s1").content == "Paris"
    assert log[2:6] == [
        "1:PreToolUse researcher",
        "1:SubagentStart researcher",
        "1:SubagentStop researcher",
        "1:PostToolUse researcher",
    ]
    (child,) = child_runs.states
    assert child.parent_run_id == result.run_id
    assert [m.text for m in child.messages] == ["Capital of France?"]
    start, stop = seen
    assert isinstance(start, wb.SubagentStartInput) and isinstance(stop, wb.SubagentStopInput)
    assert start.agent_id == stop.agent_id == child.run_id
    assert start.session_id == result.run_id and stop.stop_hook_active is False


async def test_subagent_stop_hook_can_ask_for_one_more_turn() -> None:
    researcher = wb.Agent(wb.ScriptedModel(["Lyon", "Paris"]), name="researcher", store=False)
    parent_model = wb.ScriptedModel(
        [R.tool_call("researcher", {"task": "Capital of France?"}, call_id="s1"), "Paris."]
    )

    def double_check(data: wb.SubagentStopInput) -> wb.HookResult | None:
        if data.stop_hook_active:
            return None
        return wb.HookResult(decision="block", reason="Are you sure?")

    parent = wb.Agent(
        parent_model,
        tools=[researcher.as_tool("researcher", "Looks things up.")],
        hooks=[wb.Hook(E.SUBAGENT_STOP, double_check)],
        store=False,
    )
    result = await parent.run("What is the capital of France?")
    assert tool_result(result, "s1").content == "Paris"
    assert parent.tools["researcher"].description == "Looks things up."


async def test_a_finished_run_leaves_no_reference_cycles() -> None:
    """A run's states, records and snapshots are freed when its result is dropped, at once,
    without waiting for the cyclic garbage collector (hooks and a subagent included)."""
    researcher = wb.Agent(wb.ScriptedModel(["Paris"]), name="researcher", store=False)
    seen: list[str] = []

    def keep(data: wb.HookInput) -> None:
        seen.append(data.hook_event_name)

    events = (E.SESSION_START, E.PRE_TOOL_USE, E.POST_TOOL_USE, E.SUBAGENT_STOP, E.STOP)
    parent = wb.Agent(
        wb.ScriptedModel([R.tool_call("researcher", {"task": "Capital?"}), "Paris."]),
        tools=[researcher.as_tool()],
        hooks=[wb.Hook(event, keep) for event in events],
        store=False,
    )
    await parent.run("warm up")  # first-use caches (schemas, compiled patterns) are not garbage
    gc.collect()
    gc.disable()
    try:
        parent.model = wb.ScriptedModel([R.tool_call("researcher", {"task": "Capital?"}), "Paris."])
        researcher.model = wb.ScriptedModel(["Paris"])
        result = await parent.run("What is the capital of France?")
        assert result.output == "Paris." and "SubagentStop" in seen
        del result
        gc.set_debug(gc.DEBUG_SAVEALL)
        found = gc.collect()
        kinds = sorted({type(o).__name__ for o in gc.garbage})
    finally:
        gc.set_debug(0)
        gc.garbage.clear()
        gc.enable()
    assert found == 0, f"cyclic garbage left by the run: {kinds}"
