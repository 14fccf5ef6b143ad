"""The state a re-run starts from: a snapshot's state, as a new run, with the user's edits.

A snapshot holds the state as its step starts (before PREPARE). A re-run is a *new* run (new run
and execution ids, so the original is never touched) whose first step has the snapshot's index and
whose budget (steps, tokens, time, cost used) carries on from where the original stood, so limits
fire where they would have. It records where it came from in `AgentState.rerun_of`.

A re-run is a root run even when the snapshot is a sub-run's: the parent never made the call
that would start it, so it must not join the parent's tree (its store entry, its trace, the
parent's children); `rerun_of` is what ties it to the sub-run it re-runs.
"""

from __future__ import annotations

import time
from collections.abc import Sequence

from workbench.messages import Message
from workbench.records import StepContext
from workbench.state import AgentState, ExecutionStatus, Phase, RerunOf, new_id

__all__ = ["rerun_state"]


def rerun_state(snapshot: StepContext, messages: Sequence[Message] | None = None) -> AgentState:
    """A PENDING state that re-runs ``snapshot``'s step, with ``messages`` as the conversation.

    ``messages`` replaces the whole conversation at the start of the step (edit a copy of
    ``snapshot.state.messages``). Messages without provenance (new or edited ones) are stamped
    with the new run, at the step before the re-run's first step; the others keep theirs, so a
    diff can tell inherited messages from edited ones.
    """
    base = snapshot.state
    run_id, execution_id = new_id("run"), new_id("exe")
    conversation = base.messages if messages is None else tuple(messages)
    if not conversation:
        raise ValueError("a re-run needs at least one message")
    wrong = [type(m).__name__ for m in conversation if not isinstance(m, Message)]
    if wrong:
        raise TypeError(f"messages must be workbench Message objects, got {', '.join(wrong)}")
    stamped = tuple(
        m if m.run_id else m.stamped(run_id, execution_id, base.step) for m in conversation
    )
    return base.model_copy(
        update={
            "run_id": run_id,
            "execution_id": execution_id,
            "status": ExecutionStatus.PENDING,
            "stop_reason": None,
            "next_phase": Phase.PREPARE,
            "messages": stamped,
            "pending": (),
            "approved": (),
            "error": None,
            "trace_id": None,  # a new run: a trace of its own, linked to the original step
            "parent_run_id": None,
            "parent_call_id": None,
            "depth": 0,
            "waiting_subruns": {},
            "subrun_answers": {},
            "elapsed": snapshot.budget.seconds_used,
            "created_at": time.time(),
            "rerun_of": RerunOf(
                run_id=snapshot.run_id, step=snapshot.step, snapshot_id=snapshot.id
            ),
        }
    )
