"""What the recording proxy keeps of an answer: no API key, and what a strict replay needs.

Each test drives a real proxy in front of the fake upstream (tests/fake_upstream.py) with the
`openai` SDK, and reads back what the store holds.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, chunks, completion, fake_upstream

KEY = "sk-test-secret-4e1f9a"


def echo(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """An upstream that says the key it was sent, in its text and in a tool call's arguments."""
    said = f"your key is {headers['authorization']}"
    if body["messages"][-1]["role"] == "tool":
        return Answer(chunks=chunks(said)) if body.get("stream") else Answer(body=completion(said))
    return Answer(body=completion(said, [("call_1", "note", {"text": said})]))


@pytest.mark.parametrize("stream", [False, True])
def test_a_key_the_upstream_echoes_reaches_the_agent_but_not_the_store(
    tmp_path: Path, stream: bool
) -> None:
    path = tmp_path / "runs.sqlite"
    store = wb.RunStore(path)
    with (
        fake_upstream(echo) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        messages: list[Any] = [{"role": "user", "content": "what is my key?"}]
        first = client.chat.completions.create(model="m", messages=messages).choices[0].message
        assert first.content == f"your key is Bearer {KEY}"  # the upstream's answer, unchanged
        messages += [
            first.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "call_1", "content": "noted"},
        ]
        answer = client.chat.completions.create(model="m", messages=messages, stream=stream)
        text = (
            "".join(c.choices[0].delta.content or "" for c in answer if c.choices)
            if stream
            else answer.choices[0].message.content  # type: ignore[union-attr]
        )
        assert text == f"your key is Bearer {KEY}"
    (run,) = (store.load(r) for r in proxy.run_ids)
    assert len(run.steps) == 2  # the key scrubbed alike from the answer and from what came back
    assert run.steps[0].tool_calls[0].arguments == {"text": "your key is Bearer [redacted]"}
    assert run.output == "your key is Bearer [redacted]"
    store.close()
    for file in tmp_path.iterdir():  # the database and its WAL
        assert KEY.encode() not in file.read_bytes()
