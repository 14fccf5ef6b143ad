"""Regression checks on a finished run: ``wb.expect(run, baseline=None)``, fluent, for pytest.

Each check reads the run's records (the same ones the store keeps, so a run loaded from a store is
checked like a live one) and either returns the `Expectation` for the next check or raises
`ExpectationFailed`, an ``AssertionError`` whose message names the step where the run differs and
what differs there. A check given no expected value compares with the baseline run instead, so a
recorded run becomes a regression test in one line::

    wb.expect(result).stop_reason("completed").tools_called(["add", "multiply"]).no_hook_errors()
    wb.expect(result, baseline=recorded).tools_called().steps().tokens(within=0.1).answer()

Run content in messages (answers, tool names) is quoted with ``repr``, so a hostile answer is text
in a test report, never terminal control.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence, Set
from enum import StrEnum
from typing import NoReturn, TypeVar

from workbench._record import Record
from workbench.errors import ExpectationFailed, UsageError
from workbench.messages import Usage
from workbench.records import RunResult
from workbench.state import ExecutionStatus, StopReason

__all__ = ["Expectation", "expect"]

_Enum = TypeVar("_Enum", bound=StrEnum)

AnswerCheck = str | re.Pattern[str] | Callable[[str], bool]
"""A text or regular expression (searched for in the answer), or a predicate on the answer."""


class _Call(Record):
    """One tool call the model made, and the step it made it in."""

    step: int
    name: str


def expect(run: RunResult, baseline: RunResult | None = None) -> Expectation:
    """Start checking ``run`` (live, or from `RunStore.load`), optionally against a baseline."""
    return Expectation(run, baseline)


class Expectation:
    """The checks on one run; each returns ``self`` so they chain, or raises `ExpectationFailed`."""

    def __init__(self, run: RunResult, baseline: RunResult | None = None) -> None:
        self.run = run
        self.baseline = baseline

    def __repr__(self) -> str:
        against = "" if self.baseline is None else f", baseline={self.baseline.run_id!r}"
        return f"Expectation(run={self.run.run_id!r}{against})"

    # -- what the run did ------------------------------------------------------------------------

    def tools_called(
        self, expected: Sequence[str] | Set[str] | None = None, *, ordered: bool = True
    ) -> Expectation:
        """The tools the model called: this sequence, or this set (any order, any count).

        Without ``expected``, the baseline's calls (``ordered=False``: as a set). Every call the
        model made counts, including refused and retried ones, each once however often it was
        resumed.

        A re-run counts from its fork point (``state.rerun_of.step``): the calls before it are
        in its history but were the original's, not its own. So its own calls are checked, and
        compared with the baseline's calls from the same step on (from the later fork point when
        the baseline is a re-run too); a failure says from which step it counted.
        """
        if isinstance(expected, str):  # a str is a Sequence[str]: its letters are no tool names
            raise UsageError(
                f"expect(...).tools_called() takes a list or set of names: "
                f"tools_called([{expected!r}]), not tools_called({expected!r})"
            )
        since = _fork_step(self.run)
        if expected is None:
            baseline = self._baseline("tools_called")
            since = max(since, _fork_step(baseline))
            expected = [c.name for c in _calls(baseline, since)]
            source = "the baseline called"
        else:
            source = "expected"
        calls = _calls(self.run, since)
        counted = "" if since == 1 else f"\n  counted from step {since}, where the re-run forked"
        if isinstance(expected, Set) or not ordered:
            self._tool_set(calls, set(expected), source, counted)
        else:
            self._tool_sequence(calls, list(expected), source, counted)
        return self

    def stop_reason(self, expected: StopReason | str | None = None) -> Expectation:
        """Why the run ended: a `StopReason` or its value (the baseline's when not given)."""
        if expected is None:
            want = self._baseline("stop_reason").stop_reason
        else:
            want = _member(StopReason, expected, "stop_reason")
        got = self.run.stop_reason
        if _value(got) != _value(want):
            self._fail(
                "stop_reason",
                self._last_step,
                f"the run stopped for {_value(got)}, expected {_value(want)}",
            )
        return self

    def status(self, expected: ExecutionStatus | str | None = None) -> Expectation:
        """The run's final status: an `ExecutionStatus` or its value (the baseline's if none)."""
        if expected is None:
            want = self._baseline("status").status
        else:
            want = _member(ExecutionStatus, expected, "status")
        if self.run.status is not want:
            what = f"the run is {self.run.status.value}, expected {want.value}"
            self._fail("status", self._last_step, what)
        return self

    def steps(
        self,
        exactly: int | None = None,
        *,
        at_least: int | None = None,
        at_most: int | None = None,
    ) -> Expectation:
        """How many steps the run took: exactly, or within bounds (the baseline's count if none)."""
        if exactly is None and at_least is None and at_most is None:
            exactly = self._baseline("steps").state.step
        low = exactly if exactly is not None else at_least
        high = exactly if exactly is not None else at_most
        took = self._last_step
        if (low is not None and took < low) or (high is not None and took > high):
            want = f"exactly {exactly}" if exactly is not None else _range(low, high)
            self._fail("steps", took, f"the run took {took} steps, expected {want}")
        return self

    def tokens(self, *, at_most: int | None = None, within: float | None = None) -> Expectation:
        """Total tokens: at most a number, and/or ``within`` a fraction of the baseline's (0.1)."""
        self._amount("tokens", _tokens, at_most, within, "{:,.0f} tokens")
        return self

    def cost(self, *, at_most: float | None = None, within: float | None = None) -> Expectation:
        """Total cost in US dollars: at most a sum, and/or ``within`` a fraction of the baseline's.

        A run whose cost is unknown (no price for its model) fails: unknown is not free.
        """
        self._amount("cost", _cost, at_most, within, "${:.6f}")
        return self

    def no_hook_errors(self) -> Expectation:
        """No hook failed (timeout, crash, bad output) or answered what its event cannot do."""
        errors = [(r.index, e) for r in self.run.steps for e in r.hook_errors]
        if errors:
            listed = "\n".join(f"  step {step}: {_quote(error)}" for step, error in errors)
            first = errors[0][0]
            self._fail("no_hook_errors", first, f"{len(errors)} hook error(s):\n{listed}")
        return self

    def answer(self, expected: AnswerCheck | None = None) -> Expectation:
        """The final answer holds a text, matches a pattern or satisfies a predicate.

        A string passes when the answer contains it as written or a regular expression search
        finds it: ``answer("1 + 2 = 3")`` is a natural check on a calculator, though its ``+`` is
        a quantifier to ``re``. Without ``expected``, the answer must equal the baseline's.
        """
        got = self.run.output
        step = self._last_step
        if got is None:
            self._fail("answer", step, f"the run has no answer (it is {self.run.status.value})")
        if expected is None:
            said = self._baseline("answer").output
            if got != said:
                self._fail(
                    "answer", step, f"the answer is {_quote(got)}, the baseline said {_quote(said)}"
                )
        elif isinstance(expected, str):
            if expected not in got and not _searched(expected, got):
                what = f"the answer {_quote(got)} does not contain or match {expected!r}"
                self._fail("answer", step, what)
        elif isinstance(expected, re.Pattern):
            if expected.search(got) is None:
                what = f"the answer {_quote(got)} does not match {expected.pattern!r}"
                self._fail("answer", step, what)
        elif not expected(got):
            name = getattr(expected, "__name__", repr(expected))
            self._fail("answer", step, f"the answer {_quote(got)} does not satisfy {name}")
        return self

    # -- helpers ---------------------------------------------------------------------------------

    @property
    def _last_step(self) -> int:
        return self.run.state.step

    def _baseline(self, check: str) -> RunResult:
        if self.baseline is None:
            raise UsageError(f"expect(...).{check}() needs an expected value or a baseline run")
        return self.baseline

    def _fail(self, check: str, step: int | None, what: str) -> NoReturn:
        __tracebackhide__ = True  # pytest shows the user's check, not this frame
        where = "" if step is None else f" at step {step}"
        raise ExpectationFailed(check, step, f"{check}{where}: {what} (run {self.run.run_id})")

    def _tool_sequence(
        self, calls: list[_Call], expected: list[str], source: str, counted: str
    ) -> None:
        names = [c.name for c in calls]
        if names == expected:
            return
        i = next(
            (i for i, pair in enumerate(zip(names, expected, strict=False)) if pair[0] != pair[1]),
            min(len(names), len(expected)),
        )
        step = calls[i].step if i < len(calls) else self._last_step
        got = repr(names[i]) if i < len(names) else "no call"
        want = repr(expected[i]) if i < len(expected) else "no call"
        self._fail(
            "tools_called",
            step,
            f"call {i + 1} is {got} where {source} {want}\n"
            f"  called: {_listed(calls)}\n  {source}: {', '.join(map(repr, expected)) or '-'}"
            + counted,
        )

    def _tool_set(self, calls: list[_Call], expected: set[str], source: str, counted: str) -> None:
        extra = [c for c in calls if c.name not in expected]
        missing = sorted(expected - {c.name for c in calls})
        if not extra and not missing:
            return
        parts = []
        if extra:
            parts.append(f"called {extra[0].name!r}, which is not in what {source}")
        if missing:
            parts.append(f"never called {', '.join(map(repr, missing))}")
        step = extra[0].step if extra else self._last_step
        what = "; ".join(parts) + f"\n  called: {_listed(calls)}{counted}"
        self._fail("tools_called", step, what)

    def _amount(
        self,
        check: str,
        amount: Callable[[Usage], float | None],
        at_most: float | None,
        within: float | None,
        unit: str,
    ) -> None:
        if at_most is None and within is None:
            raise UsageError(f"expect(...).{check}() needs at_most= or within= (with a baseline)")
        # the run's own total (sub-runs included), and its steps to say where the amount went
        total = amount(self.run.usage)
        per_step = _per_step(self.run, amount)
        if total is None:
            step = next((s for s, v in per_step.items() if v is None), self._last_step)
            self._fail(check, step, f"the run's {check} is unknown (from step {step} on)")
        if at_most is not None and total > at_most:
            step = _crossing(per_step, at_most)
            self._fail(
                check, step, f"{unit.format(total)} used, expected at most {unit.format(at_most)}"
            )
        if within is not None:
            self._within(check, amount, per_step, total, within, unit)

    def _within(
        self,
        check: str,
        amount: Callable[[Usage], float | None],
        per_step: dict[int, float | None],
        total: float,
        within: float,
        unit: str,
    ) -> None:
        if within < 0:
            raise UsageError(f"expect(...).{check}(within={within}): a tolerance is >= 0")
        baseline = self._baseline(check)
        base = amount(baseline.usage)
        if base is None:
            raise UsageError(f"the baseline's {check} is unknown: nothing to compare with")
        base_steps = _per_step(baseline, amount)
        if abs(total - base) <= within * base:
            return
        step, mine, theirs = _biggest_difference(per_step, base_steps)
        change = "more" if total > base else "less"
        self._fail(
            check,
            step,
            f"{unit.format(total)} used, {abs(total - base) / base if base else 1:.1%} {change} "
            f"than the baseline's {unit.format(base)} (tolerance {within:.0%}); the biggest "
            f"difference is step {step}: {unit.format(mine)} against {unit.format(theirs)}",
        )


def _searched(pattern: str, text: str) -> bool:
    """Whether ``pattern`` as a regular expression is found in ``text`` (not, if it is none)."""
    try:
        return re.search(pattern, text) is not None
    except re.error:  # "(costs $1": meant as text, and the text is not there
        return False


def _calls(run: RunResult, since: int = 1) -> list[_Call]:
    """Each tool call the model made from step ``since``, in order, once (resumed: no repeats)."""
    seen: set[str] = set()
    calls = []
    for record in (r for r in run.steps if r.index >= since):
        for call in record.response.calls if record.response is not None else ():
            if call.call_id not in seen:
                seen.add(call.call_id)
                calls.append(_Call(step=record.index, name=call.name))
    return calls


def _fork_step(run: RunResult) -> int:
    """The first step that is the run's own: a re-run's fork point, else step 1."""
    rerun_of = run.state.rerun_of
    return 1 if rerun_of is None else rerun_of.step


def _tokens(usage: Usage) -> float:
    return usage.total_tokens


def _cost(usage: Usage) -> float | None:
    return usage.cost


def _per_step(run: RunResult, amount: Callable[[Usage], float | None]) -> dict[int, float | None]:
    """The amount each step used (a resumed step's records added together; unknown stays None)."""
    out: dict[int, float | None] = {}
    for record in run.steps:
        value, before = amount(record.usage), out.get(record.index, 0.0)
        out[record.index] = None if value is None or before is None else before + value
    return out


def _crossing(per_step: dict[int, float | None], limit: float) -> int:
    """The step at which the running total first went over ``limit``."""
    total = 0.0
    for step, value in per_step.items():
        total += value or 0.0
        if total > limit:
            return step
    return max(per_step)


def _biggest_difference(
    mine: dict[int, float | None], theirs: dict[int, float | None]
) -> tuple[int, float, float]:
    """The step whose amount differs most from the baseline's same step, with both amounts."""
    steps = sorted(mine.keys() | theirs.keys())
    diffs = [(step, mine.get(step) or 0.0, theirs.get(step) or 0.0) for step in steps]
    return max(diffs, key=lambda d: abs(d[1] - d[2]))


def _listed(calls: list[_Call]) -> str:
    return ", ".join(f"{c.name!r} (step {c.step})" for c in calls) or "-"


def _range(low: int | None, high: int | None) -> str:
    if low is not None and high is not None:
        return f"between {low} and {high}"
    return f"at least {low}" if low is not None else f"at most {high}"


def _member(kind: type[_Enum], value: _Enum | str, check: str) -> _Enum:
    """``value`` as one of ``kind``; any other is a `UsageError` that lists what ``kind`` has.

    A mistyped reason (``"max_steps"``, the condition's name, for ``"step_limit"``) is a mistake
    in the test, not a failed run, so it is named as such rather than as a bare enum error.
    """
    try:
        return kind(value)
    except ValueError:
        valid = ", ".join(repr(member.value) for member in kind)
        raise UsageError(
            f"expect(...).{check}() takes one of {valid} (or its {kind.__name__}), not {value!r}"
        ) from None


def _value(reason: StopReason | None) -> str:
    return "-" if reason is None else reason.value


def _quote(text: str | None, limit: int = 200) -> str:
    if text is None or len(text) <= limit:
        return repr(text)
    return repr(text[:limit]) + f"… ({len(text):,} characters)"
