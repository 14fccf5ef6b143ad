"""The Anthropic Messages wire format: our messages to its JSON, its JSON and events to our answer.

One mapping each way. To the wire: `build_body` (``POST /v1/messages``). From the wire:
`parse_message` + `message_response` for a whole answer, `AnthropicStream` for a streamed one,
fed one server-sent event at a time (the client reads a stream this way, and so can a proxy that
relays one). `to_usage` and `wire_usage` map token counts both ways, so a recorded answer can be
written back with the counts it came with.

What the mapping decides:

- **System prompt placement.** The leading system messages become the top-level ``system``; a
  system message later in the conversation (the Messages API has no such role) is a user text
  block where it stood, so nothing moves.
- **Turns.** A tool-role message (results, retry prompts) is a user turn of ``tool_result``
  blocks (``is_error`` for errors and retries); consecutive turns of one role are merged, with
  ``tool_result`` blocks first, as the API requires.
- **Thinking.** A `ThinkingPart` of this provider goes back as the block it came as, signature
  (or a redacted block's data) unchanged; reasoning of another provider is left out: its opaque
  data means nothing here and would be refused.
- **Usage.** Anthropic's ``input_tokens`` excludes the cached input; ours (the conventions')
  includes it: ``input_tokens + cache_read_input_tokens + cache_creation_input_tokens``.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import Field, ValidationError

from workbench.errors import APIError, MalformedResponseError
from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    ResponsePart,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
    Usage,
)
from workbench.models._http import status_error
from workbench.models._wire import RETRY_INSTRUCTION, EventStream, Lenient, Redact, snippet
from workbench.models.base import ModelSettings
from workbench.models.prices import ModelPrice, cost_of
from workbench.tools import ToolDefinition

__all__ = [
    "ANTHROPIC_VERSION",
    "DEFAULT_MAX_TOKENS",
    "ERROR_STATUS",
    "FINISH_REASONS",
    "AnthropicStream",
    "WireBlockIn",
    "WireMessageIn",
    "WireUsageIn",
    "build_body",
    "message_response",
    "parse_message",
    "stream_error",
    "to_usage",
    "to_wire_messages",
    "wire_usage",
]

ANTHROPIC_VERSION = "2023-06-01"
"""The ``anthropic-version`` header: the API version this mapping speaks."""
DEFAULT_MAX_TOKENS = 4096
"""The API requires ``max_tokens``; this is sent when the settings do not say."""

FINISH_REASONS = {
    "end_turn": FinishReason.STOP,
    "stop_sequence": FinishReason.STOP,
    "max_tokens": FinishReason.LENGTH,
    "model_context_window_exceeded": FinishReason.LENGTH,
    "tool_use": FinishReason.TOOL_CALLS,
    "refusal": FinishReason.CONTENT_FILTER,
}

ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "billing_error": 402,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}
"""The HTTP status each of Anthropic's error types stands for (an error event has no status)."""


# --- outgoing ------------------------------------------------------------------------------------


class TextBlock(TypedDict):
    """Text."""

    type: Literal["text"]
    text: str


class ThinkingBlock(TypedDict):
    """Extended thinking, with the signature that lets it be sent back."""

    type: Literal["thinking"]
    thinking: str
    signature: str


class RedactedThinkingBlock(TypedDict):
    """Thinking the provider encrypted: only its data goes back."""

    type: Literal["redacted_thinking"]
    data: str


class ToolUseBlock(TypedDict):
    """A tool call; ``input`` is a JSON object."""

    type: Literal["tool_use"]
    id: str
    name: str
    input: dict[str, JsonValue]


class ToolResultBlock(TypedDict):
    """What a tool call gave back."""

    type: Literal["tool_result"]
    tool_use_id: str
    content: str
    is_error: NotRequired[bool]


Block = TextBlock | ThinkingBlock | RedactedThinkingBlock | ToolUseBlock | ToolResultBlock


class WireMessage(TypedDict):
    """One turn."""

    role: Literal["user", "assistant"]
    content: list[Block]


def to_wire_messages(
    messages: Sequence[Message], provider: str
) -> tuple[list[str], list[WireMessage]]:
    """Our conversation as the ``system`` texts and the turns (see the module docstring)."""
    system: list[str] = []
    turns: list[WireMessage] = []
    for index, message in enumerate(messages):
        if message.role == "system" and len(system) == index:
            system.append(message.text)
            continue
        role: Literal["user", "assistant"] = "assistant" if message.role == "assistant" else "user"
        blocks = [b for p in message.parts if (b := _block(p, provider)) is not None]
        if not blocks:
            continue
        if turns and turns[-1]["role"] == role:
            turns[-1]["content"].extend(blocks)
        else:
            turns.append(WireMessage(role=role, content=blocks))
    for turn in turns:  # a user turn's tool results go first
        turn["content"].sort(key=lambda b: b["type"] != "tool_result")
    return system, turns


def _block(part: object, provider: str) -> Block | None:
    match part:
        case TextPart(text=text):
            return TextBlock(type="text", text=text) if text else None
        case ThinkingPart(provider=owner) if owner != provider:
            return None  # another provider's reasoning: its data means nothing here
        case ThinkingPart(redacted=True, signature=data):
            return RedactedThinkingBlock(type="redacted_thinking", data=data or "")
        case ThinkingPart(text=text, signature=signature):
            return ThinkingBlock(type="thinking", thinking=text, signature=signature or "")
        case ToolCall():
            # The parsed arguments, never ``invalid_arguments``: the API takes only an object,
            # and the retry prompt already tells the model what it sent.
            return ToolUseBlock(
                type="tool_use", id=part.call_id, name=part.name, input=part.arguments
            )
        case ToolResult():
            result = ToolResultBlock(
                type="tool_result", tool_use_id=part.call_id, content=part.content
            )
            if part.is_error:
                result["is_error"] = True
            return result
        case RetryPrompt(call_id=str(call_id)):
            text = f"{part.content}\n\n{RETRY_INSTRUCTION}"
            return ToolResultBlock(
                type="tool_result", tool_use_id=call_id, content=text, is_error=True
            )
        case RetryPrompt():
            return TextBlock(type="text", text=f"{part.content}\n\n{RETRY_INSTRUCTION}")
    raise TypeError(f"unknown message part {type(part).__name__}")  # pragma: no cover


def _wire_tool(tool: ToolDefinition) -> dict[str, JsonValue]:
    return {"name": tool.name, "description": tool.description, "input_schema": tool.parameters}


def _tool_choice(choice: str | dict[str, Any]) -> dict[str, Any]:
    """Ours (``auto``, ``none``, ``required``, a tool's name) as Anthropic's; an object as given."""
    if isinstance(choice, dict):
        return choice
    named = {"auto": {"type": "auto"}, "none": {"type": "none"}, "required": {"type": "any"}}
    return named.get(choice, {"type": "tool", "name": choice})


def build_body(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    settings: ModelSettings,
    *,
    stream: bool,
    provider: str,
) -> dict[str, JsonValue]:
    """The JSON body of one ``POST /v1/messages``; ``provider`` is whose reasoning goes back."""
    system, turns = to_wire_messages(messages, provider)
    body: dict[str, JsonValue] = {
        "model": model,
        "max_tokens": settings.get("max_tokens", DEFAULT_MAX_TOKENS),
        "messages": turns,
    }
    if system:
        body["system"] = "\n\n".join(system)
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p")):
        if ours in settings:
            body[theirs] = settings[ours]  # type: ignore[literal-required]
    if "stop" in settings:
        body["stop_sequences"] = settings["stop"]
    if "thinking_budget" in settings:
        body["thinking"] = {"type": "enabled", "budget_tokens": settings["thinking_budget"]}
    if tools:
        body["tools"] = [_wire_tool(t) for t in tools]
        if "tool_choice" in settings:
            body["tool_choice"] = _tool_choice(settings["tool_choice"])
    if stream:
        body["stream"] = True
    body.update(settings.get("extra_body", {}))
    return body


# --- incoming ------------------------------------------------------------------------------------


class WireBlockIn(Lenient):
    """A content block of an answer (or the start of one, in a stream)."""

    type: str
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    data: str | None = None
    id: str | None = None
    name: str | None = None
    input: JsonValue = None


class WireUsageIn(Lenient):
    """Token counts; in a stream, each event may carry some of them (the latest count wins)."""

    input_tokens: int | None = None
    output_tokens: int | None = None
    cache_creation_input_tokens: int | None = None
    cache_read_input_tokens: int | None = None


class WireError(Lenient):
    """``{"type": "error", "error": {"type": "overloaded_error", "message": "Overloaded"}}``."""

    type: str = ""
    message: str = ""


class WireMessageIn(Lenient):
    """A whole answer (``type: message``), or an error object where one was expected."""

    type: str = "message"
    id: str | None = None
    model: str | None = None
    content: list[WireBlockIn] = Field(default_factory=list)
    stop_reason: str | None = None
    usage: WireUsageIn | None = None
    error: WireError | None = None


def finish_reason(raw: str | None) -> FinishReason:
    """Map the wire's stop reason to ours; anything unheard of is ``UNKNOWN``."""
    return FINISH_REASONS.get(raw or "", FinishReason.UNKNOWN)


def stream_error(error: WireError, redact: Redact, where: str) -> APIError:
    """A stream's (or a 200's) error object as the typed error its HTTP status would be."""
    status = ERROR_STATUS.get(error.type, 500)
    said = redact(f"{error.type or 'error'}: {error.message}")[:500]
    return status_error(status, said, where)


def _error_of(data: str) -> WireError:
    """The error object of an ``error`` event; data that is not one is the message itself."""
    try:
        event = _Event.model_validate_json(data)
    except ValidationError:
        return WireError(message=data)
    return event.error or WireError(message=data)


def parse_message(raw: bytes, redact: Redact, where: str) -> WireMessageIn:
    """Validate a whole answer's body; an error object in it is raised as the typed error."""
    try:
        message = WireMessageIn.model_validate_json(raw)
    except ValidationError as exc:
        raise MalformedResponseError(
            f"the server's response is not an Anthropic message ({exc.error_count()} problems): "
            f"{snippet(raw, redact)}"
        ) from None
    if message.error is not None:
        raise stream_error(message.error, redact, where)
    if message.type != "message":
        raise MalformedResponseError(
            f"the server's response is not an Anthropic message: {snippet(raw, redact)}"
        )
    return message


def _part(block: WireBlockIn, provider: str, arguments: str | None = None) -> ResponsePart | None:
    """One content block as our part; ``arguments`` is a streamed tool call's JSON text."""
    match block.type:
        case "text":
            return TextPart(text=block.text) if block.text else None
        case "thinking":
            text, signature = block.thinking or "", block.signature
            return ThinkingPart(text=text, signature=signature, provider=provider)
        case "redacted_thinking":
            return ThinkingPart(signature=block.data, provider=provider, redacted=True)
        case "tool_use":
            if not block.name:
                raise MalformedResponseError("the server sent a tool_use block without a name")
            given = arguments if arguments is not None else block.input
            if given is None:
                given = {}
            if not isinstance(given, str | dict):
                given = json.dumps(given)  # not an object: the loop tells the model so
            return ToolCall.parse(block.name, given, block.id)
    return None  # server tools' blocks and others the workbench's messages do not carry


def to_usage(usage: WireUsageIn | None, price: ModelPrice | None) -> Usage:
    """Our usage from the wire's (see the module docstring); none at all is of unknown cost."""
    if usage is None:
        return Usage(requests=1, cost=None)
    # A negative count (a server that lies) would be subtracted from the run's totals: none.
    read = max(0, usage.cache_read_input_tokens or 0)
    write = max(0, usage.cache_creation_input_tokens or 0)
    counted = Usage(
        input_tokens=max(0, usage.input_tokens or 0) + read + write,
        output_tokens=max(0, usage.output_tokens or 0),
        requests=1,
        cache_read_tokens=read,
        cache_write_tokens=write,
    )
    return counted.model_copy(update={"cost": cost_of(price, counted)})


def wire_usage(usage: Usage) -> dict[str, int]:
    """The wire's usage for ours: the inverse of `to_usage`, for writing a recorded answer."""
    return {
        "input_tokens": usage.input_tokens - usage.cache_read_tokens - usage.cache_write_tokens,
        "output_tokens": usage.output_tokens,
        "cache_creation_input_tokens": usage.cache_write_tokens,
        "cache_read_input_tokens": usage.cache_read_tokens,
    }


def message_response(
    message: WireMessageIn, price: ModelPrice | None, model: str, provider: str
) -> ModelResponse:
    """The response a validated whole answer stands for (``model`` if it names none)."""
    parts = [p for b in message.content if (p := _part(b, provider)) is not None]
    return ModelResponse(
        parts=tuple(parts),
        usage=to_usage(message.usage, price),
        finish_reason=finish_reason(message.stop_reason),
        model_name=message.model or model,
        response_id=message.id,
    )


class _Delta(Lenient):
    """``content_block_delta``'s ``delta``: one piece of a block."""

    type: str
    text: str | None = None
    thinking: str | None = None
    signature: str | None = None
    partial_json: str | None = None


class _StopDelta(Lenient):
    """``message_delta``'s ``delta``: why the model stopped."""

    stop_reason: str | None = None


class _Event(Lenient):
    """One event of a stream; which fields it has depends on its ``type``."""

    type: str
    index: int | None = None
    message: WireMessageIn | None = None
    content_block: WireBlockIn | None = None
    delta: _Delta | _StopDelta | None = None
    usage: WireUsageIn | None = None
    error: WireError | None = None


@dataclass
class _OpenBlock:
    start: WireBlockIn
    pieces: list[str] = field(default_factory=list)
    signature: list[str] = field(default_factory=list)


@dataclass
class AnthropicStream(EventStream):
    """Folds a stream's events into one answer (see `EventStream`).

    The first text, thinking or tool input is the first token; ``message_stop`` ends the stream.
    An ``error`` event is the typed error its type's status would be (an ``overloaded_error``
    mid-stream is a `ServerError`, as a 529 would be).
    """

    _message: WireMessageIn | None = field(default=None, init=False)
    _blocks: dict[int, _OpenBlock] = field(default_factory=dict, init=False)
    _usage: dict[str, int] = field(default_factory=dict, init=False)
    _stop_reason: str | None = field(default=None, init=False)

    def feed(self, event: str, data: str) -> None:
        """Take in one event (see `EventStream`)."""
        if event == "error":
            raise stream_error(_error_of(data), self.redact, self.where)
        parsed = self._parse(data)
        if parsed.type == "error":
            raise stream_error(parsed.error or WireError(), self.redact, self.where)
        if parsed.type == "message_start" and parsed.message is not None:
            self._message = parsed.message
            self._count(parsed.message.usage)
        elif parsed.type == "content_block_start" and parsed.content_block is not None:
            self._blocks[self._index(parsed)] = _OpenBlock(parsed.content_block)
        elif parsed.type == "content_block_delta":
            self._delta(self._index(parsed), parsed.delta)
        elif parsed.type == "message_delta":
            if isinstance(parsed.delta, _StopDelta):
                self._stop_reason = parsed.delta.stop_reason or self._stop_reason
            self._count(parsed.usage)
        elif parsed.type == "message_stop":
            self.done = True

    def _parse(self, data: str) -> _Event:
        try:
            return _Event.model_validate_json(data)
        except ValidationError as exc:
            raise MalformedResponseError(
                f"the server sent a stream event that is not an Anthropic event "
                f"({exc.error_count()} problems): {snippet(data, self.redact)}"
            ) from None

    def _index(self, event: _Event) -> int:
        if event.index is None:
            raise MalformedResponseError(f"the server sent a {event.type} event without an index")
        return event.index

    def _delta(self, index: int, delta: _Delta | _StopDelta | None) -> None:
        block = self._blocks.get(index)
        if block is None:
            raise MalformedResponseError(f"the server sent a delta for block {index}, never begun")
        if not isinstance(delta, _Delta):
            raise MalformedResponseError(f"the server sent a delta for block {index} without one")
        piece = delta.text or delta.thinking or delta.partial_json
        if delta.signature is not None:
            block.signature.append(delta.signature)
        if not piece:
            return
        self._token()
        block.pieces.append(piece)
        if delta.text and self.on_text_delta is not None:
            self.on_text_delta(delta.text)

    def _count(self, usage: WireUsageIn | None) -> None:
        if usage is not None:
            self._usage.update(usage.model_dump(exclude_none=True))

    def response(self, price: ModelPrice | None, model: str) -> ModelResponse:
        """The answer the blocks make (see `EventStream`)."""
        parts = [p for _, b in sorted(self._blocks.items()) if (p := self._finished(b)) is not None]
        started = self._message or WireMessageIn()
        usage = WireUsageIn.model_validate(self._usage) if self._usage else None
        return ModelResponse(
            parts=tuple(parts),
            usage=to_usage(usage, price),
            finish_reason=finish_reason(self._stop_reason),
            model_name=started.model or model,
            response_id=started.id,
            time_to_first_token=self.time_to_first_token,
        )

    def _finished(self, block: _OpenBlock) -> ResponsePart | None:
        start, joined = block.start, "".join(block.pieces)
        match start.type:
            case "text":
                whole = start.model_copy(update={"text": (start.text or "") + joined})
                return _part(whole, self.provider)
            case "thinking":
                signature = "".join(block.signature) or start.signature
                whole = start.model_copy(
                    update={"thinking": (start.thinking or "") + joined, "signature": signature}
                )
                return _part(whole, self.provider)
            case "tool_use":
                return _part(start, self.provider, arguments=joined if block.pieces else None)
        return _part(start, self.provider)
