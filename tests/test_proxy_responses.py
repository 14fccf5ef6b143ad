"""The proxy on the OpenAI Responses wire, with the `openai` SDK's Responses API as the agent.

A real proxy in front of the fake upstream (tests/fake_upstream.py) answering as the Responses API
does (tests/wires.py): recorded as a run with reasoning items (encrypted content kept), function
calls and cached/reasoning tokens, replayed offline in the same wire with the usage it had,
upstream faults passed on and recorded.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import httpx
import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, FakeUpstream, fake_upstream
from tests.wires import response, response_events, responses_error_event

KEY = "sk-test-resp-8d1f0a77"
ADD = {
    "type": "function",
    "name": "add",
    "description": "Add two integers.",
    "parameters": {"type": "object", "properties": {"a": {"type": "integer"}}},
    "strict": False,
}
THOUGHT = ("Adding is easy.", "gAAAAB-encrypted-reasoning")


def adder(body: dict[str, Any], headers: dict[str, str]) -> Answer:
    """Reasons and calls add, then answers with the tool's result (streamed if asked)."""
    outputs = [
        i for i in body["input"] if isinstance(i, dict) and i.get("type") == "function_call_output"
    ]
    if outputs:
        kwargs: dict[str, Any] = {"text": f"the sum is {outputs[0]['output']}"}
    else:
        kwargs = {"calls": [("call_1", "add", {"a": 1, "b": 2})], "reasoning": THOUGHT}
    return (
        Answer(events=response_events(**kwargs))
        if body.get("stream")
        else Answer(body=response(**kwargs))
    )


CLIENTS: list[openai.OpenAI] = []


@pytest.fixture(autouse=True)
def _close_clients() -> Iterator[None]:
    """Every SDK client a test made is closed after it, passed or failed (no stray sockets)."""
    yield
    while CLIENTS:
        CLIENTS.pop().close()


def client_for(url: str, **headers: str) -> openai.OpenAI:
    client = openai.OpenAI(base_url=url, api_key=KEY, max_retries=0, default_headers=headers)
    CLIENTS.append(client)
    return client


def ask(client: openai.OpenAI, items: list[Any], stream: bool) -> Any:
    kwargs: dict[str, Any] = {
        "model": "gpt-test",
        "instructions": "You add.",
        "input": items,
        "tools": [ADD],
        "store": False,
        "include": ["reasoning.encrypted_content"],
        "prompt_cache_key": f"session-{len(CLIENTS)}-{stream}",  # changes every run: not compared
    }
    if stream:
        with client.responses.stream(**kwargs) as events:
            return events.get_final_response()
    return client.responses.create(**kwargs)


def tool_loop(client: openai.OpenAI, stream: bool) -> tuple[str, list[Any]]:
    """A stateless agent loop: the whole input each call, the output items sent back as given."""
    items: list[Any] = [{"role": "user", "content": "add 1 and 2"}]
    answers = []
    for _ in range(3):
        answer = ask(client, items, stream)
        answers.append(answer)
        items += [o.model_dump(exclude_none=True) for o in answer.output]
        calls = [o for o in answer.output if o.type == "function_call"]
        if not calls:
            return answer.output_text, answers
        for call in calls:
            args = json.loads(call.arguments)
            items.append(
                {
                    "type": "function_call_output",
                    "call_id": call.call_id,
                    "output": str(args["a"] + args["b"]),
                }
            )
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
        text, answers = tool_loop(client_for(proxy.url, **{"session-id": "codex-like-1"}), stream)
    assert text == "the sum is 3"
    (run_id,) = proxy.run_ids
    yield store, run_id, answers, upstream
    store.close()


def test_a_tool_loop_on_the_responses_wire_is_a_run_with_reasoning_calls_and_tokens(
    recorded: tuple[wb.RunStore, str, list[Any], FakeUpstream], tmp_path: Path
) -> None:
    store, run_id, _, upstream = recorded
    assert upstream.paths == ["/v1/responses"] * 2
    assert upstream.requests[0][1]["authorization"] == f"Bearer {KEY}"
    run = store.load(run_id)
    assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "the sum is 3"
    assert run.state.metadata["proxy"]["wire"] == "responses"
    assert run.state.metadata["session_id"] == "codex-like-1"  # the client's session header
    first, second = run.steps
    assert [m.role for m in first.messages_in] == ["system", "user"]
    assert first.response is not None
    thought, call = first.response.parts
    assert isinstance(thought, wb.ThinkingPart)
    assert (thought.text, thought.signature, thought.id) == (*THOUGHT, "rs_1")
    assert isinstance(call, wb.ToolCall) and call.arguments == {"a": 1, "b": 2}
    assert [(o.name, o.content) for o in first.tool_outcomes] == [("add", "3")]
    usage = first.usage
    assert (usage.input_tokens, usage.cache_read_tokens, usage.output_tokens) == (120, 64, 17)
    assert usage.reasoning_tokens == 5
    sent_back = second.messages_in[2]  # the reasoning item went back, encrypted content and all
    assert sent_back.role == "assistant" and sent_back.parts == first.response.parts
    settings = run.snapshots[0].model_settings
    assert settings == {"store": False, "include": ["reasoning.encrypted_content"]}
    store.close()
    for path in tmp_path.iterdir():
        assert KEY.encode() not in path.read_bytes()


def test_a_replay_answers_in_the_responses_wire_with_the_usage_it_recorded(
    recorded: tuple[wb.RunStore, str, list[Any], FakeUpstream], stream: bool
) -> None:
    store, run_id, live, _ = recorded
    with wb.proxy(replay=run_id, store=store) as replay:
        client = client_for(replay.url)
        text, replayed = tool_loop(client, stream)
        with pytest.raises(openai.BadRequestError) as departed:
            ask(client, [{"role": "user", "content": "add 2 and 2"}], stream)
    assert text == "the sum is 3"
    for then, now in zip(live, replayed, strict=True):
        assert [o.type for o in now.output] == [o.type for o in then.output]
        assert now.output_text == then.output_text
        assert now.usage == then.usage
        reasoning = [o for o in now.output if o.type == "reasoning"]
        assert [r.encrypted_content for r in reasoning] == [THOUGHT[1]] * len(reasoning)
    assert departed.value.status_code == 400
    assert "replay departs from the recording at step 1" in str(departed.value)


def test_upstream_faults_on_the_responses_wire_reach_the_agent_and_the_run() -> None:
    store = wb.RunStore(":memory:")
    failed = response() | {"status": "failed", "error": {"code": "server_error", "message": "boom"}}
    faults = {
        "429": Answer(status=429, body={"error": {"message": "slow down", "type": "rate_limit"}}),
        "error event": Answer(
            events=response_events("partial").split(b"\n\n")[0]
            + b"\n\n"
            + responses_error_event("server_error", "boom")
        ),
        "failed response": Answer(
            events=b"event: response.failed\ndata: "
            + json.dumps({"type": "response.failed", "response": failed}).encode()
            + b"\n\n"
        ),
        "cut short": Answer(
            events=response_events("whole").rsplit(b"event: response.completed", 1)[0]
        ),
    }
    seen: dict[str, str] = {}
    for name, answer in faults.items():
        with (
            fake_upstream(lambda body, headers, a=answer: a) as upstream,
            wb.proxy(upstream.url, store=store) as proxy,
        ):
            body = {"model": "gpt-test", "input": name, "stream": True}
            httpx.post(f"{proxy.url}/responses", json=body, timeout=30)
        run = store.load(proxy.run_ids[0])
        assert run.status is wb.ExecutionStatus.FAILED and run.error is not None, name
        seen[name] = f"{run.error.type}: {run.error.message}"
    assert seen["429"].startswith("APIError: 429 from the upstream") and "slow down" in seen["429"]
    assert "boom" in seen["error event"] and "boom" in seen["failed response"]
    assert seen["cut short"] == "MalformedResponseError: the upstream's stream ended early"


def test_codex_s_input_item_ids_and_session_fields_are_not_what_a_replay_compares() -> None:
    """Codex gives every input item a new id and sends its session as prompt_cache_key."""
    store = wb.RunStore(":memory:")

    def body(run: int) -> dict[str, Any]:
        items = [
            {
                "type": "message",
                "id": f"msg_{run}_a",
                "role": "developer",
                "content": [{"type": "input_text", "text": "Be brief."}],
            },
            {
                "type": "message",
                "id": f"msg_{run}_b",
                "role": "user",
                "content": [{"type": "input_text", "text": "hi"}],
            },
        ]
        session = {"session_id": f"s{run}", "turn_id": f"t{run}"}
        return {
            "model": "gpt-test",
            "input": items,
            "prompt_cache_key": f"s{run}",
            "client_metadata": session,
        }

    with (
        fake_upstream(lambda b, h: Answer(body=response("hello"))) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        httpx.post(f"{proxy.url}/responses", json=body(1), timeout=30)
    with wb.proxy(replay=proxy.run_ids[0], store=store) as replay:
        again = httpx.post(f"{replay.url}/responses", json=body(2), timeout=30)
    assert again.status_code == 200, again.text
    assert again.json()["output"][0]["content"][0]["text"] == "hello"
