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


def test_an_agent_of_ours_replays_a_proxy_run_strictly() -> None:
    """A run recorded through the proxy holds the model and settings as our agent records them."""
    store = wb.RunStore(":memory:")
    ran: list[str] = []

    @wb.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        ran.append("add")
        return a + b

    def model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["messages"][-1]["role"] == "tool":
            return Answer(body=completion("5 and 9"))
        calls = [("call_1", "add", {"a": 2, "b": 3}), ("call_2", "add", {"a": 4, "b": 5})]
        return Answer(body=completion(calls=calls))  # in parallel: a tool message each

    def agent(model: wb.Model) -> wb.Agent:
        return wb.Agent(model=model, name="adder", tools=[add], store=store)

    with fake_upstream(model) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        live = agent(wb.OpenAIModel("fake-model", base_url=proxy.url, api_key=KEY))
        assert live.run_sync("add 2 and 3, 4 and 5").output == "5 and 9"
    recorded = store.load(proxy.run_ids[0])
    replay = wb.ReplayModel.from_run(recorded, strict=True, tools="replay")
    replayed = agent(replay).run_sync("add 2 and 3, 4 and 5")
    assert replayed.status is wb.ExecutionStatus.COMPLETED, replayed.error
    assert replayed.output == "5 and 9" and ran == ["add", "add"]  # live, not again in replay


def test_a_re_run_from_a_proxy_snapshot_numbers_its_steps_as_the_original() -> None:
    """A snapshot holds the state as its step starts, as the loop's do: step 2 re-runs as 2."""
    store = wb.RunStore(":memory:")

    def model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if body["messages"][-1]["role"] == "tool":
            return Answer(body=completion("done"))
        return Answer(body=completion(calls=[("call_1", "note", {"text": "x"})]))

    with (
        fake_upstream(model) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        messages: list[Any] = [{"role": "user", "content": "note x"}]
        call = client.chat.completions.create(model="m", messages=messages).choices[0].message
        messages += [call.model_dump(exclude_none=True)]
        messages += [{"role": "tool", "tool_call_id": "call_1", "content": "noted"}]
        client.chat.completions.create(model="m", messages=messages)
    recorded = store.load(proxy.run_ids[0])
    assert [(s.step, s.state.step) for s in recorded.snapshots] == [(1, 0), (2, 1)]
    agent = wb.Agent(model=wb.ScriptedModel([]), store=False)
    again = agent.rerun_sync(recorded.snapshots[1], model=wb.ReplayModel.from_run(recorded))
    assert [s.index for s in again.steps] == [2] and again.output == "done"
