"""What a diff says: `RunDiff` and its parts, and how it reads as text and as a DataFrame.

The records carry their own report (`RunDiff.to_text`, `to_df`, ``str``), so the report lives
with them; how two runs are compared to make one is `workbench.diff._compare`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Literal

from workbench._record import Record
from workbench.records import Timing
from workbench.state import StopReason

if TYPE_CHECKING:
    import pandas as pd

ChangeKind = Literal["added", "removed", "changed"]
StepStatus = Literal["same", "changed", "only_a", "only_b", "inherited"]


class PartChange(Record):
    """One part of a message added, removed or changed (``before``/``after`` describe it)."""

    index: int
    kind: ChangeKind
    before: str | None
    after: str | None

    def __str__(self) -> str:
        """``before → after``; a part only one run has says which (``part 1, only in b: ...``)."""
        if self.kind == "changed":
            return f"{self.before} → {self.after}"
        side = "b" if self.kind == "added" else "a"
        return f"only in {side}: {self.after or self.before}"


class MessageChange(Record):
    """A message that differs: in what the model was ``sent``, or in what the step ``added``."""

    where: Literal["sent", "added"]
    index: int
    """Position in that list of messages."""
    kind: ChangeKind
    role: str
    parts: tuple[PartChange, ...] = ()

    def __str__(self) -> str:
        """As a person says it: ``message 3 (tool): result of c4 '10' → result of c4 '1000'``.

        A message only one run has: ``message 1 (tool), only in a: result of c1 '5'``. The
        part's number is given only when the message has more than one part to tell apart.
        """
        head = f"message {self.index} ({self.role})"
        if self.kind != "changed":
            what = "; ".join(p.after or p.before or "" for p in self.parts) or "no parts"
            return f"{head}, only in {'b' if self.kind == 'added' else 'a'}: {what}"
        numbered = len(self.parts) > 1 or any(p.index for p in self.parts)
        parts = [f"part {p.index}, {p}" if numbered else str(p) for p in self.parts]
        return f"{head}: {'; '.join(parts)}" if parts else head


class OutcomeChange(Record):
    """A tool call whose outcome differs: it failed in one run and succeeds in the other, say.

    The first thing a person fixing a tool wants to read from a diff of the fix's re-run.
    """

    tool: str
    before: str
    """How it ended in a: ``ok``, ``error``, ``retry``, ``denied``, ``pending``, ``dropped``."""
    after: str
    before_text: str = ""
    after_text: str = ""

    def __str__(self) -> str:
        """``failed in a (TypeError: …); succeeds in b: '90.0'``."""
        a = f"{_VERB[self.before]} in a" + (f" ({_clip(self.before_text)})" if _says(self) else "")
        return f"{a}; {_VERB[self.after]} in b: {_clip(self.after_text)!r}"


_VERB = {
    "ok": "succeeds",
    "error": "failed",
    "retry": "was sent back to the model to retry",
    "denied": "was denied",
    "pending": "waited for approval",
    "dropped": "was dropped",
    "running": "was still running",
}


def _says(change: OutcomeChange) -> bool:
    """Whether a's text is worth showing (the error, not a result the b side repeats)."""
    return change.before != "ok" and bool(change.before_text)


def _clip(text: str, limit: int = 70) -> str:
    line = " ".join(text.split())
    return line if len(line) <= limit else f"{line[: limit - 1]}…"


class StepDiff(Record):
    """How one step differs between the two runs."""

    step: int
    status: StepStatus
    outcomes: tuple[OutcomeChange, ...] = ()
    """The tool calls (of the same call in both runs) whose outcome differs."""
    messages: tuple[MessageChange, ...] = ()
    calls_a: tuple[str, ...] = ()
    calls_b: tuple[str, ...] = ()
    stop_a: StopReason | None = None
    stop_b: StopReason | None = None
    timing_a: Timing | None = None
    timing_b: Timing | None = None

    @property
    def changed(self) -> bool:
        """True when messages, tool calls or the stop reason differ (timing never counts)."""
        return self.status in ("changed", "only_a", "only_b")

    @property
    def time_delta(self) -> float | None:
        """Seconds the step took in b minus in a (None unless both ran it)."""
        if self.timing_a is None or self.timing_b is None:
            return None
        return self.timing_b.total - self.timing_a.total

    def changes(self) -> list[tuple[str, str]]:
        """What differs, as (where, what) lines: each message, the tool calls, the stop reason.

        ``where`` says it as a person would: "the model was sent", "the step added", "tool
        calls", "stop reason".
        """
        lines = [(f"tool {o.tool}", str(o)) for o in self.outcomes]
        lines += [(_WHERE[m.where], str(m)) for m in self.messages]
        if self.calls_a != self.calls_b:
            calls = f"{', '.join(self.calls_a) or 'none'} → {', '.join(self.calls_b) or 'none'}"
            lines.append(("tool calls", calls))
        if self.stop_a != self.stop_b:
            stop_a = self.stop_a.value if self.stop_a else "-"
            stop_b = self.stop_b.value if self.stop_b else "-"
            lines.append(("stop reason", f"{stop_a} → {stop_b}"))
        return lines


_WHERE = {"sent": "the model was sent", "added": "the step added"}


class RunDiff(Record):
    """The per-step differences between run ``a`` and run ``b``; `to_text` and `to_df` show them."""

    a_id: str
    b_id: str
    steps: tuple[StepDiff, ...]
    a_final: tuple[str, str | None, str | None]
    """Status, stop reason and output of run a."""
    b_final: tuple[str, str | None, str | None]
    note: str = ""
    a_error: str | None = None
    """Why run a failed ("ScriptExhausted: ..."), when it did: "end a: failed" said only that."""
    b_error: str | None = None
    subruns: tuple[RunDiff, ...] = ()
    """The sub-runs of a and b, paired by the step and tool call that started them, in step order.

    Where only one run has a sub-run, the other side's id is empty; where a re-run inherited it
    (its step came before the re-run's), both ids are that sub-run's and its steps ``inherited``.
    """

    @property
    def diverged_subruns(self) -> tuple[RunDiff, ...]:
        """The sub-run diffs (at any depth) where the sub-runs differ."""
        found = []
        for sub in self.subruns:
            if sub.first_divergence is not None or sub.a_id == "" or sub.b_id == "":
                found.append(sub)
            found += sub.diverged_subruns
        return tuple(found)

    @property
    def first_divergence(self) -> int | None:
        """The first step that differs, or None if the runs agree on every step."""
        return next((s.step for s in self.steps if s.changed), None)

    @property
    def differing_subruns(self) -> tuple[int, ...]:
        """The 1-based positions in `subruns` of those that differ, or have a sub-run that does."""
        return tuple(i for i, sub in enumerate(self.subruns, 1) if _diverges(sub))

    @property
    def verdict(self) -> str:
        """One line: the first divergence, or that the runs agree (and which sub-runs do not).

        Empty for a sub-run only one run has: it has no steps to agree on.
        """
        first, differ = self.first_divergence, self.differing_subruns
        if first is not None:
            fixed = [
                f"{o.tool} {_VERB[o.before]} in a and {_VERB[o.after]} in b at step {s.step}"
                for s in self.steps
                for o in s.outcomes
                if o.before == "error" and o.after == "ok"
            ]
            return f"first divergence: step {first}" + (f" ({'; '.join(fixed)})" if fixed else "")
        if differ:  # the run's own steps agree, so the answer is in its sub-runs
            numbers = ", ".join(str(i) for i in differ)
            which = (
                f"sub-run {numbers} differs" if len(differ) == 1 else f"sub-runs {numbers} differ"
            )
            return f"the runs agree on every step, but {which} (below)"
        return "the runs agree on every step" if self.a_id and self.b_id else ""

    @property
    def changed_steps(self) -> tuple[int, ...]:
        """The steps that differ."""
        return tuple(s.step for s in self.steps if s.changed)

    def to_text(self) -> str:
        """A readable report: unchanged steps folded into ranges, changed ones in detail."""
        return "\n".join(_text_lines(self))

    def __str__(self) -> str:
        return self.to_text()

    def __repr__(self) -> str:  # short: `to_text` and `to_df` have the detail
        return (
            f"RunDiff(a={self.a_id!r}, b={self.b_id!r}, steps={len(self.steps)}, "
            f"changed={list(self.changed_steps)}, first_divergence={self.first_divergence})"
        )

    def to_df(self) -> pd.DataFrame:
        """One row per step: status, message changes, tool calls, stop reasons and timing (ms)."""
        import pandas as pd

        return pd.DataFrame([_row(s) for s in self.steps], columns=_COLUMNS)


# -- the report ------------------------------------------------------------------------------

_COLUMNS = [
    "step",
    "status",
    "changes",
    "calls_a",
    "calls_b",
    "stop_a",
    "stop_b",
    "total_ms_a",
    "total_ms_b",
    "delta_ms",
    "inference_ms_a",
    "inference_ms_b",
    "tools_ms_a",
    "tools_ms_b",
]


def _ms(value: float | None) -> float | None:
    return None if value is None else value * 1e3


def _row(s: StepDiff) -> list[object]:
    ta, tb = s.timing_a, s.timing_b
    return [
        s.step,
        s.status,
        "; ".join(f"{_WHERE[m.where]}: {m}" for m in s.messages),
        ", ".join(s.calls_a),
        ", ".join(s.calls_b),
        s.stop_a.value if s.stop_a else None,
        s.stop_b.value if s.stop_b else None,
        _ms(None if ta is None else ta.total),
        _ms(None if tb is None else tb.total),
        _ms(s.time_delta),
        _ms(None if ta is None else ta.inference),
        _ms(None if tb is None else tb.inference),
        _ms(None if ta is None else ta.tools),
        _ms(None if tb is None else tb.tools),
    ]


def _text_lines(d: RunDiff) -> list[str]:
    lines = [f"diff {d.a_id} (a) → {d.b_id} (b)" + (f": {d.note}" if d.note else "")]
    quiet: list[StepDiff] = []
    for s in d.steps:
        if s.status in ("same", "inherited"):
            quiet.append(s)
            continue
        lines.extend(_quiet_lines(quiet))
        quiet = []
        lines.extend(_step_lines(s))
    lines.extend(_quiet_lines(quiet))
    for label, (status, stop, output), error in (
        ("a", d.a_final, d.a_error),
        ("b", d.b_final, d.b_error),
    ):
        shown = output if output is None or len(output) <= 80 else f"{output[:80]}…"
        failure = f" ({_clip(error, 100)})" if error else ""
        lines.append(f"end {label}: {status}{failure}, stop reason {stop or '-'}, output {shown!r}")
    if d.verdict:
        lines.append(d.verdict)
    for i in d.differing_subruns:
        lines += [f"sub-run {i}: " + line for line in _text_lines(d.subruns[i - 1])]
    return lines


def _diverges(sub: RunDiff) -> bool:
    """True if the sub-runs differ, or any of theirs do."""
    return (
        sub.first_divergence is not None
        or not (sub.a_id and sub.b_id)
        or bool(sub.diverged_subruns)
    )


def _quiet_lines(quiet: list[StepDiff]) -> list[str]:
    """Consecutive unchanged steps as one line per status."""
    out = []
    start = 0
    while start < len(quiet):
        end = start
        while end + 1 < len(quiet) and quiet[end + 1].status == quiet[start].status:
            end += 1
        first, last = quiet[start].step, quiet[end].step
        span = f"step {first}" if first == last else f"steps {first}–{last}"
        out.append(f"{span}: {quiet[start].status}")
        start = end + 1
    return out


def _step_lines(s: StepDiff) -> list[str]:
    if s.status in ("only_a", "only_b"):
        who = "a" if s.status == "only_a" else "b"
        calls = s.calls_a or s.calls_b
        return [f"step {s.step}: only in {who}" + (f" (calls {', '.join(calls)})" if calls else "")]
    lines = [f"step {s.step}: changed"]
    lines.extend(f"  {where:<18} {what}" for where, what in s.changes())
    if s.time_delta is not None and s.timing_a is not None and s.timing_b is not None:
        lines.append(
            f"  {'time':<18} {s.timing_a.total * 1e3:.2f} ms → {s.timing_b.total * 1e3:.2f} ms "
            f"({s.time_delta * 1e3:+.2f} ms)"
        )
    return lines
