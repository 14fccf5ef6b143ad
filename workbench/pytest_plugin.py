"""The workbench's pytest plugin: a model cassette in one line of a test.

Installed with the package (entry point ``pytest11``), so any project that has the workbench
installed has the fixture; without the entry point, add
``pytest_plugins = ["workbench.pytest_plugin"]`` to the top-level ``conftest.py``::

    def test_calculator(model_cassette):
        agent = wb.Agent(model=model_cassette(wb.OpenAIModel("gpt-4o-mini")), tools=[add])
        assert agent.run_sync("What is 2 + 3?").output == "2 + 3 = 5"

The first run records ``cassettes/<test module>/<test name>.json`` next to the test file; every
run after replays it without calling the model. ``@pytest.mark.cassette(path=..., mode=...,
redact=[...])`` sets the file (a relative path is from the test file's directory), the mode and
extra secret patterns for one test;
``pytest --cassette-mode=record`` records every cassette again (``replay`` makes a missing
cassette an error, for CI). The command line wins over the marker, the marker over ``once``.

A request that departed from its recording fails the test even when the test asserted nothing
about the run it failed: a replay that no longer replays is no test of the agent. A test about
such departures says so with ``@pytest.mark.cassette(may_depart=True)``.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from pathlib import Path
from typing import Any, get_args

import pytest

from workbench.cassette import Cassette, CassetteMode
from workbench.errors import UsageError
from workbench.models.base import Model

__all__ = ["model_cassette"]


def pytest_addoption(parser: pytest.Parser) -> None:
    """``--cassette-mode``: the mode of every `model_cassette` in the run."""
    parser.addoption(
        "--cassette-mode",
        choices=get_args(CassetteMode),
        default=None,
        help="workbench model cassettes: once (default), replay (no recording) or record (again)",
    )


def pytest_configure(config: pytest.Config) -> None:
    """Declare the ``cassette`` marker (so ``--strict-markers`` accepts it)."""
    config.addinivalue_line(
        "markers",
        "cassette(path=None, mode=None, redact=(), may_depart=False): the workbench model "
        "cassette of this test",
    )


@pytest.fixture
def model_cassette(request: pytest.FixtureRequest) -> Callable[..., Cassette]:
    """``model_cassette(model)``: ``model`` wrapped in this test's cassette (see the module).

    A second call in the same test makes a second cassette (``<name>-2.json``), so two agents in
    one test keep their recordings apart. A request that departed from a recording is shown
    beside the test when it fails ("Captured cassette"): the run that sent it failed with the
    divergence, and ``assert result.output == ...`` said only ``assert None == ...``.
    """
    marker = request.node.get_closest_marker("cassette")
    options: dict[str, Any] = dict(marker.kwargs) if marker is not None else {}
    mode: CassetteMode = request.config.getoption("--cassette-mode") or options.get("mode", "once")
    here = Path(str(request.node.path)).parent
    chosen = options.get("path")
    # a relative marker path is taken from the test file, as the default is: the same cassette
    # whichever directory pytest is started from
    base = here / chosen if chosen else _default_path(request)
    made: list[Cassette] = request.node.stash.setdefault(_MADE, [])

    def wrap(model: Model | None = None) -> Cassette:
        path = base
        if made:
            path = path.with_name(f"{path.stem}-{len(made) + 1}{path.suffix}")
        _claim(request, path)
        cassette = Cassette(path, model, mode=mode, redact=options.get("redact", ()))
        made.append(cassette)
        return cassette

    return wrap


_MADE = pytest.StashKey[list[Cassette]]()
"""The cassettes a test made, for its report."""


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """A failed test's report shows where its cassettes' requests departed from the recording.

    A test that passed with such a departure fails (as pytest's own strict xfail turns a pass
    into a failure), unless its marker says ``may_depart=True``: the run that sent the request
    failed, and a test that did not look at it would pass on an agent that no longer works.
    """
    report = yield
    if report.when != "call":
        return report
    departures = [d for cassette in item.stash.get(_MADE, []) for d in cassette.departures]
    if report.failed:
        for departed in departures:
            report.sections.append(("Captured cassette call", f"ReplayDivergence: {departed}"))
    elif report.passed and departures and not _may_depart(item):
        report.outcome = "failed"
        report.longrepr = "\n\n".join(
            [
                f"{_requests(len(departures))} departed from the cassette, and the run that "
                "sent it failed, though the test passed. Record again (pytest "
                "--cassette-mode=record) if the change is meant, or mark the test "
                "@pytest.mark.cassette(may_depart=True) if it is about departures.",
                *(f"ReplayDivergence: {departed}" for departed in departures),
            ]
        )
    return report


def _requests(count: int) -> str:
    return "a request" if count == 1 else f"{count} requests"


def _may_depart(item: pytest.Item) -> bool:
    marker = item.get_closest_marker("cassette")
    return marker is not None and marker.kwargs.get("may_depart", False) is True


_OWNERS = pytest.StashKey[dict[Path, str]]()
"""Which test each cassette file of this pytest run belongs to."""


def _claim(request: pytest.FixtureRequest, path: Path) -> None:
    """Make ``path`` this test's cassette, or fail if another test of this run has it.

    Test names are made file names by replacing what a file name cannot hold, so two tests
    (``test_op[2+3]``, ``test_op[2*3]``) can land on one file; the second would replay the
    first's answers or overwrite them.
    """
    owners = request.config.stash.setdefault(_OWNERS, {})
    test = request.node.nodeid
    owner = owners.setdefault(path.resolve(), test)
    if owner != test:
        raise UsageError(
            f"the cassette {path} of {test} is already {owner}'s: give one of them its own "
            'file with @pytest.mark.cassette(path="...")'
        )


def _default_path(request: pytest.FixtureRequest) -> Path:
    test_file = Path(str(request.node.path))
    name = re.sub(r"[^\w.-]+", "_", request.node.name).strip("_")
    return test_file.parent / "cassettes" / test_file.stem / f"{name}.json"
