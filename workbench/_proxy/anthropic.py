"""The server side of Anthropic's Messages API: requests in, answers out (the recording proxy).

The client side (what `AnthropicModel` sends and reads) is `workbench.models._anthropic_wire`; an
answer is read with its `parse_message` and `AnthropicStream`, and this module is the mirror
image for the rest: a request read into our messages, a recorded response written back as a
message or its events. `MESSAGES` is the `Wire` the proxy serves at ``/v1/messages``.

How a request reads (the inverse of the client's mapping, so our agent's strict replay of a
proxy's run agrees): ``system`` (a string, or text blocks joined by a blank line) is the first
system message; a user turn's ``tool_result`` blocks are tool messages, one result each, and its
other blocks a user message after them; an assistant turn's text, thinking (with its signature)
and ``tool_use`` blocks are one assistant message; a ``system`` turn (Claude Code sends them
mid-conversation) is a system message where it stands. ``cache_control`` marks, which clients
move from request to request, are not part of a message. An image or a document is recorded as
a placeholder naming its type; another block as its JSON.

Settings are the body's other fields but ``stream`` and ``metadata``, which Claude Code fills
with ids that change on every run (``user_id``: its device and session), so two runs of the same
task compare equal.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pydantic import Field, ValidationError

from workbench._proxy.calls import Call
from workbench._proxy.wire import EventReading, Read, Redact, not_a_request
from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    Part,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
)
from workbench.models._anthropic_wire import (
    ERROR_STATUS,
    FINISH_REASONS,
    AnthropicStream,
    WireBlockIn,
    message_response,
    parse_message,
    wire_usage,
)
from workbench.models._wire import Lenient
from workbench.models.prices import price_for

__all__ = ["MESSAGES", "MessagesWire", "from_wire_messages"]

PROVIDER = "anthropic"
"""Whose reasoning a thinking block is (`ThinkingPart.provider`)."""

_NOT_SETTINGS = frozenset({"model", "system", "messages", "tools", "stream"})
VOLATILE = frozenset({"metadata"})
"""Fields that change on every run of the same task (Claude Code's ``metadata.user_id``)."""


class _Block(WireBlockIn):
    """One content block of a request's turn (or of a tool result's content).

    A request's history holds the blocks of earlier answers, so its block has an answer block's
    fields, and a tool result's.
    """

    tool_use_id: str | None = None
    content: str | list[_Block] | None = None
    is_error: bool = False


class _Turn(Lenient):
    """One turn of a request."""

    role: str
    content: str | list[_Block]


class _Request(Lenient):
    """A ``POST /v1/messages`` body as a client sent it (tools are read from the JSON)."""

    model: str = ""
    system: str | list[_Block] | None = None
    messages: list[_Turn]
    tools: list[dict[str, JsonValue]] = Field(default_factory=list)
    stream: bool = False


def _parse(raw: bytes) -> _Request:
    try:
        return _Request.model_validate_json(raw)
    except ValidationError as exc:
        raise not_a_request("an Anthropic messages request", exc, raw) from None


def from_wire_messages(
    system: str | list[_Block] | None, turns: Sequence[_Turn]
) -> tuple[Message, ...]:
    """Our conversation from a request's ``system`` and turns (see the module docstring)."""
    out: list[Message] = []
    if system:
        out.append(Message(role="system", parts=(TextPart(text=_joined(system)),)))
    names: dict[str, str] = {}
    for turn in turns:
        blocks = (
            [_Block(type="text", text=turn.content)]
            if isinstance(turn.content, str)
            else turn.content
        )
        if turn.role == "assistant":
            parts = tuple(_assistant_part(b) for b in blocks)
            names.update((p.call_id, p.name) for p in parts if isinstance(p, ToolCall))
            out.append(Message(role="assistant", parts=parts))
        elif turn.role == "system":
            out.append(Message(role="system", parts=(TextPart(text=_joined(blocks)),)))
        else:
            out += _user_turn(blocks, names)
    return tuple(out)


def _user_turn(blocks: list[_Block], names: dict[str, str]) -> list[Message]:
    """A user turn: a tool message per result, then a user message of the rest, if any."""
    out = [
        Message(role="tool", parts=(_result(b, names),)) for b in blocks if b.type == "tool_result"
    ]
    rest = tuple(TextPart(text=_text(b)) for b in blocks if b.type != "tool_result")
    if rest:
        out.append(Message(role="user", parts=rest))
    return out


def _result(block: _Block, names: dict[str, str]) -> ToolResult:
    call_id = block.tool_use_id or ""
    content = block.content
    text = content if isinstance(content, str) else _joined(content or [])
    return ToolResult(
        call_id=call_id, name=names.get(call_id, ""), content=text, is_error=block.is_error
    )


def _assistant_part(block: _Block) -> Part:
    match block.type:
        case "thinking":
            return ThinkingPart(
                text=block.thinking or "", signature=block.signature, provider=PROVIDER
            )
        case "redacted_thinking":
            return ThinkingPart(signature=block.data, provider=PROVIDER, redacted=True)
        case "tool_use":
            given = block.input if block.input is not None else {}
            return ToolCall.parse(
                block.name or "", given if isinstance(given, dict) else json.dumps(given), block.id
            )
    return TextPart(text=_text(block))


def _text(block: _Block) -> str:
    """A block as text: its text; a placeholder for an image or a document; else its JSON."""
    if block.type == "text":
        return block.text or ""
    if block.type in ("image", "document"):
        return f"[{block.type}]"
    return block.model_dump_json(exclude_defaults=True)


def _joined(content: str | list[_Block]) -> str:
    return content if isinstance(content, str) else "\n\n".join(_text(b) for b in content)


def _tool(tool: dict[str, JsonValue]) -> ToolDefinition:
    """A tool definition; a server tool (no ``input_schema``) keeps its configuration."""
    schema = tool.get("input_schema")
    description = tool.get("description")
    rest = {k: v for k, v in tool.items() if k not in ("name", "description", "cache_control")}
    return ToolDefinition(
        name=str(tool.get("name", "")),
        description=description if isinstance(description, str) else "",
        parameters=schema if isinstance(schema, dict) else rest,
    )


# --- answers out ---------------------------------------------------------------------------------

_STOP = {FinishReason.STOP: "end_turn"} | {
    ours: theirs
    for theirs, ours in reversed(FINISH_REASONS.items())
    if ours is not FinishReason.STOP
}
_ERROR_TYPE = {status: kind for kind, status in reversed(ERROR_STATUS.items())}


def _blocks(response: ModelResponse) -> list[dict[str, JsonValue]]:
    """A recorded answer's parts as the content blocks they came as."""
    blocks: list[dict[str, JsonValue]] = []
    for part in response.parts:
        if isinstance(part, TextPart):
            blocks.append({"type": "text", "text": part.text})
        elif isinstance(part, ThinkingPart) and part.redacted:
            blocks.append({"type": "redacted_thinking", "data": part.signature or ""})
        elif isinstance(part, ThinkingPart):
            blocks.append(
                {"type": "thinking", "thinking": part.text, "signature": part.signature or ""}
            )
        else:
            blocks.append(
                {"type": "tool_use", "id": part.call_id, "name": part.name, "input": part.arguments}
            )
    return blocks


def _message(response: ModelResponse, content: list[dict[str, JsonValue]]) -> dict[str, JsonValue]:
    return {
        "id": response.response_id or "msg_replay",
        "type": "message",
        "role": "assistant",
        "model": response.model_name,
        "content": content,
        "stop_reason": _STOP.get(response.finish_reason, "end_turn"),
        "stop_sequence": None,
        "usage": dict(wire_usage(response.usage)),
    }


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


def _block_events(index: int, block: dict[str, JsonValue], part: object) -> list[bytes]:
    """One content block as a stream sends it: its start, its delta(s), its stop."""
    kind = block["type"]
    start: dict[str, JsonValue] = dict(block)
    deltas: list[dict[str, JsonValue]] = []
    if kind == "text":
        start["text"], deltas = "", [{"type": "text_delta", "text": block["text"]}]
    elif kind == "thinking":
        start["thinking"], start["signature"] = "", ""
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    elif kind == "tool_use":
        assert isinstance(part, ToolCall)
        start["input"] = {}
        raw = part.invalid_arguments or json.dumps(part.arguments, ensure_ascii=False)
        deltas = [{"type": "input_json_delta", "partial_json": raw}]  # broken stays broken
    events = [_event("content_block_start", {"index": index, "content_block": start})]
    events += [_event("content_block_delta", {"index": index, "delta": d}) for d in deltas]
    return [*events, _event("content_block_stop", {"index": index})]


class MessagesWire:
    """Anthropic Messages at ``/v1/messages`` (see `workbench._proxy.wire.Wire`)."""

    name = "messages"
    path = "/messages"

    def read(self, body: bytes) -> Read:
        """The request's messages, tools and settings (see the module docstring)."""
        request = _parse(body)
        raw: dict[str, JsonValue] = json.loads(body)
        call = Call(
            model=request.model,
            messages=from_wire_messages(request.system, request.messages),
            tools=tuple(_tool(t) for t in request.tools),
            settings={k: v for k, v in raw.items() if k not in _NOT_SETTINGS | VOLATILE},
        )
        return Read(call=call, stream=request.stream)

    def answer(self, content: bytes, redact: Redact, model: str) -> ModelResponse:
        """A complete answer (`parse_message`); an error object in a 200 is raised typed."""
        message = parse_message(content, redact, "the upstream")
        return message_response(message, price_for(message.model or model), model, PROVIDER)

    def reading(self, redact: Redact) -> EventReading:
        """A new reading of a stream."""
        return EventReading(AnthropicStream(PROVIDER, redact, where="the upstream"))

    def rendered(self, response: ModelResponse) -> dict[str, JsonValue]:
        """A recorded answer as the message the API sends, usage as it was recorded."""
        return _message(response, _blocks(response))

    def rendered_events(self, response: ModelResponse) -> list[bytes]:
        """A recorded answer as the API streams it: the message, each block, the end."""
        start = _message(response, [])
        start["stop_reason"] = None
        events = [_event("message_start", {"message": start})]
        for index, (block, part) in enumerate(zip(_blocks(response), response.parts, strict=True)):
            events += _block_events(index, block, part)
        stop = {"stop_reason": _STOP.get(response.finish_reason, "end_turn"), "stop_sequence": None}
        events.append(_event("message_delta", {"delta": stop, "usage": wire_usage(response.usage)}))
        return [*events, _event("message_stop", {})]

    def error(self, message: str, kind: str, status: int) -> dict[str, JsonValue]:
        """``{"type": "error", "error": {"type", "message"}}``: the type is the status's."""
        return {
            "type": "error",
            "error": {"type": _ERROR_TYPE.get(status, "api_error"), "message": message},
        }

    def error_event(self, message: str, kind: str) -> bytes:
        """An ``error`` event, as the API sends one mid-stream (the SDKs raise it)."""
        return _event("error", {"error": {"type": "api_error", "message": message}})


MESSAGES = MessagesWire()
