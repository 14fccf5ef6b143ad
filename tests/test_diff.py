"""wb.diff: a re-run with an edited message diverges from that step on; the diff says exactly so."""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import workbench as wb
from tests._counting import PROMPT, content, counting_agent


@pytest.fixture
def store(tmp_path: Path) -> wb.RunStore:
    with wb.RunStore(tmp_path / "runs.sqlite") as s:
        yield s


def _edited_fork(store: wb.RunStore) -> tuple[wb.RunResult, wb.RunResult, int]:
    """A 10-step run and a re-run from step 5 whose last tool result was changed to 1000."""
    agent = counting_agent(10, store)
    original = agent.run_sync(PROMPT)
    snapshot = original.snapshots[4]
    assert snapshot.step == 5
    messages = list(snapshot.state.messages)
    edited = len(messages) - 1
    assert messages[edited].parts[0] == wb.ToolResult(call_id="c4", name="add", content="10")
    messages[edited] = wb.Message.tool_result("c4", "1000", name="add")
    fork = agent.rerun_sync(snapshot, messages=messages)
    return original, fork, edited


def test_rerun_with_an_edited_message_diverges_from_that_step_on(store: wb.RunStore) -> None:
    original, fork, edited = _edited_fork(store)
    assert fork.status is wb.ExecutionStatus.COMPLETED
    assert [s.index for s in fork.steps] == [5, 6, 7, 8, 9, 10]
    assert content(fork.messages[:edited]) == content(original.messages[:edited])
    assert fork.steps[0].tool_calls[0].arguments == {"a": 1000, "b": 5}
    assert fork.output == f"total {1000 + 5 + 6 + 7 + 8 + 9}"
    assert original.output == f"total {sum(range(1, 10))}"
    assert store.load(original.run_id).state == original.state  # the original is untouched


def test_diff_shows_exactly_the_divergence(store: wb.RunStore) -> None:
    original, fork, edited = _edited_fork(store)
    changes = wb.diff(original, fork)
    assert changes.first_divergence == 5
    assert changes.changed_steps == (5, 6, 7, 8, 9, 10)
    assert [s.status for s in changes.steps[:4]] == ["inherited"] * 4
    step5 = changes.steps[4]
    assert [str(m) for m in step5.messages if m.where == "sent"] == [
        f"message {edited} (tool): result of c4 '10' → result of c4 '1000'"
    ]
    added = [str(m) for m in step5.messages if m.where == "added"]
    assert added == [
        'message 0 (assistant): call add({"a": 10, "b": 5}) [c5] → '
        'call add({"a": 1000, "b": 5}) [c5]',
        "message 1 (tool): result of c5 '15' → result of c5 '1005'",
    ]
    assert step5.calls_a == ('add({"a": 10, "b": 5})',)
    assert step5.calls_b == ('add({"a": 1000, "b": 5})',)
    step6 = changes.steps[5]  # what step 5 changed is not reported again as "sent" at step 6
    assert [m.where for m in step6.messages] == ["added", "added"]
    last = changes.steps[-1]
    assert last.stop_a is last.stop_b is wb.StopReason.COMPLETED
    assert [str(m) for m in last.messages] == [
        "message 0 (assistant): text 'total 45' → text 'total 1035'"
    ]


def test_diff_text_and_dataframe(store: wb.RunStore) -> None:
    original, fork, _ = _edited_fork(store)
    changes = wb.diff(original, fork)
    text = changes.to_text()
    assert str(changes) == text
    lines = text.splitlines()
    assert lines[0] == (
        f"diff {original.run_id} (a) → {fork.run_id} (b): b is a re-run of a from step 5"
    )
    assert lines[1] == "steps 1–4: inherited"
    assert lines[2] == "step 5: changed"
    sent = "  the model was sent message 8 (tool): result of c4 '10' → result of c4 '1000'"
    assert sent in lines
    assert lines[-1] == "first divergence: step 5"
    frame = changes.to_df()
    assert list(frame["step"]) == list(range(1, 11))
    assert list(frame["status"]) == ["inherited"] * 4 + ["changed"] * 6
    assert frame.loc[4, "calls_b"] == 'add({"a": 1000, "b": 5})'
    assert frame["total_ms_b"].isna().tolist() == [True] * 4 + [False] * 6


def test_identical_runs_agree_and_timing_never_counts(store: wb.RunStore) -> None:
    a = counting_agent(6, store).run_sync(PROMPT)
    b = counting_agent(6, store).run_sync(PROMPT)
    changes = wb.diff(a, b)
    assert changes.first_divergence is None and changes.changed_steps == ()
    assert all(s.status == "same" and s.time_delta is not None for s in changes.steps)
    assert changes.to_text().splitlines()[1:] == [
        "steps 1–6: same",
        "end a: completed, stop reason completed, output 'total 15'",
        "end b: completed, stop reason completed, output 'total 15'",
        "the runs agree on every step",
    ]


def test_unrelated_runs_of_different_length(store: wb.RunStore) -> None:
    short = counting_agent(3, store).run_sync(PROMPT)
    long = counting_agent(5, store).run_sync(PROMPT)
    changes = wb.diff(short, long)
    assert [s.status for s in changes.steps] == ["same", "same", "changed", "only_b", "only_b"]
    step3 = changes.steps[2]
    assert step3.calls_a == () and step3.calls_b == ('add({"a": 3, "b": 3})',)
    assert "step 4: only in b (calls add" in changes.to_text()


def test_long_texts_show_where_they_differ() -> None:
    a = wb.Message.user("x" * 100 + "cat" + "y" * 50)
    b = wb.Message.user("x" * 100 + "dog" + "y" * 50)
    from workbench.diff._compare import _change

    change = _change("sent", 0, a, b)
    (part,) = change.parts
    assert part.before is not None and "cat" in part.before and "text at 100" in part.before
    assert part.after is not None and "dog" in part.after


@wb.tool
def echo(task: str) -> str:
    """Say the task back."""
    return task


def _lead(tasks: Sequence[str], *, first: str = "sub", suffix: str = "") -> wb.Agent:
    """A lead that calls a tool a step (``first`` at step 1, then ``sub``), then answers.

    The sub-agent behind ``sub`` answers ``about <task><suffix>``.
    """
    sub = wb.Agent(
        wb.FunctionModel(lambda m, *_: f"about {m[-1].text}{suffix}"), name="sub", store=False
    )

    def lead(messages: Sequence[wb.Message], *_: object) -> wb.ModelResponse:
        done = sum(m.role == "tool" for m in messages)
        if done == len(tasks):
            return wb.ModelResponse.text("end")
        return wb.ModelResponse.tool_call(first if done == 0 else "sub", {"task": tasks[done]})

    tools = [sub.as_tool("sub", "Ask the sub-agent."), echo]
    return wb.Agent(wb.FunctionModel(lead), name="lead", tools=tools, store=False)


def test_a_rerun_inherits_the_sub_runs_of_the_steps_before_it() -> None:
    lead = _lead(["A", "B"])
    original = lead.run_sync("go")
    fork = lead.rerun_sync(original.snapshots[2])  # step 3: no sub-run runs again
    assert fork.children == ()
    changes = wb.diff(original, fork)
    assert changes.diverged_subruns == ()
    assert [(s.a_id, s.b_id) for s in changes.subruns] == [
        (c.run_id, c.run_id) for c in original.children
    ]
    assert [s.note for s in changes.subruns] == ["b inherited this sub-run"] * 2
    assert [s.status for s in changes.subruns[0].steps] == ["inherited"]
    assert not any(line.startswith("sub-run") for line in changes.to_text().splitlines())
    back = wb.diff(fork, original)  # the other way round: a inherited them
    assert back.diverged_subruns == ()
    assert [s.note for s in back.subruns] == ["a inherited this sub-run"] * 2


def test_sub_runs_pair_by_step_and_call_not_by_position() -> None:
    original = _lead(["A", "B"]).run_sync("go")
    fork = _lead(["A", "B"]).rerun_sync(original.snapshots[1])  # step 2: only B runs again
    (again,) = fork.children
    assert again.parent_call_id != original.children[1].parent_call_id  # a new call id
    changes = wb.diff(original, fork)
    assert changes.diverged_subruns == ()
    assert [(s.a_id, s.b_id) for s in changes.subruns] == [
        (original.children[0].run_id, original.children[0].run_id),
        (original.children[1].run_id, again.run_id),
    ]
    edited = _lead(["A", "B"], suffix="!").rerun_sync(original.snapshots[1])
    changed = wb.diff(original, edited)
    (diverged,) = changed.diverged_subruns
    assert (diverged.a_id, diverged.b_id) == (
        original.children[1].run_id,
        edited.children[0].run_id,
    )
    assert (
        "sub-run 2:   the step added     message 0 (assistant): text 'about B' → text 'about B!'"
    ) in changed.to_text().splitlines()


def test_a_sub_run_only_one_run_has_is_not_paired_with_a_later_one() -> None:
    a = _lead(["A", "B"]).run_sync("go")
    b = _lead(["A", "B"], first="echo").run_sync("go")  # step 1 calls a plain tool instead
    changes = wb.diff(a, b)
    assert [(s.a_id, s.b_id, s.note) for s in changes.subruns] == [
        (a.children[0].run_id, "", "only a has this sub-run"),
        (a.children[1].run_id, b.children[0].run_id, ""),
    ]
    assert changes.diverged_subruns == changes.subruns[:1]


def _searching_lead() -> wb.Agent:
    """A lead whose sub-agent calls a tool; both models mint a fresh call id for every call."""

    @wb.tool
    def search(q: str) -> str:
        """Search."""
        return f"found {q}"

    def researcher(messages: Sequence[wb.Message], *_: object) -> wb.ModelResponse:
        if messages[-1].role == "tool":
            return wb.ModelResponse.text(f"about {messages[-1].parts[0].content}")  # type: ignore[union-attr]
        return wb.ModelResponse.tool_call("search", {"q": messages[-1].text})

    sub = wb.Agent(wb.FunctionModel(researcher), name="researcher", tools=[search], store=False)

    def lead(messages: Sequence[wb.Message], *_: object) -> wb.ModelResponse:
        if messages[-1].role == "tool":
            return wb.ModelResponse.text("end")
        return wb.ModelResponse.tool_call("research", {"task": "cats"})

    tools = [sub.as_tool("research", "Look things up.")]
    return wb.Agent(wb.FunctionModel(lead), name="lead", tools=tools, store=False)


def test_two_runs_that_differ_only_in_minted_call_ids_agree() -> None:
    # A provider mints a new id for every tool call, so two runs of the same conversation never
    # share them: the ids must not make every step (and every sub-run) look diverged.
    a, b = _searching_lead().run_sync("go"), _searching_lead().run_sync("go")
    assert a.messages[1].tool_calls[0].call_id != b.messages[1].tool_calls[0].call_id
    changes = wb.diff(a, b)
    assert changes.first_divergence is None
    assert changes.diverged_subruns == ()
    assert changes.subruns[0].first_divergence is None
    assert "first divergence" not in changes.to_text()


def test_a_sub_run_only_one_run_has_is_not_said_to_agree() -> None:
    a = _lead(["A", "B"]).run_sync("go")
    b = _lead(["A", "B"], first="echo").run_sync("go")  # a's first sub-run has no partner in b
    lines = wb.diff(a, b).to_text().splitlines()
    own = [line for line in lines if line.startswith("sub-run 1: ")]
    assert own[0].endswith(": only a has this sub-run")
    assert "sub-run 1: the runs agree on every step" not in own


def _worker(way: str) -> wb.Tool:
    """A ``work`` tool whose agent calls ``echo`` with ``way``, then says "done" either way."""

    def worker(messages: Sequence[wb.Message], *_: object) -> wb.ModelResponse:
        if messages[-1].role == "tool":
            return wb.ModelResponse.text("done")
        return wb.ModelResponse.tool_call("echo", {"task": way}, call_id="w")

    sub = wb.Agent(wb.FunctionModel(worker), name="worker", tools=[echo], store=False)
    return sub.as_tool("work", "Work.")


def _lead_of_a_worker(way: str) -> wb.Agent:
    """A lead that asks a worker (see `_worker`) twice."""
    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("work", {"task": "A"}, call_id="a"),
            wb.ModelResponse.tool_call("work", {"task": "B"}, call_id="b"),
            "end",
        ]
    )
    return wb.Agent(model, name="lead", tools=[_worker(way)], store=False)


def test_a_tree_whose_lead_agrees_says_which_sub_runs_differ() -> None:
    # Both workers end with the same answer, so the lead's steps agree; the way there differs.
    a = _lead_of_a_worker("this way").run_sync("go")
    b = _lead_of_a_worker("that way").run_sync("go")
    changes = wb.diff(a, b)
    assert changes.first_divergence is None and len(changes.diverged_subruns) == 2
    lines = changes.to_text().splitlines()
    assert "the runs agree on every step, but sub-runs 1, 2 differ (below)" in lines
    assert "the runs agree on every step" not in lines


def test_a_sub_run_whose_own_sub_run_differs_is_shown() -> None:
    # The middle runs agree step by step (the worker answers "done" either way); only the
    # workers under them differ, and the report still leads there.
    def lead_of_a_mid(way: str) -> wb.Agent:
        mid = wb.Agent(
            wb.ScriptedModel(
                [wb.ModelResponse.tool_call("work", {"task": "x"}, call_id="m"), "ok"]
            ),
            name="mid",
            tools=[_worker(way)],
            store=False,
        )
        model = wb.ScriptedModel(
            [wb.ModelResponse.tool_call("mid", {"task": "y"}, call_id="l"), "end"]
        )
        return wb.Agent(model, name="lead", tools=[mid.as_tool("mid", "Mid.")], store=False)

    changes = wb.diff(
        lead_of_a_mid("this way").run_sync("go"), lead_of_a_mid("that way").run_sync("go")
    )
    lines = changes.to_text().splitlines()
    assert "the runs agree on every step, but sub-run 1 differs (below)" in lines
    assert "sub-run 1: the runs agree on every step, but sub-run 1 differs (below)" in lines
    assert any(line.startswith("sub-run 1: sub-run 1: step 1: changed") for line in lines)


def test_the_notebook_view_of_a_tree_diff_shows_the_sub_runs_that_differ() -> None:
    from workbench.notebook.reprs import run_diff_html

    a = _lead_of_a_worker("<b>this</b> way").run_sync("go")
    b = _lead_of_a_worker("that way").run_sync("go")
    html = run_diff_html(wb.diff(a, b))
    assert "the runs agree on every step, but sub-runs 1, 2 differ (below)" in html
    assert html.count("<b>sub-run ") == 2 and html.count("class='wb-run-diff'") == 3
    assert "first divergence: step 1" in html  # each worker's own verdict
    assert "&lt;b&gt;this&lt;/b&gt;" in html and "<b>this</b>" not in html  # model text is text


def test_a_message_only_one_run_has_reads_as_a_person_says_it() -> None:
    from workbench.diff._result import MessageChange, PartChange, StepDiff

    only_a = MessageChange(
        where="added",
        index=1,
        kind="removed",
        role="tool",
        parts=(PartChange(index=0, kind="removed", before="result of c1 '5'", after=None),),
    )
    two = MessageChange(
        where="sent",
        index=2,
        kind="changed",
        role="assistant",
        parts=(
            PartChange(index=0, kind="changed", before="text 'a'", after="text 'b'"),
            PartChange(index=1, kind="added", before=None, after="call add({}) [c2]"),
        ),
    )
    step = StepDiff(step=2, status="changed", messages=(only_a, two), calls_a=("add",))
    assert step.changes() == [
        ("the step added", "message 1 (tool), only in a: result of c1 '5'"),
        (
            "the model was sent",
            "message 2 (assistant): part 0, text 'a' → text 'b'; "
            "part 1, only in b: call add({}) [c2]",
        ),
        ("tool calls", "add → none"),
    ]


def test_a_run_that_failed_says_why_at_its_end() -> None:
    """ "end b: failed, stop reason error, output None" said nothing of why b failed."""

    def hung_up(messages: Sequence[wb.Message], request: object) -> wb.ModelResponse:
        raise ConnectionError("the model server\nhung up")

    a = wb.Agent(model=wb.ScriptedModel(["hi"]), store=False).run_sync("q")
    b = wb.Agent(model=wb.FunctionModel(hung_up), store=False).run_sync("q")
    changes = wb.diff(a, b)
    assert (changes.a_error, changes.b_error) == (
        None,
        "ConnectionError: the model server\nhung up",
    )
    lines = changes.to_text().splitlines()
    assert "end a: completed, stop reason completed, output 'hi'" in lines
    assert (
        "end b: failed (ConnectionError: the model server hung up), stop reason error, output None"
    ) in lines
    html = changes._repr_html_()
    assert html is not None and "(ConnectionError: the model server\nhung up)</span>" in html
