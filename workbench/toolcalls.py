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
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal

from workbench._json import VALUE_DEPTH
from workbench._record import Record
from workbench.config import LoopConfig
from workbench.errors import ReplayDivergence, ToolRetriesExceeded
from workbench.guards import ALLOWED, ToolGuard, ToolPermission, check_guards
from workbench.hooks.runner import parent_hooks
from workbench.messages import JsonValue, Message, RetryPrompt, ToolCall, ToolResult, Usage
from workbench.observing import Observers
from workbench.records import OutcomeStatus, RunResult, SubagentResult, ToolOutcome
from workbench.redact import error_text
from workbench.state import AgentState, ErrorInfo, ExecutionStatus, PendingCall, Phase, new_id
from workbench.subagent import SubagentTool, SubagentTree, subagent_tree
from workbench.tools import (
    ArgumentError,
    RunFatalError,
    Tool,
    ToolContext,
    ToolRetry,
    ToolReturn,
    ToolTimeout,
    result_text,
    unicode_text,
)

if TYPE_CHECKING:
    from workbench.hooks.loop import LoopHooks

__all__ = ["CallResult", "ToolRunner", "counted_retries", "resume_state"]


class CallResult(Record):
    """How one tool call ended in the TOOLS phase."""

    outcome: ToolOutcome
    part: ToolResult | RetryPrompt | None
    pending: tuple[PendingCall, ...] = ()
    """Calls that wait: this one, or the calls of the sub-run it started."""
    waiting: AgentState | None = None
    """The paused sub-run this call started, kept in the run's state until it runs again."""
    counts_as_error: bool = False
    retry_of: str | None = None
    rewritten: bool = False
    """A PreToolUse hook changed the arguments; the history is updated to show them."""
    usage: Usage | None = None
    """Tokens the tool spent itself (a sub-agent's run), charged to the calling run."""
    children: tuple[RunResult, ...] = ()
    """The sub-runs the tool made, children of the calling run."""
    departed: ReplayDivergence | None = None
    """The departure of a replayed sub-run (`ToolReturn.departed`): the calling run fails."""


def counted_retries(
    retries: Mapping[str, int], results: Sequence[CallResult], tools: Mapping[str, Tool]
) -> tuple[dict[str, int], ToolRetriesExceeded | None]:
    """The per-tool retry counts after these results, and the first tool past its limit."""
    counts, exceeded = dict(retries), None
    for result in results:
        name = result.outcome.name
        if result.retry_of is not None:
            counts[result.retry_of] = counts.get(result.retry_of, 0) + 1
            tool = tools.get(result.retry_of)
            limit = tool.retries if tool else 1
            if counts[result.retry_of] > limit and exceeded is None:
                exceeded = ToolRetriesExceeded(
                    f"tool {result.retry_of!r} needed more than {limit} retries"
                )
        elif result.outcome.status == "ok":  # a success resets the tool's count
            counts.pop(name, None)
    return counts, exceeded


class Decision(Record):
    """What the guards and PreToolUse hooks answer for one call, before its tool is asked."""

    answer: Literal["allow", "deny", "ask"]
    reason: str = ""
    updated_input: dict[str, JsonValue] | None = None
    """Arguments a PreToolUse hook gave instead of the model's."""
    hook_errors: tuple[str, ...] = ()
    raised: Exception | None = None
    """What a guard raised (it denies the call), for the traceback the outcome keeps."""


async def decide(
    guards: Sequence[ToolGuard], hooks: LoopHooks, call: ToolCall, ctx: ToolContext
) -> Decision:
    """Guards, then PreToolUse hooks, in the order the loop asks them (`wb.recheck` asks too).

    The first DENY wins, then a hook's block, then an ASK (a guard's, then a hook's); hooks only
    restrict: a hook's allow does not lift a guard's ask.
    """
    guard = await check_guards(guards, call, ctx) if guards else ALLOWED
    permission, reason = guard.permission, guard.reason
    if permission is ToolPermission.DENY:
        return Decision(answer="deny", reason=reason, raised=guard.raised)
    verdict = await hooks.pre_tool_use(call)
    errors = tuple(r.error for r in verdict.reports if r.error)
    if verdict.blocked or verdict.stop is not None:
        why = verdict.reason or verdict.stop or "refused by a PreToolUse hook"
        return Decision(answer="deny", reason=why, hook_errors=errors)
    if permission is ToolPermission.ASK:
        asked = Decision(answer="ask", reason=reason, hook_errors=errors)
    elif verdict.decision == "ask":
        why = verdict.reason or "a PreToolUse hook asks"
        asked = Decision(answer="ask", reason=why, hook_errors=errors)
    else:
        asked = Decision(answer="allow", reason=verdict.reason, hook_errors=errors)
    return asked.model_copy(update={"updated_input": verdict.updated_input})


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
        self._tools: Mapping[str, Tool] = {}
        self._offered: tuple[str, ...] = ()
        self._approved: tuple[str, ...] = ()
        self._hidden: Mapping[str, str] = {}
        self._own_tree: SubagentTree | None = None
        """The tree of sub-runs, when this run is its root (no run's tool started this one)."""

    def tree(self, state: AgentState) -> SubagentTree:
        """The tree this run's sub-agent calls count in: the one it is part of, else its own."""
        outer = subagent_tree.get()
        if outer is not None:
            return outer
        if self._own_tree is None:
            config = self._config
            self._own_tree = SubagentTree(
                config.subagents, config.subrun_observer, state.subruns, config.tool_fixes
            )
        return self._own_tree

    def subruns(self, state: AgentState) -> dict[str, int]:
        """What `AgentState.subruns` holds now: the root's counts (unchanged below the root).

        A copy only when a sub-run started: most steps start none, and keep the state's dict.
        """
        tree = self._own_tree
        if tree is None or tree.per_parent == state.subruns:
            return state.subruns
        return dict(tree.per_parent)

    async def run(
        self,
        calls: tuple[ToolCall, ...],
        ctx: ToolContext,
        tools: Mapping[str, Tool],
        offered: tuple[str, ...],
        approved: tuple[str, ...],
        hidden: Sequence[tuple[str, str]] = (),
    ) -> list[CallResult]:
        """Decide and run ``calls``: concurrently, except sequential tools, which run after.

        ``hidden`` are the tools hidden this step, with the reason a call of one is told. The
        results come in the order of the calls; their time counts in the TOOLS phase's.
        """
        self._tools, self._offered, self._approved = tools, offered, approved
        self._hidden = dict(hidden)
        scope = parent_hooks.set(self._hooks.for_subagents())
        tree_scope = subagent_tree.set(self.tree(ctx.view.state))
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
            subagent_tree.reset(tree_scope)

    async def _run_call(self, call: ToolCall, ctx: ToolContext) -> CallResult:
        """Guards, approval, validation and execution of one call, as an outcome for the model."""
        started, wall = time.perf_counter(), time.time()
        result = await self._decide_and_run(call, ctx)
        outcome = result.outcome.model_copy(
            update={"duration": time.perf_counter() - started, "started_at": wall}
        )
        self._observers.tool_called(ctx.step, outcome, wall)
        return result.model_copy(update={"outcome": outcome})

    async def _decide_and_run(self, call: ToolCall, ctx: ToolContext) -> CallResult:
        tool = self._tools.get(call.name)
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
            result = await self._answer(effective, tool, ctx)
        if effective is not call:
            result = result.model_copy(update={"rewritten": True})
        return result

    async def _permit(
        self, call: ToolCall, tool: Tool, ctx: ToolContext
    ) -> tuple[ToolCall, CallResult | None]:
        """Guards, then PreToolUse hooks: the call to run (maybe rewritten), and a refusal or pause.

        Hooks only restrict: a hook's allow does not lift a guard's ask or a required approval;
        only PermissionRequest hooks, which answer in the user's place, do.
        """
        decision = await decide(self._config.guards, self._hooks, call, ctx)
        if decision.answer == "deny" or self._hooks.stop_reason is not None:
            denied = await self._denied(call, decision.reason or self._hooks.stop_reason)
            if decision.raised is None:
                return call, denied
            kept = self._kept(decision.raised, ctx)
            return call, denied.model_copy(
                update={"outcome": denied.outcome.model_copy(update={"exception": kept})}
            )
        if decision.updated_input is not None:
            call = call.model_copy(update={"arguments": decision.updated_input})
        if decision.answer == "ask":
            why = decision.reason
        elif tool.requires_approval:
            why = "tool requires approval"
        else:
            return call, None
        verdict = await self._hooks.permission_request(call, why)
        if verdict.decision == "deny":
            return call, await self._denied(call, verdict.reason)
        if verdict.decision != "allow":
            return call, _pending(call, why, "approval")
        if verdict.updated_input is not None:
            call = call.model_copy(update={"arguments": verdict.updated_input})
        return call, None

    async def _denied(self, call: ToolCall, why: str | None) -> CallResult:
        """A guard's or hook's refusal; a PermissionDenied hook may let the model try again."""
        text = f"Permission denied: {why}"
        if await self._hooks.permission_denied(call, why or ""):
            text += "\n\nA PermissionDenied hook says you may retry this call."
        return _result(call, "denied", text, is_error=True)

    async def _answer(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> CallResult:
        """Execute a permitted call, or, in a replay, answer it from the recording.

        A replayed call runs no PostToolUse hooks: they react to an execution, and what they
        added to the result then is part of the recorded result the model reads again.
        """
        recording = self._config.tool_recording
        replayed = None
        if recording is not None:
            delegates = isinstance(tool, SubagentTool)
            replayed = recording.for_call(
                call, ctx.step, delegates=delegates, results=self._config.replay_tools
            )
        if replayed is None:
            return await self._execute(call, tool, ctx)
        if replayed.outcome is not None:
            return _replayed(call, replayed.outcome)
        return await self._execute(
            call, tool, ctx.model_copy(update={"replaying": replayed.subruns})
        )

    async def _execute(self, call: ToolCall, tool: Tool, ctx: ToolContext) -> CallResult:
        """Run the call; PostToolUse(Failure) hooks may add to what the model reads."""
        try:
            returned = await tool.run(
                call.arguments, ctx.model_copy(update={"call_id": call.call_id})
            )
        except (ArgumentError, ToolRetry, ToolTimeout) as exc:
            result = _retry(call, _feedback(call.name, exc))
        except (RunFatalError, ReplayDivergence):  # a sub-run that departs from its recording
            raise
        except Exception as exc:
            redact = self._config.redactor.text
            message = unicode_text(f"Tool {call.name!r} failed: {redact(error_text(exc))}")
            result = _result(call, "error", message, is_error=True, raised=self._kept(exc, ctx))
        else:
            if returned.waiting is not None:
                return _waiting(call, returned)
            status: OutcomeStatus = "error" if returned.is_error else "ok"
            result = _result(
                call,
                status,
                returned.value,
                is_error=returned.is_error,
                subagent=returned.subagent,
                raised=returned.exception,
            )
            update = {"usage": returned.usage, "children": returned.runs}
            result = result.model_copy(update={**update, "departed": returned.departed})
        feedback = await self._hooks.after_tool(call, result.outcome)
        return _with_feedback(result, feedback) if feedback else result

    def _refuse(self, call: ToolCall, tool: Tool | None) -> CallResult | None:
        """A retry prompt for calls that cannot run at all, else None."""
        if tool is None and call.name in self._hidden:
            why = self._hidden[call.name]
            return _result(
                call, "denied", f"Tool {call.name!r} is not available now: {why}.", is_error=True
            )
        if tool is None:
            known = ", ".join(self._tools) or "none"
            return _retry(call, f"Unknown tool {call.name!r}. Available tools: {known}.")
        if call.name not in self._offered:
            return _result(
                call, "denied", f"Tool {call.name!r} is not available in this step.", is_error=True
            )
        if call.invalid_arguments is not None:
            raw = _clip(call.invalid_arguments, 200)
            return _retry(
                call,
                f"The arguments for {call.name!r} are not a valid JSON object (nested at most "
                f"{VALUE_DEPTH} levels): {raw}. "
                "Send them again as a JSON object.",
            )
        return None

    def _kept(self, exc: Exception, ctx: ToolContext) -> ErrorInfo:
        """What the call's outcome keeps of an exception: redacted by the run's redactor."""
        redact = self._config.redactor.text
        return ErrorInfo.of(exc, phase=Phase.TOOLS, step=ctx.step, redact=redact)

    def _sequential(self, call: ToolCall) -> bool:
        tool = self._tools.get(call.name)
        return tool is not None and tool.sequential


def _result(
    call: ToolCall,
    status: OutcomeStatus,
    content: str,
    *,
    is_error: bool = False,
    subagent: SubagentResult | None = None,
    raised: ErrorInfo | None = None,
) -> CallResult:
    part = ToolResult(call_id=call.call_id, name=call.name, content=content, is_error=is_error)
    outcome = _outcome(call, status, content).model_copy(
        update={"subagent": subagent, "exception": raised}
    )
    return CallResult(outcome=outcome, part=part, counts_as_error=is_error)


def _outcome(call: ToolCall, status: OutcomeStatus, content: str) -> ToolOutcome:
    return ToolOutcome(
        call_id=call.call_id,
        name=call.name,
        arguments=call.arguments,
        status=status,
        content=content,
    )


def _replayed(call: ToolCall, recorded: ToolOutcome) -> CallResult:
    """The recorded result of ``call``, as the model read it then, traceback too; nothing runs."""
    if recorded.status == "retry":
        result = _retry(call, recorded.content)
    else:
        status: OutcomeStatus = "error" if recorded.status == "error" else "ok"
        result = _result(call, status, recorded.content, is_error=status == "error")
    update = {"replayed": True, "exception": recorded.exception}
    return result.model_copy(update={"outcome": result.outcome.model_copy(update=update)})


def _with_feedback(result: CallResult, feedback: str) -> CallResult:
    """The result with hook feedback added to the text the model reads."""
    content = f"{result.outcome.content}\n\n{feedback}"
    part = result.part.model_copy(update={"content": content}) if result.part else None
    outcome = result.outcome.model_copy(update={"content": content})
    return result.model_copy(update={"outcome": outcome, "part": part})


def _retry(call: ToolCall, feedback: str) -> CallResult:
    part = RetryPrompt(content=feedback, call_id=call.call_id, name=call.name)
    outcome = _outcome(call, "retry", feedback)
    return CallResult(outcome=outcome, part=part, counts_as_error=True, retry_of=call.name)


def _pending(call: ToolCall, reason: str, kind: Any) -> CallResult:
    pending = PendingCall(
        call_id=call.call_id, tool=call.name, arguments=call.arguments, reason=reason, kind=kind
    )
    return CallResult(outcome=_outcome(call, "pending", reason), part=None, pending=(pending,))


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

    ``approvals`` maps call ids to True (run it) or False / a reason (deny it), anything else is
    a `ValueError`; ``results`` gives the results of calls executed elsewhere. Calls without an
    answer (or None) stay unanswered, so the TOOLS phase asks about them again.
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
    # Anything else was a denial: 1, numpy's True_ (a DataFrame's decision) and "yes" alike.
    unclear = {
        i: d for i, d in approvals.items() if d is not None and not isinstance(d, bool | str)
    }
    if unclear:
        said = ", ".join(f"{i}: {d!r} ({type(d).__name__})" for i, d in sorted(unclear.items()))
        raise ValueError(f"an approval is True (run the call), False or a reason (deny it): {said}")
    execution_id = new_id("exe")
    answers: list[Message] = []
    approved: list[str] = []
    for_subruns = dict(state.subrun_answers)
    for pending in state.pending:
        decision = approvals.get(pending.call_id)
        if pending.via is not None:  # a sub-run's call: its answer waits for the sub-run
            for_subruns.update(_subrun_answer(pending, decision, results))
            approved.append(pending.via)  # the call that started it was permitted already
        elif pending.call_id in results:
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
    return state.model_copy(
        update={
            "execution_id": execution_id,
            "messages": (
                *state.messages,
                *(m.stamped(state.run_id, execution_id, state.step) for m in answers),
            ),
            "pending": (),
            "approved": tuple(dict.fromkeys(approved)),
            "subrun_answers": for_subruns,
            "next_phase": Phase.TOOLS,
        }
    )


def _waiting(call: ToolCall, returned: ToolReturn) -> CallResult:
    """A call whose sub-run paused: its calls wait in this run's name, and this call with them."""
    assert returned.waiting is not None
    pending = tuple(p.model_copy(update={"via": call.call_id}) for p in returned.waiting.pending)
    reason = "; ".join(f"{p.tool}: {p.reason}" for p in pending)
    outcome = _outcome(call, "pending", f"its sub-run waits ({reason})").model_copy(
        update={"subagent": returned.subagent}
    )
    return CallResult(
        outcome=outcome,
        part=None,
        pending=pending,
        waiting=returned.waiting,
        usage=returned.usage,
        children=returned.runs,
    )


def _answer(pending: PendingCall, content: str, *, is_error: bool = False) -> Message:
    part = ToolResult(
        call_id=pending.call_id, name=pending.tool, content=content, is_error=is_error
    )
    return Message(role="tool", parts=(part,))


def _subrun_answer(
    pending: PendingCall, decision: bool | str | None, results: Mapping[str, JsonValue]
) -> dict[str, JsonValue]:
    """The answer to a sub-run's call, kept until the sub-run resumes."""
    if pending.call_id in results:
        return {f"result:{pending.call_id}": results[pending.call_id]}
    if decision is not None:
        return {f"approval:{pending.call_id}": decision}
    return {}
