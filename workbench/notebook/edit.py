"""Messages as editable text or JSON, and back, with errors that say where and what.

The text form is meant for hand editing in a notebook::

    ## user
    What is 17 + 25?

    ## assistant
    @call add #call_1
    {"a": 17, "b": 25}

    ## tool
    @result add #call_1
    42

A message starts with ``## role``; plain lines are its text; ``@call NAME #ID`` (JSON arguments
follow), ``@result NAME #ID``, ``@error NAME #ID``, ``@retry NAME [#ID]``, ``@thinking
PROVIDER [#ID]`` and ``@redacted_thinking PROVIDER`` start the other parts, whose content
follows. A thinking part's signature is not in the text: a message that comes back with the same
reasoning gets its signature back (`keep_provenance`), an edited one goes without (a provider
would refuse the old signature over new text). The JSON form is a list of `Message` objects as
pydantic dumps them. Either way, a message that comes back unchanged keeps its provenance (run,
step), so a re-run can tell inherited messages from edited ones.
"""

from __future__ import annotations

import json
import re
from collections.abc import Sequence

from pydantic import TypeAdapter, ValidationError

from workbench._json import MAX_DEPTH, VALUE_DEPTH, loads
from workbench.errors import MessageFormatError
from workbench.messages import (
    Message,
    Part,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)

__all__ = [
    "MessageFormatError",
    "keep_provenance",
    "messages_from_json",
    "messages_from_text",
    "messages_to_json",
    "messages_to_text",
]

_ROLES = ("system", "user", "assistant", "tool")
_HEADER = re.compile(r"^##\s+(\S+)\s*$")
_DIRECTIVE = re.compile(
    r"^@(call|result|error|retry|thinking|redacted_thinking)(?:\s+([^\s#]+))?(?:\s+#(\S+))?\s*$"
)
_PROVENANCE = {"run_id", "execution_id", "step"}
_MESSAGES = TypeAdapter(list[Message])


def messages_to_text(messages: Sequence[Message]) -> str:
    """Messages in the editable text form (see the module docstring).

    >>> print(messages_to_text([Message.user("hi"), Message.assistant("hello")]), end="")
    ## user
    hi
    <BLANKLINE>
    ## assistant
    hello
    """
    blocks = []
    for message in messages:
        lines = [f"## {message.role}"]
        for part in message.parts:
            lines.extend(_part_lines(part))
        blocks.append("\n".join(lines))
    return "\n\n".join(blocks) + "\n"


def _part_lines(part: Part) -> list[str]:
    if isinstance(part, TextPart):
        return [part.text]
    if isinstance(part, ToolCall):
        body = part.invalid_arguments or json.dumps(part.arguments, ensure_ascii=False)
        return [f"@call {part.name} #{part.call_id}", body]
    if isinstance(part, ToolResult):
        kind = "error" if part.is_error else "result"
        return [f"@{kind} {part.name or '-'} #{part.call_id}", part.content]
    if isinstance(part, ThinkingPart):
        kind, ref = ("redacted_thinking", "") if part.redacted else ("thinking", part.text)
        about = f" #{part.id}" if part.id else ""
        return [f"@{kind} {part.provider or '-'}{about}", ref]
    call = f" #{part.call_id}" if part.call_id else ""
    return [f"@retry {part.name or '-'}{call}", part.content]


def messages_from_text(text: str) -> list[Message]:
    """Read the text form back; `MessageFormatError` names the line of any mistake."""
    messages: list[Message] = []
    role: str | None = None
    blocks: list[tuple[str | None, int, list[str]]] = []
    for number, line in enumerate(text.splitlines(), start=1):
        header = _HEADER.match(line)
        directive = _DIRECTIVE.match(line)
        if header:
            if role is not None:
                messages.append(_message(role, blocks))
            role = header.group(1)
            if role not in _ROLES:
                raise MessageFormatError(
                    f"line {number}: unknown role {role!r}; use one of {', '.join(_ROLES)}"
                )
            blocks = [(None, number, [])]
        elif role is None:
            if line.strip():
                raise MessageFormatError(
                    f"line {number}: text before the first message; start with a line like "
                    "'## user'"
                )
        elif directive or line.startswith("@"):
            if not directive:
                raise MessageFormatError(
                    f"line {number}: {line.strip()!r} is not a part; use @call NAME #ID, "
                    "@result NAME #ID, @error NAME #ID, @retry NAME [#ID] or "
                    "@thinking PROVIDER [#ID]"
                )
            blocks.append((line, number, []))
        else:
            blocks[-1][2].append(line)
    if role is None:
        raise MessageFormatError("no messages: start each one with a line like '## user'")
    messages.append(_message(role, blocks))
    return messages


def _message(role: str, blocks: list[tuple[str | None, int, list[str]]]) -> Message:
    parts: list[Part] = []
    for head, number, body in blocks:
        content = "\n".join(body).strip("\n")
        if head is None:
            if content:
                parts.append(TextPart(text=content))
            continue
        parts.append(_directive_part(head, number, content))
    if not parts:
        raise MessageFormatError(f"line {blocks[0][1]}: the {role} message is empty")
    try:
        return Message(role=role, parts=tuple(parts))
    except ValidationError as exc:  # pragma: no cover - roles and parts are checked above
        raise MessageFormatError(str(exc)) from None


def _directive_part(head: str, number: int, content: str) -> Part:
    match = _DIRECTIVE.match(head)
    assert match is not None
    kind, name, call_id = match.groups()
    name = "" if name in (None, "-") else name
    if kind == "retry":
        return RetryPrompt(content=content, name=name, call_id=call_id)
    if kind in ("thinking", "redacted_thinking"):
        redacted = kind == "redacted_thinking"
        text = "" if redacted else content
        return ThinkingPart(text=text, provider=name or None, id=call_id, redacted=redacted)
    if not name and kind == "call":
        raise MessageFormatError(f"line {number}: @call needs a tool name: @call NAME #ID")
    if not call_id:
        raise MessageFormatError(f"line {number}: @{kind} needs a call id: @{kind} NAME #ID")
    if kind != "call":
        return ToolResult(call_id=call_id, name=name, content=content, is_error=kind == "error")
    try:
        arguments = loads(content, VALUE_DEPTH) if content.strip() else {}
    except json.JSONDecodeError as exc:
        raise MessageFormatError(
            f"line {number + exc.lineno}: the arguments of @call {name} are not valid JSON: "
            f"{exc.msg}"
        ) from None
    except ValueError:
        raise MessageFormatError(
            f"line {number + 1}: the arguments of @call {name} are nested too deeply "
            f"(at most {VALUE_DEPTH} levels)"
        ) from None
    if not isinstance(arguments, dict):
        raise MessageFormatError(
            f"line {number + 1}: the arguments of @call {name} must be a JSON object, "
            f"not {type(arguments).__name__}"
        )
    return ToolCall(name=name, arguments=arguments, call_id=call_id)


def messages_to_json(messages: Sequence[Message]) -> str:
    """Messages as indented JSON (without provenance, which `keep_provenance` restores)."""
    data = [m.model_dump(mode="json", exclude=_PROVENANCE) for m in messages]
    return json.dumps(data, indent=2, ensure_ascii=False)


def messages_from_json(text: str) -> list[Message]:
    """Read the JSON form back; `MessageFormatError` says which message and field is wrong."""
    try:
        raw = loads(text)
    except json.JSONDecodeError as exc:
        raise MessageFormatError(
            f"not valid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}"
        ) from None
    except ValueError:
        raise MessageFormatError(
            f"the JSON is nested too deeply to read (at most {MAX_DEPTH} levels)"
        ) from None
    if not isinstance(raw, list):
        raise MessageFormatError(f"expected a JSON list of messages, got {type(raw).__name__}")
    try:
        return _MESSAGES.validate_python(raw)
    except ValidationError as exc:
        problems = [
            f"message {e['loc'][0]}: {'.'.join(str(p) for p in e['loc'][1:]) or 'itself'}: "
            f"{e['msg']}"
            for e in exc.errors(include_url=False)[:5]
        ]
        raise MessageFormatError("; ".join(problems)) from None


def keep_provenance(original: Sequence[Message], edited: Sequence[Message]) -> list[Message]:
    """The edited messages, keeping the originals (and their provenance) where unchanged.

    A message equal in content to the original at its position is that original itself, so it
    keeps its run and step, and its thinking parts their signatures (which the text form leaves
    out).
    """
    out = []
    for position, message in enumerate(edited):
        before = original[position] if position < len(original) else None
        same = (
            before is not None
            and before.role == message.role
            and _unsigned(before.parts) == _unsigned(message.parts)
        )
        out.append(before if same and before is not None else message)
    return out


def _unsigned(parts: tuple[Part, ...]) -> tuple[Part, ...]:
    """The parts with thinking parts' signatures left out: what the text form can carry."""
    return tuple(
        p.model_copy(update={"signature": None}) if isinstance(p, ThinkingPart) else p
        for p in parts
    )
