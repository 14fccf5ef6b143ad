"""`RunsBrowser` and `RunsView` driven from Python over a store of the eval's runs.

The traits are set as the page sets them (the browser tests click the same controls in
chromium: tests/test_browser_runs.py); what is checked is what the page would be sent.
"""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from pathlib import Path

import ipywidgets as widgets
import pytest

import workbench as wb
from tests._failing_team import team
from workbench.demo import demo_agent, eval_agent, eval_task, run_demo, run_eval
from workbench.models.prices import dollars
from workbench.notebook import RunsBrowser, RunsView, TraceExplorer, compare_html
from workbench.notebook.runs_view import row_cells
from workbench.runlist import StoreRuns


@pytest.fixture(scope="module")
def store(tmp_path_factory: pytest.TempPathFactory) -> wb.RunStore:
    store = wb.RunStore(tmp_path_factory.mktemp("runs") / "runs.sqlite")
    run_eval(120, store)
    return store


@pytest.fixture
def browser(store: wb.RunStore) -> Iterator[RunsBrowser]:
    browser = RunsBrowser(store, live=False)
    yield browser
    browser.close()


def _wait_until(condition: object, seconds: float = 10.0) -> None:
    """Wait (bounded) for the browser's watcher thread to have redrawn."""
    deadline = time.monotonic() + seconds
    pause = threading.Event()
    while not condition() and time.monotonic() < deadline:  # type: ignore[operator]
        pause.wait(0.05)


def test_it_opens_on_the_newest_page_and_sends_only_that_page(browser: RunsBrowser) -> None:
    table = browser.table
    assert (table.total, len(table.rows), table.offset) == (120, 25, 0)
    assert table.rows[0]["started"] >= table.rows[-1]["started"]  # newest first
    assert table.agents == ["shopper"] and table.tools == ["apply_discount", "price"]
    state = {k: v for k, v in table.get_state().items() if k not in ("_esm", "_css")}
    assert len(json.dumps(state)) < 20_000  # a page, not the store


def test_filters_from_the_page(browser: RunsBrowser, store: wb.RunStore) -> None:
    table = browser.table
    table.status = "failed"
    failed = store.count(wb.RunFilter(status="failed"))
    assert table.total == failed > 0 and {r["status"] for r in table.rows} == {"failed"}
    assert "in shopper: ConnectionError: the model server closed" in table.rows[0]["first_error"]
    table.status = ""
    table.errors_only = True
    assert table.total == store.count(wb.RunFilter(errors=True))
    table.query = "unicorn"
    assert table.total == store.count(wb.RunFilter(errors=True, text="unicorn")) > 0
    table.tool = "apply_discount"
    assert table.total == 0 and table.rows == []
    table.tool, table.query, table.errors_only = "", "", False
    assert table.total == 120


def test_a_run_of_a_model_with_no_price_costs_a_dash_as_an_unknown_cost_does(
    tmp_path: Path,
) -> None:
    """A scripted (or replayed) model's calls cost 0: "$0" beside the "–" of an unknown cost
    read as a price known to be nothing."""
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        run_demo(demo_agent(store=store))
        run_eval(1, store)
        rows = {r.agent_name: r for r in store.find()}
    scripted, priced = rows["calculator"], rows["shopper"]
    assert scripted.cost == 0.0 and row_cells(scripted)["cost"] == "–"
    assert row_cells(scripted.model_copy(update={"cost": None}))["cost"] == "–"
    assert priced.cost and row_cells(priced)["cost"] == dollars(priced.cost) == "$0.000058"


def test_a_filter_it_cannot_read_is_a_note_and_the_list_stays(browser: RunsBrowser) -> None:
    table = browser.table
    table.since = "about a week"
    assert "'about a week' is not a time" in table.note and table.total == 120
    table.since = "1h"
    assert table.note == "" and table.total == 120
    with pytest.raises(ValueError, match="unknown status 'lost'"):
        browser.filter(status="lost")


def test_pages_and_sorting(browser: RunsBrowser) -> None:
    table = browser.table
    first = [r["id"] for r in table.rows]
    table.offset = 100
    assert len(table.rows) == 20 and not {r["id"] for r in table.rows} & set(first)
    table.offset = 500  # past the end: the last page
    assert table.offset == 100
    browser._on_message(None, {"type": "sort", "column": "errors"}, None)
    assert (table.sort, table.descending, table.offset) == ("errors", True, 0)
    assert table.rows[0]["errors"] >= table.rows[-1]["errors"]
    browser._on_message(None, {"type": "sort", "column": "errors"}, None)  # again: the other way
    assert table.descending is False and table.rows[0]["errors"] == 0
    browser._on_message(None, {"type": "sort", "column": "colour"}, None)
    assert "cannot sort runs by 'colour'" in table.note


def test_a_row_opens_in_the_explorer_and_two_compare(
    browser: RunsBrowser, store: wb.RunStore
) -> None:
    browser.filter(status="failed")
    failed = browser.table.rows[0]["id"]
    browser.table.opened = failed  # a click on the row
    assert isinstance(browser.explorer, TraceExplorer)
    assert isinstance(browser.opened_run, wb.RunResult) and browser.opened_run.run_id == failed
    assert browser.explorer in browser.pane.children
    assert "ConnectionError" in browser.pane.children[0].value  # the run's summary above it

    browser.filter(status="completed", errors=False)
    ok = browser.table.rows[0]["id"]
    browser.table.picked = [failed, ok]
    browser._on_message(None, {"type": "compare"}, None)
    (html,) = [child.value for child in browser.pane.children]
    assert failed in html and ok in html and "step 2" in html
    with pytest.raises(ValueError, match="no run 'run_nope'"):
        browser.compare(failed, "run_nope")
    browser.table.opened = "run_nope"
    assert browser.table.note.startswith("cannot open run_nope: RunNotFound")


def test_two_ticked_runs_compare_original_first_whichever_was_ticked_first(
    tmp_path: Path,
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = eval_agent(store=store)
    original = agent.run_sync(*eval_task(13)[:1])  # its model server drops it at step 2
    other = agent.run_sync(*eval_task(1)[:1])
    rerun = agent.rerun_sync(original.snapshots[1])
    browser = RunsBrowser(store, live=False)
    try:
        for ticked in ([rerun.run_id, original.run_id], [original.run_id, rerun.run_id]):
            browser.table.picked = ticked
            browser._on_message(None, {"type": "compare"}, None)
            (html,) = [child.value for child in browser.pane.children]
            assert "b is a re-run of a from step 2" in html, ticked
        browser.table.picked = [other.run_id, original.run_id]  # unrelated: the older is a
        browser._on_message(None, {"type": "compare"}, None)
        (html,) = [child.value for child in browser.pane.children]
        assert html.index(original.run_id) < html.index(other.run_id)
        browser.compare(other.run_id, original.run_id)  # from code: as the caller says
        (html,) = [child.value for child in browser.pane.children]
        assert html.index(other.run_id) < html.index(original.run_id)
    finally:
        browser.close()


def test_a_run_opened_with_an_agent_can_be_re_run(store: wb.RunStore) -> None:
    browser = RunsBrowser(store, agent=eval_agent(store=store), live=False)
    try:
        browser.open_run(browser.table.rows[0]["id"])
        (buttons,) = [c for c in browser.pane.children if isinstance(c, widgets.HBox)]
        button = next(b for b in buttons.children if b.description == "Re-run from a step…")
        button.click()
        assert type(browser.pane.children[-2]).__name__ == "RerunPanel"  # where it was clicked,
        assert browser.pane.children[-1] is browser.explorer  # above the long explorer
        button.click()  # again: still the one panel
        panels = [c for c in browser.pane.children if type(c).__name__ == "RerunPanel"]
        assert len(panels) == 1
    finally:
        browser.close()


def test_runs_that_start_while_it_is_open_appear(tmp_path: Path) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    run_eval(3, store)
    browser = RunsBrowser(store, poll=0.05)
    try:
        run_eval(2, store)  # in this process, through the same store
        _wait_until(lambda: browser.table.total == 5)
        assert browser.table.total == 5
        with wb.RunStore(tmp_path / "runs.sqlite") as other:  # another writer
            eval_agent(store=other).run_sync("Task 7: what does one eggs cost with code NONE?")
        _wait_until(lambda: browser.table.total == 6)
        assert browser.table.total == 6
    finally:
        browser.close()
    assert browser._watcher is not None
    browser._watcher.join(5)
    assert not browser._watcher.is_alive()


def test_run_text_is_sent_as_text_and_drawn_escaped(tmp_path: Path) -> None:
    markup = "<img src=x onerror=alert(1)>"

    @wb.tool
    def fetch(url: str) -> str:
        """Fetch a page."""
        raise ValueError(markup)

    store = wb.RunStore(tmp_path / "runs.sqlite")

    def run(prompt: str) -> wb.RunResult:
        model = wb.ScriptedModel([wb.ModelResponse.tool_call("fetch", {"url": markup}), markup])
        return wb.Agent(model=model, tools=[fetch], store=store, name=markup).run_sync(prompt)

    a, b = run(markup), run("again")
    view = RunsView(StoreRuns(store))
    row = view.page().rows[0]
    assert markup in row["first_error"] and row["agent"] == markup  # text, for textContent
    html = compare_html(store.load(a.run_id), store.load(b.run_id))
    assert markup not in html and "&lt;img src=x onerror=alert(1)&gt;" in html


def test_sub_runs_under_their_run_show_the_tree_s_steps_as_its_tokens_and_errors(
    tmp_path: Path,
) -> None:
    """The failing team: a lead (2 steps) asks a researcher (2) who asks a digger (4)."""
    store = wb.RunStore(tmp_path / "runs.sqlite")
    team(store=store).run_sync("hat")
    browser = RunsBrowser(store, live=False)
    try:
        assert sorted(r["steps"] for r in browser.table.rows) == [2, 2, 4]
        lead = next(r for r in browser.table.rows if r["depth"] == 0)
        browser.table.rollup = True
        (tree,) = browser.table.rows
        assert (tree["steps"], tree["subruns"], tree["errors"]) == (8, 2, 1)
        assert tree["tokens"] == lead["tokens"]  # the lead's usage holds its sub-runs'
    finally:
        browser.close()
