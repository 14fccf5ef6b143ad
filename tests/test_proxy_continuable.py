"""The recorder's index of the conversations a request may continue, against a scan of them all.

These drive the `Recorder` directly (no server): grouping is decided there, and the scan over
every conversation, which the index replaced, is the reference for what it must find.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Literal

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench._proxy.calls import Call, Outcome
from workbench._proxy.recorder import Recorder, _continued, _Conversation
from workbench.messages import Message, ModelResponse
from workbench.state import ErrorInfo

How = Literal["new", "on", "changed", "again"]
Action = tuple[int, How, str, str | None, bool]
ACTIONS = st.lists(
    st.tuples(
        st.integers(0, 4),  # which agent (of those started so far)
        st.sampled_from(["new", "on", "changed", "again"]),  # what its request does
        st.sampled_from(["add", "sub"]),  # a user's text: agents often start alike
        st.sampled_from([None, "x", "y", "call_1", "call_2"]),  # failed, text or a tool call
        st.booleans(),  # the call stays in flight until the next request has arrived
    ),
    max_size=30,
)


def answer(outcome: str | None) -> ModelResponse | None:
    if outcome is None or not outcome.startswith("call_"):
        return None if outcome is None else ModelResponse.text(outcome)
    return ModelResponse.tool_call("add", {}, call_id=outcome)


def next_request(
    agent: tuple[tuple[Message, ...], ModelResponse | None], how: How, text: str
) -> tuple[Message, ...]:
    """What an agent sends next: its last request again, or more.

    Going on, it sends back its answer as it was given, or changed, and a tool result or a
    user's turn after it.
    """
    sent, response = agent
    if how == "again":
        return sent
    back: tuple[Message, ...] = ()
    if response is not None:
        back = (response.to_message() if how == "on" else Message.assistant("changed"),)
    calls = response.calls if response is not None else ()
    following = Message.tool_result(calls[0].call_id, text) if calls else Message.user(text)
    return (*sent, *back, following)


@settings(max_examples=150, deadline=None)
@given(ACTIONS)
def test_the_index_finds_what_a_scan_of_every_conversation_finds(actions: list[Action]) -> None:
    recorder = Recorder(wb.RunStore(":memory:"), metadata={})
    agents: list[tuple[tuple[Message, ...], ModelResponse | None]] = []
    held: list[tuple[wb.StepContext, Call, Outcome]] = []
    try:
        for who, how, text, outcome, hold in actions:
            if how == "new" or not agents:
                messages: tuple[Message, ...] = (Message.user(text),)
            else:
                messages = next_request(agents[who % len(agents)], how, text)
            expected = _continued(recorder._conversations.values(), messages)
            assert recorder._continuable.find(messages) is expected
            call = Call(model="m", messages=messages, tools=(), settings={})
            snapshot = recorder.begin(call)
            response = answer(outcome)
            error = None if response is not None else ErrorInfo(type="Timeout", message="late")
            for ended in held:
                recorder.end(*ended)
            held = [(snapshot, call, Outcome(response=response, error=error, duration=0.0))]
            if not hold:
                recorder.end(*held.pop())
            agents.append((messages, response))
    finally:
        recorder.close()


QUESTION = (Message.system("You add."), Message.user("add 1 and 2"))


@pytest.fixture
def looked(monkeypatch: pytest.MonkeyPatch) -> list[str]:
    """The runs whose conversation a request was checked against (`continues`), in order."""
    runs: list[str] = []
    continues = _Conversation.continues

    def counted(self: _Conversation, messages: tuple[Message, ...]) -> bool:
        runs.append(self.state.run_id)
        return continues(self, messages)

    monkeypatch.setattr(_Conversation, "continues", counted)
    return runs


def asker(recorder: Recorder) -> Callable[[tuple[Message, ...], ModelResponse], str]:
    """Make a call through ``recorder`` answered with the given response; its run id."""

    def ask(messages: tuple[Message, ...], response: ModelResponse) -> str:
        call = Call(model="m", messages=messages, tools=(), settings={})
        snapshot = recorder.begin(call)
        recorder.end(snapshot, call, Outcome(response=response, duration=0.0))
        return snapshot.run_id

    return ask


def test_answered_calls_are_not_looked_at_unless_a_request_sends_their_answer_back(
    looked: list[str],
) -> None:
    """An eval's samples, each a run of one answered call, cost a later request nothing."""
    recorder = Recorder(wb.RunStore(":memory:"), metadata={})
    ask = asker(recorder)
    answers = [ModelResponse.text(f"3, sample {i}") for i in range(300)]
    try:
        samples = [ask(QUESTION, answer) for answer in answers]
        looked.clear()
        assert ask(QUESTION, answers[0]) not in samples  # a sample more
        assert looked == []
        going_on = (*QUESTION, answers[7].to_message(), Message.user("and 3?"))
        assert ask(going_on, answers[0]) == samples[7]  # the one whose answer it sends back
        assert looked == [samples[7]]
        looked.clear()
        ask((Message.user("something else"),), answers[0])
        assert looked == []
    finally:
        recorder.close()


def test_a_conversation_that_goes_on_is_not_held_up_by_shorter_ones_answered_alike(
    looked: list[str],
) -> None:
    """Samples answered the same are each one it may go on with, once; then it is the longest."""
    recorder = Recorder(wb.RunStore(":memory:"), metadata={})
    ask = asker(recorder)
    same = ModelResponse.text("3")
    try:
        samples = [ask(QUESTION, same) for _ in range(300)]
        messages = (*QUESTION, same.to_message(), Message.user("and 3?"))
        assert ask(messages, same) == samples[0]  # the first of them, as a scan would choose
        for turn in range(3):
            looked.clear()
            messages = (*messages, same.to_message(), Message.user(f"and {turn}?"))
            assert ask(messages, same) == samples[0]
            assert looked == [samples[0]]
    finally:
        recorder.close()
