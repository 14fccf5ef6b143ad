"""`Session`: several executions of one conversation, with boundaries, retention and forks.

Each `Session.run` is one run of the agent (its own run id, steps, spans and store entry) whose
history is the conversation so far, the boundary marker of the new execution first. When a run
ends the session takes its new messages into the conversation and applies the `Retention`:
whole older executions leave (dropped, or summarized by the agent's model), never part of one,
so a tool call is never separated from its result and the model never reads half an exchange.
PreCompact hooks hear about it first. The session's runs carry ``session_id`` and
``session_execution`` in their metadata, which is how the store groups them
(`RunStore.session`). `SessionState` (see `workbench.session_state`) is the whole session as
data: ``session.state.to_json()`` and `Session.from_json` carry it to another process.
"""

from __future__ import annotations

import logging
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from workbench._sync import run_sync
from workbench.errors import SessionBusy
from workbench.hooks.events import PreCompactInput
from workbench.hooks.runner import HookDispatch, HookLog
from workbench.messages import JsonValue, Message, Usage, answered_only
from workbench.models.base import ModelRequest, ModelSettings
from workbench.records import RunResult
from workbench.session_state import (
    DEFAULT_SUMMARY_PROMPT,
    Compaction,
    ExecutionEntry,
    ForkPoint,
    Retained,
    Retention,
    SessionState,
    boundary_message,
    boundary_number,
    summary_message,
)
from workbench.state import AgentState, ExecutionStatus
from workbench.store import RunNotFound

if TYPE_CHECKING:
    from workbench.agent import Agent, AgentRun

__all__ = ["DEFAULT_SUMMARY_PROMPT", "Retention", "Session", "SessionState"]

logger = logging.getLogger(__name__)


class Session:
    """Many executions of one conversation with one agent.

    >>> from workbench import Agent, ScriptedModel
    >>> session = Session(Agent(ScriptedModel(["Hi.", "Still here."]), store=False))
    >>> session.run_sync("hello").output, session.run_sync("again").output
    ('Hi.', 'Still here.')
    >>> [e.number for e in session.state.executions]
    [1, 2]
    """

    def __init__(
        self,
        agent: Agent,
        *,
        retention: Retention | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        state: SessionState | None = None,
    ) -> None:
        self.agent = agent
        self._state = state or SessionState(agent_name=agent.name, metadata=dict(metadata or {}))
        if retention is not None:
            self.retention = retention
        self._results: dict[str, RunResult] = {}
        self._current: AgentRun | None = None
        """A run started by `start` and driven by the caller; taken in once it is done."""

    @classmethod
    def from_json(
        cls, text: str | bytes, agent: Agent, *, retention: Retention | None = None
    ) -> Session:
        """A session written by ``session.state.to_json()``, to go on with ``agent``.

        It keeps the retention it was written with, unless ``retention`` replaces it.
        """
        return cls(agent, retention=retention, state=SessionState.from_json(text))

    def __repr__(self) -> str:
        state = self._state
        return (
            f"Session(id={state.session_id!r}, agent={state.agent_name!r}, "
            f"executions={len(state.executions)}, messages={len(state.messages)})"
        )

    @property
    def session_id(self) -> str:
        """The session's id (in every one of its runs' metadata as ``session_id``)."""
        return self._state.session_id

    @property
    def state(self) -> SessionState:
        """The whole session as data (a stepped run that is done is taken in first)."""
        self._take_stepped()
        return self._state

    @property
    def retention(self) -> Retention:
        """What the session keeps after each execution (part of its state and JSON)."""
        return self._state.retention

    @retention.setter
    def retention(self, retention: Retention) -> None:
        self._state = self._state.model_copy(update={"retention": retention})

    @property
    def messages(self) -> tuple[Message, ...]:
        """The conversation the next execution starts from (without the system prompt)."""
        return self.state.messages

    @property
    def executions(self) -> tuple[RunResult, ...]:
        """Each execution's `RunResult`, in order (from the store for a session read from JSON).

        An execution the store does not hold (no store, or another machine's) is rebuilt from the
        session: its entry and the messages it still has in the conversation, without steps.
        """
        return tuple(self._result(entry) for entry in self.state.executions)

    @property
    def usage(self) -> Usage:
        """Tokens and cost of every execution and every summary."""
        state = self.state
        usages = [e.usage for e in state.executions] + [c.usage for c in state.compactions]
        return sum(usages, Usage())

    # -- running --------------------------------------------------------------------------------

    def start(
        self,
        prompt: str,
        *,
        settings: ModelSettings | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
        on_text_delta: Callable[[str], None] | None = None,
    ) -> AgentRun:
        """The next execution, ready to be stepped (`AgentRun.next_phase`, `next_step`, ...).

        The session takes it in once it is done: at the next `run`, `start`, or read of `state`.
        """
        self._take_stepped()
        if self._current is not None:
            raise SessionBusy(
                f"session {self.session_id}: execution {len(self._state.executions) + 1} is "
                "still running; run it to its end (or abort it) before starting another"
            )
        if self._state.paused is not None:
            raise SessionBusy(
                f"session {self.session_id}: execution {len(self._state.executions)} is paused; "
                "resume it (Session.resume) before starting another"
            )
        number = len(self._state.executions) + 1
        run = self.agent.start(
            prompt,
            history=(*self._state.messages, boundary_message(number)),
            settings=settings,
            on_text_delta=on_text_delta,
            metadata={
                **self._state.metadata,
                **(metadata or {}),
                "session_id": self.session_id,
                "session_execution": number,
            },
        )
        self._current = run
        return run

    async def run(
        self,
        prompt: str,
        *,
        settings: ModelSettings | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> RunResult:
        """Run the next execution to its end (or a pause) and take it into the conversation."""
        self._take_stepped()
        await self._retain()  # a stepped execution taken in now still owes its retention
        run = self.start(prompt, settings=settings, metadata=metadata)
        result = await run.arun_to_end()
        self._take_stepped()
        await self._retain()
        return result

    def run_sync(
        self,
        prompt: str,
        *,
        settings: ModelSettings | None = None,
        metadata: Mapping[str, JsonValue] | None = None,
    ) -> RunResult:
        """Sync `run`; works in scripts and inside a running event loop."""
        return run_sync(self.run(prompt, settings=settings, metadata=metadata))

    async def resume(
        self,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> RunResult:
        """Answer the paused execution's pending calls and run it on (see `Agent.resume`)."""
        paused = self.state.paused
        if paused is None:
            raise SessionBusy(f"session {self.session_id} has no paused execution to resume")
        run = self.agent.start_resume(paused, approvals, results, settings=settings)
        self._current = run
        result = await run.arun_to_end()
        self._take_stepped()
        await self._retain()
        return result

    def resume_sync(
        self,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        settings: ModelSettings | None = None,
    ) -> RunResult:
        """Sync `resume`."""
        return run_sync(self.resume(approvals, results, settings=settings))

    def fork(self, execution: int, step: int) -> Session:
        """A new session whose conversation is this one's up to ``step`` of ``execution``.

        The new session keeps the executions before that one, and that one cut after ``step``
        (step 0: only its prompt); its next run is the following execution. The cut execution
        is what its kept steps made: their usage, an output only if they end with the answer,
        and, like a state cut by `AgentState.fork`, PENDING: it did not end there. This session
        is unchanged, and the fork remembers where it came from (``state.forked_from``).
        """
        state = self.state
        if not 1 <= execution <= len(state.executions):
            raise ValueError(
                f"session {self.session_id} has executions 1..{len(state.executions)}, "
                f"not {execution}"
            )
        entry = state.executions[execution - 1]
        if entry.retained != "kept":
            raise ValueError(
                f"execution {execution} was {entry.retained} by retention; it cannot be forked"
            )
        end = _end_of(state.messages, entry.run_id)
        upto = AgentState(
            run_id=entry.run_id, step=entry.steps, messages=state.messages[:end]
        ).fork(up_to_step=step)
        cut = _cut(self._result(entry), step)
        kept = ExecutionEntry.of(execution, cut.state)
        forked = SessionState(
            agent_name=state.agent_name,
            messages=upto.messages,  # `AgentState.fork` leaves out calls still waiting
            executions=(
                *state.executions[: execution - 1],
                kept.model_copy(update={"output": _answer(cut.state.messages)}),
            ),
            compactions=state.compactions,
            retention=state.retention,
            forked_from=ForkPoint(session_id=self.session_id, execution=execution, step=step),
            metadata=dict(state.metadata),
        )
        session = Session(self.agent, state=forked)
        for earlier in state.executions[: execution - 1]:
            session._results[earlier.run_id] = self._result(earlier)
        session._results[entry.run_id] = cut
        return session

    # -- taking executions in -------------------------------------------------------------------

    def _take_stepped(self) -> None:
        """Take the stepped run into the conversation once it ended or paused."""
        run = self._current
        if run is None or not run.done:
            return
        self._current = None
        result = run.result
        state = self._state
        last = state.executions[-1] if state.executions else None
        again = last is not None and last.run_id == result.run_id  # a resumed execution
        number = last.number if again and last else len(state.executions) + 1
        history = (
            state.messages[: _boundary_index(state.messages, number)] if again else state.messages
        )
        made = _made_by_execution(result.state, len(history))
        entries = state.executions[:-1] if again else state.executions
        paused = result.state if result.status is ExecutionStatus.PAUSED else None
        if paused is None:  # an execution that ended mid-step never answers its calls
            made = answered_only(made)
        self._state = state.model_copy(
            update={
                "messages": (*history, *made),
                "executions": (*entries, ExecutionEntry.of(number, result.state)),
                "paused": paused,
            }
        )
        self._results[result.run_id] = result

    async def _retain(self) -> None:
        """Apply the retention: whole oldest executions leave, PreCompact hooks hear first."""
        state = self._state
        leaving = _leaving(state, self.retention)
        if not leaving:
            return
        rest = state.messages[_boundary_index(state.messages, leaving[-1] + 1) :]
        gone = state.messages[: len(state.messages) - len(rest)]
        mode: Retained = "summarized" if self.retention.summarize else "dropped"
        after = len(rest) + (1 if mode == "summarized" else 0)  # the summary message
        hooks = await self._pre_compact(len(state.messages), after)
        usage, error, opening = Usage(), None, tuple[Message, ...]()
        if mode == "summarized":
            try:
                text, usage = await self._summary(gone)
            except Exception as exc:  # the summary failed: nothing leaves, the reason is kept
                error = f"{type(exc).__name__}: {exc}"
                logger.warning(
                    "session %s: summary failed, the executions stay: %s", self.session_id, error
                )
            else:
                first = min(e.number for e in state.executions if e.retained != "dropped")
                opening = (summary_message(first, leaving[-1], text),)
        record = Compaction(
            executions=leaving,
            mode=mode,
            messages_before=len(state.messages),
            messages_after=len(state.messages) if error else after,
            usage=usage,
            hook_errors=hooks.errors,
            hook_notes=hooks.notes,
            error=error,
        )
        update: dict[str, object] = {"compactions": (*state.compactions, record)}
        if error is None:
            update["messages"] = (*opening, *rest)
            update["executions"] = tuple(_retained(e, leaving, mode) for e in state.executions)
        self._state = state.model_copy(update=update)

    async def _pre_compact(self, before: int, after: int) -> HookLog:
        dispatch = HookDispatch(self.agent.hooks, self._hook_state)
        try:
            await dispatch.fire(
                PreCompactInput(trigger="auto", messages_before=before, messages_after=after)
            )
            return dispatch.take()
        finally:
            dispatch.close()

    def _hook_state(self) -> AgentState:
        """What the PreCompact hooks see: the last run, with the whole conversation."""
        last = self._state.executions[-1]
        return AgentState(
            run_id=last.run_id,
            execution_id=last.execution_id,
            agent_name=self.agent.name,
            step=last.steps,
            messages=self._state.messages,
            metadata={"session_id": self.session_id},
        )

    async def _summary(self, leaving: Sequence[Message]) -> tuple[str, Usage]:
        """The agent's model summarizes the messages that leave (an earlier summary included)."""
        request = ModelRequest(
            messages=(*leaving, Message.user(self.retention.summary_prompt)),
            settings=ModelSettings(**self.agent.settings),
        )
        response = await self.agent.model.request(request)
        text = response.text_content.strip()
        if not text:
            raise ValueError("the model answered the summary request without text")
        return text, response.usage

    # -- results --------------------------------------------------------------------------------

    def _result(self, entry: ExecutionEntry) -> RunResult:
        known = self._results.get(entry.run_id)
        if known is None:
            known = self._results[entry.run_id] = self._load(entry)
        return known

    def _load(self, entry: ExecutionEntry) -> RunResult:
        store = self.agent.store
        if store is not None:
            try:
                return store.load(entry.run_id)
            except RunNotFound:
                pass
        messages = self._state.messages
        own: tuple[Message, ...] = ()
        if entry.retained == "kept":
            own = messages[
                _boundary_index(messages, entry.number) : _end_of(messages, entry.run_id)
            ]
        state = AgentState(
            run_id=entry.run_id,
            execution_id=entry.execution_id,
            agent_name=self._state.agent_name,
            status=entry.status,
            stop_reason=entry.stop_reason,
            step=entry.steps,
            messages=own,
            usage=entry.usage,
            metadata={"session_id": self.session_id, "session_execution": entry.number},
        )
        return RunResult(state=state, steps=(), snapshots=())


def _leaving(state: SessionState, retention: Retention) -> tuple[int, ...]:
    """The numbers of the oldest kept executions that must leave (never the latest one)."""
    kept = state.kept
    if state.paused is not None:  # a paused execution is not over: nothing moves under it
        return ()
    index = 0
    while index < len(kept) - 1 and _over(state, retention, kept[index:], cut=index > 0):
        index += 1
    return tuple(e.number for e in kept[:index])


def _over(
    state: SessionState, retention: Retention, remaining: Sequence[ExecutionEntry], *, cut: bool
) -> bool:
    """True if keeping only ``remaining`` (after a ``cut``) is still over a limit."""
    if retention.max_executions is not None and len(remaining) > retention.max_executions:
        return True
    if retention.max_messages is None:
        return False
    size = len(state.messages)
    if cut:  # the conversation from the first remaining boundary on, and a summary before it
        size -= _boundary_index(state.messages, remaining[0].number)
        size += retention.summarize
    return size > retention.max_messages


def _retained(entry: ExecutionEntry, leaving: tuple[int, ...], mode: Retained) -> ExecutionEntry:
    """The entry after a compaction: leaving now, or summarized before and dropped now."""
    if entry.number in leaving or (entry.retained == "summarized" and mode == "dropped"):
        return entry.model_copy(update={"retained": mode})
    return entry


def _boundary_index(messages: Sequence[Message], number: int) -> int:
    """Index of the boundary marker of execution ``number`` in the conversation."""
    return next(i for i, m in enumerate(messages) if boundary_number(m) == number)


def _end_of(messages: Sequence[Message], run_id: str) -> int:
    """Index just after the last message of ``run_id`` (0 if it has none)."""
    return max((i + 1 for i, m in enumerate(messages) if m.run_id == run_id), default=0)


def _made_by_execution(state: AgentState, history: int) -> tuple[Message, ...]:
    """The run's messages from its boundary on: after its system prompt and the history."""
    system = 0
    for message in state.messages:
        if message.role != "system" or message.run_id != state.run_id:
            break
        system += 1
    return tuple(state.messages[system + history :])


def _cut(result: RunResult, step: int) -> RunResult:
    """The result as it was after ``step``: same run, later steps left out, not ended.

    How it ended belongs to the steps left out, so the cut run is PENDING like the state
    `AgentState.fork` makes, with no stop reason, error or waiting calls; it counts what the
    kept steps spent and keeps the sub-runs their tool calls started.
    """
    state = result.state
    messages = state.fork(up_to_step=step).messages
    calls = {call.call_id for message in messages for call in message.tool_calls}
    update = {
        "messages": messages,
        "step": step,
        "status": ExecutionStatus.PENDING,
        "stop_reason": None,
        "error": None,
        "pending": (),
        "usage": _spent_after(result, step),
    }
    return RunResult(
        state=state.model_copy(update=update),
        steps=tuple(s for s in result.steps if s.index <= step),
        snapshots=tuple(s for s in result.snapshots if s.step <= step),
        children=tuple(c for c in result.children if c.parent_call_id in calls),
    )


def _spent_after(result: RunResult, step: int) -> Usage:
    """What the run had spent when ``step`` ended (sub-runs too): what its next step began with.

    A result without its snapshots (a session read back without the store) cannot tell, and
    counts nothing, as a state `AgentState.fork` cut does.
    """
    if step >= result.state.step:
        return result.state.usage
    after = (s.state.usage for s in result.snapshots if s.step == step + 1)
    return next(after, Usage())


def _answer(messages: Sequence[Message]) -> str | None:
    """The final answer the messages end with: an assistant's text that calls no tool."""
    last = messages[-1] if messages else None
    if last is None or last.role != "assistant" or last.tool_calls:
        return None
    return last.text or None
