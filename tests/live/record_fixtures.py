"""Record real llama-server answers as fixtures for the offline unit tests.

Run against a started server (``scripts/llm-server start``)::

    .venv/bin/python tests/live/record_fixtures.py [BASE_URL]

It writes, under ``tests/data/openai/``, the raw JSON body or SSE stream of each request and what
our client made of it; read the ``*.expected.json`` files before committing them.
"""

from __future__ import annotations

import asyncio
import json
import sys
from pathlib import Path
from typing import Any

import httpx

from tests.live.fewshot import (
    ADD,
    BASE_URL,
    MALFORMED,
    MODEL,
    SETTINGS,
    add_history,
    answer_history,
)
from workbench.models import ModelRequest, OpenAIModel
from workbench.models._openai_wire import build_body

OUT = Path(__file__).parents[1] / "data" / "openai"


async def record(base_url: str, name: str, request: ModelRequest) -> None:
    stream = bool(request.settings.get("stream"))
    body = build_body(MODEL, request.messages, request.tools, request.settings, stream=stream)
    async with httpx.AsyncClient() as client:
        raw = await client.post(f"{base_url}/chat/completions", json=body, timeout=300)
    raw.raise_for_status()
    answer = httpx.MockTransport(lambda _: httpx.Response(200, content=raw.content))
    model = OpenAIModel(MODEL, base_url=base_url, http_client=httpx.AsyncClient(transport=answer))
    response = await model.request(request)
    expected: dict[str, Any] = {
        "parts": [p.model_dump() for p in response.parts],
        "finish_reason": response.finish_reason.value,
        "output_tokens": response.usage.output_tokens,
    }
    if stream:
        (OUT / f"{name}.sse").write_bytes(raw.content)
        (OUT / f"{name}.expected.json").write_text(json.dumps(expected, indent=2) + "\n")
    else:
        recorded = {"request": body, "response": raw.json(), "expected": expected}
        (OUT / f"{name}.json").write_text(json.dumps(recorded, indent=2) + "\n")
    print(name, response.finish_reason, [p.model_dump() for p in response.parts])


async def main(base_url: str) -> None:
    OUT.mkdir(parents=True, exist_ok=True)
    for stream in (False, True):
        suffix = "_stream" if stream else ""
        settings = {**SETTINGS, "stream": stream}
        calls = ModelRequest(messages=add_history(17, 25), tools=[ADD], settings=settings)
        await record(base_url, f"llama_tool_call{suffix}", calls)
        answer = ModelRequest(messages=answer_history(17, 25), tools=[ADD], settings=settings)
        await record(base_url, f"llama_answer{suffix}", answer)
        broken = ModelRequest(
            messages=add_history(17, 25), tools=[ADD], settings={**MALFORMED, "stream": stream}
        )
        await record(base_url, f"llama_malformed_call{suffix}", broken)


if __name__ == "__main__":
    asyncio.run(main(sys.argv[1] if len(sys.argv) > 1 else BASE_URL))
