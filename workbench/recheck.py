"""What-if checks: yesterday's tool calls through today's guards and hooks, nothing executed.

``wb.recheck(run, guards=[...], hooks=[...])`` takes every tool call of a recorded run (a
`RunResult`, or a run loaded from a `RunStore`; sub-runs in ``run.children`` too) and asks the
given guards and hooks (PreToolUse, and PermissionRequest for a call that would wait for
approval) what they would decide now. No tool runs: only the guards and
the hooks do, each with the run as it was when the call was made (the conversation up to the
call, its step, its usage), so a Claude Code hook script reads the same input and the same
transcript as it would have live. That is the question to ask before shipping a new policy:
which of the calls my agent made would it have blocked, or asked about?

The decision is combined as the loop combines it (guards first: the first deny wins; then
PreToolUse hooks: a block denies; then a guard's or a hook's ask, which PermissionRequest hooks
may answer; otherwise allow). A tool's own
``requires_approval`` is not part of it: the tools are not consulted. The decision then is what the
recording says happened to the call. A call of a tool its step did not offer (hidden by a filter,
or unknown) never reached a guard: it is ``not offered`` then and now. Needs pandas (the
``notebook`` extra).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from workbench._record import Record
from workbench._sync import run_sync
from workbench.conditions import Limits, RunView
from workbench.guards import ToolGuard
from workbench.hooks.command import CommandHook
from workbench.hooks.events import HookEvent
from workbench.hooks.loop import LoopHooks
from workbench.hooks.runner import Hook
from workbench.messages import ToolCall
from workbench.records import RecordedRun, StepContext, StepRecord, ToolOutcome
from workbench.redact import redacted
from workbench.state import AgentState
from workbench.toolcalls import decide
from workbench.tools import ToolContext

if TYPE_CHECKING:
    import pandas as pd

__all__ = ["COLUMNS", "RecheckSummary", "arecheck", "recheck"]

COLUMNS = (
    "step",
    "tool",
    "arguments",
    "decision_then",
    "decision_now",
    "reason",
    "changed",
    "reason_then",
    "hook_errors",
    "call_id",
    "run_id",
)
"""The frame's columns: the six the question needs, then what helps to follow one up."""

_THEN = {
    "ok": "allow",
    "error": "allow",
    "retry": "allow",
    "denied": "deny",
    "pending": "ask",
    "dropped": "dropped",
}
"""What the recorded outcome of a call says was decided (a call that ran, failed or was sent back
for new arguments was allowed)."""

NOT_OFFERED = "not offered"
"""Both decisions of a call of a tool its step did not offer (hidden by a filter, or unknown)."""


class RecheckSummary(Record):
    """What changed: how many calls, how many decided differently, and each change in a line."""

    calls: int
    changed: int
    transitions: dict[str, int]
    """``"allow → deny": 2`` and so on, for the calls that changed."""
    lines: tuple[str, ...]
    failed: tuple[str, ...] = ()
    """A line for each call a hook failed on (timed out, crashed, answered garbage): it was
    decided without that hook, as the loop would have, so "the same" may only mean that."""

    def __str__(self) -> str:
        if not self.changed:
            head = f"{self.calls} tool calls rechecked: every decision is the same"
        else:
            counts = ", ".join(f"{n} {t}" for t, n in self.transitions.items())
            head = (
                f"{self.changed} of {self.calls} tool calls would be decided differently ({counts})"
            )
        said = [head, *(f"  {line}" for line in self.lines)]
        if self.failed:
            said.append(
                f"a hook failed on {len(self.failed)} of them, decided without it (hook_errors):"
            )
            said += [f"  {line}" for line in self.failed]
        return "\n".join(said)


def recheck(
    run: RecordedRun,
    guards: Sequence[ToolGuard] = (),
    hooks: Sequence[Hook | CommandHook] = (),
) -> pd.DataFrame:
    """Every tool call of ``run`` through ``guards`` and ``hooks``; nothing executed.

    PreToolUse hooks decide as in the loop; PermissionRequest hooks answer the calls that would
    wait for approval (other events' hooks are not fired).

    Returns a DataFrame with one row per call (columns `COLUMNS`: step, tool, arguments, decision
    then, decision now, reason, …) and the `RecheckSummary` in ``frame.attrs["summary"]``.
    Works inside a running event loop (a notebook); `arecheck` is the async form.
    """
    return run_sync(arecheck(run, guards, hooks))


async def arecheck(
    run: RecordedRun,
    guards: Sequence[ToolGuard] = (),
    hooks: Sequence[Hook | CommandHook] = (),
) -> pd.DataFrame:
    """`recheck`, awaited."""
    import pandas as pd

    deciding = (HookEvent.PRE_TOOL_USE, HookEvent.PERMISSION_REQUEST)
    asked = [h for h in hooks if h.event in deciding]
    rows: list[dict[str, Any]] = []
    for recorded in _runs(run):
        rows += await _recheck_run(recorded, tuple(guards), asked)
    frame = pd.DataFrame(rows, columns=list(COLUMNS))
    frame.attrs["summary"] = _summary(rows)
    return frame


def _runs(run: RecordedRun) -> list[RecordedRun]:
    """The run and its sub-runs, depth first, in call order."""
    found = [run]
    for child in getattr(run, "children", ()):
        found += _runs(child)
    return found


async def _recheck_run(
    run: RecordedRun, guards: tuple[ToolGuard, ...], hooks: list[Hook | CommandHook]
) -> list[dict[str, Any]]:
    snapshots = {s.step: s for s in run.snapshots}
    outcomes = _first_outcomes(run.steps)
    state = run.state
    dispatch = LoopHooks(hooks, lambda: state, lambda report: None, max_turns=0)
    rows = []
    try:
        for step in run.steps:
            if step.response is None:
                continue
            state = _state_at(run.state, step, snapshots.get(step.index))
            view = _view(state, step, snapshots.get(step.index))
            ctx = ToolContext(view=view, limits=Limits())
            for call in step.response.calls:
                then = outcomes.get(call.call_id)
                if (refused := _not_offered(step, call)) is not None:
                    rows.append(_row(run, step, call, then, NOT_OFFERED, refused, "", NOT_OFFERED))
                    continue
                now, reason, errors = await _decided(guards, dispatch, call, ctx)
                rows.append(_row(run, step, call, then, now, reason, errors))
    finally:
        dispatch.close()
    return rows


async def _decided(
    guards: tuple[ToolGuard, ...], dispatch: LoopHooks, call: ToolCall, ctx: ToolContext
) -> tuple[str, str, str]:
    """The decision now, its reason and the hook errors, as the loop would reach them."""
    decision = await decide(guards, dispatch, call, ctx)
    now: str = decision.answer
    reason, errors = decision.reason, list(decision.hook_errors)
    if now == "ask":
        verdict = await dispatch.permission_request(call, reason)
        errors += [r.error for r in verdict.reports if r.error]
        if verdict.decision in ("allow", "deny"):
            now, reason = verdict.decision, verdict.reason or "answered by a PermissionRequest hook"
    return now, reason, "; ".join(errors)


def _not_offered(step: StepRecord, call: ToolCall) -> str | None:
    """Why ``call``'s tool was not offered in its step, or None if it was.

    The loop refuses such a call before any guard is asked, and a recheck changes the policy,
    not the tools: the call is refused now as it was then, whatever the guards would say.
    """
    hidden = dict(step.tools_hidden)
    if call.name in hidden:
        return f"not offered in step {step.index}: {hidden[call.name]}"
    if call.name not in step.tools_offered:
        return f"not offered in step {step.index}"
    return None


def _first_outcomes(steps: Sequence[StepRecord]) -> dict[str, ToolOutcome]:
    """Each call's first recorded outcome: the decision made when it was asked for."""
    outcomes: dict[str, ToolOutcome] = {}
    for step in steps:
        for outcome in step.tool_outcomes:
            outcomes.setdefault(outcome.call_id, outcome)
    return outcomes


def _state_at(final: AgentState, step: StepRecord, snapshot: StepContext | None) -> AgentState:
    """The run as the step's calls were decided: the model's answer is the last message."""
    assert step.response is not None
    start = snapshot.state if snapshot is not None else final
    messages = (*step.messages_in, step.response.to_message())
    return start.model_copy(update={"messages": messages, "step": step.index})


def _view(state: AgentState, step: StepRecord, snapshot: StepContext | None) -> RunView:
    elapsed = snapshot.budget.seconds_used if snapshot is not None else 0.0
    return RunView(state=state, elapsed=elapsed, steps_completed=step.index - 1)


def _row(
    run: RecordedRun,
    step: StepRecord,
    call: ToolCall,
    then: ToolOutcome | None,
    now: str,
    reason: str,
    errors: str,
    decided_then: str | None = None,
) -> dict[str, Any]:
    decision_then = decided_then or (_THEN[then.status] if then is not None else "not decided")
    return {
        "step": step.index,
        "tool": call.name,
        "arguments": call.arguments,
        "decision_then": decision_then,
        "decision_now": now,
        "reason": reason,
        "changed": decision_then != now,
        "reason_then": then.content if then is not None and decision_then != "allow" else "",
        "hook_errors": errors,
        "call_id": call.call_id,
        "run_id": run.state.run_id,
    }


def _printable(text: str) -> str:
    """Hook output and model arguments as inert text.

    Control characters (terminal escapes, newlines) are written as escapes, so a summary printed
    in a terminal cannot drive it.
    """
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _summary(rows: list[dict[str, Any]]) -> RecheckSummary:
    changed = [r for r in rows if r["changed"]]
    transitions: dict[str, int] = {}
    lines = []
    for row in changed:
        key = f"{row['decision_then']} → {row['decision_now']}"
        transitions[key] = transitions.get(key, 0) + 1
        why = f": {row['reason']}" if row["reason"] else ""
        line = f"step {row['step']} {row['tool']} {row['arguments']}: {key}{why}"
        lines.append(_printable(redacted(line)))  # a report for logs: the frame keeps the data
    failed = tuple(
        _printable(redacted(f"step {row['step']} {row['tool']}: {row['hook_errors']}"))
        for row in rows
        if row["hook_errors"]
    )
    return RecheckSummary(
        calls=len(rows),
        changed=len(changed),
        transitions=transitions,
        lines=tuple(lines),
        failed=failed,
    )
