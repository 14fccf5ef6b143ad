"""The Chat Completions wire format: our messages to JSON, JSON (and SSE chunks) to our response.

Kept apart from `workbench.models.openai`, which does the HTTP (retries, errors, streaming), so
that each side reads on its own. Outgoing JSON is built as typed dicts; incoming JSON is validated
by lenient pydantic models (unknown fields ignored, so servers that add fields still work) and a
response that does not fit them is a `MalformedResponseError`, never a ``KeyError`` three frames
later.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, NotRequired, TypedDict

from pydantic import Field, ValidationError

from workbench.errors import MalformedResponseError
from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    RetryPrompt,
    TextPart,
    ToolCall,
    ToolResult,
    Usage,
)
from workbench.models._wire import RETRY_INSTRUCTION, Lenient, Redact, snippet
from workbench.models.base import ModelSettings
from workbench.models.prices import ModelPrice, cost_of
from workbench.tools import ToolDefinition

__all__ = [
    "FINISH_REASONS",
    "MalformedResponseError",
    "StreamAssembler",
    "WireCompletion",
    "WireToolCall",
    "WireToolCallIn",
    "build_body",
    "completion_response",
    "finish_reason",
    "parse_call",
    "parse_chunk",
    "parse_completion",
    "to_usage",
    "to_wire_messages",
    "wire_call",
    "wire_parts",
]

FINISH_REASONS = {
    "stop": FinishReason.STOP,
    "length": FinishReason.LENGTH,
    "tool_calls": FinishReason.TOOL_CALLS,
    "function_call": FinishReason.TOOL_CALLS,
    "content_filter": FinishReason.CONTENT_FILTER,
}


# --- outgoing ------------------------------------------------------------------------------------


class WireFunctionCall(TypedDict):
    """``function`` of an assistant tool call: arguments are a JSON string on the wire."""

    name: str
    arguments: str


class WireToolCall(TypedDict):
    """One tool call of an assistant message."""

    id: str
    type: Literal["function"]
    function: WireFunctionCall


class WireMessage(TypedDict):
    """One Chat Completions message."""

    role: str
    content: str | None
    tool_calls: NotRequired[list[WireToolCall]]
    tool_call_id: NotRequired[str]


def to_wire_messages(messages: Sequence[Message]) -> list[WireMessage]:
    """Convert our conversation to Chat Completions messages.

    A tool-role message may hold several results and retry prompts: each becomes its own ``tool``
    message answering its call. A retry prompt without a call id is a ``user`` message.
    """
    wire: list[WireMessage] = []
    for message in messages:
        if message.role == "assistant":
            wire.append(_assistant(message))
        else:
            wire.extend(_non_assistant(message))
    return wire


def _assistant(message: Message) -> WireMessage:
    calls = [wire_call(p) for p in message.parts if isinstance(p, ToolCall)]
    wire = WireMessage(role="assistant", content=message.text or (None if calls else ""))
    if calls:
        wire["tool_calls"] = calls
    return wire


def wire_call(call: ToolCall) -> WireToolCall:
    # Always the parsed dict, never ``invalid_arguments``: servers reject (500) history that holds
    # the model's own broken JSON, and the retry prompt already tells the model what it sent.
    arguments = json.dumps(call.arguments, ensure_ascii=False)
    function = WireFunctionCall(name=call.name, arguments=arguments)
    return WireToolCall(id=call.call_id, type="function", function=function)


def _non_assistant(message: Message) -> list[WireMessage]:
    wire: list[WireMessage] = []
    texts: list[str] = []
    for part in message.parts:
        if isinstance(part, TextPart):
            texts.append(part.text)
        elif isinstance(part, ToolResult):
            wire.append(WireMessage(role="tool", content=part.content, tool_call_id=part.call_id))
        elif isinstance(part, RetryPrompt):
            text = f"{part.content}\n\n{RETRY_INSTRUCTION}"
            if part.call_id is None:
                texts.append(text)
            else:
                wire.append(WireMessage(role="tool", content=text, tool_call_id=part.call_id))
    if texts:
        role = "user" if message.role == "tool" else message.role
        wire.append(WireMessage(role=role, content="\n\n".join(texts)))
    return wire


def _wire_tool(tool: ToolDefinition) -> dict[str, JsonValue]:
    function = {"name": tool.name, "description": tool.description, "parameters": tool.parameters}
    return {"type": "function", "function": function}


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """Pass ``auto``/``none``/``required`` or a full object through; force any other name."""
    if isinstance(choice, dict) or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "function": {"name": choice}}


_PASSED_THROUGH = ("temperature", "top_p", "seed", "max_tokens", "stop")


def build_body(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    settings: ModelSettings,
    *,
    stream: bool,
) -> dict[str, JsonValue]:
    """Build the JSON body of one ``POST /chat/completions``."""
    body: dict[str, JsonValue] = {"model": model, "messages": to_wire_messages(messages)}
    for key in _PASSED_THROUGH:
        if key in settings:
            body[key] = settings[key]  # type: ignore[literal-required]
    if tools:
        body["tools"] = [_wire_tool(t) for t in tools]
        if "tool_choice" in settings:
            body["tool_choice"] = _tool_choice(settings["tool_choice"])
    if stream:
        body["stream"] = True
        body["stream_options"] = {"include_usage": True}
    body.update(settings.get("extra_body", {}))
    return body


# --- incoming ------------------------------------------------------------------------------------


class WireFunctionIn(Lenient):
    """``function`` of a tool call as received; in a stream, only pieces of it."""

    name: str | None = None
    arguments: str | dict[str, JsonValue] | None = None


class WireToolCallIn(Lenient):
    """A tool call (or, in a stream, a delta of one, located by ``index``)."""

    index: int | None = None
    id: str | None = None
    function: WireFunctionIn | None = None


class WireMessageIn(Lenient):
    """A response message, or a stream delta."""

    content: str | None = None
    tool_calls: list[WireToolCallIn] | None = None


class WireChoice(Lenient):
    """One choice of a complete response."""

    message: WireMessageIn
    finish_reason: str | None = None


class WirePromptDetails(Lenient):
    """What the input tokens were (OpenAI: ``cached_tokens`` served from the prompt cache)."""

    cached_tokens: int | None = None


class WireCompletionDetails(Lenient):
    """What the output tokens were (OpenAI: ``reasoning_tokens``)."""

    reasoning_tokens: int | None = None


class WireUsage(Lenient):
    """Token counts."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    prompt_tokens_details: WirePromptDetails | None = None
    completion_tokens_details: WireCompletionDetails | None = None


class WireErrorBody(Lenient):
    """The ``error`` object some servers send inside a 200 response or a stream."""

    message: str = ""
    type: str | None = None
    code: int | str | None = None


class WireCompletion(Lenient):
    """A complete (non-streamed) response."""

    id: str | None = None
    model: str | None = None
    choices: list[WireChoice] = Field(default_factory=list)
    usage: WireUsage | None = None
    error: WireErrorBody | None = None


class WireChunkChoice(Lenient):
    """One choice of a stream chunk."""

    delta: WireMessageIn = WireMessageIn()
    finish_reason: str | None = None


class WireChunk(Lenient):
    """One ``data:`` event of a stream."""

    id: str | None = None
    model: str | None = None
    choices: list[WireChunkChoice] = Field(default_factory=list)
    usage: WireUsage | None = None
    error: WireErrorBody | None = None


def finish_reason(raw: str | None) -> FinishReason:
    """Map the wire finish reason to ours; anything unheard of is ``UNKNOWN``."""
    return FINISH_REASONS.get(raw or "", FinishReason.UNKNOWN)


def parse_completion(raw: bytes, redact: Redact) -> WireCompletion:
    """Validate a complete (non-streamed) response body; messages quote it through ``redact``."""
    try:
        completion = WireCompletion.model_validate_json(raw)
    except ValidationError as exc:
        raise MalformedResponseError(
            f"the server's response is not a chat completion ({exc.error_count()} problems): "
            f"{snippet(raw, redact)}"
        ) from None
    if completion.error is not None:
        raise MalformedResponseError(
            f"the server answered with an error: {redact(completion.error.message)}"
        )
    if not completion.choices:
        raise MalformedResponseError(
            f"the server's response has no choices: {snippet(raw, redact)}"
        )
    return completion


def completion_parts(message: WireMessageIn) -> tuple[TextPart | ToolCall, ...]:
    """Return the parts of a complete response message: its text, then its tool calls."""
    calls = [parse_call(c.id, c.function) for c in message.tool_calls or ()]
    return wire_parts(message.content or "", calls)


def parse_call(call_id: str | None, function: WireFunctionIn | None) -> ToolCall:
    if function is None or not function.name:
        raise MalformedResponseError("the server sent a tool call without a function name")
    return ToolCall.parse(function.name, function.arguments or "", call_id)


def wire_parts(text: str, calls: list[ToolCall]) -> tuple[TextPart | ToolCall, ...]:
    # Whitespace next to a tool call is template noise, not an answer.
    keep_text = text.strip() != "" if calls else text != ""
    head: tuple[TextPart | ToolCall, ...] = (TextPart(text=text),) if keep_text else ()
    return head + tuple(calls)


def parse_chunk(data: str, redact: Redact) -> WireChunk:
    """Validate one stream event's data (an ``error`` in it is the caller's to raise)."""
    try:
        chunk = WireChunk.model_validate_json(data)
    except ValidationError as exc:
        raise MalformedResponseError(
            f"the server sent a stream event that is not a chat completion chunk "
            f"({exc.error_count()} problems): {snippet(data, redact)}"
        ) from None
    return chunk


@dataclass
class _PartialCall:
    call_id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


@dataclass
class StreamAssembler:
    """Folds stream chunks into one response: text, tool calls by index, usage, finish reason.

    ``started`` is the ``time.perf_counter()`` at which the request was sent; the first chunk that
    carries text or a tool call sets `time_to_first_token`.
    """

    started: float
    on_text_delta: Callable[[str], None] | None = None
    text: list[str] = field(default_factory=list)
    calls: dict[int, _PartialCall] = field(default_factory=dict)
    finish: str | None = None
    usage: WireUsage | None = None
    response_id: str | None = None
    model: str | None = None
    time_to_first_token: float | None = None

    def feed(self, chunk: WireChunk) -> None:
        """Take in one chunk."""
        self.response_id = self.response_id or chunk.id
        self.model = self.model or chunk.model
        if chunk.usage is not None:
            self.usage = chunk.usage
        for choice in chunk.choices[:1]:
            self.finish = choice.finish_reason or self.finish
            self._delta(choice.delta)

    def _delta(self, delta: WireMessageIn) -> None:
        if (delta.content or delta.tool_calls) and self.time_to_first_token is None:
            self.time_to_first_token = time.perf_counter() - self.started
        if delta.content:
            self.text.append(delta.content)
            if self.on_text_delta is not None:
                self.on_text_delta(delta.content)
        for piece in delta.tool_calls or ():
            self._tool_delta(piece)

    def _tool_delta(self, piece: WireToolCallIn) -> None:
        # Servers that omit ``index`` send each call whole, so each piece is a new call.
        index = piece.index if piece.index is not None else len(self.calls)
        partial = self.calls.setdefault(index, _PartialCall())
        partial.call_id = partial.call_id or piece.id
        if piece.function is None:
            return
        partial.name += piece.function.name or ""
        arguments = piece.function.arguments
        if isinstance(arguments, dict):
            arguments = json.dumps(arguments)
        partial.arguments.append(arguments or "")

    def parts(self) -> tuple[TextPart | ToolCall, ...]:
        """Return the assembled text and tool calls."""
        calls = [
            parse_call(p.call_id, WireFunctionIn(name=p.name, arguments="".join(p.arguments)))
            for _, p in sorted(self.calls.items())
        ]
        return wire_parts("".join(self.text), calls)


def to_usage(usage: WireUsage | None, price: ModelPrice | None) -> Usage:
    """Our usage from the wire's; no usage at all is one request of unknown cost."""
    if usage is None:
        return Usage(requests=1, cost=None)
    # A negative count (a server that lies) would be subtracted from the run's totals and let it
    # slip past MaxTokens and MaxCost: it counts as none.
    tokens_in, tokens_out = max(0, usage.prompt_tokens), max(0, usage.completion_tokens)
    cached = usage.prompt_tokens_details and usage.prompt_tokens_details.cached_tokens
    reasoning = usage.completion_tokens_details and usage.completion_tokens_details.reasoning_tokens
    counted = Usage(
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        requests=1,
        cache_read_tokens=cached or 0,
        reasoning_tokens=reasoning or 0,
    )
    return counted.model_copy(update={"cost": cost_of(price, counted)})


def completion_response(
    completion: WireCompletion, price: ModelPrice | None, model: str
) -> ModelResponse:
    """The response a validated complete answer stands for (``model`` if it names none)."""
    choice = completion.choices[0]
    return ModelResponse(
        parts=completion_parts(choice.message),
        usage=to_usage(completion.usage, price),
        finish_reason=finish_reason(choice.finish_reason),
        model_name=completion.model or model,
        response_id=completion.id,
    )
