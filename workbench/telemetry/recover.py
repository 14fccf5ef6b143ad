"""Messages recovered from a model call span's captured content, in the shapes tracers write.

Two shapes are read:

- the GenAI conventions' (ours, pydantic-ai's): ``gen_ai.system_instructions``,
  ``gen_ai.input.messages`` and ``gen_ai.output.messages`` as JSON strings, each message
  ``{"role", "parts": [{"type": "text" | "reasoning" | "tool_call" | "tool_call_response", ...}]}``;
- flattened, one attribute per field: OpenInference's (Phoenix, its instrumentations)
  ``llm.input_messages.{i}.message.role`` / ``.content`` / ``.tool_calls.{j}.tool_call.*`` /
  ``.tool_call_id``, and ``llm.output_messages.*`` likewise; and OpenLLMetry's of mid-2025
  (``opentelemetry-instrumentation-openai`` before the conventions' messages)
  ``gen_ai.prompt.{i}.role`` / ``.content`` / ``.tool_calls.{j}.{id,name,arguments}`` /
  ``.tool_call_id``, and ``gen_ai.completion.{i}.*`` for the answer.

Content that is there but cannot be read raises `TraceLoadError` saying which attribute;
a span with no captured content gives no messages.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from typing import Any, NamedTuple

from workbench._json import loads
from workbench.errors import TraceLoadError
from workbench.messages import (
    Message,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    new_call_id,
)
from workbench.redact import redacted
from workbench.telemetry import names as n

__all__ = ["messages_of_chat", "read_json"]


class _Flat(NamedTuple):
    """One tracer's flattened messages: where they are and what its fields are called."""

    sent: str
    """The prefix of the messages sent (``{prefix}{i}.{field}``)."""
    answer: str
    """The prefix of the answer's messages."""
    field: re.Pattern[str]
    """Splits what follows a prefix into the message number and the field's name."""
    call: re.Pattern[str]
    """Splits a tool call's field into the call's number and its own field."""
    name: str
    arguments: str


_FLATTENED = (
    _Flat(  # OpenInference (Phoenix)
        "llm.input_messages.",
        "llm.output_messages.",
        re.compile(r"(\d+)\.message\.(.+)"),
        re.compile(r"tool_calls\.(\d+)\.tool_call\.(.+)"),
        "function.name",
        "function.arguments",
    ),
    _Flat(  # OpenLLMetry before the conventions' JSON messages
        "gen_ai.prompt.",
        "gen_ai.completion.",
        re.compile(r"(\d+)\.(.+)"),
        re.compile(r"tool_calls\.(\d+)\.(.+)"),
        "name",
        "arguments",
    ),
)


def messages_of_chat(attributes: Mapping[str, Any]) -> tuple[Message, ...]:
    """The messages a model call was sent, then its answer, from the span's attributes."""
    if n.INPUT_MESSAGES in attributes or n.SYSTEM_INSTRUCTIONS in attributes:
        system = _json(attributes, n.SYSTEM_INSTRUCTIONS, [])
        messages = [Message.system(_text_of(system))] if system else []
        messages += [_conventions(m) for m in _json(attributes, n.INPUT_MESSAGES, [])]
        messages += [_conventions(m) for m in _json(attributes, n.OUTPUT_MESSAGES, [])]
        return _tools_named(messages)
    for flat in _FLATTENED:
        if any(k.startswith((flat.sent, flat.answer)) for k in attributes):
            sent = _flattened(attributes, flat, flat.sent)
            return _tools_named([*sent, *_flattened(attributes, flat, flat.answer)])
    return ()


_LONE_ESCAPE = re.compile(
    r"\\u[dD][89abAB][0-9a-fA-F]{2}(?!\\u[dD][c-fC-F])"
    r"|(?<!\\u[dD][89abAB][0-9a-fA-F]{2})\\u[dD][c-fC-F][0-9a-fA-F]{2}"
)
"""A UTF-16 surrogate escape not in a pair (or a literal backslash before "u": harmless)."""
_LONE = re.compile("[\ud800-\udfff]")
_SURROGATE_ESCAPE = re.compile(r"\\u[dD][89a-fA-F]")


def read_json(text: str) -> Any:
    """JSON read with `workbench._json.loads`, lone UTF-16 surrogates replaced by U+FFFD.

    A text that is not JSON, or nests too deeply, is a `ValueError`. A tracer that cuts a long
    string inside a pair writes a high surrogate's escape alone; Python reads it as a lone
    surrogate, which no UTF-8 file, page or Jupyter message can hold, so every view of the trace
    would fail on it. The strings are walked only when the text has such an escape: any
    surrogate's escape is looked for first, by a pattern that starts with a fixed backslash and
    so runs at the speed of a plain search; the pattern of a lone one, with its look-arounds,
    only runs over a text that has some.
    """
    value = loads(text)
    if _SURROGATE_ESCAPE.search(text) and _LONE_ESCAPE.search(text):
        return _replaced(value)
    return value


def _replaced(value: Any) -> Any:
    if isinstance(value, str):
        return _LONE.sub("\N{REPLACEMENT CHARACTER}", value)
    if isinstance(value, dict):
        return {_replaced(k): _replaced(v) for k, v in value.items()}
    if isinstance(value, list):
        return [_replaced(v) for v in value]
    return value


def _tools_named(messages: list[Message]) -> tuple[Message, ...]:
    """Tool results named after the calls they answer (both shapes keep only the call's id)."""
    names: dict[str, str] = {}
    named = []
    for message in messages:
        names.update((p.call_id, p.name) for p in message.parts if isinstance(p, ToolCall))
        parts = tuple(
            p.model_copy(update={"name": names[p.call_id]})
            if isinstance(p, ToolResult) and not p.name and p.call_id in names
            else p
            for p in message.parts
        )
        named.append(message.model_copy(update={"parts": parts}))
    return tuple(named)


def _json(attributes: Mapping[str, Any], key: str, default: Any) -> Any:
    value = attributes.get(key)
    if value is None:
        return default
    if isinstance(value, (list, tuple)):  # a reader that kept the structure
        return list(value)
    if not isinstance(value, str):
        raise TraceLoadError(f"{key} is not messages: {_excerpt(repr(value))}")
    try:
        decoded = read_json(value)
    except ValueError:
        raise TraceLoadError(f"{key} is not JSON (truncated?): {_excerpt(value)}") from None
    if not isinstance(decoded, list):
        raise TraceLoadError(f"{key} is not a list of messages")
    return decoded


def _excerpt(text: str) -> str:
    """The start of content that could not be read, for an error, with any key in it redacted."""
    return repr(redacted(text[:200])[:80])


def _text_of(parts: list[Any]) -> str:
    return "\n\n".join(str(p.get("content", "")) if isinstance(p, dict) else str(p) for p in parts)


def _conventions(message: Any) -> Message:
    if not isinstance(message, dict) or "role" not in message:
        raise TraceLoadError(f"not a message in the conventions' shape: {_excerpt(str(message))}")
    role = str(message["role"])
    parts = [_part(p) for p in message.get("parts", [])]
    if role == "system":
        return Message.system(_text_of(message.get("parts", [])))
    return Message(role=_role(role), parts=tuple(p for p in parts if p is not None))


def _role(role: str) -> Any:
    return role if role in ("user", "assistant", "tool") else "user"


def _part(part: Any) -> Part | None:
    if not isinstance(part, dict):
        return TextPart(text=str(part))
    kind = part.get("type")
    if kind == "tool_call":
        return _call(part.get("name", ""), part.get("arguments"), part.get("id"))
    if kind == "tool_call_response":
        response = part.get("response", part.get("result", ""))
        text = response if isinstance(response, str) else json.dumps(response)
        return ToolResult(call_id=str(part.get("id") or ""), content=text)
    if kind in (
        "thinking",
        "reasoning",
    ):  # pydantic-ai writes "thinking", the conventions "reasoning"
        return ThinkingPart(
            text=str(part.get("content", "")),
            signature=_optional(part.get("signature")),
            provider=_optional(part.get("provider")),
            id=_optional(part.get("id")),
            redacted=part.get("redacted") is True,
        )
    if kind == "text":
        return TextPart(text=str(part.get("content", "")))
    return None  # media and other parts the workbench's messages do not carry


def _optional(value: Any) -> str | None:
    return None if value is None else str(value)


def _call(name: Any, arguments: Any, call_id: Any) -> ToolCall:
    """A recorded call; arguments that are no JSON object keep their text.

    As a model's do in the loop (`ToolCall.invalid_arguments`, drawn "invalid JSON"): read as
    ``{}``, the ``{"`` a small model sent showed as a call with no arguments, beside the
    validation error it caused.
    """
    found: Any = {} if arguments is None else arguments
    if isinstance(arguments, str):
        try:
            found = read_json(arguments) if arguments.strip() else {}
        except ValueError:
            found = None
    kept = found if isinstance(found, dict) else {}
    invalid = None if isinstance(found, dict) else _as_text(arguments)
    return ToolCall(
        name=str(name),
        arguments=kept,
        call_id=str(call_id or new_call_id()),
        invalid_arguments=invalid,
    )


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value, default=str)


def _flattened(attributes: Mapping[str, Any], flat: _Flat, prefix: str) -> list[Message]:
    """Messages from flattened ``{prefix}{i}.{field}`` attributes, in their numbers' order."""
    found: dict[int, dict[str, Any]] = {}
    for key, value in attributes.items():
        if key.startswith(prefix) and (match := flat.field.fullmatch(key[len(prefix) :])):
            found.setdefault(int(match[1]), {})[match[2]] = value
    return [_flat_message(found[i], flat) for i in sorted(found)]


def _flat_message(fields: dict[str, Any], flat: _Flat) -> Message:
    role = str(fields.get("role", "user"))
    content = fields.get("content")
    if role == "system":
        return Message.system(str(content or ""))
    if role == "tool":
        call_id = str(fields.get("tool_call_id", ""))
        return Message(role="tool", parts=(ToolResult(call_id=call_id, content=str(content)),))
    parts: list[Part] = [TextPart(text=str(content))] if content else []
    calls: dict[int, dict[str, Any]] = {}
    for key, value in fields.items():
        if match := flat.call.fullmatch(key):
            calls.setdefault(int(match[1]), {})[match[2]] = value
    for index in sorted(calls):
        call = calls[index]
        parts.append(_call(call.get(flat.name, ""), call.get(flat.arguments), call.get("id")))
    return Message(role=_role(role), parts=tuple(parts))
