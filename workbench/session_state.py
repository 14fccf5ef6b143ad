"""What a `Session` is made of, as data: its conversation, its executions, and their boundaries.

A session's conversation is one tuple of messages across executions. Each execution starts with
a boundary marker: a user message the model reads ("Execution 2 of this conversation begins; ...")
and the views draw as a divider. The session made it, not a run, so it carries no run stamp; a
message a run made always does, which is what keeps a prompt that merely looks like a boundary
from being taken for one. Retention may replace the oldest executions by one summary message at
the very start; the `Retention` is part of the state, so a session read back keeps to it.
`SessionState` serializes to versioned JSON; reading checks that the boundaries and the
executions agree, so a hand-edited or truncated file is a clear error, not a session that
silently lost its structure.
"""

from __future__ import annotations

import re
import time
from typing import Any, Literal

from pydantic import Field, ValidationError

from workbench._record import Record
from workbench.errors import SessionFormatError
from workbench.ids import Id
from workbench.messages import JsonValue, Message, TextPart, Usage
from workbench.state import (
    MIGRATIONS,
    SCHEMA_VERSION,
    AgentState,
    ExecutionStatus,
    StopReason,
    migrated,
    new_id,
    read_versioned,
    validation_summary,
)

__all__ = [
    "DEFAULT_SUMMARY_PROMPT",
    "SESSION_SCHEMA_VERSION",
    "Compaction",
    "ExecutionEntry",
    "ForkPoint",
    "Retained",
    "Retention",
    "SessionState",
    "boundary_message",
    "boundary_number",
    "summary_message",
    "summary_span",
]

SESSION_SCHEMA_VERSION = 3
"""Version of the `SessionState` JSON format. Bump it (and add a migration) on any change.

Version 2 added the session's ``retention``; version 3 holds a paused state of `AgentState`
version 4 (it says when it paused): a session file an older workbench cannot read says so by
its version, not by a field it does not know. The paused state inside keeps its own version
and is migrated or refused as a state file is (`AgentState.from_json`).
"""

DEFAULT_SUMMARY_PROMPT = (
    "Summarize the conversation above for your own later use: the user's goals, what was "
    "decided, facts and results you found, and anything still open. Be brief and specific. "
    "Answer with the summary only."
)

_BOUNDARY = "[Execution {n} of this conversation begins; any messages above are from earlier ones.]"
_BOUNDARY_RE = re.compile(
    r"\[Execution (\d+) of this conversation begins; any messages above are from earlier ones\.\]"
)
_SUMMARY = "[Summary of executions {first} to {last} of this conversation, no longer shown:]\n"
_SUMMARY_RE = re.compile(
    r"\[Summary of executions (\d+) to (\d+) of this conversation, no longer shown:\]\n",
)


def boundary_message(number: int) -> Message:
    """The marker that starts execution ``number`` (1-based) of a session."""
    return Message.user(_BOUNDARY.format(n=number))


def boundary_number(message: Message) -> int | None:
    """The execution a boundary marker starts, or None if ``message`` is not one."""
    text = _session_text(message)
    found = _BOUNDARY_RE.fullmatch(text) if text is not None else None
    return int(found.group(1)) if found else None


def summary_message(first: int, last: int, summary: str) -> Message:
    """The message that stands for executions ``first`` to ``last`` once retention took them."""
    return Message.user(_SUMMARY.format(first=first, last=last) + summary)


def summary_span(message: Message) -> tuple[int, int] | None:
    """The executions a summary message stands for, or None if ``message`` is not one."""
    text = _session_text(message)
    found = _SUMMARY_RE.match(text) if text is not None else None
    return (int(found.group(1)), int(found.group(2))) if found else None


def _session_text(message: Message) -> str | None:
    """The text of a message the session made (a user message with no run stamp), else None."""
    if message.role != "user" or message.run_id is not None or len(message.parts) != 1:
        return None
    part = message.parts[0]
    return part.text if isinstance(part, TextPart) else None


class Retention(Record):
    """How much of a session's conversation later executions see.

    After each execution, the oldest whole executions leave the conversation until at most
    ``max_executions`` executions and ``max_messages`` messages remain (None: no limit). The
    latest execution always stays, even when it alone is over ``max_messages``. With
    ``summarize`` the executions that leave are replaced by one summary written by the agent's
    model (``summary_prompt`` asks for it); without, they are dropped.
    """

    max_messages: int | None = Field(default=None, ge=1)
    max_executions: int | None = Field(default=None, ge=1)
    summarize: bool = False
    summary_prompt: str = DEFAULT_SUMMARY_PROMPT


Retained = Literal["kept", "dropped", "summarized"]
"""Whether an execution's messages are in the conversation, or how retention took them."""


class ExecutionEntry(Record):
    """One execution of a session: which run it was and how it ended."""

    number: int
    """1-based position in the session; the boundary marker says the same number."""
    run_id: Id
    execution_id: Id
    """The run's latest execution (a run paused and resumed has several)."""
    status: ExecutionStatus
    stop_reason: StopReason | None = None
    steps: int = 0
    usage: Usage = Field(default_factory=Usage)
    output: str | None = None
    retained: Retained = "kept"

    @classmethod
    def of(cls, number: int, state: AgentState) -> ExecutionEntry:
        """The entry for execution ``number``, which ended (or paused) in ``state``."""
        return cls(
            number=number,
            run_id=state.run_id,
            execution_id=state.execution_id,
            status=state.status,
            stop_reason=state.stop_reason,
            steps=state.step,
            usage=state.usage,
            output=state.output,
        )


class Compaction(Record):
    """One application of retention: which executions left the conversation, and how."""

    executions: tuple[int, ...]
    mode: Literal["dropped", "summarized"]
    messages_before: int
    messages_after: int
    usage: Usage = Field(default_factory=Usage)
    """What the summary cost (nothing when dropping)."""
    hook_errors: tuple[str, ...] = ()
    hook_notes: tuple[str, ...] = ()
    error: str | None = None
    """Why the summary could not be made; the executions then stayed in the conversation."""
    at: float = Field(default_factory=time.time)


class ForkPoint(Record):
    """Where a forked session branched off: the session, execution and step."""

    session_id: Id
    execution: int
    step: int


class SessionState(Record):
    """A whole session as data: everything `Session.from_json` needs to go on elsewhere."""

    schema_version: int = SESSION_SCHEMA_VERSION
    session_id: Id = Field(default_factory=lambda: new_id("ses"))
    agent_name: str = "agent"
    messages: tuple[Message, ...] = ()
    """The conversation without the system prompt (each run adds the agent's own)."""
    executions: tuple[ExecutionEntry, ...] = ()
    compactions: tuple[Compaction, ...] = ()
    retention: Retention = Field(default_factory=Retention)
    """What the session keeps after each execution; in the state so that JSON carries it."""
    paused: AgentState | None = None
    """The last execution's state while it waits for approvals or results (resumable)."""
    forked_from: ForkPoint | None = None
    metadata: dict[str, JsonValue] = Field(default_factory=dict)
    created_at: float = Field(default_factory=time.time)

    def __repr__(self) -> str:  # short: the conversation (and metadata, maybe a key) fills a log
        paused = f", paused={self.paused.run_id!r}" if self.paused is not None else ""
        forked = ""
        if self.forked_from is not None:
            point = self.forked_from
            forked = f", forked_from=({point.session_id!r}, {point.execution}, {point.step})"
        return (
            f"SessionState(id={self.session_id!r}, agent={self.agent_name!r}, "
            f"executions={len(self.executions)}, messages={len(self.messages)}{paused}{forked})"
        )

    @property
    def kept(self) -> tuple[ExecutionEntry, ...]:
        """The executions whose messages are still in the conversation."""
        return tuple(e for e in self.executions if e.retained == "kept")

    def to_json(self, *, indent: int | None = None) -> str:
        """Serialize to JSON; `SessionState.from_json` gives back an identical state."""
        return self.model_dump_json(indent=indent)

    @classmethod
    def from_json(cls, text: str | bytes) -> SessionState:
        """Read a session written by `to_json`; `SessionFormatError` says what is wrong."""
        raw = read_versioned(text, "session", SESSION_SCHEMA_VERSION, SessionFormatError, _OLDER)
        paused = raw.get("paused")
        if isinstance(paused, dict):  # a state of its own version: an older one read as today's
            paused = migrated(
                paused, "session's paused state", SCHEMA_VERSION, SessionFormatError, MIGRATIONS
            )
            raw = dict(raw, paused=paused)
        try:
            state = cls.model_validate(raw)
        except ValidationError as exc:
            raise SessionFormatError(
                f"session JSON is not a valid session: {validation_summary(exc)}"
            ) from None
        state.check()
        return state

    def check(self) -> None:
        """Raise `SessionFormatError` unless executions, boundaries and messages agree."""
        numbers = [e.number for e in self.executions]
        if numbers != list(range(1, len(numbers) + 1)):
            raise SessionFormatError(f"session executions are numbered {numbers}, not 1, 2, ...")
        order = [_ORDER[e.retained] for e in self.executions]
        if order != sorted(order):
            raise SessionFormatError(
                "retention takes the oldest executions first (dropped, then summarized, then kept)"
            )
        messages = list(self.messages)
        summarized = [e.number for e in self.executions if e.retained == "summarized"]
        if summarized:
            _check_summary(messages, (summarized[0], summarized[-1]))
            messages = messages[1:]
        _check_boundaries(messages, self.kept)
        last = self.executions[-1] if self.executions else None
        if self.paused is not None and (
            last is None or last.run_id != self.paused.run_id or last.status is not _PAUSED
        ):
            raise SessionFormatError("the paused state is not the last execution of the session")


def _only_added_to(raw: dict[str, Any]) -> dict[str, Any]:
    """A session of a version whose layout today's only adds to, as it is.

    Version 1 kept no retention (the default applies); 1 and 2 hold a paused state of an older
    version, which `SessionState.from_json` migrates as it does any.
    """
    return dict(raw, schema_version=SESSION_SCHEMA_VERSION)


_OLDER = {1: _only_added_to, 2: _only_added_to}
"""How a session written with an older ``schema_version`` is read today."""


_PAUSED = ExecutionStatus.PAUSED
_ORDER = {"dropped": 0, "summarized": 1, "kept": 2}


def _check_summary(messages: list[Message], span: tuple[int, int]) -> None:
    if (summary_span(messages[0]) if messages else None) != span:
        found = _describe(messages[0]) if messages else "no message"
        raise SessionFormatError(
            f"broken boundary: the conversation must start with the summary of executions "
            f"{span[0]} to {span[1]}, found {found}"
        )


def _check_boundaries(messages: list[Message], kept: tuple[ExecutionEntry, ...]) -> None:
    """Each kept execution: its boundary marker, then only messages its own run made."""
    entries = iter(kept)
    current: ExecutionEntry | None = None
    for index, message in enumerate(messages):
        number = boundary_number(message)
        if number is not None:
            current = next(entries, None)
            if current is None or current.number != number:
                expected = f"execution {current.number}" if current else "no further execution"
                raise SessionFormatError(
                    f"broken boundary at message {index}: it starts execution {number}, "
                    f"but the session expects {expected}"
                )
        elif current is None or message.run_id != current.run_id:
            where = f"execution {current.number}" if current else "before the first boundary"
            raise SessionFormatError(
                f"broken boundary at message {index}: {_describe(message)} is in {where}, "
                "which another run made"
            )
    missing = next(entries, None)
    if missing is not None:
        raise SessionFormatError(
            f"broken boundary: execution {missing.number} has no boundary marker"
        )


def _describe(message: Message) -> str:
    made = f"run {message.run_id}" if message.run_id else "no run"
    return f"a {message.role} message from {made}"
