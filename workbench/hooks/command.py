"""`CommandHook`: a shell command that speaks Claude Code's hook protocol (`PROTOCOL_VERSION`).

The hook input goes to the command's stdin as JSON. Exit 0: stdout is read as JSON (``continue``,
``stopReason``, ``systemMessage``, ``decision``/``reason``, ``hookSpecificOutput`` with
``permissionDecision`` (``allow``/``deny``/``ask``/``defer``), ``permissionDecisionReason``,
``updatedInput``, ``additionalContext``; PermissionRequest's ``decision`` with ``behavior``,
``updatedInput``, ``message``, ``interrupt``; PermissionDenied's ``retry``). Plain text on stdout is
a success too, as in Claude Code: added context for UserPromptSubmit and SessionStart, and a note
for the user (kept on the step record) for every other event. Exit 2: block, with stderr as the
reason. Any other exit code is a non-blocking error.

Every command gets ``CLAUDE_PROJECT_DIR``; hooks loaded from a plugin (`hooks_from_plugin`, or a
plugin's ``hooks/hooks.json`` given to `hooks_from_settings`) also get ``CLAUDE_PLUGIN_ROOT``, so
commands written as ``${CLAUDE_PLUGIN_ROOT}/hooks/stop.sh`` run unchanged.

The command runs in its own session (process group); at its timeout, or when it prints more than
``max_output`` bytes, the whole group is killed, so children it spawned do not outlive it.
"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import os
import re
import signal
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from workbench._json import loads
from workbench.errors import HookFailure
from workbench.hooks.events import (
    EVENT_RIGHTS,
    NOT_FIRED,
    HookEvent,
    HookInput,
    HookResult,
    compile_matcher,
)
from workbench.messages import JsonValue
from workbench.redact import redacted
from workbench.tools import truncate

__all__ = [
    "CommandHook",
    "HookFailure",
    "HookSettingsWarning",
    "hooks_from_plugin",
    "hooks_from_settings",
]


class HookSettingsWarning(UserWarning):
    """A settings file has hooks workbench skips (events of the protocol it never fires)."""


_EVENT_NAMES = frozenset(e.value for e in HookEvent)
_PLAIN_TEXT_CONTEXT = frozenset({HookEvent.USER_PROMPT_SUBMIT, HookEvent.SESSION_START})

FOR_THE_MODEL = 10_000
"""Characters of a command hook's reason or added context the model reads at most, as Claude
Code is said to inline (what is past it is cut, with a notice): a hook's output is bounded only
by `CommandHook.max_output` (1 MiB), and a denial reason of 900 KB went whole to the model as
the call's result, to the store and to the spans."""


@dataclass(frozen=True)
class CommandHook:
    """Run ``command`` (through ``/bin/sh``) for ``event``, Claude Code style.

    ``matcher`` is a regex matched in full against the tool name for tool events (the source for
    SessionStart, the trigger for PreCompact, the agent name for subagent events); empty or
    ``*`` matches everything. ``timeout`` is in seconds.
    """

    event: HookEvent
    command: str
    matcher: str | None = None
    timeout: float = 60.0
    max_output: int = 1 << 20
    """Bytes of stdout (and of stderr) read at most; a hook that prints more is killed."""
    env: Mapping[str, str] = field(default_factory=dict, hash=False, repr=False)
    """Environment variables the command gets on top of the process's (``CLAUDE_PLUGIN_ROOT``)."""
    pattern: re.Pattern[str] | None = field(init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "event", HookEvent.parse(self.event))
        object.__setattr__(self, "pattern", compile_matcher(self.matcher))
        if not self.command.strip():
            raise ValueError("CommandHook needs a command")
        if self.timeout <= 0:
            raise ValueError(f"CommandHook timeout must be positive, got {self.timeout}")

    def __repr__(self) -> str:  # the command as `name` shows it: a credential in it stays hidden
        return f"CommandHook({self.event.value!r}, {self.name!r}, matcher={self.matcher!r})"

    @functools.cached_property
    def name(self) -> str:
        """The command, redacted and shortened, for records, the store, spans and reports.

        A command line may carry a credential (``curl -H 'Authorization: Bearer ...'``); the name
        is made once, here, so every place that shows the hook shows it redacted.
        """
        command = redacted(self.command)
        return command if len(command) <= 80 else f"{command[:77]}..."

    async def invoke(self, data: HookInput) -> HookResult | None:
        """Run the command with ``data`` on stdin and read its answer."""
        payload = data.model_dump_json().encode()
        code, out, err = await _run(self, payload, data.cwd or None)
        if code == 0:
            return _for_the_model(parse_output(data.event, out.decode(errors="replace")))
        reason = err.decode(errors="replace").strip()
        if code == 2:
            blocked = _blocking(data.event, reason or f"blocked by hook {self.name!r} (exit 2)")
            return _for_the_model(blocked)
        raise HookFailure(f"exit {code}: {_clip(reason) or 'no stderr'}")


def _for_the_model(result: HookResult | None) -> HookResult | None:
    """``result`` with what the model reads of it (reason, context) cut to `FOR_THE_MODEL`."""
    if result is None:
        return None
    cut = {
        name: truncate(text, FOR_THE_MODEL)
        for name in ("reason", "additional_context")
        if isinstance(text := getattr(result, name), str) and len(text) > FOR_THE_MODEL
    }
    return result.model_copy(update=cut) if cut else result


def _blocking(event: HookEvent, reason: str) -> HookResult:
    """Exit 2: a block where the event can block; elsewhere stderr is only a note for the user."""
    if EVENT_RIGHTS[event].decisions:
        decision = "deny" if event is HookEvent.PRE_TOOL_USE else "block"
        return HookResult(decision=decision, reason=reason)
    return HookResult(system_message=reason)


async def _run(hook: CommandHook, payload: bytes, cwd: str | None) -> tuple[int, bytes, bytes]:
    env = {**os.environ, **hook.env}
    env.setdefault("CLAUDE_PROJECT_DIR", cwd or os.getcwd())
    process = await asyncio.create_subprocess_shell(
        hook.command,
        stdin=asyncio.subprocess.PIPE,
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
        start_new_session=True,
        env=env,
        cwd=cwd,
    )
    kill = _group_killer(process.pid)
    out, err = _Capture(hook.max_output), _Capture(hook.max_output)
    try:
        async with asyncio.timeout(hook.timeout):
            assert process.stdin is not None
            assert process.stdout is not None
            assert process.stderr is not None
            await asyncio.gather(
                _feed(process.stdin, payload),
                out.drain(process.stdout, kill),
                err.drain(process.stderr, kill),
            )
            code = await process.wait()
    except TimeoutError:
        killed = f"timed out after {hook.timeout:g}s; its process group was killed"
        raise HookFailure(killed) from None
    finally:
        if process.returncode is None:
            kill()
            await process.wait()
    if out.overflow or err.overflow:
        which = "stdout" if out.overflow else "stderr"
        raise HookFailure(f"printed more than {hook.max_output:,} bytes on {which}; killed")
    return code, bytes(out.data), bytes(err.data)


def _group_killer(pid: int) -> Callable[[], None]:
    """Kill the hook's whole process group (it leads its own session, so the group id is pid)."""

    def kill() -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(pid, signal.SIGKILL)

    return kill


@dataclass
class _Capture:
    limit: int
    data: bytearray = field(default_factory=bytearray)
    overflow: bool = False

    async def drain(self, stream: asyncio.StreamReader, kill: Callable[[], None]) -> None:
        """Read the stream to its end, keeping up to ``limit`` bytes; past that, kill the hook.

        The rest is read and dropped: a full pipe left unread pauses its transport, which then
        never sees the pipe close and stays open after the hook is gone.
        """
        while chunk := await stream.read(1 << 16):
            if self.overflow:
                continue  # past the limit: read on to the end, dropping what comes
            if len(self.data) + len(chunk) > self.limit:
                self.overflow = True
                kill()
            else:
                self.data += chunk


async def _feed(stdin: asyncio.StreamWriter, payload: bytes) -> None:
    """Write the input; a hook that exits without reading it is not an error."""
    with contextlib.suppress(BrokenPipeError, ConnectionResetError):
        stdin.write(payload)
        await stdin.drain()
    stdin.close()


# -- Claude Code's output JSON ------------------------------------------------------------------


class _Behavior(BaseModel):
    """A PermissionRequest hook's ``decision``: answer the approval in the user's place."""

    model_config = ConfigDict(extra="allow")

    behavior: Literal["allow", "deny"]
    updatedInput: dict[str, JsonValue] | None = None
    message: str | None = None
    interrupt: bool = False
    """With ``deny``: stop the run too."""


class _Specific(BaseModel):
    """``hookSpecificOutput``, with Claude Code's field names."""

    model_config = ConfigDict(extra="allow")

    hookEventName: str | None = None
    permissionDecision: Literal["allow", "deny", "ask", "defer"] | None = None
    permissionDecisionReason: str | None = None
    updatedInput: dict[str, JsonValue] | None = None
    additionalContext: str | None = None
    decision: _Behavior | None = None
    retry: bool = False


class _Output(BaseModel):
    model_config = ConfigDict(extra="allow", populate_by_name=True)

    continue_: bool = Field(True, alias="continue")
    stopReason: str | None = None
    suppressOutput: bool = False
    systemMessage: str | None = None
    decision: Literal["approve", "allow", "block", "deny", "ask"] | None = None
    reason: str | None = None
    hookSpecificOutput: _Specific | None = None


def parse_output(event: HookEvent, stdout: str) -> HookResult | None:
    """A hook's stdout (exit 0) as a `HookResult`; raises `HookFailure` for garbage."""
    text = stdout.strip()
    if not text:
        return None
    if not text.startswith("{"):  # plain text: a success, as in Claude Code
        if event in _PLAIN_TEXT_CONTEXT:
            return HookResult(additional_context=text)
        return HookResult(system_message=text)
    try:
        raw = loads(text)
    except ValueError:  # not JSON, or nested deeper than MAX_DEPTH
        raise HookFailure(f"stdout is not JSON: {_clip(text)!r}") from None
    try:
        output = _Output.model_validate(raw)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in problem["loc"])
        raise HookFailure(f"stdout is not a hook answer ({where}: {problem['msg']})") from None
    specific = output.hookSpecificOutput or _Specific()
    asked = specific.decision  # a PermissionRequest hook's answer, if it gave one
    decision = specific.permissionDecision or (asked and asked.behavior) or output.decision
    interrupt = asked is not None and asked.behavior == "deny" and asked.interrupt
    message = asked.message if asked else None
    return HookResult(
        continue_=output.continue_ and not interrupt,
        stop_reason=output.stopReason or (message if interrupt else None),
        decision="allow" if decision == "approve" else decision,
        reason=specific.permissionDecisionReason or message or output.reason,
        updated_input=specific.updatedInput or (asked.updatedInput if asked else None),
        additional_context=specific.additionalContext,
        system_message=output.systemMessage,
        retry=specific.retry,
    )


def _clip(text: str, limit: int = 500) -> str:
    return text if len(text) <= limit else f"{text[:limit]}... ({len(text):,} characters)"


# -- settings files -----------------------------------------------------------------------------


class _CommandSpec(BaseModel):
    type: str
    command: str = ""
    timeout: float = 60.0


class _MatcherGroup(BaseModel):
    matcher: str = ""
    hooks: list[_CommandSpec]


class _Settings(BaseModel):
    model_config = ConfigDict(extra="allow")

    hooks: dict[str, list[_MatcherGroup]] = Field(default_factory=dict)


def hooks_from_settings(
    path: str | os.PathLike[str],
    *,
    strict: bool = True,
    plugin_root: str | os.PathLike[str] | None = None,
) -> list[CommandHook]:
    """The command hooks of a Claude-Code-style settings file (``.claude/settings.json``).

    Other settings in the file are ignored. Hooks for events of the protocol that workbench
    never fires (`NOT_FIRED`: ``Setup``, ``PostCompact``, ...) are
    skipped with a `HookSettingsWarning` saying why. Unknown events and hook types workbench does
    not run (``"type": "prompt"``) raise ValueError, or are skipped with ``strict=False``.

    A plugin's ``hooks/hooks.json`` (next to its ``.claude-plugin/``) is read as the plugin's:
    its commands get ``CLAUDE_PLUGIN_ROOT``; ``plugin_root`` names the plugin directory outright.
    """
    path = Path(path)
    text = path.read_bytes()  # as bytes: one not UTF-8 is said as the JSON's problem, with where
    try:
        settings = _Settings.model_validate_json(text)
    except ValidationError as exc:
        problem = exc.errors(include_url=False)[0]
        where = ".".join(str(p) for p in problem["loc"]) or "<root>"
        raise ValueError(f"{path}: not a hooks settings file ({where}: {problem['msg']})") from None
    if plugin_root is None and _is_plugin_hooks_file(path):
        plugin_root = path.parent.parent
    env = {} if plugin_root is None else {"CLAUDE_PLUGIN_ROOT": str(Path(plugin_root).resolve())}
    hooks: list[CommandHook] = []
    for name, groups in settings.hooks.items():
        if name in NOT_FIRED:
            warnings.warn(
                HookSettingsWarning(f"{path}: {name} hooks skipped: {NOT_FIRED[name]}"),
                stacklevel=2,
            )
            continue
        if name not in _EVENT_NAMES:
            if strict:
                raise ValueError(f"{path}: {_unknown(name)}")
            continue
        for group in groups:
            hooks.extend(_group_hooks(path, HookEvent(name), group, strict, env))
    return hooks


def hooks_from_plugin(
    plugin_dir: str | os.PathLike[str], *, strict: bool = True
) -> list[CommandHook]:
    """The command hooks of a Claude Code plugin: its ``hooks/hooks.json``, with its root set."""
    return hooks_from_settings(
        Path(plugin_dir) / "hooks" / "hooks.json", strict=strict, plugin_root=plugin_dir
    )


def _is_plugin_hooks_file(path: Path) -> bool:
    return path.parent.name == "hooks" and (path.parent.parent / ".claude-plugin").is_dir()


def _group_hooks(
    path: Path, event: HookEvent, group: _MatcherGroup, strict: bool, env: dict[str, str]
) -> list[CommandHook]:
    made = []
    for spec in group.hooks:
        if spec.type != "command" or not spec.command:
            if strict:
                raise ValueError(
                    f"{path}: {event.value} hook of type {spec.type!r} is not supported "
                    '(only "command" hooks)'
                    if spec.type != "command"
                    else f"{path}: a {event.value} command hook without a command"
                )
            continue
        try:  # a matcher that is no regex, a timeout that is not positive
            hook = CommandHook(event, spec.command, group.matcher or None, spec.timeout, env=env)
        except ValueError as exc:
            raise ValueError(
                f"{path}: {event.value} hook {redacted(spec.command)!r}: {exc}"
            ) from None
        made.append(hook)
    return made


def _unknown(name: str) -> str:
    known = ", ".join(e.value for e in HookEvent)
    return f"unknown hook event {name!r}; known events: {known}"
