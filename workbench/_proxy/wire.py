"""The server side of Chat Completions: requests in, responses out (the recording proxy).

The client side (what `OpenAIModel` sends and reads) is `workbench.models._openai_wire`; this is
its mirror image, for a proxy that receives an agent's requests and answers them.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from pydantic import Field, ValidationError

from workbench.errors import MessageFormatError
from workbench.messages import (
    JsonValue,
    Message,
    ModelResponse,
    TextPart,
    ToolCall,
    ToolDefinition,
    ToolResult,
    Usage,
)
from workbench.models._openai_wire import (
    FINISH_REASONS,
    Lenient,
    WireToolCall,
    WireToolCallIn,
    parse_call,
    snippet,
    wire_call,
    wire_parts,
)

__all__ = [
    "WireRequest",
    "completion_chunks",
    "completion_json",
    "from_wire_messages",
    "parse_request",
    "request_tools",
]


class WireContentPartIn(Lenient):
    """One part of a message's content given as a list (text, or an image we only name)."""

    type: str = "text"
    text: str | None = None


class WireRequestMessage(Lenient):
    """One message of a request, as a client sent it."""

    role: str
    content: str | list[WireContentPartIn] | None = None
    tool_calls: list[WireToolCallIn] | None = None
    tool_call_id: str | None = None


class WireToolFunctionIn(Lenient):
    """``function`` of a tool definition in a request."""

    name: str
    description: str = ""
    parameters: dict[str, JsonValue] = Field(default_factory=dict)


class WireToolIn(Lenient):
    """One tool definition of a request."""

    type: str = "function"
    function: WireToolFunctionIn


class WireRequest(Lenient):
    """A ``POST /chat/completions`` body as a client sent it."""

    model: str = ""
    messages: list[WireRequestMessage]
    tools: list[WireToolIn] = Field(default_factory=list)
    stream: bool = False


def parse_request(raw: bytes) -> WireRequest:
    """Validate a request body; one that does not fit is a `MessageFormatError`."""
    try:
        return WireRequest.model_validate_json(raw)
    except ValidationError as exc:
        raise MessageFormatError(
            f"the request is not a chat completion request ({exc.error_count()} problems): "
            f"{snippet(raw, _as_sent)}"
        ) from None


def _as_sent(text: str) -> str:
    """The client's own request, quoted back to it as it was sent."""
    return text


def request_tools(request: WireRequest) -> tuple[ToolDefinition, ...]:
    """The tool definitions a request offers."""
    return tuple(
        ToolDefinition(
            name=t.function.name,
            description=t.function.description,
            parameters=t.function.parameters,
        )
        for t in request.tools
    )


def from_wire_messages(messages: Sequence[WireRequestMessage]) -> tuple[Message, ...]:
    """Our conversation from a request's messages: the inverse of `to_wire_messages`.

    Each ``tool`` message is a tool message of one result (as the loop keeps them, so that our
    agent's strict replay of a proxy's run matches), named after the call it answers;
    ``developer`` is a system message.
    """
    names: dict[str, str] = {}
    out: list[Message] = []
    for wire in messages:
        text = _content_text(wire.content)
        if wire.role == "tool":
            call_id = wire.tool_call_id or ""
            result = ToolResult(call_id=call_id, name=names.get(call_id, ""), content=text)
            out.append(Message(role="tool", parts=(result,)))
        elif wire.role == "assistant":
            parts = wire_parts(text, [parse_call(c.id, c.function) for c in wire.tool_calls or ()])
            names.update((p.call_id, p.name) for p in parts if isinstance(p, ToolCall))
            out.append(Message(role="assistant", parts=parts))
        else:
            role = "system" if wire.role in ("system", "developer") else "user"
            out.append(Message(role=role, parts=(TextPart(text=text),)))
    return tuple(out)


def _content_text(content: str | list[WireContentPartIn] | None) -> str:
    if content is None or isinstance(content, str):
        return content or ""
    return "".join(p.text if p.text is not None else f"[{p.type}]" for p in content)


_WIRE_FINISH = {v: k for k, v in reversed(FINISH_REASONS.items())}


def _answered_call(call: ToolCall) -> WireToolCall:
    """A call as the model sent it: broken arguments stay broken (the agent must see them)."""
    wire = wire_call(call)
    if call.invalid_arguments is not None:
        wire["function"]["arguments"] = call.invalid_arguments
    return wire


def _out_calls(response: ModelResponse) -> list[dict[str, JsonValue]]:
    return [dict(_answered_call(c), index=i) for i, c in enumerate(response.calls)]


def _wire_usage(usage: Usage) -> dict[str, JsonValue]:
    return {
        "prompt_tokens": usage.input_tokens,
        "completion_tokens": usage.output_tokens,
        "total_tokens": usage.total_tokens,
    }


def completion_json(response: ModelResponse) -> dict[str, JsonValue]:
    """A recorded response as the complete (non-streamed) answer a server would send."""
    message: dict[str, JsonValue] = {"role": "assistant", "content": response.text_content or None}
    if response.calls:
        message["tool_calls"] = [_answered_call(c) for c in response.calls]
    return {
        "id": response.response_id or "chatcmpl-replay",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": response.model_name,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": _WIRE_FINISH.get(response.finish_reason, "stop"),
            }
        ],
        "usage": _wire_usage(response.usage),
    }


def completion_chunks(response: ModelResponse) -> list[dict[str, JsonValue]]:
    """A recorded response as the chunks of a stream: the delta, the finish, the usage."""
    head = {
        "id": response.response_id or "chatcmpl-replay",
        "object": "chat.completion.chunk",
        "created": int(time.time()),
        "model": response.model_name,
    }
    delta: dict[str, JsonValue] = {"role": "assistant", "content": response.text_content}
    if response.calls:
        delta["tool_calls"] = _out_calls(response)
    finish = _WIRE_FINISH.get(response.finish_reason, "stop")
    return [
        {**head, "choices": [{"index": 0, "delta": delta, "finish_reason": None}]},
        {**head, "choices": [{"index": 0, "delta": {}, "finish_reason": finish}]},
        {**head, "choices": [], "usage": _wire_usage(response.usage)},
    ]
