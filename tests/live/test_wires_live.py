"""AnthropicModel and OpenAIResponsesModel against the real llama-server's other two routes.

llama.cpp's server answers ``POST /v1/messages`` (Anthropic) and ``POST /v1/responses`` as well
as Chat Completions, streamed or not, with tools (it converts both to its chat path). The same
few-shot calculator as the Chat Completions live tests makes Gemma 3 270M call ``add`` and answer;
each run is recorded through a cassette and replayed with the server unreachable, and replayed
strictly from the run itself.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

import workbench as wb
from tests._chat_server import closed_port_url
from tests.live.fewshot import MODEL, examples

pytestmark = pytest.mark.live

SETTINGS: wb.ModelSettings = {"temperature": 0, "max_tokens": 64, "stop": ["\n"]}
"""Anthropic's wire has ``stop_sequences``; llama.cpp takes no seed on it (greedy at 0 anyway)."""
RESPONSES_SETTINGS: wb.ModelSettings = {
    "temperature": 0,
    "max_tokens": 64,
    "extra_body": {"seed": 1, "stop": ["\n"]},  # the Responses API has neither: llama.cpp's own
}


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def anthropic(base_url: str) -> wb.Model:
    return wb.AnthropicModel(
        MODEL, base_url=base_url.removesuffix("/v1"), api_key="", max_retries=0
    )


def responses(base_url: str) -> wb.Model:
    return wb.OpenAIResponsesModel(MODEL, base_url=base_url, api_key="", max_retries=0)


WIRES: dict[str, tuple[Callable[[str], wb.Model], wb.ModelSettings]] = {
    "anthropic": (anthropic, SETTINGS),
    "responses": (responses, RESPONSES_SETTINGS),
}


def run(model: wb.Model, settings: wb.ModelSettings, deltas: list[str]) -> wb.RunResult:
    agent = wb.Agent(model=model, name="calculator", tools=[add], stop=wb.MaxSteps(4), store=False)
    return agent.run_sync(
        "What is 17 + 25?", history=examples(), settings=settings, on_text_delta=deltas.append
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
@pytest.mark.parametrize("wire", sorted(WIRES))
def test_the_agent_calls_the_tool_answers_and_replays_offline(
    base_url: str, tmp_path: Path, wire: str, stream: bool
) -> None:
    make, settings = WIRES[wire]
    settings = {**settings, "stream": stream}
    path = tmp_path / f"{wire}.json"
    live_deltas: list[str] = []
    live = run(wb.cassette(path, make(base_url), mode="record"), settings, live_deltas)

    assert live.status is wb.ExecutionStatus.COMPLETED, live.error
    assert live.output is not None and live.output.startswith("17 + 25 = 42")
    call_step, answer_step = live.steps
    (call,) = call_step.tool_calls
    assert (call.name, call.arguments) == ("add", {"a": 17, "b": 25})
    assert [(o.status, o.content) for o in call_step.tool_outcomes] == [("ok", "42")]
    assert call_step.response is not None and answer_step.response is not None
    assert call_step.response.finish_reason is wb.FinishReason.TOOL_CALLS
    assert answer_step.response.finish_reason is wb.FinishReason.STOP
    assert live.usage.requests == 2 and live.usage.input_tokens > 600
    assert live.usage.cost is None  # a local model has no price
    if stream:
        assert "".join(live_deltas).startswith("17 + 25 = 42")
        assert all(s.timing.time_to_first_token is not None for s in live.steps)

    # the server gone: the cassette answers, and a strict replay of the run itself agrees
    unreachable = make(closed_port_url())
    replayed_deltas: list[str] = []
    again = run(wb.cassette(path, unreachable, mode="replay"), settings, replayed_deltas)
    assert again.status is wb.ExecutionStatus.COMPLETED and again.output == live.output
    assert replayed_deltas == live_deltas
    strict = wb.ReplayModel.from_run(live, strict=True)
    assert run(strict, settings, []).output == live.output
    strict.assert_complete()
