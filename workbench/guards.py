"""Tool guards: callables that answer allow, deny or ask for each tool call.

A guard is ``guard(call, ctx) -> ToolPermission | (ToolPermission, reason)``, sync or async. Guards
run in order; the first DENY wins, otherwise the first ASK pauses the run for approval. A guard that
raises denies the call (guards fail closed) and the error, redacted as a tool's error is, is the
reason.
"""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Sequence
from enum import StrEnum

from workbench.messages import ToolCall
from workbench.redact import error_text
from workbench.tools import ToolContext

__all__ = ["ALLOWED", "GuardDecision", "ToolGuard", "ToolPermission", "check_guards"]


class ToolPermission(StrEnum):
    """A guard's answer for one tool call."""

    ALLOW = "allow"
    DENY = "deny"
    ASK = "ask"


GuardDecision = ToolPermission | tuple[ToolPermission, str]
ToolGuard = Callable[[ToolCall, ToolContext], GuardDecision | Awaitable[GuardDecision]]


ALLOWED: tuple[ToolPermission, str] = (ToolPermission.ALLOW, "")
"""The answer when no guard objects (and with no guards at all)."""


async def check_guards(
    guards: Sequence[ToolGuard], call: ToolCall, ctx: ToolContext
) -> tuple[ToolPermission, str]:
    """The combined answer of all guards for ``call``, with the deciding guard's reason."""
    ask: tuple[ToolPermission, str] | None = None
    for guard in guards:
        permission, reason = await _ask(guard, call, ctx)
        if permission is ToolPermission.DENY:
            return permission, reason
        if permission is ToolPermission.ASK and ask is None:
            ask = permission, reason
    return ask or ALLOWED


async def _ask(guard: ToolGuard, call: ToolCall, ctx: ToolContext) -> tuple[ToolPermission, str]:
    name = getattr(guard, "__name__", type(guard).__name__)
    try:
        answer = guard(call, ctx)
        if inspect.isawaitable(answer):
            answer = await answer
    except Exception as exc:  # the reason is read by the model and stored: no secret in it
        return ToolPermission.DENY, f"guard {name} failed: {error_text(exc)}"
    return _read(answer, name)


def _read(answer: object, name: str) -> tuple[ToolPermission, str]:
    """A guard's answer as (permission, reason); any answer of another shape denies (fail closed).

    A malformed answer is a bug in that guard: it must deny this one call, not end the run.
    """
    if isinstance(answer, tuple):
        if len(answer) != 2:
            return ToolPermission.DENY, f"guard {name} returned a tuple of {len(answer)}, not 2"
        permission, reason = answer
    else:
        permission, reason = answer, ""
    if not isinstance(permission, ToolPermission):
        return ToolPermission.DENY, f"guard {name} returned {permission!r}, not a ToolPermission"
    if reason is not None and not isinstance(reason, str):
        return ToolPermission.DENY, f"guard {name} gave the reason {reason!r}, not a string"
    return permission, reason or f"{permission.value} by guard {name}"
