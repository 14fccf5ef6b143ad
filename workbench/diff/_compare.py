"""The comparison behind `diff(a, b)`: steps, messages and sub-runs of two runs, as a `RunDiff`.

What counts as a difference, and why, is in `workbench.diff`'s docstring.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Literal, NamedTuple, Protocol

from workbench.diff._result import (
    ChangeKind,
    MessageChange,
    OutcomeChange,
    PartChange,
    RunDiff,
    StepDiff,
    StepStatus,
)
from workbench.messages import (
    Message,
    Part,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from workbench.models.replay import describe_part
from workbench.models.request_diff import describe_pair
from workbench.records import StepRecord, Timing, ToolOutcome, run_error
from workbench.state import AgentState, StopReason
from workbench.telemetry.records_of import result_of_trace
from workbench.telemetry.trace import Trace


class _Run(Protocol):
    @property
    def state(self) -> AgentState: ...

    @property
    def steps(self) -> Sequence[StepRecord]: ...

    @property
    def children(self) -> Sequence[_Run]: ...


def diff(a: _Run | Trace, b: _Run | Trace) -> RunDiff:
    """Compare two runs (results of `Agent.run`, `Agent.rerun` or `RunStore.load`) step by step.

    Two traces (`Trace`: `wb.load_trace`, a backend's) compare as their top runs rebuilt from
    their spans (`result_of_trace`): the steps, not the sub-runs.
    """
    a = result_of_trace(a) if isinstance(a, Trace) else a
    b = result_of_trace(b) if isinstance(b, Trace) else b
    views_a, views_b = _views(a.steps), _views(b.steps)
    inherited_b = _inherited(b.state, a.state.run_id)
    inherited_a = _inherited(a.state, b.state.run_id)
    fingerprints = _Fingerprints()
    reported: set[tuple[int | None, int | None]] = set()
    out = []
    for index in sorted(views_a.keys() | views_b.keys()):
        va, vb = views_a.get(index), views_b.get(index)
        if va is None or vb is None:
            inherited = (vb is None and index < inherited_b) or (va is None and index < inherited_a)
            out.append(_one_sided(index, va, vb, inherited))
            continue
        out.append(_step_diff(index, va, vb, fingerprints, reported))
    note = ""
    if a.state.rerun_of is not None and a.state.rerun_of.run_id == b.state.run_id:
        note = f"a is a re-run of b from step {a.state.rerun_of.step}"
    if b.state.rerun_of is not None and b.state.rerun_of.run_id == a.state.run_id:
        note = f"b is a re-run of a from step {b.state.rerun_of.step}"
    pairs = _pair_children(_children(a), _children(b))
    return RunDiff(
        a_id=a.state.run_id,
        b_id=b.state.run_id,
        steps=tuple(out),
        a_final=_final(a.state),
        b_final=_final(b.state),
        note=note,
        a_error=_failure(a.state),
        b_error=_failure(b.state),
        subruns=tuple(_subrun_diff(ca, cb, inherited_a, inherited_b) for ca, cb in pairs),
    )


class _Child(NamedTuple):
    """A sub-run and where its parent started it: the step, and the tool call in that step."""

    run: _Run
    order: int
    """Its position in the parent's children (call order)."""
    call_id: str | None
    step: int | None
    """The parent's step whose tool call started it (None when the records do not say)."""
    place: tuple[str, int] | None
    """The calling tool's name, and how many calls of that name came before it in the step."""


def _children(parent: _Run) -> list[_Child]:
    """The parent's sub-runs, each placed by the call that started it in the parent's messages.

    Messages, not step records, because a re-run holds the messages of the steps it inherited
    (with their step numbers) but not their records.
    """
    places = _call_places(parent.state.messages)
    out = []
    for order, child in enumerate(parent.children):
        call_id = child.state.parent_call_id
        step, place = places.get(call_id, (None, None)) if call_id is not None else (None, None)
        out.append(_Child(child, order, call_id, step, place))
    return out


def _call_places(messages: Sequence[Message]) -> dict[str, tuple[int | None, tuple[str, int]]]:
    """Each tool call's step, name and rank among its message's calls of that name, by call id."""
    places: dict[str, tuple[int | None, tuple[str, int]]] = {}
    for message in messages:
        seen: Counter[str] = Counter()
        for call in message.tool_calls:
            places[call.call_id] = (message.step, (call.name, seen[call.name]))
            seen[call.name] += 1
    return places


def _by_call(child: _Child) -> tuple[object, ...] | None:
    return None if child.call_id is None else (child.step, child.call_id)


def _by_place(child: _Child) -> tuple[object, ...] | None:
    return None if child.place is None else (child.step, child.place)


def _pair_children(a: list[_Child], b: list[_Child]) -> list[tuple[_Child | None, _Child | None]]:
    """The sub-runs of both runs paired (a side is None where one has no partner), in step order.

    A pair shares the step and the calling tool call: its id, or else its place in the step.
    """
    pairs: list[tuple[_Child | None, _Child | None]] = []
    rest_a, rest_b = list(a), list(b)
    for key in (_by_call, _by_place):
        partners = {key(c): c for c in reversed(rest_b) if key(c) is not None}
        unpaired = []
        for child in rest_a:
            found = key(child)
            partner = partners.pop(found, None) if found is not None else None
            if partner is None:
                unpaired.append(child)
            else:
                pairs.append((child, partner))
                rest_b.remove(partner)
        rest_a = unpaired
    pairs += [(c, None) for c in rest_a] + [(None, c) for c in rest_b]
    return sorted(pairs, key=_pair_order)


def _pair_order(pair: tuple[_Child | None, _Child | None]) -> tuple[float, int, int]:
    first = pair[0] or pair[1]
    assert first is not None
    step = float("inf") if first.step is None else first.step
    return step, pair[0] is None, first.order


def _subrun_diff(a: _Child | None, b: _Child | None, inherited_a: int, inherited_b: int) -> RunDiff:
    """The diff of a pair of sub-runs; one alone is inherited by a re-run, or missing there."""
    if a is not None and b is not None:
        return diff(a.run, b.run)
    only = a or b
    assert only is not None
    side: Literal["a", "b"] = "a" if a is not None else "b"
    inherited = inherited_b if side == "a" else inherited_a
    if only.step is not None and only.step < inherited:
        return _inherited_subrun(only.run, side)
    final = _final(only.run.state)
    empty: tuple[str, str | None, str | None] = ("absent", None, None)
    return RunDiff(
        a_id=only.run.state.run_id if side == "a" else "",
        b_id=only.run.state.run_id if side == "b" else "",
        steps=(),
        a_final=final if side == "a" else empty,
        b_final=final if side == "b" else empty,
        note=f"only {side} has this sub-run",
    )


def _inherited_subrun(run: _Run, side: Literal["a", "b"]) -> RunDiff:
    """A sub-run that ``side`` ran and the other run inherited with the step that started it."""
    views = _views(run.steps)
    steps = (
        _one_sided(i, v, None, True) if side == "a" else _one_sided(i, None, v, True)
        for i, v in sorted(views.items())
    )
    final = _final(run.state)
    return RunDiff(
        a_id=run.state.run_id,
        b_id=run.state.run_id,
        steps=tuple(steps),
        a_final=final,
        b_final=final,
        note=f"{'b' if side == 'a' else 'a'} inherited this sub-run",
        subruns=tuple(_inherited_subrun(c, side) for c in run.children),
    )


@dataclass
class _View:
    """One step of a run, with the records of a paused-and-resumed step merged."""

    sent: Sequence[Message]
    added: list[Message] = field(default_factory=list)
    calls: list[ToolCall] = field(default_factory=list)
    outcomes: dict[str, ToolOutcome] = field(default_factory=dict)
    """Each call's outcome by call id (a resumed call's final one)."""
    stop: StopReason | None = None
    timing: Timing = field(default_factory=Timing)


def _views(steps: Sequence[StepRecord]) -> dict[int, _View]:
    views: dict[int, _View] = {}
    for record in steps:
        view = views.setdefault(record.index, _View(record.messages_in))
        view.added.extend(record.new_messages)
        view.calls.extend(record.tool_calls)
        view.outcomes.update((o.call_id, o) for o in record.tool_outcomes)
        view.stop = record.stop_reason
        view.timing = _add(view.timing, record.timing)
    return views


def _add(a: Timing, b: Timing) -> Timing:
    return Timing(
        prepare=a.prepare + b.prepare,
        inference=a.inference + b.inference,
        tools=a.tools + b.tools,
        hooks=a.hooks + b.hooks,
        continuation=a.continuation + b.continuation,
        telemetry=a.telemetry + b.telemetry,
    )


def _inherited(state: AgentState, other_run: str) -> int:
    """Steps below this index were inherited from ``other_run`` (0 when not a re-run of it)."""
    rerun = state.rerun_of
    return rerun.step if rerun is not None and rerun.run_id == other_run else 0


class _Fingerprints:
    """Each message's role and parts as a small int: equal content, equal int, across both runs.

    A message object is serialized once. A run's lists of messages mostly extend the previous
    list of the same kind (the same objects plus new ones), so a list's fingerprints are the
    previous list's plus those of the new messages, found with one identity check in C.
    """

    def __init__(self) -> None:
        self._cache: dict[int, tuple[Message, int]] = {}
        self._ids: dict[str, int] = {}
        self._last: dict[str, tuple[tuple[Message, ...], list[int]]] = {}

    def of(self, messages: Sequence[Message], lane: str) -> list[int]:
        """Fingerprints of ``messages``; ``lane`` names the sequence it probably extends."""
        messages = tuple(messages)
        prev, prev_fps = self._last.get(lane, ((), []))
        n = len(prev)
        if n and len(messages) >= n and messages[:n] == prev:
            out = prev_fps + [self._one(m) for m in messages[n:]]
        else:
            out = [self._one(m) for m in messages]
        self._last[lane] = (messages, out)
        return out

    def _one(self, message: Message) -> int:
        hit = self._cache.get(id(message))
        if hit is None or hit[0] is not message:
            text = message.model_dump_json(include={"role", "parts"}, exclude=_CALL_IDS)
            hit = (message, self._ids.setdefault(text, len(self._ids)))
            self._cache[id(message)] = hit
        return hit[1]


_CALL_IDS = {"parts": {"__all__": {"call_id"}}}
"""What a message's content leaves out: the ids of its tool calls and results (minted per call)."""


def _one_sided(index: int, va: _View | None, vb: _View | None, inherited: bool) -> StepDiff:
    """A step only one run has (or that a re-run inherited from the other)."""
    status: StepStatus = "inherited" if inherited else "only_a" if vb is None else "only_b"
    return StepDiff(
        step=index,
        status=status,
        calls_a=() if va is None else _calls(va.calls),
        calls_b=() if vb is None else _calls(vb.calls),
        stop_a=None if va is None else va.stop,
        stop_b=None if vb is None else vb.stop,
        timing_a=None if va is None else va.timing,
        timing_b=None if vb is None else vb.timing,
    )


def _step_diff(
    index: int,
    va: _View,
    vb: _View,
    fingerprints: _Fingerprints,
    reported: set[tuple[int | None, int | None]],
) -> StepDiff:
    changes = [
        *_message_changes("sent", va.sent, vb.sent, fingerprints, reported),
        *_message_changes("added", va.added, vb.added, fingerprints, reported),
    ]
    calls_a, calls_b = _calls(va.calls), _calls(vb.calls)
    differs = bool(changes) or calls_a != calls_b or va.stop != vb.stop
    return StepDiff(
        step=index,
        status="changed" if differs else "same",
        outcomes=_outcome_changes(va, vb),
        messages=tuple(changes),
        calls_a=calls_a,
        calls_b=calls_b,
        stop_a=va.stop,
        stop_b=vb.stop,
        timing_a=va.timing,
        timing_b=vb.timing,
    )


def _outcome_changes(va: _View, vb: _View) -> tuple[OutcomeChange, ...]:
    """The calls both runs made in the step whose outcome differs.

    The same call is the same call id (a re-run replays the recorded call), else the same tool
    at the same place (a live re-run's calls get new ids).
    """
    a, b = list(va.outcomes.values()), list(vb.outcomes.values())
    pairs = [(o, vb.outcomes[o.call_id]) for o in a if o.call_id in vb.outcomes]
    if not pairs:  # a live re-run made new call ids: pair by place and tool
        pairs = [(x, y) for x, y in zip(a, b, strict=False) if x.name == y.name]
    return tuple(
        OutcomeChange(
            tool=x.name,
            before=x.status,
            after=y.status,
            before_text=x.content,
            after_text=y.content,
        )
        for x, y in pairs
        if x.status != y.status
    )


def _message_changes(
    where: Literal["sent", "added"],
    a: Sequence[Message],
    b: Sequence[Message],
    fingerprints: _Fingerprints,
    reported: set[tuple[int | None, int | None]],
) -> list[MessageChange]:
    """Changes between two message lists not already reported at an earlier step.

    The lists are aligned by their common head and tail; what lies between is paired by position
    (changed) and the rest is added or removed. That is exact for the usual edits (one message
    changed, messages appended) and never slower than linear.
    """
    fa, fb = fingerprints.of(a, f"a-{where}"), fingerprints.of(b, f"b-{where}")
    if fa == fb:
        return []
    head = 0
    while head < min(len(fa), len(fb)) and fa[head] == fb[head]:
        head += 1
    tail = 0
    while tail < min(len(fa), len(fb)) - head and fa[-1 - tail] == fb[-1 - tail]:
        tail += 1
    out = []
    for i in range(head, max(len(fa), len(fb)) - tail):
        ma = a[i] if i < len(a) - tail else None
        mb = b[i] if i < len(b) - tail else None
        key = (fa[i] if ma is not None else None, fb[i] if mb is not None else None)
        if key in reported:
            continue
        reported.add(key)
        out.append(_change(where, i, ma, mb))
    return out


def _change(
    where: Literal["sent", "added"], i: int, a: Message | None, b: Message | None
) -> MessageChange:
    if a is None or b is None:
        return _whole(where, i, a, b)
    if a.role != b.role:
        part = PartChange(
            index=0, kind="changed", before=f"a {a.role} message", after=f"a {b.role} message"
        )
        return MessageChange(where=where, index=i, kind="changed", role=b.role, parts=(part,))
    return MessageChange(
        where=where, index=i, kind="changed", role=b.role, parts=_part_changes(a, b)
    )


def _whole(
    where: Literal["sent", "added"], i: int, a: Message | None, b: Message | None
) -> MessageChange:
    """A message only one side has: every part added (or removed)."""
    present = b if b is not None else a
    assert present is not None
    kind: ChangeKind = "added" if a is None else "removed"
    parts = tuple(
        PartChange(index=j, kind=kind, before=None, after=describe_part(p))
        if kind == "added"
        else PartChange(index=j, kind=kind, before=describe_part(p), after=None)
        for j, p in enumerate(present.parts)
    )
    return MessageChange(where=where, index=i, kind=kind, role=present.role, parts=parts)


def _part_changes(a: Message, b: Message) -> tuple[PartChange, ...]:
    out = []
    for j in range(max(len(a.parts), len(b.parts))):
        pa = a.parts[j] if j < len(a.parts) else None
        pb = b.parts[j] if j < len(b.parts) else None
        if pa == pb or (pa is not None and pb is not None and _content(pa) == _content(pb)):
            continue
        if pa is None or pb is None:
            kind: ChangeKind = "added" if pa is None else "removed"
            out.append(PartChange(index=j, kind=kind, before=_maybe(pa), after=_maybe(pb)))
            continue
        if isinstance(pa, ThinkingPart) and isinstance(pb, ThinkingPart):
            before, after = describe_pair(pa, pb)  # the text, else the signature, where it differs
            out.append(PartChange(index=j, kind="changed", before=before, after=after))
            continue
        before, after = describe_part(pa), describe_part(pb)
        text_a, text_b = _text(pa), _text(pb)
        if before == after and text_a is not None and text_b is not None:
            before, after = _around(text_a, text_b)  # the difference is past the clipped part
        out.append(PartChange(index=j, kind="changed", before=before, after=after))
    return tuple(out)


def _content(part: Part) -> dict[str, object]:
    """The part without its call id (see `_CALL_IDS`)."""
    return part.model_dump(exclude={"call_id"})


def _maybe(part: Part | None) -> str | None:
    return None if part is None else describe_part(part)


def _text(part: Part) -> str | None:
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, ToolResult | RetryPrompt):
        return part.content
    return None


def _around(a: str, b: str, context: int = 24) -> tuple[str, str]:
    """The two texts around their first difference, e.g. ``…cost is 42 dollars…``."""
    i = next((k for k, (x, y) in enumerate(zip(a, b, strict=False)) if x != y), min(len(a), len(b)))
    lo = max(0, i - context)

    def show(text: str) -> str:
        piece = text[lo : i + context]
        return f"{'…' if lo else ''}{piece!r}{'…' if i + context < len(text) else ''}"

    return f"text at {i}: {show(a)}", f"{show(b)}"


def _calls(calls: Sequence[ToolCall]) -> tuple[str, ...]:
    return tuple(describe_part(c).rsplit(" [", 1)[0].removeprefix("call ") for c in calls)


def _failure(state: AgentState) -> str | None:
    """Why the run failed, in a line: its error's type and message (`RunError.what`)."""
    error = run_error(state)
    return error.what if error is not None else None


def _final(state: AgentState) -> tuple[str, str | None, str | None]:
    return (
        state.status.value,
        state.stop_reason.value if state.stop_reason else None,
        state.output,
    )
