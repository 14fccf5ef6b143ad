"""A cassette recorded against the real llama-server, replayed with the server unreachable."""

from __future__ import annotations

from pathlib import Path

import pytest

import workbench as wb
from tests._chat_server import closed_port_url
from tests.live.fewshot import MODEL, SETTINGS, examples
from workbench.models import OpenAIModel

pytestmark = pytest.mark.live


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def run(model: wb.Model, stream: bool, deltas: list[str]) -> wb.RunResult:
    agent = wb.Agent(model=model, name="calculator", tools=[add], stop=wb.MaxSteps(4), store=False)
    return agent.run_sync(
        "What is 17 + 25?",
        history=examples(),
        settings={**SETTINGS, "stream": stream},
        on_text_delta=deltas.append,
    )


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_recorded_live_then_replayed_with_the_server_unreachable(
    base_url: str, tmp_path: Path, stream: bool
) -> None:
    path = tmp_path / "gemma.json"
    live_deltas: list[str] = []
    recording = wb.cassette(path, OpenAIModel(MODEL, base_url=base_url, api_key=""), mode="record")
    live = run(recording, stream, live_deltas)
    assert live.status is wb.ExecutionStatus.COMPLETED
    assert live.output is not None and live.output.startswith("17 + 25 = 42")

    unreachable = OpenAIModel(MODEL, base_url=closed_port_url(), api_key="", max_retries=0)
    replayed_deltas: list[str] = []
    replay = wb.cassette(path, unreachable, mode="replay")
    again = run(replay, stream, replayed_deltas)
    assert again.status is wb.ExecutionStatus.COMPLETED and again.output == live.output
    assert [s.tool_calls for s in again.steps] == [s.tool_calls for s in live.steps]
    assert replayed_deltas == live_deltas and (len(live_deltas) > 0) is stream
    replay.assert_complete()
