"""Tool guards: callables that answer allow, deny or ask for each tool call.

A guard is ``guard(call, ctx) -> ToolPermission | (ToolPermission, reason)``, sync or async. Guards
run in order; the first DENY wins, otherwise the first ASK pauses the run for approval. A guard that
raises denies the call (guards fail closed) and the error, redacted as a tool's error is, is the
reason; the exception itself comes back too, for its traceback.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum

from workbench._record import Record
from workbench._sync import call_user
from workbench.messages import ToolCall
from workbench.redact import error_text, redacted
from workbench.tools import ToolContext

__all__ = [
    "ALLOWED",
    "GuardAnswer",
    "GuardDecision",
    "ToolGuard",
    "ToolPermission",
    "check_guards",
]


class ToolPermission(StrEnum):
    """A guard's answer for one tool call."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


GuardDecision = ToolPermission | tuple[ToolPermission, str]
ToolGuard = Callable[[ToolCall, ToolContext], GuardDecision | Awaitable[GuardDecision]]


class GuardAnswer(Record):
    """The guards' combined answer for a call, and what a guard raised (then it denies).

    The exception is kept for its traceback; the reason the model reads says it in one line.
    """

    permission: ToolPermission
    reason: str = ""
    raised: Exception | None = None


ALLOWED = GuardAnswer(permission=ToolPermission.ALLOW)
"""The answer when no guard objects (and with no guards at all)."""


async def check_guards(
    guards: Sequence[ToolGuard], call: ToolCall, ctx: ToolContext
) -> GuardAnswer:
    """The combined answer of all guards for ``call``, with the deciding guard's reason."""
    ask: GuardAnswer | None = None
    for guard in guards:
        answer = await _ask(guard, call, ctx)
        if answer.permission is ToolPermission.DENY:
            return answer
        if answer.permission is ToolPermission.ASK and ask is None:
            ask = answer
    return ask or ALLOWED


async def _ask(guard: ToolGuard, call: ToolCall, ctx: ToolContext) -> GuardAnswer:
    name = getattr(guard, "__name__", type(guard).__name__)
    try:
        answer = await call_user(guard, call, ctx)  # a sync guard in a worker: never the loop
    except Exception as exc:  # the reason is read by the model and stored: no secret in it
        why = f"guard {name} failed: {error_text(exc)}"
        return GuardAnswer(permission=ToolPermission.DENY, reason=why, raised=exc)
    return _read(answer, name)


def _read(answer: object, name: str) -> GuardAnswer:
    """A guard's answer; any answer of another shape denies (fail closed).

    A malformed answer is a bug in that guard: it must deny this one call, not end the run. It
    is an error of the run all the same, as a guard that raised is (a `TypeError`, made, not
    raised: the guard's own code raised nothing): a guard that forgot to return denied every
    call and the run said only "completed".
    """
    if isinstance(answer, tuple):
        if len(answer) != 2:
            return _malformed(f"guard {name} returned a tuple of {len(answer)}, not 2")
        permission, reason = answer
    else:
        permission, reason = answer, ""
    if not isinstance(permission, ToolPermission):
        return _malformed(f"guard {name} returned {permission!r}, not a ToolPermission")
    if reason is not None and not isinstance(reason, str):
        return _malformed(f"guard {name} gave the reason {reason!r}, not a string")
    return GuardAnswer(
        permission=permission, reason=reason or f"{permission.value} by guard {name}"
    )


def _malformed(why: str) -> GuardAnswer:
    """A denial for a malformed answer, redacted: the model reads the reason.

    Its quote of the answer may hold a secret (a guard that returned a client's settings).
    """
    why = redacted(why)
    return GuardAnswer(permission=ToolPermission.DENY, reason=why, raised=TypeError(why))
