"""Answers in the wires other than Chat Completions, written out by hand for the fake upstreams.

What a real server sends, built here independently of the code under test (the proxy writes
recorded answers with its own functions; a test that used those to script the upstream would
check them against themselves). Each builder gives a whole answer (for `Answer(body=...)`) or its
stream (for `Answer(events=...)`).
"""

from __future__ import annotations

import itertools
import json
from typing import Any

Call = tuple[str, str, dict[str, Any]]
"""A tool call: (call id, tool name, arguments)."""

_ANSWERS = itertools.count(1)
"""Each answer its own id, as a server gives it (Claude Code merges turns of the same id)."""


def _sse(kind: str, data: dict[str, Any]) -> bytes:
    return f"event: {kind}\ndata: {json.dumps({'type': kind, **data})}\n\n".encode()


# --- Anthropic Messages --------------------------------------------------------------------------

USAGE = {
    "input_tokens": 12,
    "cache_creation_input_tokens": 30,
    "cache_read_input_tokens": 200,
    "output_tokens": 9,
}
"""Counts with a cache written and read: a replay must give them back exactly."""


def _blocks(text: str, calls: list[Call], thinking: tuple[str, str] | None) -> list[dict[str, Any]]:
    blocks: list[dict[str, Any]] = []
    if thinking is not None:
        blocks.append({"type": "thinking", "thinking": thinking[0], "signature": thinking[1]})
    if text:
        blocks.append({"type": "text", "text": text})
    blocks += [{"type": "tool_use", "id": i, "name": n, "input": a} for i, n, a in calls]
    return blocks


def message(
    text: str = "",
    calls: list[Call] | None = None,
    *,
    thinking: tuple[str, str] | None = None,
    model: str = "claude-test",
) -> dict[str, Any]:
    """A whole Messages answer: ``thinking`` is (text, signature)."""
    calls = calls or []
    return {
        "id": f"msg_{next(_ANSWERS):04d}",
        "type": "message",
        "role": "assistant",
        "model": model,
        "content": _blocks(text, calls, thinking),
        "stop_reason": "tool_use" if calls else "end_turn",
        "stop_sequence": None,
        "usage": USAGE,
    }


def message_events(
    text: str = "",
    calls: list[Call] | None = None,
    *,
    thinking: tuple[str, str] | None = None,
    broken_input: str | None = None,
    model: str = "claude-test",
) -> bytes:
    """The same answer streamed as the API streams it; text in two deltas, input in pieces.

    ``broken_input``: a tool call whose input JSON never closes (what a model may send).
    """
    calls = calls or []
    start = message(model=model) | {"content": [], "stop_reason": None}
    start["usage"] = USAGE | {"output_tokens": 1}
    out = _sse("message_start", {"message": start})
    blocks = _blocks(text, calls, thinking)
    if broken_input is not None:
        blocks.append({"type": "tool_use", "id": "toolu_broken", "name": "Bash", "input": {}})
    for index, block in enumerate(blocks):
        out += _block_events(index, block, broken_input)
    stop = "tool_use" if calls or broken_input is not None else "end_turn"
    delta = {"delta": {"stop_reason": stop, "stop_sequence": None}, "usage": {"output_tokens": 9}}
    return out + _sse("message_delta", delta) + _sse("message_stop", {})


def _block_events(index: int, block: dict[str, Any], broken: str | None) -> bytes:
    kind = block["type"]
    empty = {"text": {"text": ""}, "thinking": {"thinking": "", "signature": ""}}.get(kind, {})
    started = block | empty | ({"input": {}} if kind == "tool_use" else {})
    out = _sse("content_block_start", {"index": index, "content_block": started})
    if kind == "text":
        half = len(block["text"]) // 2
        pieces = [block["text"][:half], block["text"][half:]]
        deltas = [{"type": "text_delta", "text": p} for p in pieces]
    elif kind == "thinking":
        deltas = [
            {"type": "thinking_delta", "thinking": block["thinking"]},
            {"type": "signature_delta", "signature": block["signature"]},
        ]
    else:
        raw = broken if block["id"] == "toolu_broken" else json.dumps(block["input"])
        deltas = [
            {"type": "input_json_delta", "partial_json": raw[i : i + 7]}
            for i in range(0, len(raw), 7)
        ]
    for delta in deltas:
        out += _sse("content_block_delta", {"index": index, "delta": delta})
    return out + _sse("content_block_stop", {"index": index})


def anthropic_error(kind: str, text: str) -> dict[str, Any]:
    """Anthropic's error body: ``overloaded_error`` for a 529, ``invalid_request_error``..."""
    return {"type": "error", "error": {"type": kind, "message": text}}


def anthropic_error_event(kind: str, text: str) -> bytes:
    """An ``error`` event, as the API sends one mid-stream."""
    return _sse("error", {"error": {"type": kind, "message": text}})


# --- OpenAI Responses ----------------------------------------------------------------------------

RESPONSES_USAGE = {
    "input_tokens": 120,
    "input_tokens_details": {"cached_tokens": 64},
    "output_tokens": 17,
    "output_tokens_details": {"reasoning_tokens": 5},
    "total_tokens": 137,
}


def _output(
    text: str, calls: list[Call], reasoning: tuple[str, str] | None
) -> list[dict[str, Any]]:
    items: list[dict[str, Any]] = []
    if reasoning is not None:
        summary = [{"type": "summary_text", "text": reasoning[0]}]
        items.append(
            {
                "type": "reasoning",
                "id": "rs_1",
                "summary": summary,
                "encrypted_content": reasoning[1],
            }
        )
    if text:
        content = [{"type": "output_text", "text": text, "annotations": []}]
        items.append(
            {
                "type": "message",
                "id": "msg_1",
                "status": "completed",
                "role": "assistant",
                "content": content,
            }
        )
    items += [
        {
            "type": "function_call",
            "id": f"fc_{i}",
            "call_id": i,
            "name": n,
            "arguments": json.dumps(a),
            "status": "completed",
        }
        for i, n, a in calls
    ]
    return items


def response(
    text: str = "",
    calls: list[Call] | None = None,
    *,
    reasoning: tuple[str, str] | None = None,
    model: str = "gpt-test",
) -> dict[str, Any]:
    """A whole Responses answer: ``reasoning`` is (summary, encrypted content)."""
    return {
        "id": f"resp_{next(_ANSWERS):04d}",
        "object": "response",
        "created_at": 1,
        "status": "completed",
        "model": model,
        "output": _output(text, calls or [], reasoning),
        "usage": RESPONSES_USAGE,
        "error": None,
        "incomplete_details": None,
        "parallel_tool_calls": True,
        "tool_choice": "auto",
        "tools": [],
    }


def response_events(
    text: str = "",
    calls: list[Call] | None = None,
    *,
    reasoning: tuple[str, str] | None = None,
    model: str = "gpt-test",
) -> bytes:
    """The same answer streamed: created, each item with its deltas, completed."""
    whole = response(text, calls, reasoning=reasoning, model=model)
    started = whole | {"status": "in_progress", "output": [], "usage": None}
    events = [("response.created", {"response": started})]
    for index, item in enumerate(whole["output"]):
        events.append(
            (
                "response.output_item.added",
                {"output_index": index, "item": item | {"status": "in_progress"}},
            )
        )
        if item["type"] == "message":
            for half in (text[: len(text) // 2], text[len(text) // 2 :]):
                delta = {
                    "item_id": item["id"],
                    "output_index": index,
                    "content_index": 0,
                    "delta": half,
                }
                events.append(("response.output_text.delta", delta))
        elif item["type"] == "function_call":
            delta = {"item_id": item["id"], "output_index": index, "delta": item["arguments"]}
            events.append(("response.function_call_arguments.delta", delta))
        events.append(("response.output_item.done", {"output_index": index, "item": item}))
    events.append(("response.completed", {"response": whole}))
    return b"".join(
        _sse(kind, data | {"sequence_number": n}) for n, (kind, data) in enumerate(events)
    )


def responses_error_event(code: str, text: str) -> bytes:
    """An ``error`` event, as the Responses API sends one mid-stream."""
    return _sse("error", {"code": code, "message": text, "param": None, "sequence_number": 0})
