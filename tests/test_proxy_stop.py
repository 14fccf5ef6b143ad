"""Stopping the proxy with calls in flight: it waits for them, within its grace, and records them.

Each test holds a call at the fake upstream (tests/fake_upstream.py) until the proxy has begun to
stop, so the order is the one under test whatever the machine's load: the answer comes after the
stop, never before it.
"""

from __future__ import annotations

import _thread
import logging
import signal
import threading
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from signal import SIGINT
from typing import Any

import openai
import pytest

import workbench as wb
from tests.fake_upstream import Answer, chunks, completion, fake_upstream
from workbench._proxy.calls import Call, Outcome
from workbench._proxy.recorder import Recorder

KEY = "sk-test-secret-4e1f9a"
HELD = 30.0
"""How long a held call waits for its release before it answers anyway (a failing test's bound)."""


class Held:
    """An upstream behaviour that answers each call only once `release` is set."""

    def __init__(self, answer: Answer) -> None:
        self.answer = answer
        self.arrived = threading.Event()
        self.release = threading.Event()

    def __call__(self, body: dict[str, Any], headers: dict[str, str]) -> Answer:
        self.arrived.set()
        self.release.wait(HELD)
        return self.answer


@contextmanager
def stopping_seen() -> Iterator[threading.Event]:
    """An event set when a proxy logs that it is stopping (`ProxyHandle.close` has begun)."""
    seen = threading.Event()

    class Seen(logging.Handler):
        def emit(self, record: logging.LogRecord) -> None:
            if record.getMessage().startswith("stopping the proxy"):
                seen.set()

    logger = logging.getLogger("workbench._proxy.handle")
    handler, level = Seen(), logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield seen
    finally:
        logger.removeHandler(handler)
        logger.setLevel(level)


def in_thread(work: Callable[[], object]) -> tuple[threading.Thread, list[object]]:
    """Run ``work`` in a thread; what it returned or raised is in the list once it is joined."""
    out: list[object] = []

    def run() -> None:
        try:
            out.append(work())
        except Exception as exc:
            out.append(exc)

    thread = threading.Thread(target=run)
    thread.start()
    return thread, out


def ask(proxy: wb.ProxyHandle) -> Callable[[], str | None]:
    def call() -> str | None:
        with openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client:
            answer = client.chat.completions.create(
                model="m", messages=[{"role": "user", "content": "ping"}]
            )
        return answer.choices[0].message.content

    return call


def test_ctrl_c_in_wait_then_close_records_the_call_in_flight() -> None:
    """The command line's stop: an interrupt in `wait`, then `close`, with a call under way.

    An interrupted ``Thread.join`` (what `wait` used) can leave the server's thread marked as
    ended while it runs on: `close` then closed the recorder under the call, whose end raised a
    KeyError and was lost. `close` waits for the server itself.
    """
    store = wb.RunStore(":memory:")
    held = Held(Answer(body=completion("pong")))
    interrupted = False
    before = signal.signal(SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    try:
        with fake_upstream(held) as upstream, stopping_seen() as stopping:
            proxy = wb.proxy(upstream.url, store=store)
            released, _ = in_thread(lambda: stopping.wait(HELD) and held.release.set())
            # The interrupt may land anywhere in here (it is meant for `wait`), never outside.
            try:
                agent, answers = in_thread(ask(proxy))
                in_thread(lambda: held.arrived.wait(HELD) and signal.pthread_kill(main, SIGINT))
                proxy.wait()
            except KeyboardInterrupt:
                interrupted = True
            proxy.close()
            agent.join()
            released.join()
    finally:
        signal.signal(SIGINT, before)
    assert interrupted and answers == ["pong"]
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "pong"
    assert len(run.steps) == 1


def _signalled(main: int) -> None:
    signal.pthread_kill(main, SIGINT)


def _tripped(main: int) -> None:
    """SIGINT as the interpreter sees one that lands just before a wait blocks: its handler is
    due, and nothing wakes the wait (`_thread.interrupt_main` sends no signal)."""
    _thread.interrupt_main()


@pytest.mark.parametrize("again", [_signalled, _tripped], ids=["signal", "just-before-a-wait"])
def test_ctrl_c_twice_ends_the_grace_now_and_still_records_the_call_cut_off(
    again: Callable[[int], None],
) -> None:
    """Ctrl-C in `wait`, then again while `close` gives the call in flight its (long) grace.

    The second interrupt used to leave `close` before the recorder was closed: the run was never
    ended and the call under way was lost. It now cuts the call off at once, as the grace's end
    would: the agent gets a 503 and the run records the call as cut off. A second Ctrl-C that
    came in the instant before `close` blocked waited out the grace (the held call then answered
    'too late' to the agent): `close` waited without a bound, and such a signal wakes no wait.
    """
    store = wb.RunStore(":memory:")
    held = Held(Answer(body=completion("too late")))
    interrupts = 0
    before = signal.signal(SIGINT, signal.default_int_handler)
    main = threading.main_thread().ident
    assert main is not None
    try:
        with fake_upstream(held) as upstream, stopping_seen() as stopping:
            proxy = wb.proxy(upstream.url, store=store, grace=HELD)
            try:
                agent, answers = in_thread(ask(proxy))
                in_thread(lambda: held.arrived.wait(HELD) and signal.pthread_kill(main, SIGINT))
                proxy.wait()
            except KeyboardInterrupt:
                interrupts += 1
            # Once `close` has begun, interrupt it again.
            in_thread(lambda: stopping.wait(HELD) and again(main))
            try:
                proxy.close()
            except KeyboardInterrupt:  # a failure of this test, not a stop of the test session
                interrupts += 1
                proxy.close()
            finally:
                held.release.set()
            agent.join()
    finally:
        signal.signal(SIGINT, before)
    assert interrupts == 1  # the second one was taken by `close`, not raised
    (refused,) = answers
    assert isinstance(refused, openai.APIStatusError) and refused.status_code == 503
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.ABORTED
    assert run.state.error is not None and run.state.error.type == "ProxyStopped"


def test_close_waits_for_the_call_in_flight_and_records_it() -> None:
    store = wb.RunStore(":memory:")
    held = Held(Answer(body=completion("pong")))
    with fake_upstream(held) as upstream, stopping_seen() as stopping:
        proxy = wb.proxy(upstream.url, store=store)
        agent, answers = in_thread(ask(proxy))
        assert held.arrived.wait(HELD)
        released, _ = in_thread(lambda: stopping.wait(HELD) and held.release.set())
        proxy.close()
        agent.join()
        released.join()
    assert answers == ["pong"]
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.COMPLETED and run.output == "pong"


def test_a_call_past_the_grace_is_cut_off_a_503_for_the_agent_and_recorded() -> None:
    store = wb.RunStore(":memory:")
    held = Held(Answer(body=completion("too late")))
    with fake_upstream(held) as upstream:
        proxy = wb.proxy(upstream.url, store=store, grace=0)
        agent, answers = in_thread(ask(proxy))
        assert held.arrived.wait(HELD)
        try:
            proxy.close()
        finally:
            held.release.set()
        agent.join()
    (refused,) = answers
    assert isinstance(refused, openai.APIStatusError) and refused.status_code == 503
    assert "proxy was stopped before the call ended" in refused.message
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.ABORTED
    (step,) = run.steps
    assert step.response is None
    assert run.state.error is not None and run.state.error.type == "ProxyStopped"


def test_a_stream_past_the_grace_ends_with_an_error_event_and_is_recorded_cut_off() -> None:
    """The agent has had part of the answer: it is told in the stream that the rest won't come."""
    store = wb.RunStore(":memory:")
    # The fake waits this long between its chunks: the stop comes after the first, in the gap.
    slow = Answer(chunks=chunks("one two three four"), gap=HELD)
    first = threading.Event()
    with fake_upstream(lambda body, headers: slow) as upstream:
        proxy = wb.proxy(upstream.url, store=store, grace=0)

        def read() -> list[str]:
            with openai.OpenAI(base_url=proxy.url, api_key=KEY, max_retries=0) as client:
                stream = client.chat.completions.create(
                    model="m", messages=[{"role": "user", "content": "count"}], stream=True
                )
                texts = []
                for chunk in stream:
                    texts.append(chunk.choices[0].delta.content or "")
                    first.set()
                return texts

        agent, answers = in_thread(read)
        assert first.wait(HELD)
        proxy.close()
        agent.join()
    (broken,) = answers
    assert isinstance(broken, openai.APIError)
    assert "proxy was stopped before the call ended" in broken.message
    run = store.load(proxy.run_ids[0])
    assert run.status is wb.ExecutionStatus.ABORTED
    assert run.state.error is not None and run.state.error.type == "ProxyStopped"


def test_closing_twice_and_a_call_ending_after_the_recorder_closed_are_quiet(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A call whose end comes after the recorder closed is kept as cut off, and logged."""
    store = wb.RunStore(":memory:")
    recorder = Recorder(store, metadata={})
    call = Call(model="m", messages=(wb.Message.user("ping"),), tools=(), settings={})
    snapshot = recorder.begin(call)
    recorder.close()
    recorder.close()
    answer = wb.ModelResponse(parts=(wb.TextPart(text="pong"),))
    with caplog.at_level(logging.WARNING, logger="workbench._proxy.recorder"):
        recorder.end(snapshot, call, Outcome(response=answer, duration=0.1))
    assert "had stopped recording" in caplog.text and snapshot.run_id in caplog.text
    run = store.load(snapshot.run_id)
    assert run.status is wb.ExecutionStatus.ABORTED and len(run.steps) == 1
