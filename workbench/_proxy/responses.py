"""The server side of the OpenAI Responses API: requests in, answers out (the recording proxy).

The client side (what `OpenAIResponsesModel` sends and reads) is
`workbench.models._responses_wire`; an answer is read with its `parse_response` and
`ResponsesStream`, and this module is the mirror image for the rest: a request's input items
read into our messages, a recorded response written back as a response object or its events.
`RESPONSES` is the `Wire` the proxy serves at ``/v1/responses``.

How a request reads (the inverse of the client's mapping, so our agent's strict replay of a
proxy's run agrees): ``instructions`` is the first system message; a ``message`` item is a
message of its role (``developer`` is system); the items an answer is made of (an assistant
``message``, ``reasoning`` with its id and encrypted content, ``function_call``) are one
assistant message while they follow each other; each ``function_call_output`` is a tool message
of one result. Item ids are not part of a message: clients make them up (Codex gives every input
item a new one on every run). An image or a file is a placeholder naming its type; an item of
another kind is its JSON.

Settings are the body's other fields but ``stream`` and the fields that change on every run of
the same task: Codex's ``prompt_cache_key`` (its session id) and ``client_metadata`` (its session,
thread and turn ids).
"""

from __future__ import annotations

import json
import time
from collections.abc import Iterator
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
from workbench.models._responses_wire import (
    ResponsesStream,
    parse_response,
    response_of,
    wire_usage,
)
from workbench.models._wire import Lenient
from workbench.models.prices import price_for

__all__ = ["RESPONSES", "ResponsesWire", "from_wire_input"]

PROVIDER = "openai"
"""Whose reasoning a reasoning item is (`ThinkingPart.provider`)."""

_NOT_SETTINGS = frozenset({"model", "instructions", "input", "tools", "stream"})
VOLATILE = frozenset({"prompt_cache_key", "client_metadata"})
"""Fields that change on every run of the same task (Codex's session, thread and turn ids)."""
_ANSWER_ITEMS = frozenset({"function_call", "reasoning", "custom_tool_call"})
_RESULT_ITEMS = frozenset({"function_call_output", "custom_tool_call_output"})


class _Content(Lenient):
    """A piece of an item's content or summary."""

    type: str = "input_text"
    text: str | None = None
    refusal: str | None = None


class _Item(Lenient):
    """One input item as a client sent it (a bare ``{"role", "content"}`` is a message)."""

    type: str = "message"
    role: str | None = None
    content: str | list[_Content] | None = None
    id: str | None = None
    call_id: str | None = None
    name: str | None = None
    arguments: str | dict[str, JsonValue] | None = None
    input: str | None = None
    output: str | list[_Content] | None = None
    summary: list[_Content] | None = None
    encrypted_content: str | None = None


class _Request(Lenient):
    """A ``POST /v1/responses`` body as a client sent it (tools are read from the JSON)."""

    model: str = ""
    instructions: str | None = None
    input: str | list[_Item]
    tools: list[dict[str, JsonValue]] = Field(default_factory=list)
    stream: bool = False


def _parse(raw: bytes) -> _Request:
    try:
        return _Request.model_validate_json(raw)
    except ValidationError as exc:
        raise not_a_request("a Responses API request", exc, raw) from None


def from_wire_input(instructions: str | None, given: str | list[_Item]) -> tuple[Message, ...]:
    """Our conversation from a request's instructions and input (see the module docstring)."""
    out: list[Message] = []
    if instructions:
        out.append(Message(role="system", parts=(TextPart(text=instructions),)))
    items = [_Item(role="user", content=given)] if isinstance(given, str) else given
    names: dict[str, str] = {}
    for item in items:
        answering = item.type in _ANSWER_ITEMS or (
            item.type == "message" and item.role == "assistant"
        )
        if answering:
            part = _answer_part(item)
            if isinstance(part, ToolCall):
                names[part.call_id] = part.name
            if out and out[-1].role == "assistant":
                out[-1] = out[-1].model_copy(
                    update={"parts": (*out[-1].parts, *_parts(item, part))}
                )
            else:
                out.append(Message(role="assistant", parts=_parts(item, part)))
        elif item.type in _RESULT_ITEMS:
            call_id = item.call_id or ""
            result = ToolResult(
                call_id=call_id, name=names.get(call_id, ""), content=_text(item.output)
            )
            out.append(Message(role="tool", parts=(result,)))
        elif item.type == "message":
            role = "system" if item.role in ("system", "developer") else "user"
            out.append(Message(role=role, parts=_texts(item.content)))
        else:
            out.append(
                Message(
                    role="user", parts=(TextPart(text=item.model_dump_json(exclude_defaults=True)),)
                )
            )
    return tuple(out)


def _parts(item: _Item, part: Part | None) -> tuple[Part, ...]:
    """An answer's item as parts: a message's texts, or the one part another item is."""
    return _texts(item.content) if part is None else (part,)


def _answer_part(item: _Item) -> Part | None:
    """The part an answer's item is (None for a message, which is its texts)."""
    match item.type:
        case "function_call":
            return ToolCall.parse(item.name or "", item.arguments or "", item.call_id)
        case "custom_tool_call":
            return ToolCall(
                name=item.name or "",
                arguments={"input": item.input or ""},
                call_id=item.call_id or "",
            )
        case "reasoning":
            text = _joined(item.summary) or _joined(
                item.content if isinstance(item.content, list) else None
            )
            return ThinkingPart(
                text=text, signature=item.encrypted_content, provider=PROVIDER, id=item.id
            )
    return None


def _texts(content: str | list[_Content] | None) -> tuple[Part, ...]:
    if content is None or isinstance(content, str):
        return (TextPart(text=content or ""),)
    return tuple(TextPart(text=_piece(c)) for c in content)


def _piece(content: _Content) -> str:
    """A piece of content as text: its text (a refusal's words); a placeholder for a file."""
    if content.text is not None:
        return content.text
    if content.refusal is not None:
        return content.refusal
    return f"[{content.type.removeprefix('input_')}]"


def _text(output: str | list[_Content] | None) -> str:
    if output is None or isinstance(output, str):
        return output or ""
    return "\n\n".join(_piece(c) for c in output)


def _joined(pieces: list[_Content] | None) -> str:
    return "\n\n".join(p.text for p in pieces or () if p.text)


def _tool(tool: dict[str, JsonValue]) -> ToolDefinition:
    """A tool definition: a function's schema; another kind keeps its configuration."""
    kind = tool.get("type", "function")
    description = tool.get("description")
    schema = tool.get("parameters")
    rest = {k: v for k, v in tool.items() if k not in ("name", "description")}
    return ToolDefinition(
        name=str(tool.get("name") or kind),
        description=description if isinstance(description, str) else "",
        parameters=schema if kind == "function" and isinstance(schema, dict) else rest,
    )


# --- answers out ---------------------------------------------------------------------------------


def _items(response: ModelResponse) -> list[dict[str, JsonValue]]:
    """A recorded answer's parts as the output items they came as (texts in a row: one item)."""
    rid = response.response_id or "resp_replay"
    items: list[dict[str, JsonValue]] = []
    for index, part in enumerate(response.parts):
        if isinstance(part, TextPart):
            text = {"type": "output_text", "text": part.text, "annotations": []}
            last = items[-1] if items else None
            if (
                last is not None
                and last["type"] == "message"
                and index
                and isinstance(response.parts[index - 1], TextPart)
            ):
                last["content"].append(text)
            else:
                message = {
                    "type": "message",
                    "id": f"msg_{rid}_{index}",
                    "status": "completed",
                    "role": "assistant",
                }
                items.append({**message, "content": [text]})
        elif isinstance(part, ThinkingPart):
            items.append(_reasoning(part, f"rs_{rid}_{index}"))
        else:
            arguments = part.invalid_arguments or json.dumps(part.arguments, ensure_ascii=False)
            items.append(
                {
                    "type": "function_call",
                    "id": f"fc_{part.call_id}",
                    "call_id": part.call_id,
                    "name": part.name,
                    "arguments": arguments,
                    "status": "completed",
                }
            )
    return items


def _reasoning(part: ThinkingPart, made_up: str) -> dict[str, JsonValue]:
    item: dict[str, JsonValue] = {"type": "reasoning", "id": part.id or made_up}
    if part.signature is not None:
        summary = [{"type": "summary_text", "text": part.text}] if part.text else []
        return {**item, "summary": summary, "encrypted_content": part.signature}
    content = [{"type": "reasoning_text", "text": part.text}] if part.text else []
    return {**item, "summary": [], "content": content}


def _response(response: ModelResponse, output: list[dict[str, JsonValue]]) -> dict[str, JsonValue]:
    incomplete = {
        FinishReason.LENGTH: "max_output_tokens",
        FinishReason.CONTENT_FILTER: "content_filter",
    }
    reason = incomplete.get(response.finish_reason)
    return {
        "id": response.response_id or "resp_replay",
        "object": "response",
        "created_at": int(time.time()),
        "status": "incomplete" if reason else "completed",
        "model": response.model_name,
        "output": output,
        "usage": wire_usage(response.usage),
        "error": None,
        "incomplete_details": {"reason": reason} if reason else None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def _item_events(index: int, item: dict[str, Any]) -> Iterator[tuple[str, dict[str, Any]]]:
    """One output item as a stream sends it: added, its deltas, done."""
    where = {"item_id": item["id"], "output_index": index}
    if item["type"] == "message":
        yield (
            "response.output_item.added",
            {"output_index": index, "item": {**item, "status": "in_progress", "content": []}},
        )
        for at, piece in enumerate(item["content"]):
            yield (
                "response.content_part.added",
                {**where, "content_index": at, "part": {**piece, "text": ""}},
            )
            yield (
                "response.output_text.delta",
                {**where, "content_index": at, "delta": piece["text"]},
            )
            yield "response.output_text.done", {**where, "content_index": at, "text": piece["text"]}
            yield "response.content_part.done", {**where, "content_index": at, "part": piece}
    elif item["type"] == "function_call":
        yield (
            "response.output_item.added",
            {"output_index": index, "item": {**item, "status": "in_progress", "arguments": ""}},
        )
        yield "response.function_call_arguments.delta", {**where, "delta": item["arguments"]}
        yield "response.function_call_arguments.done", {**where, "arguments": item["arguments"]}
    else:
        yield "response.output_item.added", {"output_index": index, "item": item}
    yield "response.output_item.done", {"output_index": index, "item": item}


class ResponsesWire:
    """The OpenAI Responses API at ``/v1/responses`` (see `workbench._proxy.wire.Wire`)."""

    name = "responses"
    path = "/responses"

    def read(self, body: bytes) -> Read:
        """The request's messages, tools and settings (see the module docstring)."""
        request = _parse(body)
        raw: dict[str, JsonValue] = json.loads(body)
        call = Call(
            model=request.model,
            messages=from_wire_input(request.instructions, request.input),
            tools=tuple(_tool(t) for t in request.tools),
            settings={k: v for k, v in raw.items() if k not in _NOT_SETTINGS | VOLATILE},
        )
        return Read(call=call, stream=request.stream)

    def answer(self, content: bytes, redact: Redact, model: str) -> ModelResponse:
        """A complete answer (`parse_response`); a failed response is raised typed."""
        response = parse_response(content, redact, "the upstream")
        return response_of(response, price_for(response.model or model), model, PROVIDER)

    def reading(self, redact: Redact) -> EventReading:
        """A new reading of a stream."""
        return EventReading(ResponsesStream(PROVIDER, redact, where="the upstream"))

    def rendered(self, response: ModelResponse) -> dict[str, JsonValue]:
        """A recorded answer as the response object, usage as it was recorded."""
        return _response(response, _items(response))

    def rendered_events(self, response: ModelResponse) -> list[bytes]:
        """A recorded answer as the API streams it: created, each item, completed."""
        whole = self.rendered(response)
        started = {
            **whole,
            "status": "in_progress",
            "output": [],
            "usage": None,
            "incomplete_details": None,
        }
        events: list[tuple[str, dict[str, Any]]] = [("response.created", {"response": started})]
        for index, item in enumerate(_items(response)):
            events += _item_events(index, item)
        final = "response.incomplete" if whole["status"] == "incomplete" else "response.completed"
        events.append((final, {"response": whole}))
        return [
            _event(kind, {**data, "sequence_number": n}) for n, (kind, data) in enumerate(events)
        ]

    def error(self, message: str, kind: str, status: int) -> dict[str, JsonValue]:
        """``{"error": {"message", "type", "code"}}``, as OpenAI's API answers."""
        return {"error": {"message": message, "type": kind, "code": status}}

    def error_event(self, message: str, kind: str) -> bytes:
        """An ``error`` event, as the API sends one mid-stream (the SDKs raise it)."""
        return _event("error", {"code": kind, "message": message, "param": None})


def _event(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


RESPONSES = ResponsesWire()
