"""Strict replay: each request checked against the recording; a readable diff where it departs."""

from __future__ import annotations

import pytest

import workbench as wb
from tests._counting import PROMPT, add, counting_model

LONG_PROMPT = "You are a careful counter. " * 6 + "Always add the step number to the total."


def subtract(a: int, b: int) -> int:
    """Subtract two integers."""
    return a - b


def agent(
    model: wb.Model, *, prompt: str = LONG_PROMPT, tools: list[wb.Tool] | None = None
) -> wb.Agent:
    return wb.Agent(
        model=model,
        name="counter",
        system_prompt=prompt,
        tools=tools or [wb.tool(add)],
        stop=wb.MaxSteps(10),
        store=False,
    )


SETTINGS: wb.ModelSettings = {"temperature": 0, "seed": 1, "max_tokens": 64}


@pytest.fixture
def recorded() -> wb.RunResult:
    result = agent(counting_model(4)).run_sync(PROMPT, settings=SETTINGS)
    assert result.status is wb.ExecutionStatus.COMPLETED and len(result.steps) == 4
    return result


def divergence(result: wb.RunResult) -> str:
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    return result.error.message


def test_an_unchanged_run_replays_strictly(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    result = agent(replay).run_sync(PROMPT, settings=SETTINGS)
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert result.output == recorded.output
    replay.assert_complete()


def test_an_edited_system_prompt_is_shown_where_it_changed(recorded: wb.RunResult) -> None:
    edited = LONG_PROMPT.replace("step number", "step count")
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    message = divergence(agent(replay, prompt=edited).run_sync(PROMPT, settings=SETTINGS))
    # the change is near the end of a long prompt: the diff shows that part, not the start
    assert message == (
        "replay departs from the recording at step 1: message 0 (system), part 0\n"
        "- recorded: text …'Always add the step number to the total.'\n"
        "+ sent:     text …'Always add the step count to the total.'"
    )
    assert replay.replayed == 0


def test_an_added_tool_is_a_divergence(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    tools = [wb.tool(add), wb.tool(subtract)]
    message = divergence(agent(replay, tools=tools).run_sync(PROMPT, settings=SETTINGS))
    assert message.endswith("tools offered\n- recorded: ['add']\n+ sent:     ['add', 'subtract']")


def test_a_changed_setting_is_a_divergence_only_when_strict(recorded: wb.RunResult) -> None:
    changed: wb.ModelSettings = {**SETTINGS, "temperature": 0.7}
    lenient = agent(wb.ReplayModel.from_run(recorded)).run_sync(PROMPT, settings=changed)
    assert lenient.status is wb.ExecutionStatus.COMPLETED  # the reason strict mode exists

    replay = wb.ReplayModel.from_run(recorded, strict=True)
    message = divergence(agent(replay).run_sync(PROMPT, settings=changed))
    assert message.endswith("step 1: setting 'temperature'\n- recorded: 0\n+ sent:     0.7")


def test_a_setting_added_is_shown_as_not_set_before(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    message = divergence(agent(replay).run_sync(PROMPT, settings={**SETTINGS, "top_p": 0.9}))
    assert message.endswith("setting 'top_p'\n- recorded: not set\n+ sent:     0.9")


def test_a_changed_tool_definition_is_a_divergence_only_when_strict(
    recorded: wb.RunResult,
) -> None:
    def add_described(a: int, b: int) -> int:
        """Add two integers, and say so."""
        return a + b

    tools = [wb.tool(add_described, name="add")]
    lenient = agent(wb.ReplayModel.from_run(recorded), tools=tools).run_sync(
        PROMPT, settings=SETTINGS
    )
    assert lenient.status is wb.ExecutionStatus.COMPLETED

    replay = wb.ReplayModel.from_run(recorded, strict=True)
    message = divergence(agent(replay, tools=tools).run_sync(PROMPT, settings=SETTINGS))
    assert "step 1: tool 'add' (description)" in message
    assert "- recorded: '\"Add two integers.\"'" in message
    assert "+ sent:     '\"Add two integers, and say so.\"'" in message

    # A run stored before snapshots kept the definitions: only their hash can be compared.
    older = [s.model_copy(update={"tool_definitions": ()}) for s in recorded.snapshots]
    replay = wb.ReplayModel.from_run(recorded.model_copy(update={"snapshots": older}), strict=True)
    message = divergence(agent(replay, tools=tools).run_sync(PROMPT, settings=SETTINGS))
    assert "step 1: tool definitions of ['add']\n- recorded: schema hash " in message


def test_an_edited_earlier_message_in_a_rerun_is_found(recorded: wb.RunResult) -> None:
    snapshot = recorded.snapshots[2]  # step 3
    messages = list(snapshot.state.messages)
    assert messages[1].role == "user"
    messages[1] = wb.Message.user("Count for me, slowly.")
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    fork = agent(counting_model(4)).rerun_sync(snapshot, messages=messages, model=replay)
    message = divergence(fork)
    assert message == (
        "replay departs from the recording at step 3: message 1 (user), part 0\n"
        "- recorded: text 'Count for me.'\n"
        "+ sent:     text 'Count for me, slowly.'"
    )


def test_a_removed_system_prompt_names_the_message_that_moved(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    message = divergence(agent(replay, prompt="").run_sync(PROMPT, settings=SETTINGS))
    assert message == (
        "replay departs from the recording at step 1: message 0; 2 messages recorded, 1 sent\n"
        f"- recorded: system message: text {LONG_PROMPT[:60] + '…'!r}\n"
        "+ sent:     user message: text 'Count for me.'"
    )


def test_an_added_message_names_the_first_message_that_differs(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    history = [wb.Message.user("Here is an example."), wb.Message.user(PROMPT)]
    message = divergence(agent(replay).run_sync(history=history, settings=SETTINGS))
    assert message == (
        "replay departs from the recording at step 1: message 1 (user), part 0; "
        "2 messages recorded, 3 sent\n"
        "- recorded: text 'Count for me.'\n"
        "+ sent:     text 'Here is an example.'"
    )


def test_a_rerun_with_a_message_removed_is_shown_against_its_nearest_step(
    recorded: wb.RunResult,
) -> None:
    snapshot = recorded.snapshots[2]  # step 3: system, user, then two calls and their results
    messages = [m for i, m in enumerate(snapshot.state.messages) if i != 1]
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    fork = agent(counting_model(4)).rerun_sync(snapshot, messages=messages, model=replay)
    message = divergence(fork)
    assert message.startswith(
        "replay departs from the recording at step 2: message 1; 4 messages recorded, 5 sent\n"
        "- recorded: user message: text 'Count for me.'\n"
        "+ sent:     assistant message: call add("
    )


async def test_the_divergence_carries_the_structured_diff(recorded: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    first = recorded.steps[0]
    request = wb.ModelRequest(
        messages=first.messages_in,
        tools=(wb.tool(add).definition,),
        settings={**SETTINGS, "seed": 2},
    )
    with pytest.raises(wb.ReplayDivergence) as caught:
        await replay.request(request)
    assert caught.value.step == 1
    assert caught.value.diff == wb.RequestDiff(
        kind="setting", where="setting 'seed'", recorded="1", sent="2"
    )
    assert str(caught.value.diff) == "setting 'seed': recorded 1, sent 2"
