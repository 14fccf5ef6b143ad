"""A two-call tool loop with the ``openai`` client, traced by an instrumentation, as OTLP/JSON.

The model's answers come from the client's own transport (offline): the first asks for
``add(1, 2)``, the second answers. The spans are the instrumentation's own, encoded by
OpenTelemetry's own OTLP encoder and protobuf's JSON mapping (ids in base64), so nothing of the
workbench is between the library and the file. It imports no workbench module: it also runs in
a throwaway environment holding an older instrumentation (``scripts/record-openllmetry-2025``).

    python -m tests.foreign.openai_chat openinference|openllmetry > trace.json
"""

from __future__ import annotations

import contextlib
import json
import sys
from typing import Any

try:  # the openai client of this environment takes either
    import httpx2 as httpx
except ImportError:  # pragma: no cover - an environment with httpx only
    import httpx  # type: ignore[no-redef]

ANSWERS = [
    {
        "id": "chatcmpl-1",
        "object": "chat.completion",
        "created": 1_700_000_000,
        "model": "gpt-4o-mini",
        "choices": [
            {
                "index": 0,
                "finish_reason": "tool_calls",
                "message": {
                    "role": "assistant",
                    "content": None,
                    "tool_calls": [
                        {
                            "id": "call_1",
                            "type": "function",
                            "function": {"name": "add", "arguments": '{"a": 1, "b": 2}'},
                        }
                    ],
                },
            }
        ],
        "usage": {"prompt_tokens": 12, "completion_tokens": 5, "total_tokens": 17},
    },
    {
        "id": "chatcmpl-2",
        "object": "chat.completion",
        "created": 1_700_000_001,
        "model": "gpt-4o-mini",
        "choices": [
            {"index": 0, "finish_reason": "stop", "message": {"role": "assistant", "content": "3"}}
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 1, "total_tokens": 21},
    },
]
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "add",
            "description": "Add two integers.",
            "parameters": {
                "type": "object",
                "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
            },
        },
    }
]


def _instrumentor(name: str) -> Any:
    if name == "openinference":
        from openinference.instrumentation.openai import OpenAIInstrumentor
    else:
        from opentelemetry.instrumentation.openai import OpenAIInstrumentor
    return OpenAIInstrumentor()


def traced(instrumentation: str, *, server_error: bool = False) -> dict[str, Any]:
    """The OTLP/JSON document of the loop, traced by ``openinference`` or ``openllmetry``.

    ``server_error``: the second call is answered with a 500 (as a llama.cpp server answers a
    call whose arguments it cannot parse), which the client raises; no retry.
    """
    import openai
    from google.protobuf.json_format import MessageToDict
    from opentelemetry.exporter.otlp.proto.common.trace_encoder import encode_spans
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = _instrumentor(instrumentation)
    instrumentor.instrument(tracer_provider=provider)
    answers = [httpx.Response(200, json=answer) for answer in ANSWERS]
    if server_error:
        answers[1] = httpx.Response(500, json={"error": {"message": "cannot parse the arguments"}})
    transport = httpx.MockTransport(lambda request: answers.pop(0))
    try:
        client = openai.OpenAI(
            api_key="sk-test",
            base_url="http://llm.test/v1",
            http_client=httpx.Client(transport=transport),
            max_retries=0,
        )
        messages: list[Any] = [
            {"role": "system", "content": "You add."},
            {"role": "user", "content": "1 + 2?"},
        ]
        first = client.chat.completions.create(
            model="gpt-4o-mini", messages=messages, tools=TOOLS, temperature=0
        )
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "call_1", "content": "3"},
        ]
        with contextlib.suppress(openai.InternalServerError):
            client.chat.completions.create(model="gpt-4o-mini", messages=messages, tools=TOOLS)
    finally:
        instrumentor.uninstrument()
    document: dict[str, Any] = MessageToDict(encode_spans(exporter.get_finished_spans()))
    return document


if __name__ == "__main__":
    json.dump(traced(sys.argv[1]), sys.stdout, indent=1)
