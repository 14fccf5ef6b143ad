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

from workbench.records import StepRecord
from workbench.state import AgentState, ErrorInfo

__all__ = ["RunFacts", "facts_of", "step_errors"]

FIRST_ERROR_CHARS = 300
"""How much of the first error a run list keeps: one line, enough to recognise it."""

_CALLED = ("ok", "error", "retry")
"""Tool outcomes of calls that ran (not denied, dropped, or still waiting for approval)."""


def _line(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= FIRST_ERROR_CHARS else f"{flat[: FIRST_ERROR_CHARS - 1]}…"


def _error_text(error: ErrorInfo) -> str:
    return f"{error.type}: {error.message}"


def step_errors(record: StepRecord) -> list[str]:
    """What went wrong in one step, one line each: failed tool calls, hooks, the model call."""
    where = f"step {record.index}"
    found = [f"{where}, {o.name}: {o.content}" for o in record.tool_outcomes if o.status == "error"]
    found += [f"{where}, hook: {error}" for error in record.hook_errors]
    if record.model_error is not None:
        found.append(f"{where}, model: {_error_text(record.model_error)}")
    return [_line(text) for text in found]


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
    last_model_error: tuple[str, str] | None = None
    """The last step's failed model call: a run that fails for it is not counted twice."""

    def add_step(self, record: StepRecord) -> set[str]:
        """Fold one step record in; the tools whose call count changed."""
        errors = step_errors(record)
        self.errors += len(errors)
        if errors and self.first_error is None:
            self.first_error = errors[0]
        model_error = record.model_error
        self.last_model_error = (
            None if model_error is None else (model_error.type, model_error.message)
        )
        self.duration += record.timing.total
        changed = set()
        for outcome in record.tool_outcomes:
            if outcome.status in _CALLED:
                self.tool_calls[outcome.name] = self.tool_calls.get(outcome.name, 0) + 1
                changed.add(outcome.name)
        return changed

    def run_error(self, state: AgentState) -> str | None:
        """The error that failed the run, when no step has already counted it."""
        error = state.error
        if error is None or (error.type, error.message) == self.last_model_error:
            return None
        step = f"step {error.step}, " if error.step is not None else ""
        return _line(f"{step}run: {_error_text(error)}")

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
        )


def facts_of(steps: Iterable[StepRecord]) -> RunFacts:
    """The facts of a run's stored steps, folded as the store folds them while a run goes."""
    facts = RunFacts()
    for record in steps:
        facts.add_step(record)
    return facts
