"""Stop conditions: small objects that look at a run and may say why it should end.

Conditions compose with ``|`` (stop when any fires) and ``&`` (stop when all fire). Besides
`check`, each condition reports the limits it implies (`Limits`), from which the loop derives the
budget left at each step: the number a tool guard reads, the wrap-up on the last allowed step, and
the time left that bounds a model call.
"""

from __future__ import annotations

import math
import threading
from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, TypeVar

from workbench._record import Record
from workbench.state import AgentState, StopReason

__all__ = [
    "AllOf",
    "AnyOf",
    "Budget",
    "DoomLoop",
    "ErrorBudget",
    "External",
    "Limits",
    "MaxCost",
    "MaxSteps",
    "MaxTokens",
    "RunView",
    "StopCondition",
    "Timeout",
    "ToolCalled",
]


_N = TypeVar("_N", int, float)


class RunView(Record):
    """What a condition sees: the state, the running time, and how many steps are finished."""

    state: AgentState
    elapsed: float
    steps_completed: int


class Limits(Record):
    """The hard limits a condition implies; ``None`` means no limit."""

    max_steps: int | None = None
    max_tokens: int | None = None
    timeout: float | None = None
    max_cost: float | None = None


class Budget(Record):
    """What a run has used and what it has left (``None`` left means unlimited or unknown)."""

    steps_used: int
    tokens_used: int
    seconds_used: float
    cost_used: float | None
    steps_left: int | None = None
    tokens_left: int | None = None
    seconds_left: float | None = None
    cost_left: float | None = None

    @classmethod
    def of(cls, limits: Limits, view: RunView) -> Budget:
        """The budget of a run under these limits."""
        usage, steps, elapsed = view.state.usage, view.steps_completed, view.elapsed
        tokens, cost = usage.total_tokens, usage.cost
        return cls(
            steps_used=steps,
            tokens_used=tokens,
            seconds_used=elapsed,
            cost_used=cost,
            steps_left=_left(limits.max_steps, steps),
            tokens_left=_left(limits.max_tokens, tokens),
            seconds_left=_left(limits.timeout, elapsed),
            cost_left=None if cost is None else _left(limits.max_cost, cost),
        )


def _left(limit: _N | None, used: _N) -> _N | None:
    if limit is None:
        return None
    left = limit - used
    return left if left > 0 else 0


class StopCondition(ABC):
    """Base of all stop conditions; subclasses implement `check` and, if they limit, `limits`."""

    @abstractmethod
    def check(self, view: RunView) -> StopReason | None:
        """Return why the run should stop now, or None to go on."""

    def limits(self) -> Limits:
        """The hard limits this condition implies (none by default)."""
        return Limits()

    @property
    def inline(self) -> bool:
        """Whether `check` may run on the event loop: true for the built-ins, pure and quick.

        A condition of the user's (a class written elsewhere, a subclass of a built-in too) is
        checked in a worker thread, so one that blocks holds up its own run only, never the loop
        every other run is on.
        """
        return type(self).__module__ == __name__

    def __or__(self, other: StopCondition) -> AnyOf:
        return AnyOf(*_flatten(AnyOf, self, other))

    def __and__(self, other: StopCondition) -> AllOf:
        return AllOf(*_flatten(AllOf, self, other))

    def __repr__(self) -> str:
        fields = ", ".join(f"{v!r}" for v in vars(self).values()) if vars(self) else ""
        return f"{type(self).__name__}({fields})"


def _flatten(kind: type[AnyOf | AllOf], *conditions: StopCondition) -> list[StopCondition]:
    out: list[StopCondition] = []
    for condition in conditions:
        out.extend(condition.conditions if isinstance(condition, kind) else [condition])
    return out


class AnyOf(StopCondition):
    """Stops when any of its conditions fires (``a | b``)."""

    def __init__(self, *conditions: StopCondition) -> None:
        self.conditions = tuple(conditions)

    def check(self, view: RunView) -> StopReason | None:
        """The most important reason among those that fire."""
        return StopReason.pick(c.check(view) for c in self.conditions)

    @property
    def inline(self) -> bool:
        """On the loop only when every condition is."""
        return all(c.inline for c in self.conditions)

    def limits(self) -> Limits:
        """The tightest limit of each kind."""
        return _combine([c.limits() for c in self.conditions], tightest=True)

    def __repr__(self) -> str:
        return " | ".join(map(repr, self.conditions))


class AllOf(StopCondition):
    """Stops when all of its conditions fire at once (``a & b``)."""

    def __init__(self, *conditions: StopCondition) -> None:
        self.conditions = tuple(conditions)

    def check(self, view: RunView) -> StopReason | None:
        """The most important reason, if every condition fires."""
        reasons = [c.check(view) for c in self.conditions]
        return StopReason.pick(reasons) if all(reasons) else None

    @property
    def inline(self) -> bool:
        """On the loop only when every condition is."""
        return all(c.inline for c in self.conditions)

    def limits(self) -> Limits:
        """The loosest limit of each kind: all must be reached before the run stops."""
        return _combine([c.limits() for c in self.conditions], tightest=False)

    def __repr__(self) -> str:
        return "(" + " & ".join(map(repr, self.conditions)) + ")"


def _combine(limits: list[Limits], *, tightest: bool) -> Limits:
    def pick(values: list[Any]) -> Any:
        present = [v for v in values if v is not None]
        if tightest:
            return min(present) if present else None
        return max(values) if present and len(present) == len(values) else None

    return Limits(
        max_steps=pick([lim.max_steps for lim in limits]),
        max_tokens=pick([lim.max_tokens for lim in limits]),
        timeout=pick([lim.timeout for lim in limits]),
        max_cost=pick([lim.max_cost for lim in limits]),
    )


class MaxSteps(StopCondition):
    """At most ``n`` steps (model calls). The last one is told to answer without tools."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"MaxSteps needs n >= 1, got {n}")
        self.n = n

    def check(self, view: RunView) -> StopReason | None:
        """STEP_LIMIT once ``n`` steps are finished."""
        return StopReason.STEP_LIMIT if view.steps_completed >= self.n else None

    def limits(self) -> Limits:
        """A step limit."""
        return Limits(max_steps=self.n)


class MaxTokens(StopCondition):
    """At most ``n`` tokens (input plus output) over the whole run."""

    def __init__(self, n: int) -> None:
        self.n = n

    def check(self, view: RunView) -> StopReason | None:
        """TOKEN_LIMIT once the run used ``n`` tokens."""
        return StopReason.TOKEN_LIMIT if view.state.usage.total_tokens >= self.n else None

    def limits(self) -> Limits:
        """A token limit."""
        return Limits(max_tokens=self.n)


class Timeout(StopCondition):
    """At most ``seconds`` of running time (time spent paused does not count)."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds

    def check(self, view: RunView) -> StopReason | None:
        """TIME_LIMIT once the running time reached the limit."""
        return StopReason.TIME_LIMIT if view.elapsed >= self.seconds else None

    def limits(self) -> Limits:
        """A time limit."""
        return Limits(timeout=self.seconds)


class MaxCost(StopCondition):
    """At most ``usd`` dollars. A model without a known price cannot be held to it."""

    def __init__(self, usd: float) -> None:
        self.usd = usd

    def check(self, view: RunView) -> StopReason | None:
        """COST_LIMIT once the known cost reached the limit, or came within rounding of it.

        Costs are sums of float prices: a sub-agent capped at what its parent has left
        (``0.035 - 0.005``) must stop where the parent would, not one rounding error later.
        """
        cost = view.state.usage.cost
        if cost is None:
            return None
        reached = cost >= self.usd or math.isclose(cost, self.usd, rel_tol=1e-9)
        return StopReason.COST_LIMIT if reached else None

    def limits(self) -> Limits:
        """A cost limit."""
        return Limits(max_cost=self.usd)


class ToolCalled(StopCondition):
    """The task is complete once the tool ``name`` ran successfully (a completion tool)."""

    def __init__(self, name: str) -> None:
        self.name = name

    def check(self, view: RunView) -> StopReason | None:
        """TASK_COMPLETE if the tool ran without error in the latest step."""
        for message in reversed(view.state.messages):
            if message.role == "assistant":
                return None
            for part in message.parts:
                if part.kind == "tool_result" and part.name == self.name and not part.is_error:
                    return StopReason.TASK_COMPLETE
        return None


class DoomLoop(StopCondition):
    """The model made the very same tool calls ``repeats`` times in a row."""

    def __init__(self, repeats: int = 3) -> None:
        if repeats < 2:
            raise ValueError(f"DoomLoop needs repeats >= 2, got {repeats}")
        self.repeats = repeats

    def check(self, view: RunView) -> StopReason | None:
        """DOOM_LOOP when the last ``repeats`` assistant turns made identical calls."""
        signatures: list[tuple[tuple[str, str], ...]] = []
        for message in reversed(view.state.messages):
            if message.role != "assistant":
                continue
            calls = message.tool_calls
            if not calls:
                return None
            signatures.append(tuple(sorted((c.name, repr(c.arguments)) for c in calls)))
            if len(signatures) == self.repeats:
                return StopReason.DOOM_LOOP if len(set(signatures)) == 1 else None
        return None


class ErrorBudget(StopCondition):
    """At most ``max_errors`` failed tool calls in all, or ``max_consecutive`` in a row."""

    def __init__(self, max_errors: int | None = None, max_consecutive: int | None = None) -> None:
        if max_errors is None and max_consecutive is None:
            raise ValueError("ErrorBudget needs max_errors, max_consecutive or both")
        self.max_errors = max_errors
        self.max_consecutive = max_consecutive

    def check(self, view: RunView) -> StopReason | None:
        """ERROR_BUDGET once either count is reached."""
        state = view.state
        over_total = self.max_errors is not None and state.errors_total >= self.max_errors
        over_run = (
            self.max_consecutive is not None and state.errors_consecutive >= self.max_consecutive
        )
        return StopReason.ERROR_BUDGET if over_total or over_run else None


@dataclass(eq=False)
class External(StopCondition):
    """A flag set from outside (a notebook button, another thread): the run stops at the next check.

    ``reason`` is what the run ends with; by default the run counts as aborted.
    """

    reason: StopReason = StopReason.ABORTED
    _flag: threading.Event = field(default_factory=threading.Event, repr=False)

    def set(self) -> None:
        """Ask the run to stop."""
        self._flag.set()

    def clear(self) -> None:
        """Take the request back (for the next run)."""
        self._flag.clear()

    @property
    def is_set(self) -> bool:
        """True if a stop was asked for."""
        return self._flag.is_set()

    def check(self, view: RunView) -> StopReason | None:
        """The configured reason while the flag is set."""
        return self.reason if self._flag.is_set() else None
