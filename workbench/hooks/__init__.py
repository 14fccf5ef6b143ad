"""Hooks: watch and steer a run without touching the loop, compatible with Claude Code hooks.

Events fire at fixed points of the loop (see `HookEvent` and docs in `workbench.engine`). A hook
is an in-process `Hook` (a Python callable) or a `CommandHook` (a shell command speaking Claude
Code's JSON protocol); `hooks_from_settings` reads them from a Claude Code settings file.
"""

from workbench.hooks.command import (
    CommandHook,
    HookSettingsWarning,
    hooks_from_plugin,
    hooks_from_settings,
)
from workbench.hooks.events import (
    EVENT_RIGHTS,
    NOT_FIRED,
    PROTOCOL_VERSION,
    EventRights,
    HookEvent,
    HookInput,
    HookResult,
    NotificationInput,
    PermissionDeniedInput,
    PermissionRequestInput,
    PostToolUseFailureInput,
    PostToolUseInput,
    PreCompactInput,
    PreToolUseInput,
    SessionEndInput,
    SessionStartInput,
    StopInput,
    SubagentStartInput,
    SubagentStopInput,
    UserPromptSubmitInput,
)
from workbench.hooks.runner import Hook, HookFunction

__all__ = [
    "EVENT_RIGHTS",
    "NOT_FIRED",
    "PROTOCOL_VERSION",
    "CommandHook",
    "EventRights",
    "Hook",
    "HookEvent",
    "HookFunction",
    "HookInput",
    "HookResult",
    "HookSettingsWarning",
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
    "UserPromptSubmitInput",
    "hooks_from_plugin",
    "hooks_from_settings",
]
