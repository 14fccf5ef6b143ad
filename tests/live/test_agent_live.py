"""An agent with a real tool against the real llama-server: the loop and OpenAIModel together."""

from __future__ import annotations

import pytest

import workbench as wb
from tests.live.fewshot import MALFORMED, MODEL, SETTINGS, examples
from workbench.models import OpenAIModel

pytestmark = pytest.mark.live


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def agent(base_url: str, stop: wb.StopCondition) -> wb.Agent:
    model = OpenAIModel(MODEL, base_url=base_url, api_key="")
    return wb.Agent(model=model, name="calculator", tools=[add], stop=stop)


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_the_agent_calls_the_tool_and_answers(base_url: str, stream: bool) -> None:
    pieces: list[str] = []
    result = agent(base_url, wb.MaxSteps(4)).run_sync(
        "What is 17 + 25?",
        history=examples(),
        settings={**SETTINGS, "stream": stream},
        on_text_delta=pieces.append,
    )

    assert result.status is wb.ExecutionStatus.COMPLETED
    assert result.stop_reason is wb.StopReason.COMPLETED
    assert result.output.startswith("17 + 25 = 42")
    call_step, answer_step = result.steps
    (call,) = call_step.tool_calls
    assert (call.name, call.arguments) == ("add", {"a": 17, "b": 25})
    assert [(o.status, o.content) for o in call_step.tool_outcomes] == [("ok", "42")]
    assert call_step.response is not None
    assert answer_step.response is not None
    assert call_step.response.finish_reason is wb.FinishReason.TOOL_CALLS
    assert answer_step.response.finish_reason is wb.FinishReason.STOP
    # the tool's result went back to the model
    assert any(m.role == "tool" and "42" in str(m.parts) for m in answer_step.messages_in)
    assert result.usage.requests == 2
    assert result.usage.input_tokens > 600
    assert result.usage.output_tokens > 0
    assert result.usage.cost is None
    for step in result.steps:
        assert step.timing.inference > 0
        if stream:
            assert step.timing.time_to_first_token is not None
            assert 0 < step.timing.time_to_first_token <= step.timing.inference
    if stream:
        assert "".join(pieces).startswith("17 + 25 = 42")


@pytest.mark.parametrize("stream", [False, True], ids=["json", "sse"])
def test_the_agent_survives_the_malformed_second_call(base_url: str, stream: bool) -> None:
    """Without the stop sequence the model adds a truncated second call: invalid JSON arguments.

    The loop answers it with a retry prompt, the client sends it back as ``{}`` (not the broken
    text, which the server would answer with a 500), and the run goes on to its step limit.
    """
    result = agent(base_url, wb.MaxSteps(2)).run_sync(
        "What is 17 + 25?", history=examples(), settings={**MALFORMED, "stream": stream}
    )

    assert result.status is wb.ExecutionStatus.COMPLETED  # not FAILED: no 500, no crash
    assert result.stop_reason is wb.StopReason.STEP_LIMIT
    first = result.steps[0]
    good, bad = first.tool_calls
    assert good.arguments == {"a": 17, "b": 25}
    assert bad.invalid_arguments is not None
    assert [o.status for o in first.tool_outcomes] == ["ok", "retry"]
    retries = [p for m in first.new_messages for p in m.parts if isinstance(p, wb.RetryPrompt)]
    assert [r.call_id for r in retries] == [bad.call_id]
    assert result.steps[1].response is not None  # the server took the retry prompt: no 500
    assert result.usage.requests == 2
