"""The proxy's records of a model call, and what a step of a conversation becomes.

A `Call` is one request as the proxy read it, its `Outcome` how it ended. A step is written
from them once the conversation's next request (or the proxy's closing) says what the agent did
with the answer (`step_record`); `ended` and `aborted` are how a conversation the proxy stops
watching ends. `workbench._proxy.recorder` decides which conversation a call belongs to.
"""

from __future__ import annotations

import hashlib
import json
import time
from collections.abc import Sequence

from workbench._record import Record
from workbench.messages import JsonValue, Message, ModelResponse, ToolResult, Usage
from workbench.records import ModelTry, StepContext, StepRecord, Timing, ToolOutcome
from workbench.state import AgentState, ErrorInfo, Phase, StopReason, Transition
from workbench.tools import ToolDefinition

__all__ = [
    "Call",
    "InFlight",
    "Outcome",
    "Pending",
    "aborted",
    "ended",
    "same",
    "step_record",
    "system_hash",
]


class Call(Record):
    """One request as the proxy received it, converted to our messages and tools."""

    model: str
    messages: tuple[Message, ...]
    tools: tuple[ToolDefinition, ...]
    settings: dict[str, JsonValue]
    """The rest of the request body (temperature, tool_choice, ...) but how the answer travels
    (``stream``, ``stream_options``): what a strict replay compares. The model is `model`."""
    conversation: str | None = None
    """The ``X-Workbench-Run`` header, when the client named its conversation."""
    session: str | None = None
    """The client's session (Claude Code's ``X-Claude-Code-Session-Id``, Codex's
    ``session-id``), when it names one: its runs are grouped under it."""
    wire: str = "chat"
    """The wire the call came on (`workbench._proxy.wire.Wire.name`)."""
    client: str | None = None
    """The product the client names in its ``User-Agent`` (``claude-cli``, ``codex_exec``):
    the agent a new run is named after, unless the proxy was given a name."""


class Outcome(Record):
    """How one call ended: the response, or the error the agent was given instead."""

    response: ModelResponse | None
    error: ErrorInfo | None = None
    duration: float
    time_to_first_token: float | None = None
    status: int | None = None
    """The error status the agent was answered with, if it was one."""


class InFlight(Record):
    """A step whose call has not ended yet."""

    snapshot: StepContext
    call: Call
    started_at: float
    tries: tuple[ModelTry, ...] = ()
    """The step's earlier tries, which failed and which this call asks again."""


class Pending(Record):
    """A step whose call has ended, waiting for the next request to say what came of it."""

    snapshot: StepContext
    call: Call
    outcome: Outcome
    started_at: float
    tries: tuple[ModelTry, ...] = ()

    def asked_again_by(self, call: Call) -> bool:
        """Whether ``call`` is this call tried again: it failed, and the same is asked.

        An SDK resends the very request (the openai and anthropic SDKs after a 5xx, a timeout
        or a dropped connection), so everything a replay compares is the same: the step the
        agent took is the same, tried again. A request that changed anything is a step of its own.
        """
        asked = self.call
        return (
            self.outcome.response is None
            and (call.model, call.tools) == (asked.model, asked.tools)
            and call.settings == asked.settings
            and len(call.messages) == len(asked.messages)
            and all(same(a, b) for a, b in zip(asked.messages, call.messages, strict=True))
        )

    def failed_try(self) -> ModelTry:
        """The call as a failed try of its step."""
        outcome = self.outcome
        assert outcome.error is not None, "a call without an answer has its error"
        return ModelTry(
            started_at=self.started_at,
            duration=outcome.duration,
            error=outcome.error,
            status=outcome.status,
        )


def same(a: Message, b: Message) -> bool:
    """Whether two messages say the same (where they were recorded aside)."""
    return a is b or (a.role == b.role and a.parts == b.parts)


def step_record(
    pending: Pending, state: AgentState, added: tuple[Message, ...], *, went_on: bool
) -> StepRecord:
    """The record of a step: its model call, then the agent's work until its next request.

    The call began when the request came (its first try's, when the client asked again after
    failed ones: the waits between tries are the model call's) and ended with the answer; what
    the agent did with the answer (running the tools it asked for) fills the time until the
    next request, which the record gives as the step's tools phase: the proxy cannot see how
    long each tool took. A last step ends with its answer, and so does a failed call: there was
    no answer to run tools from, and the time until the next request is the client's own.
    """
    outcome = pending.outcome
    response, answered = outcome.response, pending.started_at + outcome.duration
    began = pending.tries[0].started_at if pending.tries else pending.started_at
    worked_on = went_on and response is not None
    ended = max(answered, time.time()) if worked_on else answered
    phases = [(Phase.INFERENCE, began)]
    if worked_on:
        phases.append((Phase.TOOLS, answered))
    outcomes = tuple(
        o.model_copy(update={"started_at": answered}) for o in _outcomes(response, added)
    )
    return StepRecord(
        index=pending.snapshot.step,
        run_id=state.run_id,
        execution_id=state.execution_id,
        messages_in=pending.snapshot.state.messages,
        new_messages=added,
        response=response,
        tool_outcomes=outcomes,
        usage=response.usage if response is not None else Usage(),
        timing=Timing(
            inference=answered - began,
            tools=ended - answered,
            time_to_first_token=outcome.time_to_first_token,
        ),
        status=state.status,
        stop_reason=state.stop_reason,
        tools_offered=pending.snapshot.tool_names,
        snapshot_id=pending.snapshot.id,
        started_at=began,
        phase_starts=tuple(phases),
        model_started_at=pending.started_at,
        model_duration=outcome.duration,
        model_error=outcome.error,
        model_status=outcome.status,
        failed_tries=pending.tries,
        ended_at=ended,
    )


def _outcomes(response: ModelResponse | None, added: Sequence[Message]) -> tuple[ToolOutcome, ...]:
    """The tool calls of ``response`` that the agent answered in ``added``, with their results."""
    calls = {c.call_id: c for c in response.calls} if response is not None else {}
    outcomes = []
    for message in added:
        for part in message.parts:
            if isinstance(part, ToolResult) and part.call_id in calls:
                call = calls[part.call_id]
                outcomes.append(
                    ToolOutcome(
                        call_id=call.call_id,
                        name=call.name,
                        arguments=call.arguments,
                        status="error" if part.is_error else "ok",
                        content=part.content,
                    )
                )
    return tuple(outcomes)


def ended(state: AgentState) -> AgentState:
    """The final state of a conversation the proxy stops watching.

    One whose last answer was the model's is done: completed by that answer, or, when it was
    tool calls the agent never sent back, by those calls (smolagents ends on ``final_answer``
    and asks nothing more), whose arguments are the run's output.
    """
    last = state.messages[-1] if state.messages else None
    if state.error is not None and state.error.step == state.step:
        return state.moved(Transition.FAIL, stop_reason=StopReason.ERROR)
    if last is not None and last.role == "assistant":
        reason = StopReason.TASK_COMPLETE if last.tool_calls else StopReason.COMPLETED
        return state.moved(Transition.COMPLETE, stop_reason=reason)
    return aborted(state)


def aborted(state: AgentState) -> AgentState:
    """The final state of a conversation that was stopped before it was done."""
    return state.moved(Transition.ABORT, stop_reason=StopReason.ABORTED)


def _digest(value: JsonValue) -> str:
    return hashlib.sha256(json.dumps(value, sort_keys=True).encode()).hexdigest()[:16]


def system_hash(messages: Sequence[Message]) -> str | None:
    system = "\n".join(m.text for m in messages if m.role == "system")
    return _digest(system) if system else None
