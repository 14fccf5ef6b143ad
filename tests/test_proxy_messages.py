"""The proxy on Anthropic's Messages wire, with the official `anthropic` SDK as the agent.

A real proxy in front of the fake upstream (tests/fake_upstream.py) answering as the Messages API
does (tests/wires.py): recorded as a run with thinking, tool calls and cache tokens, replayed
offline in the same wire with the usage it had, upstream faults passed on and recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anthropic
import httpx
import pytest

import workbench as wb
from tests.fake_upstream import Answer, FakeUpstream, fake_upstream
from tests.wires import (
    anthropic_error,
    anthropic_error_event,
    message,
    message_events,
)

KEY = "sk-ant-test-5e7b21c9"
BETA = "interleaved-thinking-2025-05-14"
ADD = {
    "name": "add",
    "description": "Add two integers.",
    "input_schema": {"type": "object", "properties": {"a": {"type": "integer"}}},
}
THOUGHT = ("I should add them.", "sig-Zm9vYmFy")


def adder(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Thinks and calls add, then answers with the tool's result (streamed if asked)."""
    last = body["messages"][-1]["content"]
    results = [b for b in last if isinstance(b, dict) and b.get("type") == "tool_result"]
    if results:
        kwargs: dict[str, Any] = {"text": f"the sum is {results[0]['content']}"}
    else:
        kwargs = {"calls": [("toolu_1", "add", {"a": 1, "b": 2})], "thinking": THOUGHT}
    return (
        Answer(events=message_events(**kwargs))
        if body.get("stream")
        else Answer(body=message(**kwargs))
    )


CLIENTS: list[anthropic.Anthropic] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Every SDK client a test made is closed after it, passed or failed (no stray sockets)."""
    yield
    while CLIENTS:
        CLIENTS.pop().close()


def client_for(url: str, **headers: str) -> anthropic.Anthropic:
    base = url.removesuffix("/v1")  # the SDK adds /v1/messages itself
    client = anthropic.Anthropic(base_url=base, api_key=KEY, max_retries=0, default_headers=headers)
    CLIENTS.append(client)
    return client


def ask(client: anthropic.Anthropic, messages: list[Any], stream: bool) -> Any:
    kwargs: dict[str, Any] = {
        "model": "claude-test",
        "max_tokens": 256,
        "system": "You add.",
        "messages": messages,
        "tools": [ADD],
        "thinking": {"type": "enabled", "budget_tokens": 128},
    }
    if stream:
        with client.beta.messages.stream(**kwargs) as events:
            return events.get_final_message()
    return client.messages.create(**kwargs)


def tool_loop(client: anthropic.Anthropic, stream: bool) -> tuple[str, list[Any]]:
    """An agent loop on the SDK: the answers it got, and its final text."""
    messages: list[Any] = [{"role": "user", "content": "add 1 and 2"}]
    answers = []
    for _ in range(3):
        answer = ask(client, messages, stream)
        answers.append(answer)
        messages.append({"role": "assistant", "content": [b.model_dump() for b in answer.content]})
        calls = [b for b in answer.content if b.type == "tool_use"]
        if not calls:
            return "".join(b.text for b in answer.content if b.type == "text"), answers
        results = [
            {
                "type": "tool_result",
                "tool_use_id": c.id,
                "content": str(c.input["a"] + c.input["b"]),
            }
            for c in calls
        ]
        messages.append({"role": "user", "content": results})
    raise AssertionError("the loop did not end")


@pytest.fixture(params=[False, True], ids=["whole", "streamed"])
def stream(request: pytest.FixtureRequest) -> bool:
    return bool(request.param)


@pytest.fixture
def recorded(
    tmp_path: Path, stream: bool
) -> Iterator[tuple[wb.RunStore, str, list[Any], FakeUpstream]]:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    with fake_upstream(adder) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        text, answers = tool_loop(client_for(proxy.url, **{"anthropic-beta": BETA}), stream)
    assert text == "the sum is 3"
    (run_id,) = proxy.run_ids
    yield store, run_id, answers, upstream
    store.close()


def test_a_tool_loop_on_the_messages_wire_is_a_run_with_thinking_calls_and_cache_tokens(
    recorded: tuple[wb.RunStore, str, list[Any], FakeUpstream], stream: bool, tmp_path: Path
) -> None:
    store, run_id, _, upstream = recorded
    headers = upstream.requests[0][1]
    assert headers["x-api-key"] == KEY and headers["anthropic-version"] == "2023-06-01"
    assert headers["anthropic-beta"] == BETA  # the wire's own headers, unchanged
    assert upstream.paths == ["/v1/messages?beta=true"] * 2 if stream else ["/v1/messages"] * 2
    run = store.load(run_id)
    assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "the sum is 3"
    assert run.state.metadata["proxy"]["wire"] == "messages"
    first, second = run.steps
    assert [m.role for m in first.messages_in] == ["system", "user"]
    assert first.response is not None
    thought, call = first.response.parts
    assert isinstance(thought, wb.ThinkingPart) and (thought.text, thought.signature) == THOUGHT
    assert isinstance(call, wb.ToolCall) and call.arguments == {"a": 1, "b": 2}
    assert [(o.name, o.content) for o in first.tool_outcomes] == [("add", "3")]
    usage = first.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.cache_write_tokens) == (242, 200, 30)
    assert usage.output_tokens == 9
    sent_back = second.messages_in[2]  # the thinking went back with its signature
    assert sent_back.role == "assistant" and sent_back.parts[0] == thought
    assert run.snapshots[0].model_settings == {
        "max_tokens": 256,
        "thinking": {"type": "enabled", "budget_tokens": 128},
    }
    assert run.snapshots[0].tool_definitions[0].parameters == ADD["input_schema"]
    store.close()
    for path in tmp_path.iterdir():  # the database and its WAL
        assert KEY.encode() not in path.read_bytes()


def test_a_replay_answers_in_the_messages_wire_with_the_usage_it_recorded(
    recorded: tuple[wb.RunStore, str, list[Any], FakeUpstream], stream: bool
) -> None:
    store, run_id, live, _ = recorded
    with wb.proxy(replay=run_id, store=store) as replay:
        client = client_for(replay.url, **{"anthropic-beta": BETA})
        text, replayed = tool_loop(client, stream)
        with pytest.raises(anthropic.BadRequestError) as departed:
            ask(client, [{"role": "user", "content": "add 2 and 2"}], stream)
    assert text == "the sum is 3"
    # what the SDK read is what it read live: blocks, signature, stop reason and every count
    for then, now in zip(live, replayed, strict=True):
        assert now.content == then.content
        assert now.stop_reason == then.stop_reason
        assert now.usage.model_dump(exclude_none=True) == then.usage.model_dump(exclude_none=True)
    assert departed.value.status_code == 400
    assert departed.value.body["error"]["type"] == "invalid_request_error"  # type: ignore[index]
    assert "replay departs from the recording at step 1" in str(departed.value)


def streamed_failure(client: anthropic.Anthropic, prompt: str) -> Exception | None:
    """What the SDK raised reading a stream, if anything."""
    try:
        with client.messages.stream(
            model="claude-test", max_tokens=16, messages=[{"role": "user", "content": prompt}]
        ) as events:
            events.get_final_message()
    except (anthropic.APIError, ValueError) as exc:
        return exc
    return None


def test_upstream_faults_on_the_messages_wire_reach_the_agent_and_the_run() -> None:
    store = wb.RunStore(":memory:")
    faults = {
        "overloaded": Answer(status=529, body=anthropic_error("overloaded_error", "Overloaded")),
        "signature refused": Answer(
            status=400,
            body=anthropic_error(
                "invalid_request_error", "Invalid `signature` in `thinking` block"
            ),
        ),
        "error event": Answer(
            events=b"".join(e + b"\n\n" for e in message_events("partial").split(b"\n\n")[:3])
            + anthropic_error_event("api_error", "boom")
        ),
        "not json": Answer(events=b"event: message_start\ndata: {not json\n\n"),
        # The SDK hangs up on the garbage while the upstream still holds the stream open.
        "not json, held open": Answer(
            events=b"event: message_start\ndata: {not json\n\n", linger=2.0
        ),
        "cut short": Answer(
            events=message_events("whole answer").rsplit(b"event: message_stop", 1)[0]
        ),
    }
    seen: dict[str, str] = {}
    raised: dict[str, Exception | None] = {}
    for name, answer in faults.items():
        with (
            fake_upstream(lambda body, headers, a=answer: a) as upstream,
            wb.proxy(upstream.url, store=store) as proxy,
        ):
            raised[name] = streamed_failure(client_for(proxy.url), name)
        run = store.load(proxy.run_ids[0])
        assert run.status is wb.ExecutionStatus.FAILED, name
        assert run.error is not None
        seen[name] = f"{run.error.type}: {run.error.message}"
    refused = raised["signature refused"]
    assert isinstance(refused, anthropic.BadRequestError) and "signature" in str(refused)
    assert seen["signature refused"].startswith("APIError: 400 from the upstream")
    overloaded = raised["overloaded"]
    assert isinstance(overloaded, anthropic.APIStatusError) and overloaded.status_code == 529
    assert isinstance(raised["error event"], anthropic.APIError)
    assert isinstance(raised["not json"], ValueError)  # the SDK cannot read the garbage either
    assert raised["cut short"] is None  # the SDK takes what came: the recording says it was cut
    assert seen["overloaded"].startswith("APIError: 529 from the upstream")
    assert "overloaded_error" in seen["overloaded"]
    assert "boom" in seen["error event"]
    assert seen["not json"].startswith("MalformedResponseError")
    assert isinstance(raised["not json, held open"], ValueError)
    assert seen["not json, held open"] == seen["not json"]  # not "the client went away"
    assert seen["cut short"] == "MalformedResponseError: the upstream's stream ended early"


def test_a_tool_call_with_broken_input_is_recorded_and_replayed_broken() -> None:
    """The model's JSON never closes: the agent must see it as sent, live and in a replay."""
    store = wb.RunStore(":memory:")
    broken = message_events(broken_input='{"command": "ls')
    body = {
        "model": "claude-test",
        "max_tokens": 16,
        "stream": True,
        "messages": [{"role": "user", "content": "ls"}],
    }
    with (
        fake_upstream(lambda b, h: Answer(events=broken)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        live = httpx.post(f"{proxy.url}/messages", json=body, timeout=30)
    run = store.load(proxy.run_ids[0])
    assert run.steps[0].response is not None
    (call,) = run.steps[0].response.calls
    assert call.invalid_arguments == '{"command": "ls' and call.arguments == {}
    with wb.proxy(replay=run.run_id, store=store) as replay:
        again = httpx.post(f"{replay.url}/messages", json=body, timeout=30)
    partial = [
        json.loads(line[6:])["delta"]["partial_json"]
        for line in again.text.splitlines()
        if line.startswith("data: ") and "input_json_delta" in line
    ]
    assert "".join(partial) == '{"command": "ls'
    assert live.status_code == again.status_code == 200


def test_count_tokens_and_models_are_passed_through_and_not_recorded() -> None:
    store = wb.RunStore(":memory:")

    def counting(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        return Answer(body={"input_tokens": 42})

    with fake_upstream(counting) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        client = client_for(proxy.url)
        counted = client.messages.count_tokens(
            model="claude-test", messages=[{"role": "user", "content": "hi"}]
        )
        listed = httpx.get(f"{proxy.url}/models?limit=5", headers={"x-api-key": KEY}, timeout=30)
    assert counted.input_tokens == 42 and listed.status_code == 200
    assert upstream.paths == ["/v1/messages/count_tokens", "/v1/models?limit=5"]
    assert upstream.requests[0][1]["x-api-key"] == KEY
    assert proxy.run_ids == []
    recorded = wb.RunStore(":memory:")
    with wb.proxy(replay=record_once(recorded), store=recorded) as offline:
        client = client_for(offline.url)
        with pytest.raises(anthropic.BadRequestError, match="no upstream to ask"):
            client.messages.count_tokens(model="m", messages=[{"role": "user", "content": "hi"}])
        listed = httpx.get(f"{offline.url}/models", timeout=30).json()
    assert [m["id"] for m in listed["data"]] == ["claude-test"]  # the model recorded


def record_once(store: wb.RunStore) -> str:
    """A one-step Messages run in ``store``; its id."""
    body = {
        "model": "claude-test",
        "max_tokens": 8,
        "messages": [{"role": "user", "content": "hi"}],
    }
    with (
        fake_upstream(lambda b, h: Answer(body=message("hi"))) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        httpx.post(f"{proxy.url}/messages", json=body, timeout=30)
    return proxy.run_ids[0]
