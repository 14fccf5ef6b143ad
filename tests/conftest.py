"""Shared fixtures and helpers."""

from __future__ import annotations

import workbench as wb


def phase_trace(events: list[wb.PhaseEvent]) -> list[str]:
    """Events as compact strings: ``step:phase:status`` (the golden form of a run)."""
    return [f"{e.step}:{e.phase.value}:{e.state.status.value}" for e in events]


async def collect(run: wb.AgentRun) -> list[wb.PhaseEvent]:
    """Every remaining phase event of a run."""
    return [event async for event in run.events()]
