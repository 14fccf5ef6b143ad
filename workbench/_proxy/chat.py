"""The server side of Chat Completions: requests in, responses out (the recording proxy).

The client side (what `OpenAIModel` sends and reads) is `workbench.models._openai_wire`; this is
its mirror image, for a proxy that receives an agent's requests and answers them. `CHAT` is the
`Wire` the proxy serves at ``/v1/chat/completions``.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence

from pydantic import Field, ValidationError

from workbench._proxy.calls import Call
from workbench._proxy.usage import asking_usage, asks_usage
from workbench._proxy.wire import Read, Redact, not_a_request
from workbench.errors import MalformedResponseError, ServerError
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
    StreamAssembler,
    WireToolCall,
    WireToolCallIn,
    completion_response,
    finish_reason,
    parse_call,
    parse_chunk,
    parse_completion,
    to_usage,
    wire_call,
    wire_parts,
)
from workbench.models._wire import Lenient
from workbench.models.prices import price_for

__all__ = [
    "CHAT",
    "ChatWire",
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
        raise not_a_request("a chat completion request", exc, raw) from None


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


_NOT_SETTINGS = frozenset({"model", "messages", "tools", "stream", "stream_options"})
"""What a request's body holds besides its settings: the model is the snapshot's ``model_name``
(as an agent of ours records it, so that its strict replay of a proxy's run agrees), the
messages and tools are their own fields, and how the answer travels is not recorded."""


class ChatReading:
    """A Chat Completions stream read chunk by chunk, up to ``[DONE]``."""

    def __init__(self, redact: Redact) -> None:
        self.assembler = StreamAssembler(started=0.0)
        self.done = False
        self._redact = redact

    def feed(self, event: str, data: str) -> None:
        """Read one event: a chunk, ``[DONE]``, or an error (raised)."""
        if data.strip() == "[DONE]":
            self.done = True
            return
        if event == "error":
            raise ServerError(f"the upstream's stream failed: {self._redact(data)[:500]}")
        chunk = parse_chunk(data, self._redact)
        if chunk.error is not None:
            raise ServerError(f"the upstream's stream failed: {chunk.error.message}")
        self.assembler.feed(chunk)

    def response(self, model: str, first: float | None) -> ModelResponse:
        """The assembled answer; one with neither ``[DONE]`` nor a finish ended early."""
        assembler = self.assembler
        if not self.done and assembler.finish is None:
            raise MalformedResponseError("the upstream's stream ended early")
        model = assembler.model or model
        return ModelResponse(
            parts=assembler.parts(),
            usage=to_usage(assembler.usage, price_for(model)),
            finish_reason=finish_reason(assembler.finish),
            model_name=model,
            response_id=assembler.response_id,
            time_to_first_token=first,
        )


class ChatWire:
    """Chat Completions at ``/v1/chat/completions`` (see `workbench._proxy.wire.Wire`)."""

    name = "chat"
    path = "/chat/completions"

    def read(self, body: bytes) -> Read:
        """The request's messages, tools and settings (everything else in the body).

        A stream that does not ask for its usage is sent asking for it (`workbench._proxy.usage`).
        """
        wire = parse_request(body)
        request: dict[str, JsonValue] = json.loads(body)
        asking = wire.stream and not asks_usage(request)
        call = Call(
            model=wire.model,
            messages=from_wire_messages(wire.messages),
            tools=request_tools(wire),
            settings={k: v for k, v in request.items() if k not in _NOT_SETTINGS},
        )
        sent = asking_usage(body, request) if asking else None
        return Read(call=call, stream=wire.stream, sent=sent)

    def answer(self, content: bytes, redact: Redact, model: str) -> ModelResponse:
        """A complete answer (`parse_completion`)."""
        return completion_response(parse_completion(content, redact), price_for(model), model)

    def reading(self, redact: Redact) -> ChatReading:
        """A new reading of a stream."""
        return ChatReading(redact)

    def rendered(self, response: ModelResponse) -> dict[str, JsonValue]:
        """`completion_json`."""
        return completion_json(response)

    def rendered_events(self, response: ModelResponse) -> list[bytes]:
        """`completion_chunks`, then ``[DONE]``."""
        chunks = completion_chunks(response)
        return [*(f"data: {json.dumps(c)}\n\n".encode() for c in chunks), b"data: [DONE]\n\n"]

    def error(self, message: str, kind: str, status: int) -> dict[str, JsonValue]:
        """``{"error": {"message", "type", "code"}}``: ``error.message`` is what SDKs show."""
        return {"error": {"message": message, "type": kind, "code": status}}

    def error_event(self, message: str, kind: str) -> bytes:
        """An error object as a ``data:`` event (OpenAI's SDKs raise it)."""
        return f"data: {json.dumps(self.error(message, kind, 503))}\n\n".encode()


CHAT = ChatWire()
