"""ReplayModel: exact replays, re-runs from a snapshot, hand-over to a live model, divergence."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from tests._counting import PROMPT, add, content, counting_agent, counting_model
from workbench.models import replay as replay_module
from workbench.models.request_diff import RecordedRequest, RequestDiff


@pytest.fixture
def recorded(tmp_path: Path) -> wb.RunResult:
    """A 20-step run, recorded in a store and loaded back (as another process would)."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        result = counting_agent(20, store).run_sync(PROMPT)
        loaded = store.load(result.run_id)
    assert len(loaded.steps) == 20 and loaded.output == f"total {sum(range(1, 20))}"
    return loaded


def test_replaying_a_20_step_run_gives_identical_messages(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded)
    result = counting_agent(20, model=replay).run_sync(PROMPT)
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert content(result.messages) == content(recorded.messages)
    for original, again in zip(recorded.steps, result.steps, strict=True):
        assert content(again.messages_in) == content(original.messages_in)
        assert again.tool_calls == original.tool_calls
        assert again.usage == original.usage
    assert replay.replayed == 20
    replay.assert_complete()


def test_replay_is_not_a_live_model_call(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded)
    assert replay.name == "replay:counter" and replay.provider == "workbench"
    counting_agent(20, model=replay).run_sync(PROMPT)
    assert len(replay.calls) == 20


def test_rerun_from_a_snapshot_finds_its_place_in_the_recording(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded)
    fork = counting_agent(20).rerun_sync(recorded.snapshots[9], model=replay)
    assert [s.index for s in fork.steps] == list(range(10, 21))
    assert content(fork.messages) == content(recorded.messages)
    assert replay.replayed == 11
    replay.assert_complete()


def test_until_step_then_hands_over_to_the_live_model(recorded: wb.RunResult) -> None:
    live = counting_model(20, offset=100)
    replay = wb.ReplayModel.from_run(recorded, until_step=5, then=live)
    result = counting_agent(20, model=replay).run_sync(PROMPT)
    assert replay.replayed == 5 and len(live.calls) == 15
    assert content(result.steps[4].new_messages) == content(recorded.steps[4].new_messages)
    assert result.steps[5].tool_calls[0].arguments == {"a": 15, "b": 106}  # step 6, live


def test_without_a_live_model_asking_past_the_replay_is_an_error(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, until_step=3)
    result = counting_agent(20, model=replay).run_sync(PROMPT)
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.error is not None and result.error.type == "ReplayExhausted"
    assert "3 recorded responses up to step 3" in result.error.message
    assert len(result.steps) == 4


def test_a_different_tool_result_is_reported_at_its_step(recorded: wb.RunResult) -> None:
    def off_by_one(a: int, b: int) -> int:
        """Add two integers, wrongly."""
        return a + b + (1 if b == 3 else 0)

    agent = wb.Agent(
        model=wb.ReplayModel.from_run(recorded),
        name="counter",
        tools=[wb.tool(off_by_one, name="add")],
        stop=wb.MaxSteps(25),
        store=False,
    )
    result = agent.run_sync(PROMPT)
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    assert result.error.message == (
        "replay departs from the recording at step 4: message 6 (tool), part 0\n"
        "- recorded: result of c3 '6'\n"
        "+ sent:     result of c3 '7'"
    )
    assert len(result.steps) == 4  # steps 1-3 replayed; step 4 refused instead of answering


def test_different_tools_offered_is_a_divergence(recorded: wb.RunResult) -> None:
    def subtract(a: int, b: int) -> int:
        """Subtract."""
        return a - b

    agent = wb.Agent(model=wb.ReplayModel.from_run(recorded), tools=[add, subtract], store=False)
    result = agent.run_sync(PROMPT)
    assert result.error is not None and result.error.type == "ReplayDivergence"
    assert result.error.message == (
        "replay departs from the recording at step 1: tools offered\n"
        "- recorded: ['add']\n"
        "+ sent:     ['add', 'subtract']"
    )


def test_a_different_prompt_is_a_divergence_at_step_1(recorded: wb.RunResult) -> None:
    result = counting_agent(20, model=wb.ReplayModel.from_run(recorded)).run_sync("Count again.")
    assert result.error is not None and result.error.type == "ReplayDivergence"
    assert result.error.message.startswith("replay departs from the recording at step 1: message 0")
    assert "- recorded: text 'Count for me.'\n+ sent:     text 'Count again.'" in (
        result.error.message
    )


def test_an_extra_message_is_a_divergence() -> None:
    recorded = counting_agent(3).run_sync(PROMPT)
    extra = [wb.Message.user("Be quick."), wb.Message.user(PROMPT)]
    replay = wb.ReplayModel.from_run(recorded)
    result = counting_agent(3, model=replay).run_sync(history=extra)
    assert result.error is not None and result.error.type == "ReplayDivergence"
    assert result.error.message == (
        "replay departs from the recording at step 1: message 0 (user), part 0; "
        "1 messages recorded, 2 sent\n"
        "- recorded: text 'Count for me.'\n"
        "+ sent:     text 'Be quick.'"
    )


def test_a_first_request_that_departs_before_the_fork_is_a_divergence_not_live() -> None:
    recorded = counting_agent(3).run_sync(PROMPT)
    live = counting_model(3, offset=100)
    replay = wb.ReplayModel.from_run(recorded, until_step=2, then=live)
    extra = [wb.Message.user("Be quick."), wb.Message.user(PROMPT)]
    result = counting_agent(3, model=replay).run_sync(history=extra)
    assert result.error is not None and result.error.type == "ReplayDivergence"
    assert "at step 1: message 0 (user), part 0" in result.error.message
    assert live.calls == []


def test_until_step_0_forks_before_step_1_whatever_the_first_request() -> None:
    recorded = counting_agent(3).run_sync(PROMPT)
    for prompt in (PROMPT, "Count something else."):
        live = counting_model(3, offset=100)
        replay = wb.ReplayModel.from_run(recorded, until_step=0, then=live)
        result = counting_agent(3, model=replay).run_sync(prompt)
        assert result.status is wb.ExecutionStatus.COMPLETED
        assert replay.replayed == 0 and len(live.calls) == 3
        # without a live model it is the end of the replay (the proxy forwards from there)
        alone = counting_agent(3, model=wb.ReplayModel.from_run(recorded, until_step=0))
        result = alone.run_sync(prompt)
        assert result.error is not None and result.error.type == "ReplayExhausted"
        assert "0 recorded responses up to step 0" in result.error.message


def test_each_check_compares_only_what_is_new(
    recorded: wb.RunResult, monkeypatch: pytest.MonkeyPatch
) -> None:
    calls: list[tuple[int, int]] = []
    real = replay_module.first_difference

    def spy(
        rec: RecordedRequest, sent: tuple[wb.Message, ...], *args: Any, start: int, strict: bool
    ) -> RequestDiff | None:
        calls.append((start, len(sent)))
        return real(rec, sent, *args, start=start, strict=strict)

    monkeypatch.setattr(replay_module, "first_difference", spy)
    counting_agent(20, model=wb.ReplayModel.from_run(recorded)).run_sync(PROMPT)
    checks = calls[-20:]  # the first request also locates itself; then one check per request
    assert checks[0] == (0, 1)
    assert [start for start, _ in checks[1:]] == [sent for _, sent in checks[:-1]]
