"""Messages and state: constructors, JSON round trips, versions, transitions, priorities."""

from __future__ import annotations

import json

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb

json_scalars = st.none() | st.booleans() | st.integers() | st.text(max_size=20)
json_scalars |= st.floats(allow_nan=False, allow_infinity=False)
json_values = st.recursive(
    json_scalars,
    lambda inner: (
        st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)
    ),
    max_leaves=8,
)
arguments = st.dictionaries(st.text(max_size=8), json_values, max_size=4)
ids = st.text(min_size=1, max_size=12)
run_ids = st.from_regex(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,11}", fullmatch=True)

parts = st.one_of(
    st.builds(wb.TextPart, text=st.text()),
    st.builds(
        wb.ToolCall,
        name=ids,
        arguments=arguments,
        call_id=ids,
        invalid_arguments=st.none() | st.text(),
    ),
    st.builds(
        wb.ToolResult,
        call_id=ids,
        name=st.text(max_size=8),
        content=st.text(),
        is_error=st.booleans(),
    ),
    st.builds(wb.RetryPrompt, content=st.text(), call_id=st.none() | ids, name=st.text(max_size=8)),
)
messages = st.builds(
    wb.Message,
    role=st.sampled_from(["system", "user", "assistant", "tool"]),
    parts=st.lists(parts, max_size=4).map(tuple),
    run_id=st.none() | run_ids,
    execution_id=st.none() | run_ids,
    step=st.none() | st.integers(0, 1000),
)
pending = st.builds(
    wb.PendingCall,
    call_id=ids,
    tool=ids,
    arguments=arguments,
    reason=st.text(),
    kind=st.sampled_from(["approval", "deferred"]),
)
states = st.builds(
    wb.AgentState,
    status=st.sampled_from(list(wb.ExecutionStatus)),
    stop_reason=st.none() | st.sampled_from(list(wb.StopReason)),
    step=st.integers(0, 10_000),
    next_phase=st.sampled_from(list(wb.Phase)),
    messages=st.lists(messages, max_size=5).map(tuple),
    usage=st.builds(
        wb.Usage,
        input_tokens=st.integers(0, 10**9),
        output_tokens=st.integers(0, 10**9),
        requests=st.integers(0, 100),
        cost=st.none() | st.floats(0, 1e6, allow_nan=False),
    ),
    pending=st.lists(pending, max_size=2).map(tuple),
    retries=st.dictionaries(ids, st.integers(0, 10), max_size=2),
    elapsed=st.floats(0, 1e6, allow_nan=False),
    error=st.none()
    | st.builds(
        wb.ErrorInfo,
        type=ids,
        message=st.text(),
        phase=st.none() | st.sampled_from(list(wb.Phase)),
        step=st.none() | st.integers(0, 100),
    ),
)


@settings(max_examples=150, deadline=None)
@given(states)
def test_state_json_round_trip_is_exact(state: wb.AgentState) -> None:
    text = state.to_json()
    again = wb.AgentState.from_json(text)
    assert again == state
    assert again.to_json() == text


def test_message_constructors_and_provenance() -> None:
    call = wb.Message.assistant_tool_call("add", {"a": 1}, call_id="c1")
    assert call.tool_calls == (wb.ToolCall(name="add", arguments={"a": 1}, call_id="c1"),)
    result = wb.Message.tool_result("c1", "5")
    assert result.parts == (wb.ToolResult(call_id="c1", content="5"),)
    assert wb.Message.user("hi").text == "hi"
    stamped = wb.Message.system("s").stamped("run_1", "exe_1", 3)
    assert (stamped.run_id, stamped.execution_id, stamped.step) == ("run_1", "exe_1", 3)


def test_tool_call_keeps_broken_json_arguments() -> None:
    broken = wb.ModelResponse.tool_call("add", '{"a": 1,').calls[0]
    assert broken.arguments == {} and broken.invalid_arguments == '{"a": 1,'
    not_object = wb.ModelResponse.tool_call("add", "[1, 2]").calls[0]
    assert not_object.invalid_arguments == "[1, 2]"
    fine = wb.ModelResponse.tool_call("add", '{"a": 1}').calls[0]
    assert fine.arguments == {"a": 1} and fine.invalid_arguments is None


def test_usage_adds_and_unknown_cost_stays_unknown() -> None:
    known = wb.Usage(input_tokens=1, output_tokens=2, requests=1, cost=0.5)
    assert (known + known).cost == 1.0
    assert (known + wb.Usage(cost=None)).cost is None
    assert (known + known).total_tokens == 6


def test_version_1_states_are_read_and_their_response_retries_moved() -> None:
    raw = json.loads(wb.AgentState().to_json())
    raw["schema_version"] = 1
    del raw["response_retries"]
    raw["retries"] = {"<response>": 1, "add": 2}
    state = wb.AgentState.from_json(json.dumps(raw))
    assert state.schema_version == wb.AgentState().schema_version
    assert state.retries == {"add": 2} and state.response_retries == 1


def test_version_2_states_are_read_with_errors_without_a_traceback() -> None:
    raw = json.loads(wb.AgentState().to_json())
    raw["schema_version"] = 2
    raw["error"] = {"type": "ModelError", "message": "down", "phase": "inference", "step": 1}
    state = wb.AgentState.from_json(json.dumps(raw))
    assert state.schema_version == wb.AgentState().schema_version
    assert state.error is not None and state.error.traceback is None


def _raw(**changes: object) -> str:
    raw = json.loads(wb.AgentState().to_json())
    raw.update(changes)
    return json.dumps(raw)


def test_future_version_is_a_clear_error() -> None:
    with pytest.raises(wb.StateFormatError, match=r"version 99 .*reads version 4.*newer"):
        wb.AgentState.from_json(_raw(schema_version=99))


def test_missing_version_is_a_clear_error() -> None:
    raw = json.loads(wb.AgentState().to_json())
    del raw["schema_version"]
    with pytest.raises(wb.StateFormatError, match="version None is not supported"):
        wb.AgentState.from_json(json.dumps(raw))


def test_unknown_field_is_a_clear_error() -> None:
    with pytest.raises(wb.StateFormatError, match="surprise: Extra inputs are not permitted"):
        wb.AgentState.from_json(_raw(surprise=1))


def test_unknown_part_kind_is_a_clear_error() -> None:
    bad = {"role": "user", "parts": [{"kind": "image", "url": "x"}]}
    with pytest.raises(wb.StateFormatError, match="does not match any of the expected tags"):
        wb.AgentState.from_json(_raw(messages=[bad]))


@pytest.mark.parametrize("text", ["", "not json", "[1, 2]", '"a string"'])
def test_garbage_is_a_clear_error(text: str) -> None:
    with pytest.raises(wb.StateFormatError):
        wb.AgentState.from_json(text)


def test_wrong_types_are_named() -> None:
    with pytest.raises(wb.StateFormatError, match="step: Input should be a valid integer"):
        wb.AgentState.from_json(_raw(step="seven"))


def test_transitions_follow_the_run_control_table() -> None:
    state = wb.AgentState()
    running = state.moved(wb.Transition.START)
    done = running.moved(wb.Transition.COMPLETE, stop_reason=wb.StopReason.COMPLETED)
    assert done.status is wb.ExecutionStatus.COMPLETED and done.done
    with pytest.raises(wb.InvalidTransition, match="cannot start a run that is completed"):
        done.moved(wb.Transition.START)
    with pytest.raises(wb.InvalidTransition, match="cannot complete a run that is pending"):
        state.moved(wb.Transition.COMPLETE)
    paused = running.moved(wb.Transition.PAUSE)
    assert paused.moved(wb.Transition.START).status is wb.ExecutionStatus.RUNNING
    assert paused.moved(wb.Transition.ABORT).status is wb.ExecutionStatus.ABORTED
    for transition in wb.Transition:  # nothing leaves a terminal status
        for status in (wb.ExecutionStatus.COMPLETED, wb.ExecutionStatus.FAILED):
            assert status not in transition.sources


def test_stop_reason_priority_and_status() -> None:
    r = wb.StopReason
    assert r.pick([r.COMPLETED, r.STEP_LIMIT]) is r.STEP_LIMIT
    assert r.pick([r.STEP_LIMIT, r.HOOK_STOP]) is r.HOOK_STOP
    assert r.pick([r.HOOK_STOP, r.ABORTED, None]) is r.ABORTED
    assert r.pick([r.ABORTED, r.ERROR]) is r.ERROR
    assert r.pick([r.TASK_COMPLETE, r.COMPLETED]) is r.TASK_COMPLETE
    assert r.pick([None, None]) is None
    assert r.ERROR.status is wb.ExecutionStatus.FAILED
    assert r.ABORTED.status is wb.ExecutionStatus.ABORTED
    assert r.HOOK_STOP.status is wb.ExecutionStatus.COMPLETED


def test_response_parts_given_as_dicts_need_no_kind_for_text() -> None:
    response = wb.ModelResponse(parts=[{"text": "hi"}])  # type: ignore[list-item]
    assert response.parts == (wb.TextPart(text="hi"),)
