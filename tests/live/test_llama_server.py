"""OpenAIModel against a real llama-server running Gemma 3 270M (``scripts/llm-server start``)."""

from __future__ import annotations

import asyncio
import time
from typing import Any

import httpx
import pytest

from tests.live.fewshot import ADD, MALFORMED, MODEL, SETTINGS, add_history, answer_history
from workbench.messages import FinishReason, Message, ModelResponse, RetryPrompt
from workbench.models import (
    BadRequestError,
    ModelRequest,
    ModelSettings,
    ModelTimeoutError,
    OpenAIModel,
)
from workbench.models._openai_wire import build_body

pytestmark = pytest.mark.live


def model(base_url: str, **kwargs: Any) -> OpenAIModel:
    return OpenAIModel(MODEL, base_url=base_url, api_key="", **kwargs)


async def ask(
    base_url: str, messages: list[Message], settings: ModelSettings, pieces: list[str] | None = None
) -> ModelResponse:
    request = ModelRequest(
        messages=messages,
        tools=[ADD],
        settings=settings,
        on_text_delta=None if pieces is None else pieces.append,
    )
    return await model(base_url).request(request)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_a_real_tool_call(base_url: str, stream: bool) -> None:
    started = time.perf_counter()
    response = await ask(base_url, add_history(17, 25), {**SETTINGS, "stream": stream})
    elapsed = time.perf_counter() - started

    (call,) = response.calls
    assert (call.name, call.arguments, call.invalid_arguments) == ("add", {"a": 17, "b": 25}, None)
    assert call.call_id
    assert response.finish_reason is FinishReason.TOOL_CALLS
    assert response.model_name == MODEL
    assert response.response_id
    assert response.usage.input_tokens > 300  # the three examples and the tool list
    assert 0 < response.usage.output_tokens <= 64
    assert response.usage.cost is None  # nobody priced this model: unknown, not free
    if stream:
        assert response.time_to_first_token is not None
        assert 0 < response.time_to_first_token < elapsed
    else:
        assert response.time_to_first_token is None


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_the_answer_after_the_tool_result(base_url: str, stream: bool) -> None:
    pieces: list[str] = []
    response = await ask(base_url, answer_history(17, 25), {**SETTINGS, "stream": stream}, pieces)

    assert response.text_content.startswith("17 + 25 = 42")
    assert response.calls == ()
    assert response.finish_reason is FinishReason.STOP  # the newline stop sequence
    if stream:
        assert len(pieces) > 3  # it really streamed
        assert "".join(pieces) == response.text_content
    else:
        assert pieces == []


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_max_tokens_is_a_length_finish(base_url: str, stream: bool) -> None:
    settings = ModelSettings(temperature=0, seed=1, max_tokens=3, stream=stream)
    response = await ask(base_url, answer_history(17, 25), settings)
    assert response.finish_reason is FinishReason.LENGTH
    assert response.usage.output_tokens == 3


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
async def test_the_malformed_second_call_is_survived(base_url: str, stream: bool) -> None:
    history = add_history(17, 25)
    response = await ask(base_url, history, {**MALFORMED, "stream": stream})

    good, bad = response.calls
    assert good.arguments == {"a": 17, "b": 25}
    assert bad.invalid_arguments is not None
    assert bad.arguments == {}
    assert response.finish_reason is FinishReason.LENGTH

    # What the loop does next: the result of the good call, a retry prompt for the bad one. The
    # server accepts the history because the broken call goes back with ``{}`` as arguments.
    retry = RetryPrompt(content="Your arguments were not valid JSON.", call_id=bad.call_id)
    follow_up = [
        *history,
        response.to_message(),
        Message.tool_result(good.call_id, "42", name="add"),
        Message(role="tool", parts=(retry,)),
    ]
    again = await ask(base_url, follow_up, {**SETTINGS, "stream": stream})
    assert again.usage.input_tokens > response.usage.input_tokens


async def test_the_server_rejects_broken_arguments_in_history(base_url: str) -> None:
    """Why the client never sends the model's broken JSON back: llama-server answers 500."""
    body = build_body(MODEL, answer_history(17, 25), [ADD], {"max_tokens": 4}, stream=False)
    body["messages"][-2]["tool_calls"][0]["function"]["arguments"] = '{"a'
    async with httpx.AsyncClient() as client:
        answer = await client.post(f"{base_url}/chat/completions", json=body, timeout=120)
    assert answer.status_code == 500
    assert "parse" in answer.json()["error"]["message"]


async def test_a_bad_request_carries_the_servers_message(base_url: str) -> None:
    settings: Any = {"top_p": "high", "max_tokens": 4}  # a type the server refuses
    with pytest.raises(BadRequestError) as caught:
        await model(base_url).request(ModelRequest(messages=add_history(1, 1), settings=settings))
    assert caught.value.status_code == 400
    assert "Field 'top_p'" in str(caught.value)


async def test_a_slow_answer_times_out(base_url: str) -> None:
    settings = ModelSettings(max_tokens=64, timeout=0.01)
    with pytest.raises(ModelTimeoutError, match=r"did not answer within 0\.01s"):
        await model(base_url).request(
            ModelRequest(messages=answer_history(3, 4), settings=settings)
        )


async def test_cancelling_a_stream_leaves_the_server_usable(base_url: str) -> None:
    first_piece = asyncio.Event()
    request = ModelRequest(
        messages=answer_history(17, 25),
        settings={"temperature": 0, "max_tokens": 64, "stream": True},
        on_text_delta=lambda _: first_piece.set(),
    )
    task = asyncio.create_task(model(base_url).request(request))
    await asyncio.wait_for(first_piece.wait(), timeout=120)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    response = await ask(base_url, add_history(2, 2), SETTINGS)
    assert response.calls[0].arguments == {"a": 2, "b": 2}


async def test_a_request_right_after_a_stream_succeeds(base_url: str) -> None:
    """llama-server closes the connection after a stream; the next request meets the close.

    Without the immediate retry, every second request here failed with "Server disconnected
    without sending a response" (httpx and the openai SDK alike).
    """
    logs: list[float] = []
    async with httpx.AsyncClient() as client:
        shared = model(base_url, http_client=client, sleep=lambda s: _record(logs, s))
        for stream in (True, False, True, False):
            settings = ModelSettings(max_tokens=2, stream=stream)
            await shared.request(ModelRequest(messages=add_history(1, 1), settings=settings))
    assert all(delay == 0.0 for delay in logs)  # only the at-once retries, never a backoff


async def _record(logs: list[float], seconds: float) -> None:
    logs.append(seconds)


def test_an_owned_client_works_across_event_loops(base_url: str) -> None:
    """``run_sync`` may use a fresh event loop per call; the model's own client must follow."""
    shared = model(base_url)
    request = ModelRequest(messages=add_history(1, 2), tools=[ADD], settings=SETTINGS)
    first = asyncio.run(shared.request(request))
    second = asyncio.run(shared.request(request))
    assert first.calls[0].arguments == second.calls[0].arguments == {"a": 1, "b": 2}
