"""The official SDKs as the reference: the same request, and the same answer read, both ways.

A recording server on loopback (`tests.faults.server.ModelServer`) takes a request from the
``anthropic`` or ``openai`` SDK and one from our client, built from the same conversation, and the
two bodies and credential headers must be the same JSON. Then it answers both with the same
stream, and what the SDK's own stream helper makes of it (its final message or response) must be
what our `ModelResponse` holds: text, thinking and its signature, calls, usage.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterator
from typing import Any

import anthropic
import openai
import pytest

import workbench as wb
from tests.faults.server import ModelServer, Seen, reply, serving, stream
from tests.live.fewshot import ADD
from workbench.models import ModelRequest

KEY = "sk-sdk-reference-key-0123"
MODEL = "claude-reference"  # no real model's name: the SDK warns about the retired ones
SIGNATURE = "EqQBCkgIARABGAIiQL2b" + "s" * 30

pytestmark = pytest.mark.timeout(60)


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


def header_of(seen: Seen, name: str) -> str:
    return next((v for k, v in seen.headers.items() if k.lower() == name), "")


def ours(model: wb.Model, *messages: wb.Message, **settings: Any) -> wb.ModelResponse:
    request = ModelRequest(messages=messages, tools=(ADD,), settings=settings)  # type: ignore[arg-type]
    return asyncio.run(model.request(request))


# --- Anthropic Messages --------------------------------------------------------------------------

THOUGHT = wb.ThinkingPart(text="Add them.", signature=SIGNATURE, provider="anthropic")
CONVERSATION = (
    wb.Message.system("You add numbers."),
    wb.Message.user("What is 17 + 25?"),
    wb.Message(
        role="assistant",
        parts=(THOUGHT, wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="toolu_1")),
    ),
    wb.Message(
        role="tool",
        parts=(wb.ToolResult(call_id="toolu_1", name="add", content="oops", is_error=True),),
    ),
)
SDK_MESSAGES: list[Any] = [
    {"role": "user", "content": [{"type": "text", "text": "What is 17 + 25?"}]},
    {
        "role": "assistant",
        "content": [
            {"type": "thinking", "thinking": "Add them.", "signature": SIGNATURE},
            {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 17, "b": 25}},
        ],
    },
    {
        "role": "user",
        "content": [
            {"type": "tool_result", "tool_use_id": "toolu_1", "content": "oops", "is_error": True}
        ],
    },
]


def anthropic_stream() -> bytes:
    def event(data: dict[str, Any]) -> str:
        return f"event: {data['type']}\ndata: {json.dumps(data)}\n\n"

    start = {
        "id": "msg_1",
        "type": "message",
        "role": "assistant",
        "model": MODEL,
        "content": [],
        "stop_reason": None,
        "stop_sequence": None,
        "usage": {"input_tokens": 50, "output_tokens": 1, "cache_read_input_tokens": 20},
    }
    blocks = [
        (
            {"type": "thinking", "thinking": "", "signature": ""},
            [
                {"type": "thinking_delta", "thinking": "Try again "},
                {"type": "thinking_delta", "thinking": "with the tool."},
                {"type": "signature_delta", "signature": SIGNATURE},
            ],
        ),
        ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Adding."}]),
        (
            {"type": "tool_use", "id": "toolu_2", "name": "add", "input": {}},
            [
                {"type": "input_json_delta", "partial_json": '{"a": 17,'},
                {"type": "input_json_delta", "partial_json": ' "b": 25}'},
            ],
        ),
    ]
    out = [event({"type": "message_start", "message": start})]
    for index, (block, deltas) in enumerate(blocks):
        out.append(event({"type": "content_block_start", "index": index, "content_block": block}))
        out += [event({"type": "content_block_delta", "index": index, "delta": d}) for d in deltas]
        out.append(event({"type": "content_block_stop", "index": index}))
    finished = {"stop_reason": "tool_use", "stop_sequence": None}
    out.append(event({"type": "message_delta", "delta": finished, "usage": {"output_tokens": 30}}))
    out.append(event({"type": "message_stop"}))
    return "".join(out).encode()


def test_anthropic_the_same_request_as_the_sdk_builds(server: ModelServer) -> None:
    done = {
        "id": "m",
        "type": "message",
        "role": "assistant",
        "content": [],
        "model": "m",
        "stop_reason": "end_turn",
        "usage": {"input_tokens": 1, "output_tokens": 1},
    }
    server.answer(reply(200, done))
    root = server.url.removesuffix("/v1")
    sdk = anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0)
    sdk.messages.create(
        model=MODEL,
        max_tokens=4096,
        system="You add numbers.",
        messages=SDK_MESSAGES,
        tools=[{"name": "add", "description": ADD.description, "input_schema": ADD.parameters}],
        tool_choice={"type": "auto"},
        stop_sequences=["\n"],
    )
    model = wb.AnthropicModel(MODEL, base_url=root, api_key=KEY)
    ours(model, *CONVERSATION, tool_choice="auto", stop=["\n"])
    theirs, mine = server.requests
    assert mine.body == theirs.body
    for header in ("x-api-key", "anthropic-version"):
        assert header_of(mine, header) == header_of(theirs, header) != ""


def test_anthropic_a_stream_reads_as_the_sdk_reads_it(server: ModelServer) -> None:
    server.answer(stream(anthropic_stream()))
    root = server.url.removesuffix("/v1")
    sdk = anthropic.Anthropic(base_url=root, api_key=KEY, max_retries=0)
    with sdk.messages.stream(model=MODEL, max_tokens=64, messages=SDK_MESSAGES[:1]) as events:
        final = events.get_final_message()
    model = wb.AnthropicModel(MODEL, base_url=root, api_key=KEY)
    response = ours(model, wb.Message.user("What is 17 + 25?"), stream=True)

    thinking, text, call = final.content
    assert response.parts == (
        wb.ThinkingPart(
            text=thinking.thinking,  # type: ignore[union-attr]
            signature=thinking.signature,  # type: ignore[union-attr]
            provider="anthropic",
        ),
        wb.TextPart(text=text.text),  # type: ignore[union-attr]
        wb.ToolCall(name=call.name, arguments=call.input, call_id=call.id),  # type: ignore[union-attr, arg-type]
    )
    assert response.finish_reason is wb.FinishReason.TOOL_CALLS and final.stop_reason == "tool_use"
    usage = final.usage
    assert response.usage.output_tokens == usage.output_tokens
    cached = usage.cache_read_input_tokens or 0
    assert response.usage.input_tokens == usage.input_tokens + cached
    assert response.usage.cache_read_tokens == cached


# --- the Responses API ---------------------------------------------------------------------------

REASONING = wb.ThinkingPart(
    text="Add them.", signature="gAAAA" + "e" * 20, provider="openai", id="rs_1"
)
RESPONSES_CONVERSATION = (
    wb.Message.system("You add numbers."),
    wb.Message.user("What is 17 + 25?"),
    wb.Message(
        role="assistant",
        parts=(REASONING, wb.ToolCall(name="add", arguments={"a": 17, "b": 25}, call_id="c1")),
    ),
    wb.Message.tool_result("c1", "42", name="add"),
)
SDK_INPUT: list[Any] = [
    {"type": "message", "role": "system", "content": "You add numbers."},
    {"type": "message", "role": "user", "content": "What is 17 + 25?"},
    {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Add them."}],
        "encrypted_content": REASONING.signature,
    },
    {"type": "function_call", "call_id": "c1", "name": "add", "arguments": '{"a": 17, "b": 25}'},
    {"type": "function_call_output", "call_id": "c1", "output": "42"},
]


def responses_stream() -> bytes:
    said = {
        "type": "message",
        "id": "msg_1",
        "role": "assistant",
        "status": "completed",
        "content": [{"type": "output_text", "text": "17 + 25 = 42", "annotations": []}],
    }
    reasoning = {
        "type": "reasoning",
        "id": "rs_2",
        "summary": [{"type": "summary_text", "text": "Read the result."}],
        "encrypted_content": "gAAAAnew",
    }
    usage = {
        "input_tokens": 90,
        "input_tokens_details": {"cached_tokens": 40},
        "output_tokens": 12,
        "output_tokens_details": {"reasoning_tokens": 6},
        "total_tokens": 102,
    }
    top = {"id": "resp_1", "object": "response", "created_at": 1, "model": "gpt-5-mini"}
    whole = {**top, "status": "completed", "output": [reasoning, said], "usage": usage}
    created = {**top, "status": "in_progress", "output": []}
    events: list[dict[str, Any]] = [
        {"type": "response.created", "response": created},
        {"type": "response.output_item.added", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.done", "output_index": 0, "item": reasoning},
        {"type": "response.output_item.added", "output_index": 1, "item": {**said, "content": []}},
        {
            "type": "response.content_part.added",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "part": {"type": "output_text", "text": "", "annotations": []},
        },
        {
            "type": "response.output_text.delta",
            "item_id": "msg_1",
            "output_index": 1,
            "content_index": 0,
            "delta": "17 + 25 = 42",
            "logprobs": [],
        },
        {"type": "response.output_item.done", "output_index": 1, "item": said},
        {"type": "response.completed", "response": whole},
    ]
    for number, event in enumerate(events):
        event["sequence_number"] = number
    return "".join(f"event: {e['type']}\ndata: {json.dumps(e)}\n\n" for e in events).encode()


def test_responses_the_same_request_as_the_sdk_builds(server: ModelServer) -> None:
    server.answer(
        reply(200, {"id": "r", "object": "response", "status": "completed", "output": []})
    )
    sdk = openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0)
    sdk.responses.create(
        model="gpt-5-mini",
        input=SDK_INPUT,
        tools=[
            {
                "type": "function",
                "name": "add",
                "description": ADD.description,
                "parameters": ADD.parameters,
                "strict": False,
            }
        ],
        store=False,
        include=["reasoning.encrypted_content"],
        max_output_tokens=64,
        reasoning={"effort": "low", "summary": "auto"},
    )
    model = wb.OpenAIResponsesModel("gpt-5-mini", base_url=server.url, api_key=KEY)
    ours(model, *RESPONSES_CONVERSATION, max_tokens=64, reasoning_effort="low")
    theirs, mine = server.requests
    assert mine.body == theirs.body
    assert header_of(mine, "authorization") == header_of(theirs, "authorization") == f"Bearer {KEY}"


def test_responses_a_stream_reads_as_the_sdk_reads_it(server: ModelServer) -> None:
    server.answer(stream(responses_stream()))
    sdk = openai.OpenAI(base_url=server.url, api_key=KEY, max_retries=0)
    with sdk.responses.stream(model="gpt-5-mini", input="What is 17 + 25?") as events:
        final = events.get_final_response()
    model = wb.OpenAIResponsesModel("gpt-5-mini", base_url=server.url, api_key=KEY)
    response = ours(model, wb.Message.user("What is 17 + 25?"), stream=True)

    reasoning, _ = final.output
    assert response.parts == (
        wb.ThinkingPart(
            text=reasoning.summary[0].text,  # type: ignore[union-attr]
            signature=reasoning.encrypted_content,  # type: ignore[union-attr]
            provider="openai",
            id=reasoning.id,
        ),
        wb.TextPart(text=final.output_text),
    )
    assert final.usage is not None
    assert response.usage.input_tokens == final.usage.input_tokens
    assert response.usage.cache_read_tokens == final.usage.input_tokens_details.cached_tokens
    assert response.usage.reasoning_tokens == final.usage.output_tokens_details.reasoning_tokens
