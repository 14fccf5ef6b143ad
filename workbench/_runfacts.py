"""`RunFacts`: what a list of runs shows about a run beyond its row, gathered step by step.

A run list filters on things a run's row does not hold: how many errors it had and the first of
them, which tools it called, how long it ran, its metadata, its tree. Reading them from every
stored step of 100,000 runs would take minutes, so the store keeps them in a narrow summary table
(``summaries``, and ``run_tools`` for the tools), updated in the same transaction as each step
record and the state after it. They are folded from the same records whoever writes them: the
store as a run goes (one step at a time, `add_step`), the schema migration for runs stored before
the table existed (all the steps of a run at once, `facts_of`).
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass, field

from workbench import records
from workbench.records import StepRecord
from workbench.state import AgentState

__all__ = ["RunFacts", "facts_of", "step_errors"]

FIRST_ERROR_CHARS = 300
"""How much of the first error a run list keeps: one line, enough to recognise it."""

_CALLED = ("ok", "error", "retry")
"""Tool outcomes of calls that ran (not denied, dropped, or still waiting for approval)."""


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_ERROR_CHARS else f"{flat[: FIRST_ERROR_CHARS - 1]}…"


def step_errors(record: StepRecord, state: AgentState) -> list[str]:
    """What went wrong in one step of the run ``state`` is a state of, one line each.

    The same errors as `RunResult.errors` of the run without its sub-runs (each has its own
    row, and a rolled-up row sums them): `workbench.records.step_errors`.
    """
    return [_line(error.line) for error in records.step_errors(record, state)]


@dataclass
class RunFacts:
    """The summary of one run, folded from its step records and its latest state."""

    errors: int = 0
    """Errors in the step records (the run's own failure is added by `row`)."""
    first_error: str | None = None
    tool_calls: dict[str, int] = field(default_factory=dict)
    """Calls per tool that ran, in the order each tool was first called."""
    duration: float = 0.0
    """Seconds spent in the run's phases (time paused, or waiting between steps, not counted)."""

    def add_step(self, record: StepRecord, state: AgentState) -> set[str]:
        """Fold in one step record of ``state``'s run; the tools whose call count changed."""
        errors = step_errors(record, state)
        self.errors += len(errors)
        if errors and self.first_error is None:
            self.first_error = errors[0]
        self.duration += record.timing.total
        changed = set()
        for outcome in record.tool_outcomes:
            if outcome.status in _CALLED:
                self.tool_calls[outcome.name] = self.tool_calls.get(outcome.name, 0) + 1
                changed.add(outcome.name)
        return changed

    def run_error(self, state: AgentState) -> str | None:
        """The error that failed the run (no step counts it), on one line."""
        error = records.run_error(state)
        return None if error is None else _line(error.line)

    def row(self, state: AgentState, root_run_id: str) -> tuple[object, ...]:
        """The run's ``summaries`` row as ``state`` stands (see `workbench._storage`)."""
        failure = self.run_error(state)
        errors = self.errors + (failure is not None)
        first = self.first_error if self.first_error is not None else failure
        return (
            state.run_id,
            root_run_id,
            state.depth,
            errors,
            first,
            sum(self.tool_calls.values()),
            self.duration,
            json.dumps(state.metadata, separators=(",", ":")) if state.metadata else None,
            state.trace_id,
            state.status.value,
            state.agent_name,
            state.created_at,
            state.step,
        )


def facts_of(steps: Iterable[StepRecord], state: AgentState) -> RunFacts:
    """The facts of ``state``'s stored steps, folded as the store folds them while a run goes."""
    facts = RunFacts()
    for record in steps:
        facts.add_step(record, state)
    return facts
