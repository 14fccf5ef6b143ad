"""A fresh page and kernel for each journey, on the session's server and browser."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import Any

import pytest

from tests.journeys.harness import Interface, Jupyter, Notebook


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every journey drives the real browser."""
    for item in items:
        if "journeys" in item.nodeid:
            item.add_marker(pytest.mark.browser)


@pytest.hookimpl(wrapper=True)
def pytest_runtest_makereport(item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
    """Keep each phase's report on the item, so a fixture can tell that its test failed."""
    report = yield
    setattr(item, f"report_{report.when}", report)
    return report


OpenNotebook = Callable[..., Notebook]


@pytest.fixture
def open_notebook(
    browser: Any, jupyter: Jupyter, request: pytest.FixtureRequest
) -> Iterator[OpenNotebook]:
    """Open a notebook of cell sources in a new page; its page and kernel end with the test.

    A journey that fails leaves a screenshot of the page as it was, ``<notebook>-failed.png``.
    """
    opened: list[Notebook] = []

    def open_(name: str, cells: Sequence[str], *, ui: Interface = "lab") -> Notebook:
        notebook = jupyter.open(browser.new_page(), name, cells, ui=ui)
        opened.append(notebook)
        return notebook

    yield open_
    call = getattr(request.node, "report_call", None)
    for notebook in opened:
        if call is not None and call.failed:  # the last cell run, where the journey stopped
            notebook.shot("failed", notebook.cell(-1) if notebook.ran else None)
        notebook.page.close()
        jupyter.shut_down_kernels(notebook.name)
