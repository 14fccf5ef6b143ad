"""In-process hooks, and running the hooks of one event: concurrently, never failing the run.

`HookDispatch` is what the loop holds: it picks the hooks that match an event, fills in the
common input fields, runs them together, combines their answers (the most restrictive decision
wins: deny > ask > allow), enforces what the event may change, and keeps timings, errors and
notes until the step record takes them.
"""

from __future__ import annotations

import asyncio
import os
import re
import time
from collections.abc import Awaitable, Callable, Sequence
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from workbench._record import Record
from workbench._sync import call_user
from workbench.hooks.command import CommandHook, HookFailure
from workbench.hooks.events import (
    EVENT_RIGHTS,
    HookEvent,
    HookInput,
    HookResult,
    compile_matcher,
    normalize_decision,
)
from workbench.hooks.transcript import Transcript
from workbench.messages import JsonValue
from workbench.records import HookTiming, StepRecord
from workbench.redact import redacted
from workbench.state import AgentState, ErrorInfo

__all__ = [
    "NO_VERDICT",
    "Hook",
    "HookDispatch",
    "HookFunction",
    "HookLog",
    "HookReport",
    "HookVerdict",
    "ParentHooks",
    "hook_tuple",
    "parent_hooks",
]

HookFunction = Callable[[Any], HookResult | Awaitable[HookResult | None] | None]
"""``fn(input) -> HookResult | None`` (sync or async); None changes nothing."""


@dataclass(frozen=True)
class Hook:
    """An in-process hook: ``function`` runs for ``event`` (when ``matcher`` matches).

    ``function`` gets the event's input (a `HookInput` subclass) and returns a `HookResult` or
    None. It runs concurrently with the event's other hooks, bounded by ``timeout`` seconds if
    given; a sync function runs in a worker thread (`workbench._sync.call_user`), so one that
    blocks holds up its own run only, and only until its timeout. A hook that raises or times out
    becomes a hook error on the step; the run goes on.
    """

    event: HookEvent
    function: HookFunction
    matcher: str | None = None
    timeout: float | None = None
    name: str = ""
    pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "event", HookEvent.parse(self.event))
        object.__setattr__(self, "pattern", compile_matcher(self.matcher))
        if not callable(self.function):
            raise TypeError(f"Hook function must be callable, got {self.function!r}")
        if not self.name:
            name = getattr(self.function, "__name__", type(self.function).__name__)
            object.__setattr__(self, "name", name)

    async def invoke(self, data: HookInput) -> HookResult | None:
        """Call the function with a private copy of ``data``."""
        try:
            answer = await asyncio.wait_for(call_user(self.function, _private(data)), self.timeout)
        except TimeoutError:
            raise HookFailure(f"timed out after {self.timeout:g}s") from None
        if answer is not None and not isinstance(answer, HookResult):
            raise HookFailure(f"returned {answer!r}, not a HookResult or None")
        return answer


AnyHook = Hook | CommandHook


def hook_tuple(hooks: Sequence[AnyHook]) -> tuple[AnyHook, ...]:
    """The hooks as a tuple, after checking each is a `Hook` or a `CommandHook`."""
    for hook in hooks:
        if not isinstance(hook, Hook | CommandHook):
            raise TypeError(f"hooks must be Hook or CommandHook objects, got {hook!r}")
    return tuple(hooks)


_MUTABLE_FIELDS = ("tool_input", "tool_response")


def _private(data: HookInput) -> HookInput:
    """A copy whose dicts a hook may change without touching the run."""
    fields = vars(data)
    mutable = {k: _copied(fields[k]) for k in _MUTABLE_FIELDS if k in fields}
    return data.model_copy(update=mutable) if mutable else data


def _copied(value: JsonValue) -> JsonValue:
    """A deep copy of JSON data (much cheaper than `copy.deepcopy`)."""
    if isinstance(value, dict):
        return {k: _copied(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_copied(v) for v in value]
    return value


def matches(hook: AnyHook, data: HookInput) -> bool:
    """True if ``hook`` runs for ``data``: same event and (where the event has one) the matcher."""
    if hook.event != data.hook_event_name:
        return False
    value = data.match_value
    return hook.pattern is None or value is None or hook.pattern.fullmatch(value) is not None


class HookReport(Record):
    """One hook invocation: which, when, how long, and what went wrong if anything did."""

    event: str
    hook: str
    started_at: float
    duration: float
    error: str | None = None
    exception: ErrorInfo | None = None
    """What an in-process hook raised, with its traceback."""


class HookVerdict(Record):
    """The combined answer of one event's hooks."""

    decision: str | None = None
    """``allow``, ``deny``, ``ask`` or ``block`` (most restrictive wins), or None."""
    reason: str = ""
    updated_input: dict[str, JsonValue] | None = None
    additional_context: str = ""
    stop: str | None = None
    """Why a hook ended the run (``continue_=False``), or None."""
    retry: bool = False
    """A PermissionDenied hook lets the model try the refused call again."""
    notes: tuple[str, ...] = ()
    reports: tuple[HookReport, ...] = ()
    duration: float = 0.0

    @property
    def blocked(self) -> bool:
        """True for deny or block."""
        return self.decision in ("deny", "block")

    @property
    def feedback(self) -> str:
        """What the model should read: a block's reason and any added context."""
        parts = [self.reason if self.decision == "block" else "", self.additional_context]
        return "\n\n".join(p for p in parts if p)


NO_VERDICT = HookVerdict()
_RANK = {None: 0, "allow": 1, "ask": 2, "block": 3, "deny": 3}


class _Outcome(Record):
    hook: AnyHook
    result: HookResult | None
    error: str | None
    started_at: float
    duration: float
    exception: ErrorInfo | None = None


async def _invoke(hook: AnyHook, data: HookInput, redact: Callable[[str], str]) -> _Outcome:
    started, wall = time.perf_counter(), time.time()
    result, error, raised = None, None, None
    try:
        result = await hook.invoke(data)
    except HookFailure as exc:
        error = str(exc)
    except Exception as exc:
        error = f"failed: {type(exc).__name__}: {exc}"
        raised = ErrorInfo.of(exc, step=data.step, redact=redact)
    return _Outcome(
        hook=hook,
        result=result,
        error=error,
        started_at=wall,
        duration=time.perf_counter() - started,
        exception=raised,
    )


@dataclass
class _Combined:
    """Accumulates the answers of one event's hooks, in the order the hooks were given."""

    event: HookEvent
    decision: str | None = None
    reasons: list[str] = field(default_factory=list)
    updated_input: dict[str, JsonValue] | None = None
    context: list[str] = field(default_factory=list)
    stop: str | None = None
    retry: bool = False
    notes: list[str] = field(default_factory=list)

    def add(self, name: str, result: HookResult) -> list[str]:
        """Take one answer; what it tried and may not do, as error texts."""
        rights = EVENT_RIGHTS[self.event]
        problems: list[str] = []
        try:
            decision = normalize_decision(self.event, result.decision)
            self._decide(decision, result.reason or self._unexplained(name, result.decision))
        except ValueError as exc:
            problems.append(f"{exc}; ignored")
        if result.updated_input is not None:
            if not rights.rewrite_input:
                problems.append(f"{self.event.value} hooks cannot rewrite tool input; ignored")
            elif self.updated_input is not None:
                problems.append("another hook already rewrote the input; this rewrite is ignored")
            else:
                self.updated_input = result.updated_input
        if result.additional_context:
            if rights.add_context:
                self.context.append(result.additional_context)
            else:
                problems.append(f"{self.event.value} hooks cannot add context; ignored")
        if result.retry:
            if rights.retry:
                self.retry = True
            else:
                problems.append(f"{self.event.value} hooks cannot ask for a retry; ignored")
        if not result.continue_ and rights.stop_run and self.stop is None:
            self.stop = result.stop_reason or f"stopped by {self.event.value} hook {name!r}"
        if result.system_message:
            self.notes.append(f"{self.event.value} hook {name!r}: {result.system_message}")
        return problems

    def _unexplained(self, name: str, decision: str | None) -> str | None:
        """A refusal (PreToolUse, PermissionRequest) with no reason still says which hook it was."""
        if "deny" not in EVENT_RIGHTS[self.event].decisions or decision in (None, "allow"):
            return None
        event = self.event.value
        if decision == "defer":
            return f"{event} hook {name!r} deferred the call"
        verb = "asks for approval" if decision == "ask" else "refused the call"
        return f"{event} hook {name!r} {verb} (no reason given)"

    def _decide(self, decision: str | None, reason: str | None) -> None:
        if _RANK[decision] > _RANK[self.decision]:
            self.decision, self.reasons = decision, []
        if decision is not None and decision == self.decision and reason:
            self.reasons.append(reason)


def combine(event: HookEvent, outcomes: Sequence[_Outcome], duration: float) -> HookVerdict:
    """One verdict from the hooks' answers, with a report per invocation."""
    if all(o.result is None and o.error is None for o in outcomes):  # observers: nothing to add
        quiet = (
            HookReport(
                event=event.value, hook=o.hook.name, started_at=o.started_at, duration=o.duration
            )
            for o in outcomes
        )
        return HookVerdict(reports=tuple(quiet), duration=duration)
    combined = _Combined(event)
    reports = []
    for outcome in outcomes:
        errors = [outcome.error] if outcome.error else []
        if outcome.result is not None:
            errors += combined.add(outcome.hook.name, outcome.result)
        error = "; ".join(errors) or None
        if error is not None:
            error = f"{event.value} hook {outcome.hook.name!r}: {error}"
        reports.append(
            HookReport(
                event=event.value,
                hook=outcome.hook.name,
                started_at=outcome.started_at,
                duration=outcome.duration,
                error=error,
                exception=outcome.exception,
            )
        )
    return HookVerdict(
        decision=combined.decision,
        reason="; ".join(dict.fromkeys(combined.reasons)),
        updated_input=combined.updated_input if combined.decision != "deny" else None,
        additional_context="\n\n".join(combined.context),
        stop=combined.stop,
        retry=combined.retry,
        notes=tuple(combined.notes),
        reports=tuple(reports),
        duration=duration,
    )


class HookLog(Record):
    """What hooks did since the last step record: for `Timing` and `StepRecord`."""

    seconds: float = 0.0
    timings: tuple[HookTiming, ...] = ()
    errors: tuple[str, ...] = ()
    notes: tuple[str, ...] = ()

    def __bool__(self) -> bool:
        return bool(self.timings or self.errors or self.notes)

    def added_to(self, record: StepRecord) -> StepRecord:
        """``record`` with these hook timings, errors and notes added to its own."""
        timing = record.timing.model_copy(
            update={
                "hooks": record.timing.hooks + self.seconds,
                "per_hook": record.timing.per_hook + self.timings,
            }
        )
        return record.model_copy(
            update={
                "timing": timing,
                "hook_errors": record.hook_errors + self.errors,
                "hook_messages": record.hook_messages + self.notes,
            }
        )


_NO_LOG = HookLog()


class HookDispatch:
    """The hooks of one execution, and what they did since the last step record."""

    def __init__(
        self,
        hooks: Sequence[AnyHook],
        state: Callable[[], AgentState],
        on_report: Callable[[HookReport], None] = lambda report: None,
        redact: Callable[[str], str] = redacted,
    ) -> None:
        self.hooks = tuple(hooks)
        self._redact = redact
        """The run's redactor: what a hook that raised leaves in the records goes through it."""
        self._state = state
        self._events = frozenset(h.event for h in self.hooks)
        self._on_report = on_report
        self._transcript = Transcript()
        self.stop_reason: str | None = None
        """Set once a hook asked to end the run (``continue_=False``)."""
        self._log: list[HookReport] = []
        self._seconds = 0.0
        self._errors: list[str] = []
        self._notes: list[str] = []

    def wants(self, event: HookEvent | str) -> bool:
        """True if any hook is registered for ``event``."""
        return event in self._events  # a StrEnum: its members and their names hash alike

    async def fire(self, data: HookInput) -> HookVerdict:
        """Run the hooks matching ``data`` (completed from the run state) and combine answers."""
        if data.hook_event_name not in self._events:
            return NO_VERDICT
        hooks = [h for h in self.hooks if matches(h, data)]
        if not hooks:
            return NO_VERDICT
        data = self._complete(self._state(), data, hooks)
        started = time.perf_counter()
        redact = self._redact
        if len(hooks) == 1:
            outcomes = [await _invoke(hooks[0], data, redact)]
        else:
            outcomes = list(await asyncio.gather(*(_invoke(h, data, redact) for h in hooks)))
        verdict = combine(data.event, outcomes, time.perf_counter() - started)
        self._keep(verdict)
        return verdict

    @property
    def unrecorded(self) -> bool:
        """True if hooks did something that no step record has taken yet."""
        return bool(self._log or self._errors or self._notes)

    def note(self, text: str, *, error: bool = False) -> None:
        """Keep a note (or an error) about hooks for the next step record."""
        (self._errors if error else self._notes).append(text)

    def take(self) -> HookLog:
        """What hooks did since the last call, for the step record being closed."""
        log = self.so_far()
        self._log, self._seconds, self._errors, self._notes = [], 0.0, [], []
        return log

    def so_far(self) -> HookLog:
        """What hooks did since the last `take`, left to be taken (a record of a step so far)."""
        if not self.unrecorded:
            return _NO_LOG
        return HookLog(
            seconds=self._seconds,
            timings=tuple(
                HookTiming(
                    event=r.event,
                    hook=r.hook,
                    duration=r.duration,
                    started_at=r.started_at,
                    error=r.error,
                    exception=r.exception,
                )
                for r in self._log
            ),
            errors=tuple(self._errors),
            notes=tuple(self._notes),
        )

    def close(self) -> None:
        """Remove the transcript file, if one was written."""
        self._transcript.remove()

    def _complete(self, state: AgentState, data: HookInput, hooks: list[AnyHook]) -> HookInput:
        update: dict[str, Any] = {
            "session_id": state.run_id,
            "cwd": _cwd(),
            "step": state.step,
            "agent_name": state.agent_name,
            "parent_run_id": state.parent_run_id,
            "messages": state.messages,
        }
        if any(isinstance(h, CommandHook) for h in hooks):
            update["transcript_path"] = self._transcript.write(
                state.messages, session_id=state.run_id, cwd=update["cwd"]
            )
        return data.model_copy(update=update)

    def _keep(self, verdict: HookVerdict) -> None:
        self._seconds += verdict.duration
        for report in verdict.reports:
            self._log.append(report)
            if report.error is not None:
                self._errors.append(report.error)
            self._on_report(report)
        self._notes.extend(verdict.notes)
        if verdict.stop is not None and self.stop_reason is None:
            self.stop_reason = verdict.stop
            self._notes.append(f"a hook stopped the run: {verdict.stop}")


def _cwd() -> str:
    try:
        return os.getcwd()
    except OSError:  # the directory was removed under us
        return ""


@dataclass(frozen=True)
class ParentHooks:
    """What a subagent run started by a tool sees of the parent run's hooks."""

    fire: Callable[[HookInput], Awaitable[HookVerdict]]
    note: Callable[[str], None]
    max_turns: int


parent_hooks: ContextVar[ParentHooks | None] = ContextVar("workbench_parent_hooks", default=None)
"""Set by the loop while tools run, so `Agent.as_tool` can fire SubagentStart/SubagentStop."""
