"""`StepDraft`: the step under way, as the loop fills it in, until it closes into a `StepRecord`."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Protocol

from pydantic import Field

from workbench._record import Record
from workbench.conversation import Messages
from workbench.ids import Id
from workbench.messages import Message, ModelResponse, ToolCall, Usage
from workbench.records import HookTiming, StepRecord, Timing, ToolOutcome
from workbench.state import AgentState, ErrorInfo, Phase
from workbench.waits import Wait, time_worked

__all__ = ["StepDraft"]


class StepDraft(Record):
    """The step under way, as the loop fills it in; `record` makes its `StepRecord`."""

    index: int
    started_at: float
    messages_in: Messages = Field(default_factory=Messages)
    first_new: int = 0
    tools_offered: tuple[str, ...] = ()
    tools_hidden: tuple[tuple[str, str], ...] = ()
    response: ModelResponse | None = None
    outcomes: tuple[ToolOutcome, ...] = ()
    model_started_at: float | None = None
    model_duration: float = 0.0
    model_error: ErrorInfo | None = None
    snapshot_id: Id | None = None
    breakpoint_errors: tuple[ErrorInfo, ...] = ()

    def sending(self, messages: Sequence[Message], history: Messages) -> StepDraft:
        """The draft with what the model will be sent: ``messages``, shaped from ``history``.

        The run's own ``history`` goes in as it is, not validated and copied again: the step's
        draft, model request and record then share one tuple, so a run holds its conversation
        once per step (not three times) and checks each message once, when it was made (not
        again at every step). What a history processor returned instead comes from outside: it
        is checked, as the constructor checks anything that comes in.
        """
        if messages is history:
            return self.model_copy(update={"messages_in": history})
        return StepDraft.model_validate({**dict(self), "messages_in": tuple(messages)})

    def record(
        self,
        state: AgentState,
        hooks: _HookLog,
        telemetry: float,
        phases: Sequence[tuple[Phase, float, float]],
        ended_at: float | None = None,
        *,
        waits: tuple[Wait, ...] = (),
    ) -> StepRecord:
        """The step's record as ``state`` stands, with what hooks did and what observers cost.

        ``phases`` are the step's phases as they ended: ``(phase, started at, seconds)``. The
        loop collects them and they are frozen here, once, rather than copied into the draft
        at every phase. The messages were checked when they were made; they go in as they are
        (`sending`). ``waits`` are those on the person since the step before closed.
        """
        timing: dict[Phase, float] = {}
        for phase, _, seconds in phases:
            timing[phase] = timing.get(phase, 0.0) + seconds
        response = self.response
        executed = [o for o in self.outcomes if o.status in ("ok", "error", "retry")]
        return StepRecord(
            index=self.index,
            run_id=state.run_id,
            execution_id=state.execution_id,
            messages_in=(),
            new_messages=(),
            response=response,
            tool_outcomes=self.outcomes,
            usage=response.usage if response is not None else Usage(),
            timing=Timing(
                prepare=timing.get(Phase.PREPARE, 0.0),
                inference=timing.get(Phase.INFERENCE, 0.0),
                tools=timing.get(Phase.TOOLS, 0.0),
                continuation=timing.get(Phase.CONTINUATION, 0.0),
                telemetry=telemetry,
                hooks=hooks.seconds,
                per_hook=hooks.timings,
                time_to_first_token=response.time_to_first_token if response else None,
                per_tool=tuple(
                    (o.call_id, o.name, time_worked(o.started_at, o.duration, waits))
                    for o in executed
                ),
            ),
            status=state.status,
            stop_reason=state.stop_reason,
            tools_offered=self.tools_offered,
            tools_hidden=self.tools_hidden,
            snapshot_id=self.snapshot_id,
            started_at=self.started_at,
            hook_errors=hooks.errors,
            hook_messages=hooks.notes,
            phase_starts=tuple((phase, at) for phase, at, _ in phases),
            model_started_at=self.model_started_at,
            model_duration=self.model_duration,
            model_error=self.model_error,
            ended_at=time.time() if ended_at is None else ended_at,
            breakpoint_errors=self.breakpoint_errors,
            waits=waits,
        ).model_copy(
            update={
                "messages_in": self.messages_in,
                "new_messages": tuple(state.messages[self.first_new :]),
            }
        )

    def so_far(
        self,
        state: AgentState,
        hooks: _HookLog,
        telemetry: float,
        phases: Sequence[tuple[Phase, float, float]],
        under_way: Sequence[ToolCall] = (),
        *,
        waits: tuple[Wait, ...] = (),
    ) -> StepRecord:
        """The record of the step as it stands now, for the views of a run stopped inside it.

        ``phases`` end with the phase under way, up to now; the calls ``under_way`` (sub-agent
        calls stopped inside their sub-runs) are outcomes ``running`` since that phase began.
        Nothing keeps this record: the step's own is made when the step closes.
        """
        now = time.time()
        began = phases[-1][1] if phases else now
        running = tuple(
            ToolOutcome(
                call_id=call.call_id,
                name=call.name,
                arguments=call.arguments,
                status="running",
                content="",
                started_at=began,
                duration=now - began,
            )
            for call in under_way
        )
        draft = self.model_copy(update={"outcomes": self.outcomes + running})
        return draft.record(state, hooks, telemetry, phases, ended_at=now, waits=waits)


class _HookLog(Protocol):
    """What hooks did during a step (`workbench.hooks.runner.HookLog`, which sits above)."""

    @property
    def seconds(self) -> float: ...

    @property
    def timings(self) -> tuple[HookTiming, ...]: ...

    @property
    def errors(self) -> tuple[str, ...]: ...

    @property
    def notes(self) -> tuple[str, ...]: ...
