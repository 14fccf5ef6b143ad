"""The OpenAI Responses wire: our messages to its input items, its output items to our answer.

One mapping each way. To the wire: `build_body` (``POST /responses``). From the wire:
`parse_response` + `response_of` for a whole answer, `ResponsesStream` for a streamed one, fed one
server-sent event at a time (the client reads a stream this way, and so can a proxy relaying it).

What the mapping decides:

- **Stateless.** ``store: false`` and the whole conversation as input items at every call, never
  ``previous_response_id``: a run can be replayed, forked and re-run from any step without the
  provider's memory of it, and nothing of it is kept on the provider's side.
- **Items in order.** Each message becomes items where it stood: system and user text as
  ``message`` items of their role, an assistant's text as an assistant ``message``, its calls as
  ``function_call`` items, tool results (and retry prompts) as ``function_call_output`` items.
- **Reasoning.** A `ThinkingPart` of this provider goes back as the ``reasoning`` item it came
  as: its id, its summary and its ``encrypted_content`` (asked for with
  ``include: ["reasoning.encrypted_content"]``, without which a stateless conversation cannot
  carry reasoning). An open model's reasoning, which comes as readable ``content`` and no
  encrypted content (llama.cpp's), goes back as that content. Another provider's is left out.
- **Function tools are not strict** (``strict: false``): the Responses API makes them strict by
  default, which refuses most schemas written for Chat Completions.
"""

from __future__ import annotations

import json
from collections.abc import Sequence
from dataclasses import dataclass, field
from typing import Any

from pydantic import Field, ValidationError

from workbench.errors import APIError, MalformedResponseError
from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    Part,
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
    "ENCRYPTED_REASONING",
    "ResponsesStream",
    "WireResponse",
    "build_body",
    "parse_response",
    "response_error",
    "response_of",
    "to_usage",
    "to_wire_input",
    "wire_usage",
]

ENCRYPTED_REASONING = "reasoning.encrypted_content"
"""What ``include`` asks for so that reasoning can be sent back without ``store``."""

ERROR_STATUS = {
    "rate_limit_exceeded": 429,
    "server_error": 500,
    "invalid_prompt": 400,
    "invalid_request_error": 400,
}
"""The HTTP status an error code in a response or a stream stands for (500 when unknown)."""

Item = dict[str, JsonValue]


# --- outgoing ------------------------------------------------------------------------------------


def to_wire_input(messages: Sequence[Message], provider: str) -> list[Item]:
    """Our conversation as input items, each part where it stood (see the module docstring)."""
    items: list[Item] = []
    for message in messages:
        role = "user" if message.role == "tool" else message.role
        texts: list[str] = []
        for part in message.parts:
            if (text := _text(part)) is not None:
                texts.append(text)
                continue
            if texts:  # text before a call or a result stays before it
                items.append(_message(role, texts))
                texts = []
            items.extend(_items(part, provider))
        if texts:
            items.append(_message(role, texts))
    return items


def _text(part: Part) -> str | None:
    """The text a part adds to its message's text, if it is text."""
    if isinstance(part, TextPart):
        return part.text
    if isinstance(part, RetryPrompt) and part.call_id is None:
        return f"{part.content}\n\n{RETRY_INSTRUCTION}"
    return None


def _message(role: str, texts: list[str]) -> Item:
    return {"type": "message", "role": role, "content": "\n\n".join(texts)}


def _items(part: Part, provider: str) -> list[Item]:
    match part:
        case ToolCall():
            # The parsed arguments, never ``invalid_arguments``: the retry prompt says what was
            # wrong, and a server may refuse history holding broken JSON.
            arguments = json.dumps(part.arguments, ensure_ascii=False)
            return [
                {
                    "type": "function_call",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": arguments,
                }
            ]
        case ToolResult():
            return [
                {"type": "function_call_output", "call_id": part.call_id, "output": part.content}
            ]
        case RetryPrompt(call_id=str(call_id)):
            output = f"{part.content}\n\n{RETRY_INSTRUCTION}"
            return [{"type": "function_call_output", "call_id": call_id, "output": output}]
        case ThinkingPart() if part.provider == provider:
            return _reasoning(part)
    return []  # another provider's reasoning: its data means nothing here


def _reasoning(part: ThinkingPart) -> list[Item]:
    item: Item = {"type": "reasoning"}
    if part.id:
        item["id"] = part.id
    if part.signature:
        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
        item.update(summary=summary, encrypted_content=part.signature)
    elif part.text:
        item.update(summary=[], content=[{"type": "reasoning_text", "text": part.text}])
    else:
        return []  # nothing to send back: no text, nothing encrypted
    return [item]


def _wire_tool(tool: ToolDefinition) -> Item:
    return {
        "type": "function",
        "name": tool.name,
        "description": tool.description,
        "parameters": tool.parameters,
        "strict": False,
    }


def _tool_choice(choice: str | dict[str, Any]) -> str | dict[str, Any]:
    """``auto``, ``none``, ``required`` or an object pass through; another name forces that tool."""
    if isinstance(choice, dict) or choice in ("auto", "none", "required"):
        return choice
    return {"type": "function", "name": choice}


def build_body(
    model: str,
    messages: Sequence[Message],
    tools: Sequence[ToolDefinition],
    settings: ModelSettings,
    *,
    stream: bool,
    provider: str,
) -> dict[str, JsonValue]:
    """The JSON body of one ``POST /responses``; ``provider`` is whose reasoning goes back.

    ``seed`` and ``stop`` have no place in the Responses API and are not sent (``extra_body``
    sends them to a server that takes them).
    """
    body: dict[str, JsonValue] = {
        "model": model,
        "input": to_wire_input(messages, provider),
        "store": False,
        "include": [ENCRYPTED_REASONING],
    }
    for ours, theirs in (("temperature", "temperature"), ("top_p", "top_p")):
        if ours in settings:
            body[theirs] = settings[ours]  # type: ignore[literal-required]
    if "max_tokens" in settings:
        body["max_output_tokens"] = settings["max_tokens"]
    if "reasoning_effort" in settings:
        body["reasoning"] = {"effort": settings["reasoning_effort"], "summary": "auto"}
    if tools:
        body["tools"] = [_wire_tool(t) for t in tools]
        if "tool_choice" in settings:
            body["tool_choice"] = _tool_choice(settings["tool_choice"])
    if stream:
        body["stream"] = True
    body.update(settings.get("extra_body", {}))
    return body


# --- incoming ------------------------------------------------------------------------------------


class WireContentIn(Lenient):
    """A piece of an output item: ``output_text``, ``refusal``, ``summary_text``, ..."""

    type: str = ""
    text: str | None = None
    refusal: str | None = None


class WireItemIn(Lenient):
    """One output item: a ``message``, a ``function_call``, a ``reasoning`` item, or another."""

    type: str
    id: str | None = None
    content: list[WireContentIn] | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, JsonValue] | None = None
    summary: list[WireContentIn] | None = None
    encrypted_content: str | None = None


class _InputDetails(Lenient):
    cached_tokens: int | None = None


class _OutputDetails(Lenient):
    reasoning_tokens: int | None = None


class WireUsageIn(Lenient):
    """Token counts; ``input_tokens`` includes the cached ones, as the conventions count."""

    input_tokens: int = 0
    output_tokens: int = 0
    input_tokens_details: _InputDetails | None = None
    output_tokens_details: _OutputDetails | None = None


class WireError(Lenient):
    """An error: ``response.error``, or the body of an ``error`` event."""

    code: str | int | None = None
    message: str = ""


class _Incomplete(Lenient):
    reason: str | None = None


class WireResponse(Lenient):
    """A response object (whole, or the one ``response.completed`` carries)."""

    id: str | None = None
    model: str | None = None
    status: str | None = None
    output: list[WireItemIn] = Field(default_factory=list)
    usage: WireUsageIn | None = None
    error: WireError | None = None
    incomplete_details: _Incomplete | None = None


def response_error(error: WireError, redact: Redact, where: str) -> APIError:
    """An error object (a failed response, an ``error`` event) as the typed error it stands for."""
    status = ERROR_STATUS.get(str(error.code), 500)
    said = redact(f"{error.code or 'error'}: {error.message}")[:500]
    return status_error(status, said, where)


def parse_response(raw: bytes, redact: Redact, where: str) -> WireResponse:
    """Validate a whole answer's body; a failed response is raised as its typed error."""
    try:
        response = WireResponse.model_validate_json(raw)
    except ValidationError as exc:
        raise MalformedResponseError(
            f"the server's response is not a Responses API response ({exc.error_count()} "
            f"problems): {snippet(raw, redact)}"
        ) from None
    if response.error is not None or response.status == "failed":
        raise response_error(response.error or WireError(), redact, where)
    return response


def _joined(pieces: list[WireContentIn] | None) -> str:
    return "\n\n".join(p.text for p in pieces or () if p.text)


def _parts(item: WireItemIn, provider: str) -> list[ResponsePart]:
    """One output item as our parts (a message may hold several texts; a refusal is text)."""
    match item.type:
        case "message":
            texts = [c.text or c.refusal or "" for c in item.content or ()]
            return [TextPart(text=t) for t in texts if t]
        case "function_call":
            if not item.name:
                raise MalformedResponseError("the server sent a function_call without a name")
            return [ToolCall.parse(item.name, item.arguments or "", item.call_id)]
        case "reasoning":
            text = _joined(item.summary) or _joined(item.content)
            return [
                ThinkingPart(
                    text=text,
                    signature=item.encrypted_content,
                    provider=provider,
                    id=item.id,
                )
            ]
    return []  # built-in tools' items and others the workbench's messages do not carry


def finish_reason(response: WireResponse, parts: Sequence[ResponsePart]) -> FinishReason:
    """Why the model stopped: the status, and whether it called tools."""
    if response.status == "incomplete":
        reason = response.incomplete_details.reason if response.incomplete_details else None
        if reason == "max_output_tokens":
            return FinishReason.LENGTH
        if reason == "content_filter":
            return FinishReason.CONTENT_FILTER
        return FinishReason.UNKNOWN
    if any(isinstance(p, ToolCall) for p in parts):
        return FinishReason.TOOL_CALLS
    return FinishReason.STOP if response.status in ("completed", None) else FinishReason.UNKNOWN


def to_usage(usage: WireUsageIn | None, price: ModelPrice | None) -> Usage:
    """Our usage from the wire's; none at all is one request of unknown cost."""
    if usage is None:
        return Usage(requests=1, cost=None)
    # A negative count (a server that lies) would be subtracted from the run's totals: none.
    cached = usage.input_tokens_details and usage.input_tokens_details.cached_tokens
    reasoning = usage.output_tokens_details and usage.output_tokens_details.reasoning_tokens
    counted = Usage(
        input_tokens=max(0, usage.input_tokens),
        output_tokens=max(0, usage.output_tokens),
        requests=1,
        cache_read_tokens=max(0, cached or 0),
        reasoning_tokens=max(0, reasoning or 0),
    )
    return counted.model_copy(update={"cost": cost_of(price, counted)})


def wire_usage(usage: Usage) -> dict[str, JsonValue]:
    """The wire's usage for ours: the inverse of `to_usage`, for writing a recorded answer."""
    return {
        "input_tokens": usage.input_tokens,
        "input_tokens_details": {"cached_tokens": usage.cache_read_tokens},
        "output_tokens": usage.output_tokens,
        "output_tokens_details": {"reasoning_tokens": usage.reasoning_tokens},
        "total_tokens": usage.total_tokens,
    }


def response_of(
    response: WireResponse,
    price: ModelPrice | None,
    model: str,
    provider: str,
    time_to_first_token: float | None = None,
) -> ModelResponse:
    """The answer a validated response object stands for (``model`` if it names none)."""
    parts = [p for item in response.output for p in _parts(item, provider)]
    return ModelResponse(
        parts=tuple(parts),
        usage=to_usage(response.usage, price),
        finish_reason=finish_reason(response, parts),
        model_name=response.model or model,
        response_id=response.id,
        time_to_first_token=time_to_first_token,
    )


class _Event(Lenient):
    """One event of a stream; which fields it has depends on its ``type``."""

    type: str
    delta: str | None = None
    item: WireItemIn | None = None
    output_index: int | None = None
    response: WireResponse | None = None
    code: str | int | None = None
    message: str | None = None


_TERMINAL = ("response.completed", "response.incomplete")
_DELTAS = (
    "response.output_text.delta",
    "response.function_call_arguments.delta",
    "response.reasoning_summary_text.delta",
    "response.reasoning_text.delta",
)


@dataclass
class ResponsesStream(EventStream):
    """Folds a stream's events into one answer (see `EventStream`).

    The first delta (text, arguments or reasoning) is the first token; ``response.completed``
    (or ``response.incomplete``) ends the stream; ``response.failed`` and ``error`` events are
    typed errors by their code. The answer is the final response's output, or, when a server
    leaves that out, the items each ``response.output_item.done`` gave.
    """

    _items: list[WireItemIn] = field(default_factory=list, init=False)
    _final: WireResponse | None = field(default=None, init=False)

    def feed(self, event: str, data: str) -> None:
        """Take in one event (see `EventStream`)."""
        parsed = self._parse(event, data)
        kind = parsed.type
        if kind == "error" or event == "error":
            error = WireError(code=parsed.code, message=parsed.message or "")
            raise response_error(error, self.redact, self.where)
        if kind == "response.failed":
            failed = parsed.response.error if parsed.response is not None else None
            raise response_error(failed or WireError(), self.redact, self.where)
        if kind in _DELTAS and parsed.delta:
            self._token()
            if kind == "response.output_text.delta" and self.on_text_delta is not None:
                self.on_text_delta(parsed.delta)
        elif kind == "response.output_item.done" and parsed.item is not None:
            self._items.append(parsed.item)
        elif kind in _TERMINAL:
            self._final = parsed.response or WireResponse()
            self.done = True

    def _parse(self, event: str, data: str) -> _Event:
        try:
            return _Event.model_validate_json(data)
        except ValidationError as exc:
            if event == "error":  # an error event that is not JSON is still an error
                return _Event(type="error", message=data)
            raise MalformedResponseError(
                f"the server sent a stream event that is not a Responses API event "
                f"({exc.error_count()} problems): {snippet(data, self.redact)}"
            ) from None

    def response(self, price: ModelPrice | None, model: str) -> ModelResponse:
        """The final response's output, or the items as they came (see `EventStream`)."""
        final = self._final or WireResponse()
        if not final.output and self._items:
            final = final.model_copy(update={"output": self._items})
        return response_of(final, price, model, self.provider, self.time_to_first_token)
