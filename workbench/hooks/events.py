"""Hook events, the read-only input each event gets, and what a hook may answer.

The inputs carry Claude Code's field names (``session_id``, ``transcript_path``, ``cwd``,
``hook_event_name``, ``tool_name``, ``tool_input``, ...), so the JSON a `CommandHook` writes to a
script's stdin is exactly what a Claude Code hook script expects. Workbench adds a few fields of
its own (``step``, ``agent_name``, ``parent_run_id``); scripts that do not know them ignore them.

What a hook may change depends on the event (`EVENT_RIGHTS`); anything else it answers is ignored
and recorded as a hook error on the step, so a misconfigured hook is visible rather than silent.

The protocol followed is Claude Code's, as of the version in `PROTOCOL_VERSION` (the one place it
is named): its events, input and output fields, exit codes and transcript layout. Events of that
protocol that have no place in a workbench run are listed in `NOT_FIRED`, with the reason.
"""

from __future__ import annotations

import re
from enum import StrEnum
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from workbench._record import Record
from workbench.messages import JsonValue, Message

__all__ = [
    "EVENT_RIGHTS",
    "NOT_FIRED",
    "PROTOCOL_VERSION",
    "EventRights",
    "HookEvent",
    "HookInput",
    "HookResult",
    "NotificationInput",
    "PermissionDeniedInput",
    "PermissionRequestInput",
    "PostToolUseFailureInput",
    "PostToolUseInput",
    "PreCompactInput",
    "PreToolUseInput",
    "SessionEndInput",
    "SessionStartInput",
    "StopInput",
    "SubagentStartInput",
    "SubagentStopInput",
    "ToolInput",
    "UserPromptSubmitInput",
    "compile_matcher",
]


PROTOCOL_VERSION = "2.1"
"""The Claude Code version whose hook protocol workbench follows (events, fields, exit codes,
the ``defer`` decision, the transcript layout); also the ``version`` of transcript lines."""

NOT_FIRED: dict[str, str] = {
    "Setup": "it fires for `claude --init` / `--maintenance`; a workbench run has no such phase",
    "PostCompact": "workbench fires PreCompact only (history processors have no after-step)",
    "StopFailure": "a failed run ends with status FAILED; SessionEnd fires with its reason",
    "InstructionsLoaded": "workbench loads no CLAUDE.md instructions",
    "CwdChanged": "a workbench run does not change directory",
    "FileChanged": "workbench does not watch files",
    "WorktreeCreate": "workbench creates no git worktrees",
    "WorktreeRemove": "workbench creates no git worktrees",
}
"""Events of the protocol that workbench knows but never fires, and why: a settings file that has
hooks for them loads with a warning (their hooks are skipped), instead of being refused."""


class HookEvent(StrEnum):
    """The points of a run where hooks fire (Claude Code's event names)."""

    SESSION_START = "SessionStart"
    USER_PROMPT_SUBMIT = "UserPromptSubmit"
    PRE_TOOL_USE = "PreToolUse"
    PERMISSION_REQUEST = "PermissionRequest"
    PERMISSION_DENIED = "PermissionDenied"
    POST_TOOL_USE = "PostToolUse"
    POST_TOOL_USE_FAILURE = "PostToolUseFailure"
    STOP = "Stop"
    SUBAGENT_START = "SubagentStart"
    SUBAGENT_STOP = "SubagentStop"
    PRE_COMPACT = "PreCompact"
    SESSION_END = "SessionEnd"
    NOTIFICATION = "Notification"

    @classmethod
    def parse(cls, value: HookEvent | str) -> HookEvent:
        """The event named ``value``; a clear error lists the known names."""
        try:
            return cls(value)
        except ValueError:
            known = ", ".join(e.value for e in cls)
            raise ValueError(f"unknown hook event {value!r}; known events: {known}") from None


Decision = Literal["allow", "deny", "ask", "block", "defer"]


class HookResult(BaseModel):
    """What a hook answers. Every field is optional; the default changes nothing.

    ``decision``: PreToolUse hooks answer ``allow``, ``deny``, ``ask`` or ``defer`` (``block``
    means deny; ``defer``, "decide later", pauses the run for approval as ``ask`` does);
    PermissionRequest hooks answer ``allow`` or ``deny`` for the user who would be asked;
    UserPromptSubmit, PostToolUse, Stop and SubagentStop hooks may ``block`` (refuse the prompt,
    send ``reason`` back to the model, or ask for one more turn). ``continue_=False`` ends the
    run with `StopReason.HOOK_STOP`, whatever the event.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    continue_: bool = True
    stop_reason: str | None = None
    """Why the run stops (with ``continue_=False``); shown to the user, not the model."""
    decision: Decision | None = None
    reason: str | None = None
    """Why: given to the model for a deny, a PostToolUse block or a forced turn."""
    updated_input: dict[str, JsonValue] | None = None
    """PreToolUse and PermissionRequest: the arguments the tool gets instead of the model's."""
    retry: bool = False
    """PermissionDenied only: tell the model it may try the refused call again."""
    additional_context: str | None = None
    """Text added for the model (after the prompt, or to the tool's result)."""
    system_message: str | None = None
    """A note for the user; kept on the step record."""


class HookInput(BaseModel):
    """What every hook gets. Frozen; dicts inside are copies, so a hook cannot change the run."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    hook_event_name: str
    session_id: str = ""
    """The run id."""
    transcript_path: str = ""
    """The conversation as JSONL (one `Message` per line); written for command hooks only."""
    cwd: str = ""
    permission_mode: str = "default"
    step: int = 0
    agent_name: str = ""
    parent_run_id: str | None = None
    messages: tuple[Message, ...] = Field(default=(), exclude=True)
    """The conversation so far (in-process hooks only; command hooks read the transcript)."""

    @property
    def event(self) -> HookEvent:
        """The event as a `HookEvent`."""
        return HookEvent(self.hook_event_name)

    @property
    def match_value(self) -> str | None:
        """What a hook's matcher is tested against; None for events that have no matcher."""
        return None


class ToolInput(HookInput):
    """What the events about one tool call (PreToolUse, PermissionRequest, ...) share."""

    tool_name: str
    tool_input: dict[str, JsonValue]
    tool_use_id: str

    @property
    def match_value(self) -> str | None:
        """The tool name."""
        return self.tool_name


class SessionStartInput(HookInput):
    """An execution starts: ``source`` is ``startup`` for a new run, ``resume`` after a pause."""

    hook_event_name: Literal["SessionStart"] = "SessionStart"
    source: str = "startup"
    model: str = ""

    @property
    def match_value(self) -> str | None:
        """The source."""
        return self.source


class UserPromptSubmitInput(HookInput):
    """A new run's prompt, before the first step."""

    hook_event_name: Literal["UserPromptSubmit"] = "UserPromptSubmit"
    prompt: str


class PreToolUseInput(ToolInput):
    """A tool call the guards let through, before it runs."""

    hook_event_name: Literal["PreToolUse"] = "PreToolUse"


class PermissionRequestInput(ToolInput):
    """A call that needs approval, before the run pauses for it: a hook may answer instead.

    ``reason`` (a workbench field) says why approval is needed: the guard's or hook's reason, or
    that the tool requires it.
    """

    hook_event_name: Literal["PermissionRequest"] = "PermissionRequest"
    permission_suggestions: tuple[JsonValue, ...] = ()
    reason: str = ""


class PermissionDeniedInput(ToolInput):
    """A call a guard or hook refused (not one the user refused); ``reason`` is why."""

    hook_event_name: Literal["PermissionDenied"] = "PermissionDenied"
    reason: str


class PostToolUseInput(ToolInput):
    """A tool call that ran; ``tool_response`` is the text the model will read."""

    hook_event_name: Literal["PostToolUse"] = "PostToolUse"
    tool_response: JsonValue


class PostToolUseFailureInput(ToolInput):
    """A tool call that failed (raised, timed out, or got invalid arguments)."""

    hook_event_name: Literal["PostToolUseFailure"] = "PostToolUseFailure"
    error: str
    is_interrupt: bool = False


class StopInput(HookInput):
    """The model ended the run on its own (no tool calls, or the completion tool ran)."""

    hook_event_name: Literal["Stop"] = "Stop"
    stop_hook_active: bool = False
    """True when a Stop hook already forced a turn in this execution."""


class SubagentStartInput(HookInput):
    """A subagent (`Agent.as_tool`) starts a run; ``agent_id`` is its run id."""

    hook_event_name: Literal["SubagentStart"] = "SubagentStart"
    agent_id: str
    agent_type: str

    @property
    def match_value(self) -> str | None:
        """The subagent's name."""
        return self.agent_type


class SubagentStopInput(HookInput):
    """A subagent's run ended."""

    hook_event_name: Literal["SubagentStop"] = "SubagentStop"
    agent_id: str
    agent_type: str
    stop_hook_active: bool = False
    agent_transcript_path: str = ""

    @property
    def match_value(self) -> str | None:
        """The subagent's name."""
        return self.agent_type


class PreCompactInput(HookInput):
    """History processors dropped messages from what the model will see in this step."""

    hook_event_name: Literal["PreCompact"] = "PreCompact"
    trigger: str = "auto"
    custom_instructions: str = ""
    messages_before: int = 0
    messages_after: int = 0

    @property
    def match_value(self) -> str | None:
        """The trigger."""
        return self.trigger


class SessionEndInput(HookInput):
    """The execution ended or paused; ``reason`` is the stop reason, or ``paused``."""

    hook_event_name: Literal["SessionEnd"] = "SessionEnd"
    reason: str


class NotificationInput(HookInput):
    """The run pauses because tool calls wait for approval."""

    hook_event_name: Literal["Notification"] = "Notification"
    message: str
    notification_type: str = "permission_prompt"

    @property
    def match_value(self) -> str | None:
        """The notification type."""
        return self.notification_type


class EventRights(Record):
    """What hooks of one event may change."""

    decisions: frozenset[str] = frozenset()
    """Decisions the event acts on (after ``block`` -> ``deny`` for PreToolUse, and back)."""
    rewrite_input: bool = False
    add_context: bool = False
    retry: bool = False
    stop_run: bool = True


_BLOCK = frozenset({"block"})

EVENT_RIGHTS: dict[HookEvent, EventRights] = {
    HookEvent.SESSION_START: EventRights(add_context=True),
    HookEvent.USER_PROMPT_SUBMIT: EventRights(decisions=_BLOCK, add_context=True),
    HookEvent.PRE_TOOL_USE: EventRights(
        decisions=frozenset({"allow", "deny", "ask"}), rewrite_input=True
    ),
    HookEvent.PERMISSION_REQUEST: EventRights(
        decisions=frozenset({"allow", "deny"}), rewrite_input=True
    ),
    HookEvent.PERMISSION_DENIED: EventRights(retry=True),
    HookEvent.POST_TOOL_USE: EventRights(decisions=_BLOCK, add_context=True),
    HookEvent.POST_TOOL_USE_FAILURE: EventRights(add_context=True),
    HookEvent.STOP: EventRights(decisions=_BLOCK),
    HookEvent.SUBAGENT_START: EventRights(),
    HookEvent.SUBAGENT_STOP: EventRights(decisions=_BLOCK),
    HookEvent.PRE_COMPACT: EventRights(),
    HookEvent.SESSION_END: EventRights(stop_run=False),
    HookEvent.NOTIFICATION: EventRights(),
}
"""The enforcement table: PreToolUse may allow/deny/ask and rewrite the input; PermissionRequest may
allow (perhaps rewriting the input) or deny in the user's place; PermissionDenied may let the model
retry; UserPromptSubmit may block or add context; PostToolUse may add to the result; Stop may ask
for one more turn; the others observe. Any event but SessionEnd (which fires once the run has
stopped) may end the run."""


def normalize_decision(event: HookEvent, decision: str | None) -> str | None:
    """The decision as the event understands it, or None for "no objection".

    Raises ValueError for a decision the event cannot act on.
    """
    rights = EVENT_RIGHTS[event]
    if decision is None or (decision == "allow" and "allow" not in rights.decisions):
        return None
    if decision == "block" and "deny" in rights.decisions:
        return "deny"
    if event is HookEvent.PRE_TOOL_USE and decision == "defer":
        return "ask"  # the run pauses; whoever resumes it decides
    if decision == "deny" and "block" in rights.decisions:
        return "block"
    if decision not in rights.decisions:
        raise ValueError(f"{event.value} hooks cannot decide {decision!r}")
    return decision


def compile_matcher(matcher: str | None) -> re.Pattern[str] | None:
    """A matcher as Claude Code reads it: empty or ``*`` matches all, else a full-match regex."""
    if matcher is None or matcher in ("", "*"):
        return None
    try:
        return re.compile(matcher)
    except re.error as exc:
        raise ValueError(f"hook matcher {matcher!r} is not a valid regex: {exc}") from None
