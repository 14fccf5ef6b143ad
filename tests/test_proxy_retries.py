"""A client's retries through the recording proxy: one step, tried again, in every view.

The openai and anthropic SDKs ask again, the very same request, after a 5xx (Anthropic's 529
too), a timeout or a dropped connection. The agent took one step; the proxy records it as one
step tried several times (`StepRecord.failed_tries`), and the record, its spans, the trace's
errors and step table, `workbench show` and a replay all say so. Each test drives the real SDK
through a real proxy in front of the fake upstream (tests/fake_upstream.py).
"""

from __future__ import annotations

import itertools
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anthropic
import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, completion, fake_upstream
from tests.wires import anthropic_error, message, response
from workbench.cli import main
from workbench.notebook.tables import for_people
from workbench.telemetry import spans_from_run

KEY = "sk-test-retries-7c2e90"

Behaviour = Callable[[dict[str, Any], dict[str, str]], Answer]


def failing_twice(
    answer: Callable[[dict[str, Any]], Answer], fails: int = 2, last: int = 500
) -> Behaviour:
    """Answers the first request, then fails the next ``fails`` with a 500 (the last of them
    with ``last``), then answers."""
    count = itertools.count()

    def behaviour(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        n = next(count)
        if 1 <= n <= fails:
            status = last if n == fails else 500
            return Answer(status=status, body={"error": {"message": f"upstream broke ({n})"}})
        return answer(body)

    return behaviour


def adder(body: dict[str, Any]) -> Answer:
    if len(body["messages"]) == 1:
        return Answer(body=completion("", [("c1", "add", {"a": 2, "b": 3})]))
    return Answer(body=completion("5"))


def tool_loop(url: str, retries: int = 2) -> str | None:
    """A chat tool loop with the openai SDK: add(2, 3), then the answer."""
    with openai.OpenAI(base_url=url, api_key=KEY, max_retries=retries) as client:
        messages: list[Any] = [{"role": "user", "content": "2 + 3?"}]
        first = client.chat.completions.create(model="m", messages=messages)
        messages += [
            first.choices[0].message.model_dump(exclude_none=True),
            {"role": "tool", "tool_call_id": "c1", "content": "5"},
        ]
        answer = client.chat.completions.create(model="m", messages=messages)
        return answer.choices[0].message.content


def recorded(store: wb.RunStore) -> wb.RunResult:
    with (
        fake_upstream(failing_twice(adder)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        assert tool_loop(proxy.url) == "5"
    (run_id,) = proxy.run_ids
    return store.load(run_id)


def test_an_sdk_asking_again_after_failures_is_one_step_tried_three_times(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = wb.RunStore(tmp_path / "runs.db")
    run = recorded(store)
    first, second = run.steps
    assert (first.tries, second.tries) == (1, 3)
    assert [t.status for t in second.failed_tries] == [500, 500]
    assert [t.error.message for t in second.failed_tries] == [
        '500 from the upstream: {"error": {"message": "upstream broke (1)"}}',
        '500 from the upstream: {"error": {"message": "upstream broke (2)"}}',
    ]
    assert run.state.status is wb.ExecutionStatus.COMPLETED and run.output == "5"
    # the model call's time runs from its first try, the client's waits between tries included
    tries = second.failed_tries
    assert second.started_at == tries[0].started_at < tries[1].started_at < second.model_started_at
    assert second.timing.inference >= second.model_duration + sum(t.duration for t in tries)
    assert second.timing.tools == 0.0

    # the run's errors, and the trace's, name each failed try; the run did not fail
    wheres = ["step 2, try 1 in OpenAI", "step 2, try 2 in OpenAI"]
    assert [(e.kind, e.where) for e in run.errors] == [("model", w) for w in wheres]
    trace = wb.trace_of(run)
    assert [(e.kind, e.where) for e in trace.errors()] == [("model", w) for w in wheres]
    assert trace.summary() == "completed, 2 model errors; first: step 2, try 1 in OpenAI"

    # the spans: one chat span per try under the one step span, the failed ones with the error
    chats = [s for s in trace.spans if s.category == "model"]
    steps = [s for s in trace.spans if s.category == "step"]
    assert [s.attributes.get("workbench.step.tries") for s in steps] == [None, 3]
    assert [(s.attributes.get("workbench.model.try"), s.status) for s in chats] == [
        (None, "unset"),
        (1, "error"),
        (2, "error"),
        (3, "unset"),
    ]
    assert {s.parent_id for s in chats[1:]} == {steps[1].span_id}

    # the step table: two steps, the second tried three times (a column shown only then)
    table = trace.steps_df()
    assert list(table["tries"]) == [1, 3]
    assert list(table["errors"]) == [0, 2]
    assert list(for_people(table)["model tries"]) == [1, 3]
    assert "model tries" not in for_people(wb.trace_of(_once(tmp_path)).steps_df())

    # workbench show says it where the model's time is
    assert main(["show", run.run_id, "--store", str(tmp_path / "runs.db")]) == 0
    shown = capsys.readouterr().out
    assert "(3 tries)" in shown and "step 2, try 2 in OpenAI" in shown


def _once(tmp_path: Path) -> wb.RunResult:
    """A run whose calls were each answered at once."""
    store = wb.RunStore(tmp_path / "once.db")
    with (
        fake_upstream(failing_twice(adder, fails=0)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
    ):
        assert tool_loop(proxy.url) == "5"
    return store.load(proxy.run_ids[0])


def test_a_replay_answers_each_try_as_recorded_and_records_the_same_step(tmp_path: Path) -> None:
    """Offline, the replay fails the first two tries of step 2 as the upstream did (a 500 the
    SDK asks again after), then answers: the replayed run is the recorded one, try for try."""
    store = wb.RunStore(tmp_path / "runs.db")
    original = recorded(store)
    with wb.proxy(replay=original.run_id, store=store) as replay:
        assert tool_loop(replay.url) == "5"
    again = store.load(replay.run_ids[0])
    assert [s.tries for s in again.steps] == [1, 3]
    assert [(t.status, t.error) for t in again.steps[1].failed_tries] == [
        (t.status, t.error) for t in original.steps[1].failed_tries
    ]
    assert wb.diff(original, again).first_divergence is None

    # a client that asks again fewer times than the recorded one gets the recorded failure
    with (
        wb.proxy(replay=original.run_id, store=store) as replay,
        pytest.raises(openai.InternalServerError, match="upstream broke"),
    ):
        tool_loop(replay.url, retries=0)


def test_a_request_changed_after_a_failure_is_a_step_of_its_own() -> None:
    """Only the same request asked again is a try of the step: an agent that changed anything
    (here the temperature) after the failure took another step."""
    store = wb.RunStore(":memory:")
    with (
        fake_upstream(failing_twice(adder, fails=1)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client,
    ):
        messages: Any = [{"role": "user", "content": "hi"}]
        client.chat.completions.create(model="m", messages=messages)
        messages = [
            *messages,
            {"role": "assistant", "content": "hello"},
            {"role": "user", "content": "2 + 3?"},
        ]
        with pytest.raises(openai.InternalServerError):
            client.chat.completions.create(model="m", messages=messages)
        client.chat.completions.create(model="m", messages=messages, temperature=0.5)
    run = store.load(proxy.run_ids[0])
    assert [(s.index, s.tries, s.model_error is not None) for s in run.steps] == [
        (1, 1, False),
        (2, 1, True),
        (3, 1, False),
    ]
    assert run.state.status is wb.ExecutionStatus.COMPLETED and run.state.error is None


def test_the_anthropic_sdk_asking_again_after_an_overload_is_one_step() -> None:
    """Anthropic's 529 (overloaded): the anthropic SDK asks again; one step, its try kept."""
    count = itertools.count()

    def overloaded_once(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if next(count) == 0:
            return Answer(status=529, body=anthropic_error("overloaded_error", "Overloaded"))
        return Answer(body=message("hello"))

    store = wb.RunStore(":memory:")
    with (
        fake_upstream(overloaded_once) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        anthropic.Anthropic(  # the SDK adds /v1/messages itself
            base_url=proxy.url.removesuffix("/v1"), api_key=KEY, max_retries=1
        ) as client,
    ):
        said = client.messages.create(
            model="claude-test", max_tokens=16, messages=[{"role": "user", "content": "hi"}]
        )
    assert said.content[0].text == "hello"  # type: ignore[union-attr]
    (step,) = store.load(proxy.run_ids[0]).steps
    assert step.tries == 2 and [t.status for t in step.failed_tries] == [529]
    assert "overloaded_error" in step.failed_tries[0].error.message


def test_the_openai_sdk_asking_again_on_the_responses_wire_is_one_step() -> None:
    count = itertools.count()

    def broken_once(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        if next(count) == 0:
            return Answer(status=503, body={"error": {"message": "busy", "type": "server_error"}})
        return Answer(body=response("hello"))

    store = wb.RunStore(":memory:")
    with (
        fake_upstream(broken_once) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=1) as client,
    ):
        said = client.responses.create(model="gpt-test", input="hi")
    assert said.output_text == "hello"
    (step,) = store.load(proxy.run_ids[0]).steps
    assert step.tries == 2 and [t.status for t in step.failed_tries] == [503]


def test_a_trace_of_a_step_tried_again_compares_as_the_run_it_is(tmp_path: Path) -> None:
    """`wb.diff` of two traces reads a run back from its spans: one step per step, its failed
    tries folded into it, as the records that wrote the spans have them."""
    from workbench.telemetry.rebuild import spans_from_run
    from workbench.telemetry.records_of import result_of_trace

    run = recorded(wb.RunStore(tmp_path / "runs.db"))
    trace = wb.Trace.from_spans(spans_from_run(run, capture_content=True))
    rebuilt = result_of_trace(trace)
    assert [(s.index, s.tries) for s in rebuilt.steps] == [(1, 1), (2, 3)]
    said = [(t.error.type, t.error.message) for t in run.steps[1].failed_tries]
    assert [(t.error.type, t.error.message) for t in rebuilt.steps[1].failed_tries] == said


def test_a_step_tried_again_reads_back_as_the_try_that_was_answered(tmp_path: Path) -> None:
    """The step's conversation from its trace (what `workbench trace --messages` and a re-run
    from the trace read) is its answered try's, not the first failed one's (sent, no answer)."""
    run = recorded(wb.RunStore(tmp_path / "runs.db"))
    trace = wb.Trace.from_spans(spans_from_run(run, capture_content=True))
    assert len(trace.model_calls()) == 4  # one for the first step, three tries of the second
    messages = trace.messages(step=2)
    assert [m.role for m in messages] == ["user", "assistant", "tool", "assistant"]
    assert messages[-1].text == "5"


def test_a_replay_fails_a_step_whose_every_try_failed_as_it_did(tmp_path: Path) -> None:
    """The SDK gave up after two 500s and a 503: the replay fails each try again, with its
    status (it answered the first with 'the replay has 1 recorded responses', a 400 the SDK
    does not retry)."""
    store = wb.RunStore(tmp_path / "runs.db")
    with (
        fake_upstream(failing_twice(adder, fails=3, last=503)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        pytest.raises(openai.InternalServerError, match=r"upstream broke \(3\)"),
    ):
        tool_loop(proxy.url)
    original = store.load(proxy.run_ids[0])
    assert original.steps[1].model_status == 503
    with (
        wb.proxy(replay=original.run_id, store=store) as replay,
        pytest.raises(openai.InternalServerError, match=r"upstream broke \(3\)") as told,
    ):
        tool_loop(replay.url)
    assert told.value.status_code == 503
    again = store.load(replay.run_ids[0])
    assert [(s.index, s.tries) for s in again.steps] == [(1, 1), (2, 3)]
    assert again.steps[1].model_status == 503
    assert again.state.status is wb.ExecutionStatus.FAILED
    assert [(e.kind, e.where, e.message) for e in again.errors] == [
        (e.kind, e.where, e.message) for e in original.errors
    ]


def test_a_client_that_stopped_waiting_and_asked_again_tried_the_same_step_again() -> None:
    """The SDK's own timeout (1 s) before a slow upstream answered (3 s): it hangs up and asks
    again. The call it hung up on was recorded as answered, in a run of its own, with an answer
    the agent never saw, and the new request started a second run; it is the step's failed try
    now, and the upstream's request is dropped."""
    count = itertools.count()

    def slow_once(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        n = next(count)
        return Answer(body=completion(f"answer {n}"), delay=3.0 if n == 0 else 0.0)

    store = wb.RunStore(":memory:")
    with (
        fake_upstream(slow_once) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=1, timeout=1.0) as client,
    ):
        messages: Any = [{"role": "user", "content": "hi"}]
        said = client.chat.completions.create(model="m", messages=messages)
    assert said.choices[0].message.content == "answer 1"
    (run_id,) = proxy.run_ids
    (step,) = store.load(run_id).steps
    (gave_up,) = step.failed_tries
    assert (gave_up.error.type, gave_up.status) == ("ClientDisconnected", None)
    assert step.response is not None and step.response.text_content == "answer 1"


def test_a_named_conversation_asked_again_is_the_same_step_tried_again() -> None:
    """A client that names its conversation (``X-Workbench-Run``) is grouped by the name, not by
    what it sends: its retry is still the step tried again, not the name's next step."""
    store = wb.RunStore(":memory:")
    named = {"X-Workbench-Run": "planner"}
    with (
        fake_upstream(failing_twice(adder, fails=1)) as upstream,
        wb.proxy(upstream.url, store=store) as proxy,
        openai.OpenAI(
            base_url=proxy.url, api_key=KEY, max_retries=1, default_headers=named
        ) as client,
    ):
        messages: Any = [{"role": "user", "content": "2 + 3?"}]
        client.chat.completions.create(model="m", messages=messages)
        messages = [*messages, {"role": "assistant", "content": "let me see"}]
        messages = [*messages, {"role": "user", "content": "well?"}]
        assert client.chat.completions.create(model="m", messages=messages).choices
    (run_id,) = proxy.run_ids
    run = store.load(run_id)
    assert run.state.metadata["conversation"] == "planner"
    assert [(s.index, s.tries) for s in run.steps] == [(1, 1), (2, 2)]
