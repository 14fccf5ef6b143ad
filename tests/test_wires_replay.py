"""Every wire replays strictly: cassettes and `ReplayModel` over Anthropic's and the Responses API.

A run through each client against a server on loopback (reasoning with its signature or encrypted
content, a tool call, an answer) is recorded in a cassette, replayed with the server gone, and
replayed strictly from the run; a request whose reasoning departs from the recording is a
`ReplayDivergence` whose diff names the thinking part and shows both signatures.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests._chat_server import closed_port_url
from tests.faults.server import Answer, ModelServer, reply, serving

pytestmark = pytest.mark.timeout(60)

SIGNATURE = "EqQBCkgIARABGAIiQL2b" + "s" * 30
KEY = "sk-wire-replay-0123456789"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def anthropic_answers() -> list[Answer]:
    def message(*content: dict[str, Any], stop: str) -> Answer:
        usage = {"input_tokens": 10, "output_tokens": 5, "cache_creation_input_tokens": 3}
        body = {"id": "msg", "type": "message", "role": "assistant", "model": "claude-x"}
        return reply(200, {**body, "content": list(content), "stop_reason": stop, "usage": usage})

    thinking = {"type": "thinking", "thinking": "Use add.", "signature": SIGNATURE}
    call = {"type": "tool_use", "id": "toolu_1", "name": "add", "input": {"a": 17, "b": 25}}
    return [
        message(thinking, call, stop="tool_use"),
        message({"type": "text", "text": "17 + 25 = 42"}, stop="end_turn"),
    ]


def responses_answers() -> list[Answer]:
    def response(*output: dict[str, Any]) -> Answer:
        usage = {"input_tokens": 10, "output_tokens": 5}
        return reply(
            200, {"id": "resp", "status": "completed", "output": list(output), "usage": usage}
        )

    reasoning = {
        "type": "reasoning",
        "id": "rs_1",
        "summary": [{"type": "summary_text", "text": "Use add."}],
        "encrypted_content": SIGNATURE,
    }
    call = {
        "type": "function_call",
        "call_id": "c1",
        "name": "add",
        "arguments": '{"a": 17, "b": 25}',
    }
    text = [{"type": "output_text", "text": "17 + 25 = 42"}]
    said = {"type": "message", "role": "assistant", "content": text}
    return [response(reasoning, call), response(said)]


def anthropic(url: str) -> wb.Model:
    return wb.AnthropicModel(
        "claude-x", base_url=url.removesuffix("/v1"), api_key=KEY, max_retries=0
    )


def responses(url: str) -> wb.Model:
    return wb.OpenAIResponsesModel("gpt-x", base_url=url, api_key=KEY, max_retries=0)


WIRES: dict[str, tuple[Callable[[str], wb.Model], Callable[[], list[Answer]]]] = {
    "anthropic": (anthropic, anthropic_answers),
    "responses": (responses, responses_answers),
}


@pytest.fixture
def server() -> Iterator[ModelServer]:
    with serving() as running:
        yield running


def forge(messages: Sequence[wb.Message]) -> list[wb.Message]:
    """A history processor that changes every thinking part's signature before it is sent."""
    return [
        m.model_copy(
            update={
                "parts": tuple(
                    p.model_copy(update={"signature": "forged"})
                    if isinstance(p, wb.ThinkingPart)
                    else p
                    for p in m.parts
                )
            }
        )
        for m in messages
    ]


def run(model: wb.Model, **options: Any) -> wb.RunResult:
    agent = wb.Agent(model=model, tools=[add], stop=wb.MaxSteps(4), store=False, **options)
    return agent.run_sync("What is 17 + 25?", settings={"temperature": 0})


@pytest.mark.parametrize("wire", sorted(WIRES))
def test_a_wire_records_replays_offline_and_names_a_departing_thought(
    server: ModelServer, tmp_path: Path, wire: str
) -> None:
    make, answers = WIRES[wire]
    server.answer(*answers())
    path = tmp_path / "cassette.json"
    live = run(wb.cassette(path, make(server.url), mode="record"))
    assert live.output == "17 + 25 = 42", live.error
    thought = live.state.messages[1].parts[0]
    assert isinstance(thought, wb.ThinkingPart) and thought.signature == SIGNATURE
    # the second request sent the reasoning back as it came
    assert SIGNATURE in str(server.requests[1].body)

    gone = make(closed_port_url())
    replayed = run(wb.cassette(path, gone, mode="replay"))
    assert replayed.output == live.output and replayed.usage == live.usage

    strict = wb.ReplayModel.from_run(live, strict=True)
    assert run(strict).output == live.output

    for model in (
        wb.cassette(path, gone, mode="replay"),
        wb.ReplayModel.from_run(live, strict=True),
    ):
        departed = run(model, history_processors=[forge])
        assert departed.status is wb.ExecutionStatus.FAILED and departed.error is not None
        message = departed.error.message
        assert departed.error.type == "ReplayDivergence"
        assert "message 1 (assistant), part 0" in message
        assert "- recorded: thinking signature 'EqQBCkgIARABGAIiQL2b" in message
        assert "+ sent:     thinking signature 'forged'" in message
