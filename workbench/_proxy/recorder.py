"""`Recorder`: model calls seen by the proxy, grouped into conversations, written as runs.

The proxy sees requests, not an agent loop, so it rebuilds what the loop would have recorded:
each model call is a step (what the agent sent is ``messages_in``, what the upstream answered is
the response), and what the agent sends back in its next request (tool results, a new user turn)
is what that step added (``new_messages``, tool outcomes). A step is therefore written when the
conversation's next request arrives, or when the recorder is closed; its snapshot is written at
once, so a proxy that dies loses the last answer of each open conversation, not the request.
A call still in flight when the recorder closes is written as cut off (``ProxyStopped``); one
that ends after that is not recorded, and says so in the log. A request that asks exactly what
the conversation's failed call asked (an SDK retrying a 5xx, a timeout, a dropped connection) is
that step tried again, not a step of its own: the step keeps its failed tries
(`StepRecord.failed_tries`), each a failed model call of it.

Which conversation a request continues: the open conversation whose last request is a prefix of
this one: one it extends before one it only repeats, which is a retry of a call that failed or
was cut off (a request that repeats an answered one starts anew); then one whose answer is
the message that follows (the same tool-call ids, or the same text), so that agents that start
alike keep their own runs whichever goes on first, and a call the agent abandoned and retried
does not take the conversation that goes on; then the longest (then the first started). One
still waiting for its answer is never continued. A request that continues none starts a new
run. The conversations that can be continued are filed by how their last request ended
(`_Continuable`), so a request looks at those it could go on with, not at every one seen.

A request with an ``X-Workbench-Run`` header joins a conversation of that name, by prefix as
above or else the first of them. A step follows from the one before it, so a run has one call in
flight: a call made while the name's runs all wait for an answer (parallel branches of an agent
whose client sends the header on every request) starts a run of its own under the same name
(``metadata.conversation``), which its own follow-ups continue. Nothing is lost, and each run
replays in order.

A request of a client that names its session (`Call.session`) is looked for among that
session's runs only, by prefix as above; one that continues none starts another run of the
session (a sub-agent, a side call, a history the client rewrote). Every run's
``metadata.session_id`` is its client's session, or else the proxy's own (`Recorder.session_id`).
"""

from __future__ import annotations

import logging
import time
from collections import Counter
from collections.abc import Callable, Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from itertools import chain

from workbench._proxy.calls import (
    Call,
    InFlight,
    Outcome,
    Pending,
    aborted,
    ended,
    same,
    step_record,
    system_hash,
)
from workbench.conditions import Budget
from workbench.messages import (
    JsonValue,
    Message,
    ToolCall,
    ToolResult,
    Usage,
)
from workbench.records import PhaseEvent, StepContext
from workbench.state import AgentState, ErrorInfo, Phase, RerunOf, Transition, new_id
from workbench.store import RunStore
from workbench.tools import ToolDefinition, schema_hash

__all__ = ["Recorder"]

logger = logging.getLogger(__name__)


_CUT_OFF = "ProxyStopped"
"""The error of a call the proxy was stopped in the middle of (see `Recorder.close`)."""

_Key = tuple[str, str, tuple[str, ...]]
"""A message's role, text and call ids: alike for messages that are `_same`, and cheap to hash."""
_Answer = tuple[str, str | tuple[str, ...]]
"""What `_Conversation.answered_before` compares: the role, and the tool-call ids or the text."""


class _Conversation:
    """The bookkeeping of one run: its state, the step under way and the one waiting."""

    def __init__(self, state: AgentState, order: int) -> None:
        self.state = state
        self.order = order
        """How many conversations started before this one: of two alike, the first is continued."""
        self.sent: tuple[Message, ...] | None = None
        self.in_flight: InFlight | None = None
        self.pending: Pending | None = None

    def continues(self, messages: tuple[Message, ...]) -> bool:
        """True when ``messages`` start with what this conversation sent last.

        Sending only the same again continues it if that was a retry: its call failed or was
        cut off. A request that repeats one that was answered asks anew (an eval's samples).
        """
        sent = self.sent
        if self.in_flight is not None or sent is None or len(messages) < len(sent):
            return False
        if len(messages) == len(sent) and self.answer() is not None:
            return False
        return all(same(a, b) for a, b in zip(sent, messages, strict=False))

    def answer(self) -> _Answer | None:
        """The response its last call was given, as a request sends it back (`_answer_of`)."""
        response = self.pending.outcome.response if self.pending is not None else None
        if response is None:
            return None
        ids = tuple(c.call_id for c in response.calls)
        return "assistant", ids or response.text_content

    def answered_before(self, messages: tuple[Message, ...]) -> bool:
        """True when the message after what this conversation sent is the answer it was given.

        Conversations that began alike differ there: each agent sends back its own answer (the
        same tool-call ids, or the same text). One the agent abandoned (and retried elsewhere)
        was answered with something else, or not at all.
        """
        sent = self.sent or ()
        answer = self.answer()
        return (
            answer is not None
            and len(messages) > len(sent)
            and (_answer_of(messages[len(sent)]) == answer)
        )


_Filed = dict[_Answer | None, dict[_Conversation, None]]
"""The conversations whose last request ended alike, by their answer (``None``: failed)."""


class _Continuable:
    """The conversations a request may continue: those whose last call has ended.

    A proxy in front of an eval starts a conversation per sample, thousands in a long session,
    and most are never continued; a request looks only where it could go on, so what it costs
    is what it sends, not what the proxy has seen. A conversation is filed under how its last
    request ended (its length and last message) and, when answered, its answer. A request
    looks, at each length filed that it reaches, among those ending as it does there: first
    at the ones whose answer is its next message, which `_continued` would rank first; only if
    none of them is continued, at the others (retries of a failed call, or an answered one
    whose answer came back changed), so that the choice is the one made among them all.
    """

    def __init__(self) -> None:
        self._filed: dict[tuple[int, _Key | None], _Filed] = {}
        self._lengths: Counter[int] = Counter()

    def add(self, conversation: _Conversation) -> None:
        """File a conversation whose call has ended."""
        place, answer = _place(conversation)
        self._filed.setdefault(place, {}).setdefault(answer, {})[conversation] = None
        self._lengths[place[0]] += 1

    def remove(self, conversation: _Conversation) -> None:
        """Unfile a conversation before it goes on (while it is still as it was filed)."""
        place, answer = _place(conversation)
        filed = self._filed[place]
        del filed[answer][conversation]
        if not filed[answer]:
            del filed[answer]
        if not filed:
            del self._filed[place]
        self._lengths[place[0]] -= 1
        if not self._lengths[place[0]]:
            del self._lengths[place[0]]

    def find(self, messages: tuple[Message, ...]) -> _Conversation | None:
        """The conversation ``messages`` go on with, as `_continued` would choose among all.

        `_continued` ranks one whose answer comes next before the others, then the longer
        before the shorter, a retry (as long as the request) last: the places are looked at in
        that order and the first that holds one holds the choice, so the shorter ones, however
        many (an eval's samples that asked the same and were answered the same), are not.
        """
        k = len(messages)
        lengths = sorted((j for j in self._lengths if j <= k), key=lambda j: (j == k, -j))
        places = [
            (filed, _answer_of(messages[j]) if j < k else None)
            for j in lengths
            if (filed := self._filed.get((j, _ending(messages, j))))
        ]
        answering = (filed.get(back, {}) if back is not None else {} for filed, back in places)
        others = (_others(filed, back) for filed, back in places)
        for conversations in chain(answering, others):
            found = _continued(conversations, messages)
            if found is not None:
                return found
        return None


def _others(filed: _Filed, back: _Answer | None) -> list[_Conversation]:
    """The failed conversations in ``filed``, and the answered ones whose answer is not ``back``.

    An answered one is never continued by a request that only repeats it (no ``back``).
    """
    return [
        conversation
        for answer, conversations in filed.items()
        if answer is None or (back is not None and answer != back)
        for conversation in conversations
    ]


def _place(conversation: _Conversation) -> tuple[tuple[int, _Key | None], _Answer | None]:
    """Where a conversation whose call has ended is filed, and its answer (``None``: failed)."""
    sent = conversation.sent or ()
    return (len(sent), _ending(sent, len(sent))), conversation.answer()


def _ending(messages: Sequence[Message], length: int) -> _Key | None:
    """The key of the last of the first ``length`` messages."""
    return _key(messages[length - 1]) if length else None


def _key(message: Message) -> _Key:
    parts = message.parts
    ids = tuple(p.call_id for p in parts if isinstance(p, ToolCall | ToolResult))
    return message.role, message.text, ids


def _answer_of(message: Message) -> _Answer:
    """What ``message`` is as an answer sent back (see `_Conversation.answered_before`)."""
    ids = tuple(c.call_id for c in message.tool_calls)
    return message.role, ids or message.text


class Recorder:
    """Writes the proxy's conversations into ``store``, one run each (see the module docstring).

    Not thread-safe: the proxy calls it from its event loop only (and `close` after that loop
    has stopped). The store writes themselves go, in order, to one writer thread, so that no
    agent waits for a database commit; `close` waits for them all.
    """

    def __init__(
        self,
        store: RunStore,
        *,
        agent_name: str | None = None,
        metadata: dict[str, JsonValue],
        session_id: str | None = None,
    ) -> None:
        self.store = store
        self.agent_name = agent_name
        self.metadata = metadata
        self._conversations: dict[str, _Conversation] = {}
        """By run id, in the order they started."""
        self._named: dict[str, list[_Conversation]] = {}
        """The conversations each ``X-Workbench-Run`` name has, the first one first."""
        self.session_id = session_id or new_id("ses")
        """The proxy's own session: of the runs whose client names none (see `_started`)."""
        self._sessions: dict[str, list[_Conversation]] = {}
        """The conversations of each session, the first one first."""
        self._continuable = _Continuable()
        self._tools: tuple[ToolDefinition, ...] = ()
        self._tools_hash = schema_hash(())
        """The tools of the last request, and their hash: an agent sends the same ones each time,
        and so do an eval's samples, each a conversation of its own."""
        self.run_ids: list[str] = []
        """The runs recorded, one per conversation, in the order they started."""
        self._writer = ThreadPoolExecutor(1, thread_name_prefix="workbench-proxy-store")
        self._queued: list[tuple[Callable[..., None], tuple[object, ...]]] = []
        self._closed = False

    def begin(self, call: Call) -> StepContext:
        """A request arrived: find (or start) its conversation and write the step's snapshot."""
        conversation = self._conversation_of(call)
        pending = conversation.pending
        if pending is not None:
            self._continuable.remove(conversation)
            if pending.asked_again_by(call):
                return self._tried_again(conversation, pending, call)
            self._finish(conversation, call.messages)
        state = conversation.state
        step = state.step + 1
        messages = _provenance(conversation, call.messages)
        # The snapshot holds the state as the step starts (the steps before it done), as the
        # loop's do: a re-run from it is that step again, numbered as it was.
        state = state.model_copy(update={"messages": messages})
        if call.tools != self._tools:
            self._tools, self._tools_hash = call.tools, schema_hash(call.tools)
        snapshot = StepContext(
            run_id=state.run_id,
            execution_id=state.execution_id,
            parent_run_id=None,
            step=step,
            model_name=call.model,
            model_settings=call.settings,
            tool_names=tuple(t.name for t in call.tools),
            tool_schema_hash=self._tools_hash,
            tool_definitions=self._tools,
            system_prompt_hash=system_hash(messages),
            budget=Budget(
                steps_used=step - 1,
                tokens_used=state.usage.total_tokens,
                seconds_used=state.elapsed,
                cost_used=state.usage.cost,
            ),
            message_count=len(messages),
            state=state,
        )
        conversation.state = state.model_copy(update={"step": step})
        conversation.sent = messages
        conversation.in_flight = InFlight(snapshot=snapshot, call=call, started_at=time.time())
        self._write(self.store.step_started, snapshot)
        self._flush()
        return snapshot

    def _tried_again(
        self, conversation: _Conversation, pending: Pending, call: Call
    ) -> StepContext:
        """The client asked again after a failed call: the same step, tried once more.

        Its snapshot is the step's, already written; the failed try is kept for its record.
        """
        conversation.pending = None
        conversation.in_flight = InFlight(
            snapshot=pending.snapshot,
            call=call,
            started_at=time.time(),
            tries=(*pending.tries, pending.failed_try()),
        )
        return pending.snapshot

    def end(self, snapshot: StepContext, call: Call, outcome: Outcome) -> None:
        """The call ended (answered, failed, or cut off): keep it until its results are known.

        A call that ends after `close` has already been written as cut off: it is dropped, with
        a log line (the proxy stops serving before it closes its recorder, so it is rare).
        """
        conversation = self._conversations.get(snapshot.run_id)
        if conversation is None:
            logger.warning(
                "the proxy had stopped recording when a call of run %s ended: "
                "the run keeps it as cut off",
                snapshot.run_id,
            )
            return
        flight = conversation.in_flight
        assert flight is not None, "a call ends once"
        assert flight.snapshot is snapshot, "a conversation has one call in flight"
        conversation.in_flight = None
        started = time.time() - outcome.duration
        conversation.pending = Pending(
            snapshot=snapshot, call=call, outcome=outcome, started_at=started, tries=flight.tries
        )
        self._continuable.add(conversation)

    def rerun(self, run_id: str, origin: RerunOf) -> None:
        """The run re-runs ``origin`` (a replay answered it from there): its state says so."""
        conversation = self._conversations.get(run_id)
        if conversation is not None and conversation.state.rerun_of is None:
            conversation.state = conversation.state.model_copy(update={"rerun_of": origin})

    def close(self) -> None:
        """Write every waiting step and end every run; again, do nothing.

        A call still in flight is written as a step cut off (``ProxyStopped``), so the run says
        where it stopped, and ends aborted: the proxy was stopped, the call did not fail.
        """
        if self._closed:
            return
        self._closed = True
        for conversation in self._conversations.values():
            flight = conversation.in_flight
            if flight is not None:
                self._cut_off(flight)
            if conversation.pending is not None:
                self._finish(conversation, None, cut_off=flight is not None)
            else:
                conversation.state = ended(conversation.state)
            self._write(self.store.run_ended, conversation.state)
        self._flush()
        self._conversations.clear()
        self._named.clear()
        self._sessions.clear()
        self._continuable = _Continuable()
        self._writer.shutdown(wait=True)

    def _cut_off(self, flight: InFlight) -> None:
        """End a call the proxy was stopped in the middle of: its conversation's last step."""
        snapshot = flight.snapshot
        error = ErrorInfo(
            type=_CUT_OFF,
            message="the proxy was stopped before the call ended",
            phase=Phase.INFERENCE,
            step=snapshot.step,
        )
        outcome = Outcome(response=None, error=error, duration=time.time() - flight.started_at)
        self.end(snapshot, flight.call, outcome)

    def _conversation_of(self, call: Call) -> _Conversation:
        """The conversation ``call`` continues (see the module docstring), or a new one."""
        name = call.conversation
        if name is not None:
            free = [c for c in self._named.get(name, ()) if c.in_flight is None]
            found = _continued(free, call.messages) or next(iter(free), None)
        elif call.session is not None:
            free = [c for c in self._sessions.get(call.session, ()) if c.in_flight is None]
            found = _continued(free, call.messages)
        else:
            found = self._continuable.find(call.messages)
        return found if found is not None else self._started(call)

    def _started(self, call: Call) -> _Conversation:
        """A new conversation and its run (a name's second one runs alongside its first).

        Its session is the client's, or else the proxy's own (`session_id`).
        """
        name, session = call.conversation, call.session or self.session_id
        proxy = self.metadata.get("proxy")
        metadata = dict(self.metadata)
        metadata["proxy"] = {**(proxy if isinstance(proxy, dict) else {}), "wire": call.wire}
        metadata["session_id"] = session
        if name is not None:
            metadata["conversation"] = name
        name_of_agent = self.agent_name or call.client or "proxy"
        state = AgentState(agent_name=name_of_agent, metadata=metadata).moved(Transition.START)
        conversation = _Conversation(state, len(self._conversations))
        self._conversations[state.run_id] = conversation
        self.run_ids.append(state.run_id)
        if name is not None:
            self._named.setdefault(name, []).append(conversation)
        self._sessions.setdefault(session, []).append(conversation)
        self._write(self.store.run_started, state)
        return conversation

    def _finish(
        self,
        conversation: _Conversation,
        following: tuple[Message, ...] | None,
        *,
        cut_off: bool = False,
    ) -> None:
        """Write the waiting step; ``following`` is the conversation's next request, if any.

        Without one the proxy is closing, and the run ends (aborted if the call was ``cut_off``).
        """
        pending = conversation.pending
        assert pending is not None
        conversation.pending = None
        sent, outcome = pending.snapshot.state.messages, pending.outcome
        if following is not None and len(following) >= len(sent):
            added = _provenance(conversation, following)[len(sent) :]
        elif outcome.response is not None:
            added = (outcome.response.to_message().stamped(*_where(pending.snapshot)),)
        else:
            added = ()
        response = outcome.response
        usage = response.usage if response is not None else Usage()
        state = conversation.state.model_copy(
            update={
                "messages": sent + added,
                "usage": conversation.state.usage + usage,
                "elapsed": conversation.state.elapsed + outcome.duration,
                # the run's error is its last call's: one the client went on from is its step's
                "error": outcome.error,
                "errors_total": conversation.state.errors_total
                + len(pending.tries)
                + (outcome.error is not None),
            }
        )
        if following is None:  # the proxy is closing: this was the conversation's last step
            state = ended(state) if not cut_off else aborted(state)
        conversation.state = state
        record = step_record(pending, state, added, went_on=following is not None)
        event = PhaseEvent(phase=Phase.CONTINUATION, step=record.index, state=state)
        self._write(self.store.phase_ended, event, pending.started_at)
        self._write(self.store.step_ended, record)

    def _write(self, write: Callable[..., None], *args: object) -> None:
        """Queue a store write (the store records its own failures in ``write_errors``)."""
        self._queued.append((write, args))

    def _flush(self) -> None:
        """Hand the queued writes to the writer thread as one job, in order.

        A request makes several writes (the step it ends, its own snapshot); one job wakes the
        writer once, which matters when the proxy shares the agent's interpreter.
        """
        writes, self._queued = self._queued, []
        if writes:
            self._writer.submit(_write_all, writes)


def _continued(
    conversations: Iterable[_Conversation], messages: tuple[Message, ...]
) -> _Conversation | None:
    """The conversation ``messages`` go on with, if any (see the module docstring).

    One they extend comes before one they only repeat (a retry), then one whose answer they go
    on with, then the longest, then the first started.
    """
    candidates = [c for c in conversations if c.continues(messages)]
    if not candidates:
        return None
    n = len(messages)
    return max(
        candidates,
        key=lambda c: (
            len(c.sent or ()) < n,
            c.answered_before(messages),
            len(c.sent or ()),
            -c.order,
        ),
    )


def _write_all(writes: list[tuple[Callable[..., None], tuple[object, ...]]]) -> None:
    for write, args in writes:
        write(*args)


def _where(snapshot: StepContext) -> tuple[str, str, int]:
    return snapshot.run_id, snapshot.execution_id, snapshot.step


def _provenance(conversation: _Conversation, messages: tuple[Message, ...]) -> tuple[Message, ...]:
    """``messages`` with the ones the conversation already holds kept as they were recorded.

    Messages past those are new since the previous step, so that step produced them (the
    answer and what the agent did with it); the first request's messages are the agent's input.
    """
    known = conversation.state.messages
    kept = 0
    while kept < min(len(known), len(messages)) and same(known[kept], messages[kept]):
        kept += 1
    step = conversation.state.step
    state = conversation.state
    new = messages[kept:]
    if step > 0:
        new = tuple(m.stamped(state.run_id, state.execution_id, step) for m in new)
    return (*known[:kept], *new)
