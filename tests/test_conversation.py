"""`Messages`: views of one append-only log behave as frozen tuples of messages.

What a state, snapshot or record holds must never change after it was made, however the log it
shares goes on: a view is checked against a plain tuple under any sequence of appends, prefixes
and forks (hypothesis), and through the loop's own uses (snapshots, re-runs from an old step,
JSON, the store, resume in another process).
"""

from __future__ import annotations

import copy
import json
import pickle

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import workbench as wb
from workbench.conversation import Messages, appended

POOL = [wb.Message.user(f"m{i}") for i in range(8)]


@settings(max_examples=200, deadline=None)
@given(
    st.lists(
        st.tuples(
            st.integers(0, 20),  # which existing view to act on
            st.sampled_from(["append", "prefix", "slice"]),
            st.lists(st.sampled_from(POOL), max_size=3),
            st.integers(-4, 12),
        ),
        max_size=30,
    )
)
def test_views_act_as_the_tuples_they_stand_for(ops: list[tuple[int, str, list, int]]) -> None:
    views, tuples = [Messages()], [()]
    for which, op, new, cut in ops:
        i = which % len(views)
        if op == "append":
            views.append(appended(views[i], *new))
            tuples.append((*tuples[i], *new))
        elif op == "prefix":
            views.append(views[i][:cut])
            tuples.append(tuples[i][:cut])
        else:
            views.append(views[i][cut : cut + 3])
            tuples.append(tuples[i][cut : cut + 3])
        for view, expected in zip(views, tuples, strict=True):  # every older view unchanged
            assert view == expected and tuple(view) == expected and len(view) == len(expected)
            assert list(reversed(view)) == list(reversed(expected))
            if expected:
                assert view[-1] is expected[-1] and view[0] is expected[0]


def test_a_view_is_a_sequence_of_messages_like_a_tuple() -> None:
    a, b, c = POOL[:3]
    view = Messages([a, b])
    assert view == (a, b) and (a, b) == view and view == [a, b] and view != (a,)
    assert view + (c,) == (a, b, c) and (c,) + view == (c, a, b)  # noqa: RUF005 (what is tested)
    assert hash(view) == hash((a, b)) and view.index(b) == 1 and c not in view
    assert copy.deepcopy(view) == view and pickle.loads(pickle.dumps(view)) == view
    with pytest.raises(IndexError):
        view[2]
    with pytest.raises(TypeError, match="holds messages"):
        Messages(["not a message"])  # type: ignore[list-item]


def test_a_state_from_json_or_a_constructor_holds_a_view_and_round_trips() -> None:
    state = wb.AgentState(messages=[wb.Message.user("hi")])  # any sequence comes in
    assert isinstance(state.messages, Messages)
    assert json.loads(state.to_json())["messages"] == [
        {"role": "user", "parts": [{"kind": "text", "text": "hi"}]}
        | {"run_id": None, "execution_id": None, "step": None}
    ]
    assert wb.AgentState.from_json(state.to_json()) == state
    schema = wb.AgentState.model_json_schema()["$defs"]["AgentState"]["properties"]
    assert schema["messages"]["type"] == "array"


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def test_snapshots_keep_their_step_and_a_re_run_from_an_old_one_leaves_the_run_alone() -> None:
    script = [wb.ModelResponse.tool_call("add", {"a": i, "b": 1}) for i in range(3)]
    agent = wb.Agent(model=wb.ScriptedModel([*script, wb.ModelResponse.text("done")]), tools=[add])
    result = agent.run_sync("go")
    counts = [len(s.state.messages) for s in result.snapshots]
    assert counts == [1, 3, 5, 7]  # the prompt, then a call and its result per step
    before = [tuple(s.state.messages) for s in result.snapshots]
    fork = agent.rerun_sync(
        result.snapshots[1], model=wb.ScriptedModel([wb.ModelResponse.text("x")])
    )
    assert fork.output == "x" and result.output == "done"
    assert [tuple(s.state.messages) for s in result.snapshots] == before
    assert tuple(result.state.messages[: counts[1]]) == tuple(fork.state.messages[: counts[1]])
    assert result.steps[2].messages_in == result.snapshots[2].state.messages


def test_a_paused_run_resumed_in_another_process_goes_on_from_its_json() -> None:
    @wb.tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete."""
        return "deleted"

    script = [wb.ModelResponse.tool_call("delete", {"path": "/x"}), wb.ModelResponse.text("ok")]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[delete])
    paused = agent.run_sync("delete /x").state
    state = wb.AgentState.from_json(paused.to_json())
    done = agent.resume_sync(state, approvals={state.pending[0].call_id: True})
    assert done.output == "ok" and done.state.messages[: len(paused.messages)] == paused.messages
