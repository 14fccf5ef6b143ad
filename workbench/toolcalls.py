"""Tool calls: from what the model asked for to what it reads back.

`ToolRunner.run` takes the unanswered calls of a step through the same pipeline each: refuse what
cannot run (unknown tool, not offered, broken JSON) → guards → PreToolUse hooks → approval or
deferral → validate and execute → PostToolUse hooks. Each call ends as a `CallResult`: the
`ToolOutcome` for the record, the part the model reads, or the `PendingCall` that pauses the run.
`resume_state` is the other half of a pause: it applies the outside world's answers.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from workbench.guards import ALLOWED, ToolPermission, check_guards
from workbench.hooks.runner import parent_hooks
from workbench.messages import JsonValue, Message, RetryPrompt, ToolCall, ToolResult, unvalidated
from workbench.records import Observers, ToolOutcome
from workbench.state import AgentState, ExecutionStatus, PendingCall, Phase, new_id
from workbench.tools import (
    ArgumentError,
    RunFatalError,
    Tool,
    ToolContext,
    ToolRetry,
    ToolTimeout,
    result_text,
)

if TYPE_CHECKING:
    from workbench.engine import LoopConfig
    from workbench.hooks.loop import LoopHooks

__all__ = ["CallResult", "ToolRunner", "resume_state"]

_DENY, _ASK = ToolPermission.DENY, ToolPermission.ASK
"""Compared for every tool call, so read once (on Python 3.11 ``ToolPermission.X`` costs ~140 ns:
see `workbench.engine`)."""


@dataclass
class CallResult:
    """How one tool call ended in the TOOLS phase."""

    outcome: ToolOutcome
    part: ToolResult | RetryPrompt | None
    pending: PendingCall | None = None
    counts_as_error: bool = False
    retry_of: str | None = None
    rewritten: bool = False
    """A PreToolUse hook changed the arguments; the history is updated to show them."""


class ToolRunner:
    """Runs the tool calls of one step for an `Execution`."""

    def __init__(
        self,
        config: LoopConfig,
        hooks: LoopHooks,
        observers: Observers,
    ) -> None:
        self._config = config
        self._hooks = hooks
        self._observers = observers
        self._offered: tuple[str, ...] = ()
        self._approved: tuple[str, ...] = ()

    async def run(
        self,
        calls: tuple[ToolCall, ...],
        ctx: ToolContext,
        offered: tuple[str, ...],
        approved: tuple[str, ...],
    ) -> list[CallResult]:
        """Decide and run ``calls``: concurrently, except sequential tools, which run after.

        The results come in the order of the calls; their time counts in the TOOLS phase's.
        """
        self._offered, self._approved = offered, approved
        scope = parent_hooks.set(self._hooks.for_subagents())
        try:
            concurrent = [c for c in calls if not self._sequential(c)]
            results: dict[str, CallResult] = {}
            if len(concurrent) == 1:
                results[concurrent[0].call_id] = await self._run_call(concurrent[0], ctx)
            elif concurrent:
                done = await asyncio.gather(*(self._run_call(c, ctx) for c in concurrent))
                results.update((c.call_id, r) for c, r in zip(concurrent, done, strict=True))
            for call in calls:
                if call.call_id not in results:
                    results[call.call_id] = await self._run_call(call, ctx)
            return [results[c.call_id] for c in calls]
        finally:
            parent_hooks.reset(scope)

    async def _run_call(self, call: ToolCall, ctx: ToolContext) -> CallResult:
        """Guards, approval, validation and execution of one call, as an outcome for the model."""
        started, wall = time.perf_counter(), time.time()
        result = await self._decide_and_run(call, ctx)
        outcome = _timed(result.outcome, time.perf_counter() - started, wall)
        self._observers.tool_called(ctx.step, outcome, wall)
        result.outcome = outcome
        return result

    async def _decide_and_run(self, call: ToolCall, ctx: ToolContext) -> CallResult:
        tool = self._config.tools.get(call.name)
        refusal = self._refuse(call, tool)
        if refusal is not None:
            return refusal
        assert tool is not None
        effective, result = call, None
        if call.call_id not in self._approved:  # approved calls were decided before the pause
            effective, result = await self._permit(call, tool, ctx)
        if result is None and tool.deferred:
            why = "deferred: the result comes from outside the run"
            result = _pending(effective, why, "deferred")
        if result is None:
            result = await self._execute(effective, tool, ctx)
        result.rewritten = effective is not call
        return result

    async def _permit(
        self, call: ToolCall, tool: Tool, ctx: ToolContext
    ) -> tuple[ToolCall, CallResult | None]:
        """Guards, then PreToolUse hooks: the call to run (maybe rewritten), and a refusal or pause.

        Hooks only restrict: a hook's allow does not lift a guard's ask or a required approval.
        """
        guards = self._config.guards
        permission, reason = await check_guards(guards, call, ctx) if guards else ALLOWED
        if permission is _DENY:
            return call, _result(call, "denied", f"Permission denied: {reason}", is_error=True)
        verdict = await self._hooks.pre_tool_use(call)
        if verdict.blocked or self._hooks.stop_reason is not None:
            why = verdict.reason or self._hooks.stop_reason or "refused by a PreToolUse hook"
            return call, _result(call, "denied", f"Permission denied: {why}", is_error=True)
        if verdict.updated_input is not None:
            call = call._replace({"arguments": verdict.updated_input})
        if permission is _ASK:
            return call, _pending(call, reason, "approval")
        if verdict.decision == "ask":
            return call, _pending(call, verdict.reason or "a PreToolUse hook asks", "approval")
        if tool.requires_approval:
            return call, _pending(call, "tool requires approval", "approval")
        return call, None

    async def _execute(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> CallResult:
        """Run the call; PostToolUse(Failure) hooks may add to what the model reads."""
        try:
            content = await tool.run(call.arguments, ctx)
        except (ArgumentError, ToolRetry, ToolTimeout) as exc:
            result = _retry(call, _feedback(call.name, exc))
        except RunFatalError:
            raise
        except Exception as exc:
            message = f"Tool {call.name!r} failed: {type(exc).__name__}: {exc}"
            result = _result(call, "error", message, is_error=True)
        else:
            result = _result(call, "ok", content)
        feedback = await self._hooks.after_tool(call, result.outcome)
        return _with_feedback(result, feedback) if feedback else result

    def _refuse(self, call: ToolCall, tool: Tool | None) -> CallResult | None:
        """A retry prompt for calls that cannot run at all, else None."""
        if tool is None:
            known = ", ".join(self._config.tools) or "none"
            return _retry(call, f"Unknown tool {call.name!r}. Available tools: {known}.")
        if call.name not in self._offered:
            return _result(
                call, "denied", f"Tool {call.name!r} is not available in this step.", is_error=True
            )
        if call.invalid_arguments is not None:
            raw = _clip(call.invalid_arguments, 200)
            return _retry(
                call,
                f"The arguments for {call.name!r} are not a valid JSON object: {raw}. "
                "Send them again as a JSON object.",
            )
        return None

    def _sequential(self, call: ToolCall) -> bool:
        tool = self._config.tools.get(call.name)
        return tool is not None and tool.sequential


def _result(call: ToolCall, status: Any, content: str, *, is_error: bool = False) -> CallResult:
    part = unvalidated(
        ToolResult,
        {
            "kind": "tool_result",
            "call_id": call.call_id,
            "name": call.name,
            "content": content,
            "is_error": is_error,
        },
    )
    outcome = ToolOutcome(call.call_id, call.name, call.arguments, status, content)
    return CallResult(outcome, part, counts_as_error=is_error)


def _timed(outcome: ToolOutcome, duration: float, started_at: float) -> ToolOutcome:
    """The outcome with its start and duration (as `dataclasses.replace`, without its walk)."""
    o = outcome
    return ToolOutcome(o.call_id, o.name, o.arguments, o.status, o.content, duration, started_at)


def _with_feedback(result: CallResult, feedback: str) -> CallResult:
    """The result with hook feedback added to the text the model reads."""
    content = f"{result.outcome.content}\n\n{feedback}"
    part = result.part._replace({"content": content}) if result.part else None
    return replace(result, outcome=replace(result.outcome, content=content), part=part)


def _retry(call: ToolCall, feedback: str) -> CallResult:
    part = RetryPrompt(content=feedback, call_id=call.call_id, name=call.name)
    outcome = ToolOutcome(call.call_id, call.name, call.arguments, "retry", feedback)
    return CallResult(outcome, part, counts_as_error=True, retry_of=call.name)


def _pending(call: ToolCall, reason: str, kind: Any) -> CallResult:
    pending = PendingCall(
        call_id=call.call_id, tool=call.name, arguments=call.arguments, reason=reason, kind=kind
    )
    outcome = ToolOutcome(call.call_id, call.name, call.arguments, "pending", reason)
    return CallResult(outcome, None, pending=pending)


def _feedback(name: str, exc: Exception) -> str:
    if isinstance(exc, ArgumentError):
        return f"Invalid arguments for tool {name!r}: {exc}. Fix them and call the tool again."
    if isinstance(exc, ToolTimeout):
        return f"{exc}. Try again with a smaller request, or another approach."
    return str(exc)


def _clip(text: str, limit: int) -> str:
    return text if len(text) <= limit else f"{text[:limit]}… ({len(text):,} characters)"


def resume_state(
    state: AgentState,
    approvals: Mapping[str, bool | str] | None,
    results: Mapping[str, JsonValue] | None,
) -> AgentState:
    """A paused state with the outside world's answers applied, ready to run its TOOLS phase.

    ``approvals`` maps call ids to True (run it) or False / a reason (deny it); ``results``
    gives the results of calls executed elsewhere. Calls without an answer stay unanswered, so
    the TOOLS phase asks about them again.
    """
    if state.status is not ExecutionStatus.PAUSED:
        raise ValueError(
            f"run {state.run_id} is {state.status.value}, not paused: nothing to resume"
        )
    approvals, results = dict(approvals or {}), dict(results or {})
    known = {p.call_id for p in state.pending}
    unknown = sorted((set(approvals) | set(results)) - known)
    if unknown:
        raise ValueError(
            f"no pending call with id {', '.join(unknown)}; pending: {', '.join(sorted(known))}"
        )
    execution_id = new_id("exe")
    answers: list[Message] = []
    approved: list[str] = []
    for pending in state.pending:
        decision = approvals.get(pending.call_id)
        if pending.call_id in results:
            answers.append(_answer(pending, result_text(results[pending.call_id])))
        elif decision is True and pending.kind == "deferred":
            raise ValueError(
                f"call {pending.call_id} is deferred: give its result in results=, not an approval"
            )
        elif decision is True:
            approved.append(pending.call_id)
        elif decision is not None:
            why = f": {decision}" if isinstance(decision, str) and decision else ""
            answers.append(_answer(pending, f"The user denied this call{why}.", is_error=True))
    return state.evolve(
        execution_id=execution_id,
        messages=(
            *state.messages,
            *(m.stamped(state.run_id, execution_id, state.step) for m in answers),
        ),
        pending=(),
        approved=tuple(approved),
        next_phase=Phase.TOOLS,
    )


def _answer(pending: PendingCall, content: str, *, is_error: bool = False) -> Message:
    part = ToolResult(
        call_id=pending.call_id, name=pending.tool, content=content, is_error=is_error
    )
    return Message(role="tool", parts=(part,))
