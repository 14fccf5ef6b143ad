"""Sessions: executions of one conversation, boundaries, retention, JSON in and out, forks.

Everything goes through the public API with offline models and a real SQLite store; resuming in
another process runs a real Python subprocess on the session's JSON.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import pytest

import workbench as wb
from workbench.notebook.html import messages_html
from workbench.session_state import boundary_number, summary_span

REPO = Path(__file__).resolve().parent.parent


def _answering(seen: list[list[str]]) -> wb.FunctionModel:
    """A model that keeps every conversation it is sent and answers with a count of them."""

    def answer(messages: Sequence[wb.Message], request: wb.ModelRequest) -> str:
        seen.append([m.text for m in messages])
        if messages[-1].text.startswith("Summarize"):
            return f"summary of {sum(boundary_number(m) is not None for m in messages)} executions"
        return f"answer {len(seen)}"

    return wb.FunctionModel(answer)


def _agent(seen: list[list[str]], store: wb.RunStore | None = None, **kw: object) -> wb.Agent:
    return wb.Agent(_answering(seen), system_prompt="Be brief.", store=store or False, **kw)  # type: ignore[arg-type]


def test_two_executions_share_one_conversation_with_boundaries_the_model_reads() -> None:
    seen: list[list[str]] = []
    store = wb.RunStore(":memory:")
    session = wb.Session(_agent(seen, store), metadata={"user": "ada"})
    r1 = session.run_sync("first question")
    r2 = session.run_sync("follow-up")
    assert (r1.output, r2.output) == ("answer 1", "answer 2")
    boundary_2 = (
        "[Execution 2 of this conversation begins; any messages above are from earlier ones.]"
    )
    assert seen[1][0] == "Be brief." and seen[1][-2:] == [boundary_2, "follow-up"]
    assert seen[1].count("Be brief.") == 1  # each run adds its own system prompt, only once
    assert [r.run_id for r in session.executions] == [r1.run_id, r2.run_id]
    numbers = [boundary_number(m) for m in session.messages]
    assert numbers == [1, None, None, 2, None, None]
    own = [m for m in session.messages if boundary_number(m) is None]
    assert [m.run_id for m in own] == [r1.run_id] * 2 + [r2.run_id] * 2
    assert {m.execution_id for m in own} == {r1.state.execution_id, r2.state.execution_id}
    assert r2.state.metadata == {
        "user": "ada",
        "session_id": session.session_id,
        "session_execution": 2,
    }
    grouped = store.session(session.session_id)
    assert [s.run_id for s in grouped] == [r1.run_id, r2.run_id]
    assert list(store.list_runs()["session_id"]) == [session.session_id] * 2
    assert store.session("ses_nothing") == []


def test_the_session_is_the_conversation_on_every_runs_span() -> None:
    seen: list[list[str]] = []
    telemetry = wb.Telemetry()
    session = wb.Session(_agent(seen, telemetry=telemetry))
    session.run_sync("one")
    session.run_sync("two")
    runs = [s for s in telemetry.spans if s.name.startswith("invoke_agent")]
    assert len(runs) == 2
    conversation = {(s.attributes or {}).get("gen_ai.conversation.id") for s in runs}
    assert conversation == {session.session_id}
    assert {(s.attributes or {}).get("workbench.run.id") for s in runs} == {
        r.run_id for r in session.executions
    }


def test_a_prompt_that_looks_like_a_boundary_is_not_one() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    fake = "[Execution 9 of this conversation begins; any messages above are from earlier ones.]"
    session.run_sync(fake)
    assert [boundary_number(m) for m in session.messages] == [1, None, None]
    wb.SessionState.from_json(session.state.to_json())  # still a valid session


def test_retention_drops_whole_old_executions_after_precompact_hooks() -> None:
    seen: list[list[str]] = []
    heard: list[tuple[int, int, int]] = []

    def pre_compact(data: wb.PreCompactInput) -> None:
        heard.append((data.messages_before, data.messages_after, len(data.messages)))

    agent = _agent(seen, hooks=[wb.Hook("PreCompact", pre_compact)])
    session = wb.Session(agent, retention=wb.Retention(max_executions=2))
    for prompt in ("one", "two", "three"):
        session.run_sync(prompt)
    assert heard == [(9, 6, 9)]  # fired before anything left: the hook saw all nine messages
    assert [boundary_number(m) for m in session.messages if boundary_number(m)] == [2, 3]
    assert [e.retained for e in session.state.executions] == ["dropped", "kept", "kept"]
    (compaction,) = session.state.compactions
    assert compaction.executions == (1,) and compaction.mode == "dropped"
    session.run_sync("four")  # it reads the two executions kept, then two leaves in turn
    assert "one" not in seen[-1] and "two" in seen[-1] and "three" in seen[-1]
    assert [boundary_number(m) for m in session.messages if boundary_number(m)] == [3, 4]
    assert len(session.executions) == 4  # the results stay; only the conversation is cut


def test_retention_by_message_count_keeps_the_latest_execution_whole() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen), retention=wb.Retention(max_messages=4))
    session.run_sync("one")
    assert len(session.messages) == 3  # under the limit: nothing leaves
    session.run_sync("two")
    assert [m.text for m in session.messages][1:] == ["two", "answer 2"]
    session2 = wb.Session(_agent(seen), retention=wb.Retention(max_messages=1))
    session2.run_sync("a")
    session2.run_sync("b")
    assert [m.text for m in session2.messages][1:] == ["b", "answer 4"]  # over, but whole


def test_retention_summarizes_with_the_agents_model() -> None:
    seen: list[list[str]] = []
    retention = wb.Retention(max_executions=2, summarize=True)
    session = wb.Session(_agent(seen), retention=retention)
    for prompt in ("one", "two", "three"):
        session.run_sync(prompt)
    summary_request = seen[3]
    assert summary_request[:3] == [
        "[Execution 1 of this conversation begins; any messages above are from earlier ones.]",
        "one",
        "answer 1",
    ]
    assert summary_request[-1] == wb.session.DEFAULT_SUMMARY_PROMPT
    first = session.messages[0]
    assert summary_span(first) == (1, 1) and first.text.endswith("summary of 1 executions")
    session.run_sync("four")  # the next summary folds the first one in
    assert summary_span(session.messages[0]) == (1, 2)
    four = seen[-2]  # the last request is the second summary
    assert four[0] == "Be brief." and four[1].startswith("[Summary of executions 1 to 1")
    assert [e.retained for e in session.state.executions] == [
        "summarized",
        "summarized",
        "kept",
        "kept",
    ]
    assert session.usage.requests == 6  # four executions and two summaries
    wb.SessionState.from_json(session.state.to_json())


def test_a_failed_summary_keeps_everything_and_says_why() -> None:
    def model(messages: Sequence[wb.Message], request: wb.ModelRequest) -> str:
        if messages[-1].text.startswith("Summarize"):
            raise RuntimeError("the summary server is down")
        return "ok"

    agent = wb.Agent(wb.FunctionModel(model), store=False)
    session = wb.Session(agent, retention=wb.Retention(max_executions=1, summarize=True))
    session.run_sync("one")
    session.run_sync("two")
    assert [boundary_number(m) for m in session.messages if boundary_number(m)] == [1, 2]
    (compaction,) = session.state.compactions
    assert compaction.error == "RuntimeError: the summary server is down"
    assert [e.retained for e in session.state.executions] == ["kept", "kept"]


def test_retention_settings_are_validated() -> None:
    with pytest.raises(ValueError, match="greater than or equal to 1"):
        wb.Retention(max_messages=0)
    with pytest.raises(ValueError, match="Extra inputs"):
        wb.Retention(max_turns=3)  # type: ignore[call-arg]


def test_session_json_round_trips_and_goes_on_from_there() -> None:
    seen: list[list[str]] = []
    store = wb.RunStore(":memory:")
    session = wb.Session(_agent(seen, store), retention=wb.Retention(max_executions=3))
    session.run_sync("one")
    session.run_sync("two")
    text = session.state.to_json()
    again = wb.Session.from_json(text, _agent(seen, store))
    assert again.state == session.state and again.state.to_json() == text
    assert [r.steps for r in again.executions] == [r.steps for r in session.executions]
    assert again.run_sync("three").output == "answer 3"
    assert [boundary_number(m) for m in again.messages if boundary_number(m)] == [1, 2, 3]


def test_without_the_store_executions_are_rebuilt_from_the_session() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    session.run_sync("one")
    again = wb.Session.from_json(session.state.to_json(), _agent(seen))
    (result,) = again.executions
    assert result.run_id == session.executions[0].run_id and result.steps == ()
    assert result.output == "answer 1" and result.status is wb.ExecutionStatus.COMPLETED


def _two_execution_json() -> dict[str, object]:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    session.run_sync("one")
    session.run_sync("two")
    data: dict[str, object] = json.loads(session.state.to_json())
    return data


def test_session_json_from_a_future_version_is_refused() -> None:
    data = _two_execution_json()
    data["schema_version"] = 99
    with pytest.raises(wb.SessionFormatError, match="written by a newer workbench"):
        wb.SessionState.from_json(json.dumps(data))


def test_session_json_keeps_the_retention() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen), retention=wb.Retention(max_executions=1))
    session.run_sync("one")
    again = wb.Session.from_json(session.state.to_json(), _agent(seen))
    assert again.retention == wb.Retention(max_executions=1)
    again.run_sync("two")
    again.run_sync("three")
    assert [e.retained for e in again.state.executions] == ["dropped", "dropped", "kept"]
    unlimited = wb.Session.from_json(
        session.state.to_json(), _agent(seen), retention=wb.Retention()
    )
    assert unlimited.retention == unlimited.state.retention == wb.Retention()


def test_session_json_of_version_1_reads_without_a_retention() -> None:
    data = _two_execution_json()
    del data["retention"]
    data["schema_version"] = 1
    state = wb.SessionState.from_json(json.dumps(data))
    assert state.retention == wb.Retention()
    assert state.schema_version == wb.session_state.SESSION_SCHEMA_VERSION
    assert len(state.executions) == 2


@pytest.mark.parametrize(
    ("edit", "message"),
    [
        (lambda m: m.pop(3), "is in execution 1, which another run made"),
        (lambda m: m.__delitem__(slice(3, None)), "execution 2 has no boundary marker"),
        (lambda m: m.pop(0), "before the first boundary"),
        (
            lambda m: m.insert(0, m.pop(3)),
            "starts execution 2, but the session expects execution 1",
        ),
        (lambda m: m.append(m[1]), "which another run made"),
        (lambda m: m.insert(1, dict(m[0])), "starts execution 1, but the session expects"),
    ],
)
def test_a_broken_boundary_is_a_clear_error(edit: object, message: str) -> None:
    data = _two_execution_json()
    messages = data["messages"]
    assert isinstance(messages, list)
    edit(messages)  # type: ignore[operator]
    with pytest.raises(wb.SessionFormatError, match=message):
        wb.SessionState.from_json(json.dumps(data))


@pytest.mark.parametrize(
    ("text", "message"),
    [
        ("{not json", "not valid JSON"),
        ("[1, 2]", "must be an object"),
        ('{"schema_version": 1, "messages": 3}', "messages"),
    ],
)
def test_unreadable_session_json_is_a_clear_error(text: str, message: str) -> None:
    with pytest.raises(wb.SessionFormatError, match=message):
        wb.SessionState.from_json(text)


def test_executions_out_of_order_or_a_missing_summary_are_refused() -> None:
    data = _two_execution_json()
    executions = data["executions"]
    assert isinstance(executions, list)
    executions[1]["retained"] = "dropped"
    with pytest.raises(wb.SessionFormatError, match="oldest executions first"):
        wb.SessionState.from_json(json.dumps(data))
    executions[1]["retained"], executions[0]["retained"] = "kept", "summarized"
    with pytest.raises(wb.SessionFormatError, match="summary of executions 1 to 1"):
        wb.SessionState.from_json(json.dumps(data))
    executions[0]["number"] = 5
    with pytest.raises(wb.SessionFormatError, match="numbered"):
        wb.SessionState.from_json(json.dumps(data))


def _tool_agent(store: wb.RunStore | None = None) -> wb.Agent:
    @wb.tool(requires_approval=True)
    def delete(path: str) -> str:
        """Delete a file."""
        return f"deleted {path}"

    return wb.Agent(
        wb.ScriptedModel(
            [
                wb.ModelResponse.tool_call("delete", {"path": "a.txt"}, call_id="c1"),
                "Deleted it.",
                wb.ModelResponse.tool_call("delete", {"path": "b.txt"}, call_id="c2"),
                wb.ModelResponse.tool_call("delete", {"path": "c.txt"}, call_id="c3"),
                "Both gone.",
            ]
        ),
        tools=[delete],
        store=store or False,
    )


def _paused_session_json() -> dict[str, Any]:
    session = wb.Session(_tool_agent())
    assert session.run_sync("delete a.txt").status is wb.ExecutionStatus.PAUSED
    data: dict[str, Any] = json.loads(session.state.to_json())
    return data


def test_a_session_file_of_version_2_holds_an_older_state_and_still_resumes() -> None:
    """Written before a state said when it paused: its paused state is read as today's."""
    data = _paused_session_json()
    data["schema_version"] = 2
    data["paused"]["schema_version"] = 3
    del data["paused"]["paused_at"]
    agent = _tool_agent()
    agent.model = wb.ScriptedModel(["Deleted it."])  # this process goes on from the answer
    session = wb.Session.from_json(json.dumps(data), agent)
    paused = session.state.paused
    assert paused is not None and paused.paused_at is None
    assert paused.schema_version == wb.AgentState().schema_version  # migrated, not kept as 3
    assert session.state.schema_version == wb.session_state.SESSION_SCHEMA_VERSION
    assert session.resume_sync({"c1": True}).output == "Deleted it."


@pytest.mark.parametrize(
    ("where", "version", "message"),
    [
        ((), 3, None),  # today's
        ((), 4, "session schema version 4 is not supported: .* newer workbench"),
        (("paused",), 5, "session's paused state schema version 5 .* newer workbench"),
        (("paused",), "4", "session's paused state schema version '4' is not supported"),
    ],
    ids=["today's", "a newer session", "a newer paused state", "a paused state's bad version"],
)
def test_a_session_file_of_a_future_version_is_a_clear_error(
    tmp_path: Path, where: tuple[str, ...], version: object, message: str | None
) -> None:
    """A newer workbench's session (or its paused state) is refused by its version, and the
    file is left as it was."""
    data = _paused_session_json()
    inside = data
    for key in where:
        inside = inside[key]
    inside["schema_version"] = version
    if message is not None:  # a newer state would carry fields this one does not know
        inside["added_later"] = True
    path = tmp_path / "session.json"
    path.write_text(json.dumps(data))
    written = path.read_bytes()
    if message is None:
        assert wb.Session.from_json(path.read_text(), _tool_agent()).state.paused is not None
    else:
        with pytest.raises(wb.SessionFormatError, match=message):
            wb.Session.from_json(path.read_text(), _tool_agent())
    assert path.read_bytes() == written


def test_a_paused_execution_must_be_resumed_before_the_next() -> None:
    session = wb.Session(_tool_agent())
    paused = session.run_sync("delete a.txt")
    assert paused.status is wb.ExecutionStatus.PAUSED
    assert session.state.paused is not None and session.state.paused.run_id == paused.run_id
    with pytest.raises(wb.SessionBusy, match="execution 1 is paused"):
        session.run_sync("something else")
    done = session.resume_sync({"c1": True})
    assert done.output == "Deleted it." and session.state.paused is None
    assert [e.status for e in session.state.executions] == [wb.ExecutionStatus.COMPLETED]
    assert [boundary_number(m) for m in session.messages].count(1) == 1
    with pytest.raises(wb.SessionBusy, match="no paused execution"):
        session.resume_sync({"c1": True})


def test_a_stepped_execution_is_taken_in_when_done() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    run = session.start("step me")
    with pytest.raises(wb.SessionBusy, match="execution 1 is still running"):
        session.start("not yet")
    assert run.next_step() is not None and run.done
    assert session.state.executions[0].run_id == run.state.run_id
    assert session.run_sync("next").output == "answer 2"
    assert len(session.executions) == 2


def test_stepped_executions_get_their_retention_before_the_next_run() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen), retention=wb.Retention(max_executions=1))
    for prompt in ("one", "two"):
        session.start(prompt).run_to_end()
    assert [e.retained for e in session.state.executions] == ["kept", "kept"]  # nothing ran it
    session.run_sync("three")
    assert "one" not in seen[-1] and "two" in seen[-1]
    assert [e.retained for e in session.state.executions] == ["dropped", "dropped", "kept"]


def test_dropping_after_summarizing_drops_the_summary_too() -> None:
    seen: list[list[str]] = []
    summarizing = wb.Retention(max_executions=1, summarize=True)
    session = wb.Session(_agent(seen), retention=summarizing)
    session.run_sync("one")
    session.run_sync("two")
    assert summary_span(session.messages[0]) == (1, 1)
    dropping = wb.Session.from_json(
        session.state.to_json(), _agent(seen), retention=wb.Retention(max_executions=1)
    )
    dropping.run_sync("three")
    assert [boundary_number(m) for m in dropping.messages] == [3, None, None]
    assert [e.retained for e in dropping.state.executions] == ["dropped", "dropped", "kept"]
    wb.SessionState.from_json(dropping.state.to_json())


def test_fork_branches_the_conversation_at_a_step() -> None:
    agent = _tool_agent(wb.RunStore(":memory:"))  # a resumed run's result: the whole run
    session = wb.Session(agent)
    session.run_sync("delete a.txt")
    session.resume_sync({"c1": True})
    session.run_sync("delete b and c")
    session.resume_sync({"c2": True})
    session.resume_sync({"c3": True})
    forked = session.fork(execution=2, step=1)
    texts = [m.text for m in forked.messages]
    assert texts[-1] == "" and forked.messages[-1].role == "tool"  # step 1: call and its result
    assert forked.messages[-2].tool_calls[0].call_id == "c2"
    assert len(forked.messages) == len(session.messages) - 3
    assert forked.state.forked_from == wb.session_state.ForkPoint(
        session_id=session.session_id, execution=2, step=1
    )
    assert forked.session_id != session.session_id
    assert [r.steps[-1].index for r in forked.executions] == [2, 1]
    assert len(session.messages) == 12  # the original is untouched
    only_prompt = session.fork(execution=2, step=0)
    assert only_prompt.messages[-1].text == "delete b and c"
    wb.SessionState.from_json(forked.state.to_json())


def test_a_fork_runs_on_as_the_next_execution() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    session.run_sync("one")
    session.run_sync("two")
    forked = session.fork(execution=1, step=1)
    forked.run_sync("other two")
    assert seen[-1][1:] == [
        "[Execution 1 of this conversation begins; any messages above are from earlier ones.]",
        "one",
        "answer 1",
        "[Execution 2 of this conversation begins; any messages above are from earlier ones.]",
        "other two",
    ]
    assert len(session.executions) == 2 and len(forked.executions) == 2


def _costly_answer_agent(store: wb.RunStore | None = None) -> wb.Agent:
    """One tool call for 20 tokens, then a final answer for 1000."""

    @wb.tool
    def look(key: str) -> str:
        """Look a key up."""
        return "found"

    cheap = wb.Usage(input_tokens=10, output_tokens=10, requests=1)
    costly = wb.Usage(input_tokens=1000, requests=1)
    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("look", {"key": "x"}, usage=cheap),
            wb.ModelResponse.text("expensive final answer", usage=costly),
        ]
    )
    return wb.Agent(model, tools=[look], store=store or False)


def test_a_fork_keeps_only_what_the_kept_steps_did() -> None:
    session = wb.Session(_costly_answer_agent())
    session.run_sync("look x up")
    forked = session.fork(execution=1, step=1)
    (entry,) = forked.state.executions
    assert (entry.steps, entry.usage.total_tokens, entry.output) == (1, 20, None)
    assert (
        entry.status is wb.ExecutionStatus.PENDING and entry.stop_reason is None
    )  # as a forked AgentState
    assert forked.usage.total_tokens == 20 and forked.messages[-1].role == "tool"
    (result,) = forked.executions
    assert (result.usage.total_tokens, result.status, result.output) == (
        20,
        wb.ExecutionStatus.PENDING,
        None,
    )
    assert [s.index for s in result.steps] == [1]
    whole = session.fork(execution=1, step=2).state.executions[0]
    assert (whole.usage.total_tokens, whole.output) == (1020, "expensive final answer")
    assert whole.status is wb.ExecutionStatus.PENDING
    original = session.state.executions[0]  # untouched
    assert (original.usage.total_tokens, original.status) == (1020, wb.ExecutionStatus.COMPLETED)
    wb.SessionState.from_json(forked.state.to_json())


def test_a_fork_without_the_step_records_cannot_count_the_kept_steps() -> None:
    session = wb.Session(_costly_answer_agent())
    session.run_sync("look x up")
    again = wb.Session.from_json(session.state.to_json(), _costly_answer_agent())  # no store
    entry = again.fork(execution=1, step=1).state.executions[0]
    assert (entry.steps, entry.usage, entry.output) == (1, wb.Usage(), None)


def test_fork_refuses_what_is_not_there() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen), retention=wb.Retention(max_executions=1))
    session.run_sync("one")
    session.run_sync("two")
    with pytest.raises(ValueError, match=r"executions 1\.\.2, not 3"):
        session.fork(execution=3, step=1)
    with pytest.raises(ValueError, match="execution 1 was dropped"):
        session.fork(execution=1, step=1)
    with pytest.raises(ValueError, match=r"steps 0\.\.1, not 2"):
        session.fork(execution=2, step=2)


def test_agent_state_fork_keeps_messages_up_to_the_step() -> None:
    agent = _tool_agent()
    paused = agent.run_sync("delete a.txt")
    result = agent.resume_sync(paused.state, {"c1": True})
    state = result.state
    one = state.fork(up_to_step=1)
    assert [m.step for m in one.messages] == [0, 1, 1]
    assert one.run_id != state.run_id and one.status is wb.ExecutionStatus.PENDING
    assert one.step == 0 and one.usage == wb.Usage()
    assert state.fork(up_to_step=2).messages == state.messages
    assert [m.text for m in state.fork(up_to_step=0).messages] == ["delete a.txt"]
    with pytest.raises(ValueError, match=r"steps 0\.\.2, not -1"):
        state.fork(up_to_step=-1)


def test_agent_state_fork_at_a_paused_step_leaves_out_the_waiting_call_and_is_a_root() -> None:
    agent = _tool_agent()
    paused = agent.run_sync("delete a.txt")
    assert paused.state.pending  # step 1's call waits for approval
    fork = paused.state.fork(up_to_step=1)
    assert [m.role for m in fork.messages] == ["user"]  # the call alone made the message
    sub = paused.state.model_copy(update={"parent_run_id": "run_lead", "depth": 1})
    assert sub.fork(up_to_step=1).parent_run_id is None  # nobody called the fork


def test_views_draw_boundaries_and_summaries_escaped() -> None:
    seen: list[list[str]] = []
    session = wb.Session(_agent(seen), retention=wb.Retention(max_executions=1, summarize=True))
    session.run_sync("<b>one</b>")
    session.run_sync("two")
    html = messages_html(session.messages)
    assert 'class="wb-msg wb-summary"' in html and "summary of executions 1 to 1" in html
    assert 'class="wb-boundary"' in html and ">execution 2</div>" in html
    assert "<b>one</b>" not in html


def test_a_session_resumes_in_another_process(tmp_path: Path) -> None:
    """A paused session written to JSON is resumed and continued by a real subprocess."""
    store_path = tmp_path / "runs.sqlite"
    session = wb.Session(_tool_agent(wb.RunStore(store_path)))
    session.run_sync("delete a.txt")
    (tmp_path / "session.json").write_text(session.state.to_json())
    script = textwrap.dedent(
        """
        import sys
        from pathlib import Path

        import workbench as wb
        sys.path.insert(0, sys.argv[2])
        from tests.test_session import _tool_agent

        where = Path(sys.argv[1])
        agent = _tool_agent(wb.RunStore(where / "runs.sqlite"))
        agent.model.responses = agent.model.responses[1:]  # the first answer was used already
        session = wb.Session.from_json((where / "session.json").read_text(), agent)
        print(session.resume_sync({"c1": True}).output)
        (where / "session.json").write_text(session.state.to_json())
        """
    )
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    done = subprocess.run(
        [sys.executable, "-c", script, str(tmp_path), str(REPO)],
        capture_output=True,
        text=True,
        env=env,
        timeout=120,
        check=False,
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "Deleted it."
    back = wb.SessionState.from_json((tmp_path / "session.json").read_text())
    assert back.session_id == session.session_id and back.paused is None
    assert [e.status for e in back.executions] == [wb.ExecutionStatus.COMPLETED]
    assert back.messages[-1].text == "Deleted it."
    runs = wb.RunStore(store_path).session(session.session_id)
    assert [(r.status, r.steps) for r in runs] == [("completed", 2)]


def test_the_stepper_steps_a_sessions_next_execution() -> None:
    from workbench.notebook import Stepper

    seen: list[list[str]] = []
    session = wb.Session(_agent(seen))
    session.run_sync("one")
    stepper = Stepper(session, "two")
    assert 'class="wb-boundary"' in stepper.messages.value  # execution 2's marker, drawn
    stepper.run.run_to_end()
    assert [e.output for e in session.state.executions] == ["answer 1", "answer 2"]
    with pytest.raises(ValueError, match="takes a prompt and no history"):
        Stepper(session, None)


def test_a_session_file_nested_past_the_recursion_limit_is_a_clear_error() -> None:
    deep = '{"schema_version": 1, "messages": ' + "[" * 100_000 + "]" * 100_000 + "}"
    with pytest.raises(wb.SessionFormatError, match="session is not valid JSON"):
        wb.SessionState.from_json(deep)
    with pytest.raises(wb.SessionFormatError, match="session is not valid JSON"):
        wb.SessionState.from_json(b"\xff\xfe not utf-8")


def test_a_fork_keeps_the_sub_runs_of_the_kept_steps() -> None:
    sub = wb.Agent(wb.FunctionModel(lambda m, *_: f"about {m[-1].text}"), name="sub", store=False)
    lead = wb.Agent(
        wb.ScriptedModel(
            [
                wb.ModelResponse.tool_call("ask", {"task": "A"}, call_id="a"),
                wb.ModelResponse.tool_call("ask", {"task": "B"}, call_id="b"),
                "done",
            ]
        ),
        tools=[sub.as_tool("ask", "Ask the sub-agent.")],
        store=False,
    )
    session = wb.Session(lead)
    session.run_sync("go")
    assert [c.output for c in session.executions[0].children] == ["about A", "about B"]
    (cut,) = session.fork(execution=1, step=1).executions
    assert [c.output for c in cut.children] == ["about A"]  # step 2's sub-run was cut off
    assert [c.parent_call_id for c in cut.children] == ["a"]
    assert session.fork(execution=1, step=0).executions[0].children == ()
    assert len(session.fork(execution=1, step=3).executions[0].children) == 2


def test_the_session_state_repr_is_short_and_shows_no_metadata() -> None:
    # A session holds a whole conversation and metadata a user may have put a key in: its repr
    # (what a notebook or a log shows) stays one short line, like a RunResult's.
    seen: list[list[str]] = []
    secret = "sk-" + "a1b2c3d4" * 4
    session = wb.Session(_agent(seen), metadata={"api_key": secret})
    for prompt in ("one " * 500, "two"):
        session.run_sync(prompt)
    text = repr(session.state)
    assert secret not in text and "one one" not in text and len(text) < 200
    assert text == (
        f"SessionState(id={session.session_id!r}, agent='agent', executions=2, messages=6)"
    )
    assert str(session.state) == text  # print() too


def _calling_agent(sent: list[list[wb.Message]], store: wb.RunStore | None = None) -> wb.Agent:
    """An agent whose model calls ``look`` (approval needed) once per execution, then answers."""

    @wb.tool(requires_approval=True)
    def look(key: str) -> str:
        """Look a key up."""
        return "found"

    def answer(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        sent.append(list(messages))
        if messages[-1].role == "tool":
            return wb.ModelResponse.text("looked")
        return wb.ModelResponse.tool_call("look", {"key": "x"}, call_id=f"c{len(sent)}")

    return wb.Agent(wb.FunctionModel(answer), tools=[look], store=store or False)


def _unanswered(messages: Sequence[wb.Message]) -> list[str]:
    answered = {p.call_id for m in messages for p in m.parts if isinstance(p, wb.ToolResult)}
    return [c.call_id for m in messages for c in m.tool_calls if c.call_id not in answered]


def test_an_execution_aborted_before_its_tools_leaves_no_unanswered_call() -> None:
    # A provider refuses a conversation with a tool call that has no result, so the next
    # execution must not be sent the call the aborted one never ran.
    sent: list[list[wb.Message]] = []
    session = wb.Session(_calling_agent(sent))
    run = session.start("look x up")
    while run.next_phase_name is not wb.Phase.TOOLS:
        run.next_phase()
    run.abort()
    assert run.done and run.state.status is wb.ExecutionStatus.ABORTED
    assert run.state.unanswered_calls()  # the run's own record keeps the call
    session.run_sync("again")  # its model is sent the conversation, then calls c2 and pauses
    assert len(sent) == 2 and _unanswered(sent[1]) == []
    assert "look x up" in [m.text for m in sent[1]]  # the aborted execution's prompt stays
    assert _unanswered(session.messages) == ["c2"]  # only the paused execution's call waits
    wb.SessionState.from_json(session.state.to_json())


def test_a_fork_at_a_paused_step_leaves_no_unanswered_call() -> None:
    sent: list[list[wb.Message]] = []
    session = wb.Session(_calling_agent(sent))
    session.run_sync("look x up")  # paused: c1 waits for approval
    forked = session.fork(execution=1, step=1)
    assert _unanswered(forked.messages) == []
    assert [m.text for m in forked.messages][-1] == "look x up"
    forked.run_sync("go on")
    assert _unanswered(sent[-1]) == []
    assert session.state.paused is not None and _unanswered(session.messages) == ["c1"]
