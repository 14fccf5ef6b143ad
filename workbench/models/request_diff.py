"""How a model request departs from a recorded one: which message, part, tool or setting.

Replays (`ReplayModel`) and cassettes compare every request they get with the one they recorded,
and a difference must say where it is and what changed, old against new, in terms a person can
act on: "message 0 (system), part 0: recorded text 'You add…', sent text 'You multiply…'", not
"hash mismatch". `first_difference` finds the first one, in the order a reader checks a request:
the tools offered, their definitions, the settings, then the messages. Messages are compared by
role and parts; provenance (run, execution, step) is not part of what the model was asked.
"""

from __future__ import annotations

import json
import textwrap
from collections.abc import Mapping, Sequence
from typing import Literal

from workbench._record import Record
from workbench.messages import (
    JsonValue,
    Message,
    Part,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from workbench.redact import redacted
from workbench.tools import ToolDefinition, schema_hash

__all__ = [
    "RecordedRequest",
    "RequestDiff",
    "describe_part",
    "first_difference",
    "message_difference",
    "messages_difference",
]

DiffKind = Literal["tools", "tool_definition", "setting", "message_count", "message", "tool_call"]


class RequestDiff(Record):
    """The first place where a request departs from the recorded one, old against new.

    ``where`` names it (``"message 3 (user), part 0"``, ``"setting 'temperature'"``,
    ``"tool 'add' (parameters)"``, ``"tools offered"``, ``"messages"``); ``recorded`` and
    ``sent`` describe the two sides. ``str()`` gives one line; `text` a ``-``/``+`` block.
    """

    kind: DiffKind
    where: str
    recorded: str
    sent: str

    def __str__(self) -> str:
        return f"{self.where}: recorded {self.recorded}, sent {self.sent}"

    def text(self) -> str:
        """Several lines: where, then the recorded side (``-``) and the sent side (``+``)."""
        return f"{self.where}\n- recorded: {self.recorded}\n+ sent:     {self.sent}"


class RecordedRequest(Record):
    """What a recording knows of one request; ``None`` marks what it did not keep.

    A run's step records keep the messages and the names of the tools offered; its snapshots the
    settings and a hash of the tool definitions (``tools_hash``, which only covers the tools the
    agent had, so it is kept only when all of them were offered). A cassette keeps everything.
    """

    messages: tuple[Message, ...]
    tools: tuple[str, ...]
    definitions: tuple[dict[str, JsonValue], ...] | None = None
    """Each offered tool as ``{"name", "description", "parameters"}``, when recorded."""
    tools_hash: str | None = None
    settings: dict[str, JsonValue] | None = None


def first_difference(
    recorded: RecordedRequest,
    messages: Sequence[Message],
    definitions: Sequence[ToolDefinition],
    settings: Mapping[str, JsonValue],
    *,
    start: int = 0,
    strict: bool = True,
) -> RequestDiff | None:
    """The first difference between ``recorded`` and what was sent, or None when they agree.

    Without ``strict`` only the messages and the names of the tools are compared. Messages
    before ``start`` are known to agree (a conversation that extends the previous request is
    checked from where it ended).
    """
    names = tuple(d.name for d in definitions)
    if names != recorded.tools:
        old, new = str(list(recorded.tools)), str(list(names))
        return RequestDiff(kind="tools", where="tools offered", recorded=old, sent=new)
    found = None
    if strict:
        found = _definition_difference(recorded, definitions)
        if found is None and recorded.settings is not None:
            found = settings_difference(recorded.settings, settings)
    return found or messages_difference(recorded.messages, tuple(messages), start)


def tool_payload(definition: ToolDefinition) -> dict[str, JsonValue]:
    """A tool definition as the JSON a recording keeps."""
    return {
        "name": definition.name,
        "description": definition.description,
        "parameters": definition.parameters,
    }


def _definition_difference(
    recorded: RecordedRequest, definitions: Sequence[ToolDefinition]
) -> RequestDiff | None:
    if recorded.definitions is not None:
        for old, new in zip(recorded.definitions, definitions, strict=True):
            payload = tool_payload(new)
            for key in ("description", "parameters"):
                if _normal(old.get(key)) != _normal(payload[key]):
                    a, b = _pair(_json(old.get(key)), _json(payload[key]), 80)
                    where = f"tool {new.name!r} ({key})"
                    return RequestDiff(kind="tool_definition", where=where, recorded=a, sent=b)
        return None
    if recorded.tools_hash is None:
        return None
    sent = schema_hash(tuple(definitions))
    if sent == recorded.tools_hash:
        return None
    return RequestDiff(
        kind="tool_definition",
        where=f"tool definitions of {list(recorded.tools)}",
        recorded=f"schema hash {recorded.tools_hash}",
        sent=f"schema hash {sent} (the run kept only a hash; a cassette keeps the definitions)",
    )


def settings_difference(
    recorded: Mapping[str, JsonValue], sent: Mapping[str, JsonValue]
) -> RequestDiff | None:
    """The first setting (in name order) whose value differs, or None."""
    old, new = _normal(dict(recorded)), _normal(dict(sent))
    for key in sorted(old.keys() | new.keys()):
        if old.get(key, _UNSET) != new.get(key, _UNSET):
            return RequestDiff(
                kind="setting",
                where=f"setting {key!r}",
                recorded=_setting(old, key),
                sent=_setting(new, key),
            )
    return None


_UNSET = object()


def _setting(settings: dict[str, JsonValue], key: str) -> str:
    return _json(settings[key]) if key in settings else "not set"


def messages_difference(
    recorded: tuple[Message, ...], sent: tuple[Message, ...], start: int = 0
) -> RequestDiff | None:
    """The first message (from ``start``) that differs, or a different count; None if equal.

    A differing message of a request whose count differs too also names both counts: an
    inserted or removed message shows as the first message that moved, not as an edit.
    """
    for i in range(start, min(len(recorded), len(sent))):
        a, b = recorded[i], sent[i]
        if a is b or (a.role == b.role and a.parts == b.parts):
            continue
        found = message_difference(i, a, b)
        if len(recorded) == len(sent):
            return found
        where = f"{found.where}; {len(recorded)} messages recorded, {len(sent)} sent"
        return found.model_copy(update={"where": where})
    if len(recorded) == len(sent):
        return None
    if len(sent) > len(recorded):
        extra = f"first extra: {_describe_message(sent[len(recorded)])}"
        old, new = f"{len(recorded)} messages", f"{len(sent)} messages ({extra})"
    else:
        missing = f"first missing: {_describe_message(recorded[len(sent)])}"
        old, new = f"{len(recorded)} messages ({missing})", f"{len(sent)} messages"
    return RequestDiff(kind="message_count", where="messages", recorded=old, sent=new)


def message_difference(index: int, recorded: Message, sent: Message) -> RequestDiff:
    """How message ``index`` differs: its role, a part, or how many parts it has."""
    if recorded.role != sent.role:
        return RequestDiff(
            kind="message",
            where=f"message {index}",
            recorded=_describe_message(recorded),
            sent=_describe_message(sent),
        )
    for j, (a, b) in enumerate(zip(recorded.parts, sent.parts, strict=False)):
        if a != b:
            old, new = describe_pair(a, b)
            where = f"message {index} ({sent.role}), part {j}"
            return RequestDiff(kind="message", where=where, recorded=old, sent=new)
    return RequestDiff(
        kind="message",
        where=f"message {index} ({sent.role})",
        recorded=f"{len(recorded.parts)} parts",
        sent=f"{len(sent.parts)} parts",
    )


def describe_pair(a: Part, b: Part) -> tuple[str, str]:
    """Two parts described side by side; long texts are shown around where they first differ."""
    if isinstance(a, TextPart) and isinstance(b, TextPart):
        old, new = _pair(a.text, b.text)
        return f"text {old}", f"text {new}"
    if isinstance(a, ToolResult) and isinstance(b, ToolResult) and (pair := _results(a, b)):
        return pair
    if isinstance(a, ThinkingPart) and isinstance(b, ThinkingPart):
        return _thoughts(a, b)
    return describe_part(a), describe_part(b)


def _thoughts(a: ThinkingPart, b: ThinkingPart) -> tuple[str, str]:
    """Two thinking parts side by side, by what differs: the text, else the provider's data.

    A signature the provider would reject differs from the recorded one only in opaque bytes,
    so it is shown around where it differs, like a text.
    """
    if a.text != b.text:
        old, new = _pair(a.text, b.text)
        return f"thinking {old}", f"thinking {new}"
    if a.signature != b.signature and a.signature is not None and b.signature is not None:
        old, new = _pair(a.signature, b.signature)
        return f"thinking signature {old}", f"thinking signature {new}"
    return describe_part(a), describe_part(b)


def _results(a: ToolResult, b: ToolResult) -> tuple[str, str] | None:
    """Two results of the same call with different contents, side by side; else None."""
    if a.call_id != b.call_id or a.content == b.content:
        return None
    old, new = _pair(a.content, b.content)
    return _result_head(a) + old, _result_head(b) + new


def _result_head(part: ToolResult) -> str:
    return f"result of {part.call_id}{' (error)' if part.is_error else ''} "


def describe_part(part: Part, limit: int | None = 60) -> str:
    """A description of a part for error messages and diffs (its text quoted, cut at ``limit``).

    With ``limit=None`` each text is whole and as it is, indented on the lines after what the
    part is, for a person to read (``workbench show --messages --full``).
    """
    sep = " " if limit is not None else ":\n"
    match part:
        case TextPart():
            return f"text{sep}{_clip(part.text, limit)}"
        case ThinkingPart():
            return _describe_thinking(part, limit)
        case ToolCall():
            args = (
                json.dumps(part.arguments, sort_keys=True)
                if part.invalid_arguments is None
                else part.invalid_arguments
            )
            shown = redacted(args) if limit is None else _clip(args, limit, quote=False)
            return f"call {part.name}({shown}) [{part.call_id}]"
        case ToolResult():
            return _result_head(part).rstrip() + sep + _clip(part.content, limit)
        case RetryPrompt():
            return f"retry prompt{sep}{_clip(part.content, limit)}"


def _describe_thinking(part: ThinkingPart, limit: int | None = 60) -> str:
    """``thinking 'text…' (anthropic, signed, id rs_1)``: what a reader needs to tell two apart."""
    about = [part.provider or "no provider"]
    if part.signature is not None:
        about.append(f"signature {_clip(part.signature, 16, quote=False)}")
    if part.id is not None:
        about.append(f"id {part.id}")
    if part.redacted:
        return f"redacted thinking ({', '.join(about)})"
    if limit is None:
        return f"thinking ({', '.join(about)}):\n{_clip(part.text, None)}"
    return f"thinking {_clip(part.text, limit)} ({', '.join(about)})"


def _describe_message(message: Message) -> str:
    first = describe_part(message.parts[0]) if message.parts else "no parts"
    return f"{message.role} message: {first}"


def _pair(old: str, new: str, limit: int = 60) -> tuple[str, str]:
    """Both texts clipped to ``limit`` characters around their first difference, quoted.

    Clipping each from its start would show two identical beginnings when a long system prompt
    changed near its end; the window starts a little before the first differing character.
    Secrets are redacted before the cut, which could leave a key without the prefix that tells
    it is one.
    """
    old, new = redacted(old), redacted(new)
    same = next((i for i, (x, y) in enumerate(zip(old, new, strict=False)) if x != y), None)
    if same is None:
        same = min(len(old), len(new))
    begin = max(0, same - limit // 3)
    return _window(old, begin, limit), _window(new, begin, limit)


def _window(text: str, begin: int, limit: int) -> str:
    cut = text[begin : begin + limit]
    return f"{'…' if begin else ''}{cut!r}{'…' if begin + limit < len(text) else ''}"


def _clip(text: str, limit: int | None = 60, *, quote: bool = True) -> str:
    text = redacted(text)  # before the cut, as in `_pair`
    if limit is None:
        return textwrap.indent(text, "  ", lambda line: True)
    cut = text if len(text) <= limit else f"{text[:limit]}…"
    return repr(cut) if quote else cut


def _json(value: JsonValue) -> str:
    return json.dumps(value, sort_keys=True, default=str)


def _normal(value: JsonValue) -> JsonValue:
    """The value as JSON would give it back (tuples as lists), so recordings compare equal."""
    return json.loads(json.dumps(value, default=str))
