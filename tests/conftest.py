"""Shared fixtures and helpers."""

from __future__ import annotations

import os

import workbench as wb


def phase_trace(events: list[wb.PhaseEvent]) -> list[str]:
    """Events as compact strings: ``step:phase:status`` (the golden form of a run)."""
    return [f"{e.step}:{e.phase.value}:{e.state.status.value}" for e in events]


async def collect(run: wb.AgentRun) -> list[wb.PhaseEvent]:
    """Every remaining phase event of a run."""
    return [event async for event in run.events()]


# Runs made by tests go to an in-memory store unless a test passes its own: the repository's
# .workbench/ stays clean and parallel test processes never share a file.
os.environ.setdefault("WORKBENCH_STORE", ":memory:")
