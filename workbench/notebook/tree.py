"""A run tree rolled up per agent: how many runs, steps, tokens, cost and time each agent took."""

from __future__ import annotations

from collections.abc import Iterator

import pandas as pd

from workbench.records import RunResult

__all__ = ["AGENT_COLUMNS", "agents_table", "walk"]

AGENT_COLUMNS = (
    "agent",
    "runs",
    "steps",
    "input_tokens",
    "output_tokens",
    "cost",
    "inference_ms",
    "tools_ms",
    "hooks_ms",
)
"""Columns of `agents_table`; a run's tokens and cost here are its own (its model calls), not
those it charged from its sub-runs, so the column sums are the tree's."""


def walk(result: RunResult) -> Iterator[tuple[int, RunResult]]:
    """The run and every sub-run below it, depth first in call order, with their depth."""
    stack = [(0, result)]
    while stack:
        depth, run = stack.pop()
        yield depth, run
        stack.extend((depth + 1, child) for child in reversed(run.children))


def agents_table(result: RunResult) -> pd.DataFrame:
    """One row per agent of the tree: its runs, steps, own tokens and cost, and where time went.

    An unknown cost (a model without a price) makes the agent's cost unknown (NaN), not zero.
    """
    steps = pd.DataFrame(
        [
            {
                "agent": run.state.agent_name,
                "run_id": run.run_id,
                "step": (run.run_id, step.index),
                "input_tokens": step.usage.input_tokens,
                "output_tokens": step.usage.output_tokens,
                "cost": step.usage.cost,
                "inference_ms": step.timing.inference * 1e3,
                "tools_ms": step.timing.tools * 1e3,
                "hooks_ms": step.timing.hooks * 1e3,
            }
            for _, run in walk(result)
            for step in run.steps
        ],
        columns=[*AGENT_COLUMNS[:1], "run_id", "step", *AGENT_COLUMNS[3:]],
    )
    grouped = steps.groupby("agent", sort=False)
    table = grouped.agg(
        runs=("run_id", "nunique"),
        steps=("step", "nunique"),
        input_tokens=("input_tokens", "sum"),
        output_tokens=("output_tokens", "sum"),
        inference_ms=("inference_ms", "sum"),
        tools_ms=("tools_ms", "sum"),
        hooks_ms=("hooks_ms", "sum"),
    )
    table["cost"] = grouped["cost"].apply(lambda c: c.sum(skipna=False))
    return table.reset_index().reindex(columns=list(AGENT_COLUMNS))
