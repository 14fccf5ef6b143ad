"""PermissionRequest and PermissionDenied hooks: Claude Code scripts that answer approvals.

The scripts in tests/hooks run as real subprocesses, unchanged from the protocol's shape: a
PermissionRequest hook approves, refuses (perhaps stopping the run) or rewrites a call that needs
approval, or stays silent so the run pauses as before; a PermissionDenied hook sees each refusal
by a guard or hook and may let the model retry.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import pytest

import workbench as wb

R = wb.ModelResponse
E = wb.HookEvent
HOOKS = Path(__file__).parent / "hooks"
REQUEST = f"{shlex.quote(sys.executable)} {HOOKS / 'permission_request.py'}"
DENIED = f"{shlex.quote(sys.executable)} {HOOKS / 'permission_denied.py'}"
ran: list[tuple[str, dict[str, Any]]] = []


@wb.tool(requires_approval=True)
def add(a: int, b: int) -> int:
    """Add two integers."""
    ran.append(("add", {"a": a, "b": b}))
    return a + b


@wb.tool(requires_approval=True)
def delete_file(path: str, everything: bool = False) -> str:
    """Delete a file."""
    ran.append(("delete_file", {"path": path}))
    return "deleted"


@wb.tool(requires_approval=True)
def write_file(path: str, text: str) -> str:
    """Write a file."""
    ran.append(("write_file", {"path": path, "text": text}))
    return f"wrote {path}"


@wb.tool(requires_approval=True)
def send_mail(to: str) -> str:
    """Send a mail."""
    ran.append(("send_mail", {"to": to}))
    return "sent"


@pytest.fixture(autouse=True)
def _fresh() -> None:
    ran.clear()


def agent(responses: list[R | str], hooks: list[Any], **kwargs: Any) -> wb.Agent:
    tools = [add, delete_file, write_file, send_mail]
    return wb.Agent(wb.ScriptedModel(responses), tools=tools, hooks=hooks, store=False, **kwargs)


def tool_texts(result: wb.RunResult) -> list[str]:
    return [p.content for m in result.messages for p in m.parts if isinstance(p, wb.ToolResult)]


def request_hook() -> wb.CommandHook:
    return wb.CommandHook(E.PERMISSION_REQUEST, REQUEST)


def test_a_permission_request_hook_approves_in_the_users_place() -> None:
    result = agent([R.tool_call("add", {"a": 1, "b": 2}), "3"], [request_hook()]).run_sync("x")
    assert result.status is wb.ExecutionStatus.COMPLETED  # no pause for approval
    assert ran == [("add", {"a": 1, "b": 2})]
    assert tool_texts(result) == ["3"]
    assert [t.event for t in result.steps[0].timing.per_hook] == ["PermissionRequest"]


def test_a_permission_request_hook_refuses_and_says_which_hook_and_why() -> None:
    calls = [R.tool_call("delete_file", {"path": "notes.txt"}), "I could not delete it."]
    result = agent(calls, [request_hook()]).run_sync("x")
    assert ran == []
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert tool_texts(result) == ["Permission denied: delete_file is destructive"]
    assert result.steps[0].tool_outcomes[0].status == "denied"


def test_a_refusal_with_interrupt_stops_the_run() -> None:
    calls = [R.tool_call("delete_file", {"path": "/", "everything": True}), "never"]
    result = agent(calls, [request_hook()]).run_sync("x")
    assert ran == []
    assert result.stop_reason is wb.StopReason.HOOK_STOP
    assert len(result.steps) == 1


def test_an_approval_may_rewrite_the_arguments() -> None:
    calls = [R.tool_call("write_file", {"path": "/etc/passwd", "text": "hi"}), "done"]
    result = agent(calls, [request_hook()]).run_sync("x")
    assert ran == [("write_file", {"path": "sandbox/passwd", "text": "hi"})]
    assert tool_texts(result) == ["wrote sandbox/passwd"]
    assert result.steps[0].tool_outcomes[0].arguments == {"path": "sandbox/passwd", "text": "hi"}


def test_no_answer_pauses_for_the_user_as_before_and_resumes() -> None:
    run_agent = agent([R.tool_call("send_mail", {"to": "a@b.c"}), "sent it"], [request_hook()])
    paused = run_agent.run_sync("x")
    assert paused.status is wb.ExecutionStatus.PAUSED and ran == []
    assert [p.reason for p in paused.state.pending] == ["tool requires approval"]
    done = run_agent.resume_sync(paused.state, approvals={paused.state.pending[0].call_id: True})
    assert done.status is wb.ExecutionStatus.COMPLETED
    assert ran == [("send_mail", {"to": "a@b.c"})]


def test_an_answer_that_is_not_allow_or_deny_is_a_hook_error_and_the_user_is_asked() -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": {}}}
    garbage = wb.CommandHook(E.PERMISSION_REQUEST, f"echo {shlex.quote(json.dumps(answer))}")
    result = agent([R.tool_call("add", {"a": 1, "b": 2})], [garbage]).run_sync("x")
    assert result.status is wb.ExecutionStatus.PAUSED and ran == []
    (error,) = result.steps[0].hook_errors
    assert "PermissionRequest hook" in error and "decision.behavior" in error


def test_a_guards_ask_goes_to_the_hook_with_the_guards_reason() -> None:
    def careful(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return wb.ToolPermission.ASK, "sums need a second look"

    seen: list[wb.HookInput] = []

    def record(data: wb.HookInput) -> wb.HookResult:
        seen.append(data)
        return wb.HookResult(decision="allow")

    hook = wb.Hook(E.PERMISSION_REQUEST, record, matcher="add")
    calls = [R.tool_call("add", {"a": 2, "b": 2}), "4"]
    result = agent(calls, [hook], guards=[careful]).run_sync("x")
    assert result.status is wb.ExecutionStatus.COMPLETED and ran == [("add", {"a": 2, "b": 2})]
    (data,) = seen
    assert isinstance(data, wb.PermissionRequestInput)
    assert (data.tool_name, data.tool_input, data.reason) == (
        "add",
        {"a": 2, "b": 2},
        "sums need a second look",
    )


def test_permission_denied_sees_each_refusal_and_may_let_the_model_retry(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    record = tmp_path / "denied.jsonl"

    def no_mail(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        if call.name == "send_mail":
            return wb.ToolPermission.DENY, "no mail today"
        return wb.ToolPermission.ALLOW

    hooks = [
        request_hook(),
        wb.CommandHook(E.PERMISSION_DENIED, f"{DENIED} retry", matcher="send_mail"),
        wb.CommandHook(E.PERMISSION_DENIED, DENIED, matcher="delete_file"),
    ]
    calls = [
        R.tool_calls([("send_mail", {"to": "a@b.c"}), ("delete_file", {"path": "x"})]),
        "gave up",
    ]
    monkeypatch.setenv("HOOK_RECORD", str(record))  # the hooks' subprocesses inherit it
    result = agent(calls, hooks, guards=[no_mail]).run_sync("x")
    assert ran == []
    mail, delete = tool_texts(result)
    assert mail == (
        "Permission denied: no mail today\n\nA PermissionDenied hook says you may retry this call."
    )
    assert delete == "Permission denied: delete_file is destructive"  # no retry offered
    seen = [json.loads(line) for line in record.read_text().splitlines()]
    assert sorted((s["tool_name"], s["reason"]) for s in seen) == [
        ("delete_file", "delete_file is destructive"),
        ("send_mail", "no mail today"),
    ]
    assert {s["hook_event_name"] for s in seen} == {"PermissionDenied"}
    assert result.steps[0].hook_errors == ()


def test_the_users_own_refusal_is_not_reported_to_permission_denied() -> None:
    seen: list[wb.HookInput] = []
    hook = wb.Hook(E.PERMISSION_DENIED, seen.append)
    run_agent = agent([R.tool_call("send_mail", {"to": "a@b.c"}), "ok"], [hook])
    paused = run_agent.run_sync("x")
    done = run_agent.resume_sync(paused.state, approvals={paused.state.pending[0].call_id: "no"})
    assert done.status is wb.ExecutionStatus.COMPLETED
    assert seen == [] and ran == []


def test_retry_from_another_event_is_a_hook_error() -> None:
    answer = {"hookSpecificOutput": {"hookEventName": "PreToolUse", "retry": True}}
    hook = wb.CommandHook(E.PRE_TOOL_USE, f"echo {shlex.quote(json.dumps(answer))}")
    result = agent([R.tool_call("add", {"a": 1, "b": 2})], [hook]).run_sync("x")
    (error,) = result.steps[0].hook_errors
    assert "PreToolUse hooks cannot ask for a retry; ignored" in error
