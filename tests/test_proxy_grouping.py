"""Which run a request to the recording proxy joins: names, concurrent calls, retries, repeats.

Each test drives a real proxy in front of the fake upstream (tests/fake_upstream.py) with the
`openai` SDK, the way an agent written with another framework would.
"""

from __future__ import annotations

import asyncio
import itertools
import threading
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, completion, fake_upstream

KEY = "sk-test-secret-4e1f9a"


def test_calls_made_at_once_under_one_name_are_each_recorded() -> None:
    """A name's call made while another is in flight is a run of its own, with the same name."""
    store = wb.RunStore(":memory:")
    both_arrived = threading.Barrier(2, timeout=10)

    def held(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        text = body["messages"][-1]["content"]
        if text.startswith("branch"):
            both_arrived.wait()  # both branches are in flight before either is answered
        return Answer(body=completion(f"answer to {text}"))

    async def agent(url: str) -> list[str | None]:
        async with openai.AsyncOpenAI(
            base_url=url, api_key=KEY, max_retries=0, default_headers={"X-Workbench-Run": "s"}
        ) as client:

            async def ask(text: str) -> str | None:
                messages: Any = [{"role": "user", "content": text}]
                answer = await client.chat.completions.create(model="m", messages=messages)
                return answer.choices[0].message.content

            answers = await asyncio.gather(ask("branch A"), ask("branch B"))
            return [*answers, await ask("after")]

    with fake_upstream(held) as upstream, wb.proxy(upstream.url, store=store) as proxy:
        answers = asyncio.run(agent(proxy.url))
    assert answers == ["answer to branch A", "answer to branch B", "answer to after"]
    first, second = (store.load(r) for r in proxy.run_ids)
    assert [s.index for s in first.steps] == [1, 2] and [s.index for s in second.steps] == [1]
    branches = {first.steps[0].response.text_content, second.steps[0].response.text_content}  # type: ignore[union-attr]
    assert branches == {"answer to branch A", "answer to branch B"}
    assert first.output == "answer to after"  # a later call goes to the name's first run
    assert first.state.metadata["conversation"] == second.state.metadata["conversation"] == "s"


ADD = {
    "type": "function",
    "function": {"name": "add", "parameters": {"type": "object", "properties": {}}},
}


@pytest.mark.parametrize("first", ["call_1", "call_2"])
def test_conversations_that_start_alike_keep_their_own_answers(first: str) -> None:
    """Two agents ask the same at once, and go on in either order: each run holds its own."""
    store = wb.RunStore(":memory:")
    both_arrived = threading.Barrier(2, timeout=10)
    numbers = itertools.count(1)
    lock = threading.Lock()

    def model(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        last = body["messages"][-1]
        if last["role"] == "tool":
            return Answer(body=completion(f"done with {last['content']}"))
        both_arrived.wait()
        with lock:
            call_id = f"call_{next(numbers)}"
        return Answer(body=completion(calls=[(call_id, "add", {})]))

    with (
        fake_upstream(model) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):

        def start(_: int) -> list[Any]:
            messages: list[Any] = [{"role": "user", "content": "add"}]
            answer = client.chat.completions.create(model="m", messages=messages, tools=[ADD])
            message = answer.choices[0].message
            (call,) = message.tool_calls or ()
            result = {"role": "tool", "tool_call_id": call.id, "content": call.id}
            return [*messages, message.model_dump(exclude_none=True), result]

        with ThreadPoolExecutor(2) as pool:
            started = list(pool.map(start, range(2)))
        for messages in sorted(started, key=lambda m: m[-1]["content"] != first):  # either first
            client.chat.completions.create(model="m", messages=messages, tools=[ADD])
    runs = [store.load(r) for r in proxy.run_ids]
    assert len(runs) == 2
    for run in runs:
        (call,) = run.steps[0].tool_calls
        assert [o.content for o in run.steps[0].tool_outcomes] == [call.call_id]
        assert run.output == f"done with {call.call_id}"


def ask(client: openai.OpenAI, text: str) -> str | None:
    messages: Any = [{"role": "user", "content": text}]
    return client.chat.completions.create(model="m", messages=messages).choices[0].message.content


def test_a_request_that_repeats_an_answered_one_is_a_new_run() -> None:
    store = wb.RunStore(":memory:")
    pong = lambda body, headers: Answer(body=completion("pong"))  # noqa: E731
    with (
        fake_upstream(pong) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        assert [ask(client, "ping"), ask(client, "ping")] == ["pong", "pong"]
    runs = [store.load(r) for r in proxy.run_ids]
    assert [len(r.steps) for r in runs] == [1, 1]
    assert [[m.role for m in r.steps[0].new_messages] for r in runs] == [["assistant"]] * 2


@pytest.mark.parametrize("failure", ["status 500", "timeout"])
def test_an_sdk_retry_after_a_failure_is_the_same_step_tried_again(failure: str) -> None:
    store = wb.RunStore(":memory:")
    tries = itertools.count(1)

    def flaky(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if next(tries) > 1:
            return Answer(body=completion("pong"))
        if failure == "timeout":
            return Answer(body=completion("late"), delay=1.0)
        return Answer(status=500, body={"error": {"message": "try again"}})

    with (
        fake_upstream(flaky) as upstream,
        wb.proxy(upstream.url, store=store, timeout=0.2) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=1) as client,
    ):
        assert ask(client, "ping") == "pong"
    (run,) = (store.load(r) for r in proxy.run_ids)
    (step,) = run.steps
    (failed,) = step.failed_tries
    kind, status = ("APIError", 500) if failure == "status 500" else ("ModelTimeoutError", 504)
    assert (failed.error.type, failed.status) == (kind, status)
    assert step.tries == 2 and step.model_error is None and run.output == "pong"
