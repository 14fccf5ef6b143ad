"""Message content in the GenAI conventions' JSON shape, built incrementally.

``gen_ai.input.messages`` of a chat span is the whole conversation the model was sent, so a naive
encoder re-serializes (and re-redacts) the full history at every step: quadratic in the run. Here
each message is encoded once, when it is first seen, and kept as a JSON fragment; a request's
attribute is the cached fragments joined. Encoding and redaction cost grows with each step's new
messages, not with the history.

Shapes (semantic conventions, ``gen_ai.*.messages``)::

    {"role": "user", "parts": [{"type": "text", "content": "..."}]}
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "add",
                                     "arguments": {"a": 1}}], "finish_reason": "tool_call"}
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3"}]}
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    Part,
    RetryPrompt,
    TextPart,
    ToolCall,
    ToolResult,
)
from workbench.telemetry.redact import Redactor

__all__ = ["ContentEncoder"]

_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_call",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.ERROR: "error",
    FinishReason.UNKNOWN: "stop",
}


class ContentEncoder:
    """Encodes messages, responses and tool payloads as redacted GenAI JSON strings."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._fragments: dict[int, tuple[Message, str]] = {}
        self._system: dict[int, tuple[Message, list[dict[str, Any]]]] = {}

    def request(self, messages: Sequence[Message]) -> tuple[str | None, str]:
        """``(gen_ai.system_instructions, gen_ai.input.messages)`` for one model request.

        System messages become the system instructions; the rest are the input messages.
        """
        fragments: list[str] = []
        system: list[dict[str, Any]] = []
        for message in messages:
            if message.role == "system":
                system.extend(self._system_parts(message))
            else:
                fragments.append(self._fragment(message))
        if len(self._fragments) > 2 * len(messages) + 16:
            self._forget_except(messages)
        instructions = json.dumps(system, ensure_ascii=False) if system else None
        return instructions, "[" + ",".join(fragments) + "]"

    def response(self, response: ModelResponse) -> str:
        """``gen_ai.output.messages`` for one model response."""
        message = _message_dict("assistant", response.parts)
        message["finish_reason"] = _FINISH[response.finish_reason]
        return json.dumps([self._redactor.value(message)], ensure_ascii=False)

    def arguments(self, arguments: dict[str, JsonValue]) -> str:
        """``gen_ai.tool.call.arguments``."""
        return json.dumps(self._redactor.value(arguments), ensure_ascii=False, default=str)

    def result(self, content: str) -> str:
        """``gen_ai.tool.call.result`` (the text the model got back)."""
        return self._redactor.text(content)

    def _fragment(self, message: Message) -> str:
        cached = self._fragments.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        encoded = json.dumps(
            self._redactor.value(_message_dict(message.role, message.parts)),
            ensure_ascii=False,
            default=str,
        )
        self._fragments[id(message)] = (message, encoded)
        return encoded

    def _system_parts(self, message: Message) -> list[dict[str, Any]]:
        cached = self._system.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        parts = [
            {"type": "text", "content": self._redactor.text(p.text)}
            for p in message.parts
            if isinstance(p, TextPart)
        ]
        self._system[id(message)] = (message, parts)
        return parts

    def _forget_except(self, messages: Sequence[Message]) -> None:
        """Drop cached fragments of messages no longer sent (history processors made new ones)."""
        keep = {id(m) for m in messages}
        self._fragments = {k: v for k, v in self._fragments.items() if k in keep}


def _message_dict(role: str, parts: Sequence[Part]) -> dict[str, Any]:
    return {"role": role, "parts": [_part_dict(p) for p in parts]}


def _part_dict(part: Part) -> dict[str, Any]:
    match part:
        case TextPart():
            return {"type": "text", "content": part.text}
        case ToolCall():
            arguments: Any = part.arguments
            if part.invalid_arguments is not None:
                arguments = part.invalid_arguments
            return {
                "type": "tool_call",
                "id": part.call_id,
                "name": part.name,
                "arguments": arguments,
            }
        case ToolResult():
            return {"type": "tool_call_response", "id": part.call_id, "response": part.content}
        case RetryPrompt() if part.call_id is not None:
            return {"type": "tool_call_response", "id": part.call_id, "response": part.content}
        case RetryPrompt():
            return {"type": "text", "content": part.content}
    raise TypeError(f"unknown message part {type(part).__name__}")  # pragma: no cover
