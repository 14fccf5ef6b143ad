"""Shared fixtures and helpers."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import Any

import pytest

import workbench as wb
from tests._phoenix import Phoenix
from tests.journeys.harness import Jupyter, chromium, chromium_missing, jupyter_server


def phase_trace(events: list[wb.PhaseEvent]) -> list[str]:
    """Events as compact strings: ``step:phase:status`` (the golden form of a run)."""
    return [f"{e.step}:{e.phase.value}:{e.state.status.value}" for e in events]


async def collect(run: wb.AgentRun) -> list[wb.PhaseEvent]:
    """Every remaining phase event of a run."""
    return [event async for event in run.events()]


# Runs made by tests go to an in-memory store unless a test passes its own: the repository's
# .workbench/ stays clean and parallel test processes never share a file.
os.environ.setdefault("WORKBENCH_STORE", ":memory:")


@pytest.fixture(scope="module")
def browser(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Any]:
    """Headless chromium (a Playwright browser context) shared by a module's browser tests.

    One per module, ended with it: Playwright's sync API cannot run two at once in a process,
    and while one runs its event loop is the main thread's running loop, so every asyncio test
    after it in the session would fail ("Cannot run the event loop while another loop is
    running"). A browser module holds only sync tests.
    """
    if (why := chromium_missing()) is not None:
        pytest.skip(why)
    with chromium(tmp_path_factory.mktemp("chromium-profile")) as context:
        yield context


@pytest.fixture(scope="session")
def jupyter(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Jupyter]:
    """One Jupyter server (JupyterLab and Notebook 7) with a clean home, for every browser test."""
    with jupyter_server(tmp_path_factory.mktemp("jupyter-home")) as server:
        yield server


@pytest.fixture(scope="session")
def phoenix(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Phoenix]:
    """One Arize Phoenix on SQLite for the session (each start costs half a minute here).

    Tests share it by keeping to their own traces: by trace id, or in a project of their own
    (the ``openinference.project.name`` resource attribute).
    """
    server = Phoenix(tmp_path_factory.mktemp("phoenix"))
    try:
        server.wait_ready()
        print(f"phoenix started in {server.startup_seconds:.1f}s")
        yield server
    finally:
        server.stop()


_steppers: list[Any] = []
"""The Steppers the test under way made (`_made`): closed after it."""


def _made(widget: Any) -> None:
    from workbench.notebook import Stepper

    if isinstance(widget, Stepper):
        _steppers.append(widget)


@pytest.fixture(autouse=True)
def _steppers_closed() -> Iterator[None]:
    """Every Stepper a test makes is closed after it (`Stepper.close`).

    Left open, the timeline drawing it armed on the portal loop (the one loop of the whole
    process) ran a moment later, inside the next test: it made spans there and drew from
    ``random`` in the middle of a hypothesis test's draws.
    """
    import ipywidgets

    ipywidgets.Widget.on_widget_constructed(_made)
    yield
    while _steppers:
        _steppers.pop().close()
