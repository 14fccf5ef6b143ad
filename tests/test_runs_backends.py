"""The run list over a trace backend: a real Phoenix (SQLite and PostgreSQL) and Jaeger's API.

The eval's runs are written twice, by the same agents: into a run store and, as spans with
their content, to the backend. The same filters must then find the same runs in both (by trace
id), a row must open as the whole trace, and a run must re-run from a step of it.

Phoenix runs as ``phoenix serve`` on loopback (tests/test_phoenix_e2e.py), on its default SQLite
and on PostgreSQL: a throwaway cluster of Debian's PostgreSQL (installed by
``scripts/install-postgres``) on a free port in a temporary folder, run as the unprivileged
``postgres`` user when the tests run as root. Jaeger cannot be installed here, so its query API
v3 is answered by a small server on loopback that keeps the traces as Jaeger documents them
(OTLP JSON under ``result``) and honours the documented query parameters, checking each.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import socket
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator
from datetime import datetime
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

import httpx
import pandas as pd
import pytest

import workbench as wb
from tests.test_phoenix_e2e import Phoenix
from workbench.backends import JaegerRuns, PhoenixRuns
from workbench.demo import eval_agent, eval_task
from workbench.notebook import RunsBrowser, TraceExplorer
from workbench.telemetry.files import otlp_json

RUNS = 40
"""The eval's first tasks: completed runs, tool errors (an unknown item, an expired code), and
a failed run (the model server drops) among them."""


class Eval:
    """The eval's runs, in a store and as spans (content captured)."""

    def __init__(self, store: wb.RunStore, telemetry: wb.Telemetry) -> None:
        agent = eval_agent(store=store, telemetry=telemetry)
        self.results = [agent.run_sync(p, metadata=m) for p, m in map(eval_task, range(RUNS))]
        self.store = store
        self.telemetry = telemetry
        self.by_trace = {r.trace_id: r for r in self.results}

    def trace_ids(self, **filters: Any) -> set[str]:
        """The trace ids of the stored runs ``filters`` keep (what a backend must find too)."""
        return set(wb.runs(self.store, **filters)["trace_id"])


def _wait_for_roots(url: str, count: int) -> None:
    """Phoenix ingests in the background: wait (bounded) until every run's root span is in."""
    deadline = time.monotonic() + 90
    pause = threading.Event()
    while time.monotonic() < deadline:
        answer = httpx.get(
            f"{url}/v1/projects/default/spans/otlpv1",
            params={"parent_id": "null", "limit": 1000},
            timeout=10,
        )
        if len(answer.json()["data"]) >= count:
            return
        pause.wait(0.3)
    raise TimeoutError(f"Phoenix at {url} did not ingest {count} runs within 90 s")


# -- PostgreSQL ----------------------------------------------------------------------------------


def _initdb() -> Path:
    found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
    if not found:
        done = subprocess.run(
            [str(Path(__file__).parent.parent / "scripts" / "install-postgres")],
            capture_output=True,
            text=True,
            timeout=600,
            check=False,
        )
        found = sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"))
        if not found:
            why = (done.stderr or done.stdout).strip().splitlines()[-1:] or ["no output"]
            pytest.skip(f"PostgreSQL could not be installed by scripts/install-postgres: {why[0]}")
    return Path(found[-1]).parent


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free loopback port; yields its URL."""
    bin_dir = _initdb()
    as_user: list[str] = []
    home = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(home, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = home / "data", _free_port()

    def pg(*command: str) -> None:
        subprocess.run([*as_user, *command], check=True, capture_output=True, timeout=120)

    pg(str(bin_dir / "initdb"), "-D", str(data), "-A", "trust", "-U", "workbench", "--no-sync")
    options = f"-p {port} -k {home} -c listen_addresses=127.0.0.1 -c fsync=off"
    pg(
        str(bin_dir / "pg_ctl"),
        "-D",
        str(data),
        "-o",
        options,
        "-l",
        str(home / "log"),
        "-w",
        "start",
    )
    try:
        yield f"postgresql://workbench@127.0.0.1:{port}/postgres"
    finally:
        pg(str(bin_dir / "pg_ctl"), "-D", str(data), "-m", "immediate", "stop")
        shutil.rmtree(home, ignore_errors=True)


# -- Phoenix on SQLite and on PostgreSQL -----------------------------------------------------------


@pytest.fixture(scope="module", params=["sqlite", "postgresql"])
def phoenix(
    request: pytest.FixtureRequest, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[tuple[str, Eval]]:
    """A Phoenix holding the eval's runs; yields its URL and the runs."""
    env = {}
    if request.param == "postgresql":
        env["PHOENIX_SQL_DATABASE_URL"] = request.getfixturevalue("postgres")
    server = Phoenix(tmp_path_factory.mktemp(f"phoenix-{request.param}"), env)
    try:
        server.wait_ready()
        telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=server.url)
        runs = Eval(wb.RunStore(tmp_path_factory.mktemp("store") / "runs.sqlite"), telemetry)
        telemetry.shutdown(timeout=60)
        _wait_for_roots(server.url, RUNS)
        yield server.url, runs
    finally:
        server.stop()


def test_a_phoenix_project_lists_as_its_runs(phoenix: tuple[str, Eval]) -> None:
    url, runs = phoenix
    frame = wb.runs(source=f"phoenix+{url}")
    assert set(frame["run"]) == set(runs.by_trace) and len(frame) == RUNS
    stored = wb.runs(runs.store).set_index("trace_id")
    for row in frame.itertuples():
        run = stored.loc[row.run]
        assert (row.agent, row.status, row.tools, row.steps) == (
            run.agent,
            run.status,
            run.tools,
            run.steps,
        ), row.run
        assert (row.tokens, row.errors) == (run.tokens, run.errors), row.run
    # a trace starts when its run span opened, a stored run when its state was made: in order
    by_start = frame.sort_values("started")["run"].tolist()
    assert by_start == stored.sort_values("started").index.tolist()
    for row in frame.itertuples():  # the first error, as the store words it
        first = stored.loc[row.run].first_error
        assert row.first_error == first or (pd.isna(row.first_error) and pd.isna(first)), row.run


@pytest.mark.parametrize(
    "filters",
    [
        {"status": "failed"},
        {"errors": True},
        {"errors": False},
        {"tool": "apply_discount"},
        {"agent": "shopper", "errors": True},
        {"text": "unicorn"},
    ],
    ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()),
)
def test_the_same_filter_finds_the_same_runs_in_the_store_and_in_phoenix(
    phoenix: tuple[str, Eval], filters: dict[str, Any]
) -> None:
    url, runs = phoenix
    found = set(wb.runs(source=f"phoenix+{url}", **filters)["run"])
    assert found == runs.trace_ids(**filters) and found


def test_a_time_range_is_asked_of_phoenix(phoenix: tuple[str, Eval]) -> None:
    url, runs = phoenix
    middle = runs.results[RUNS // 2].state.created_at
    assert set(wb.runs(source=f"phoenix+{url}", since=middle)["run"]) == runs.trace_ids(
        since=middle
    )
    assert wb.runs(source=f"phoenix+{url}", until="2000-01-01").empty


def test_the_browser_over_phoenix_opens_a_trace_and_re_runs_from_its_step(
    phoenix: tuple[str, Eval],
) -> None:
    url, runs = phoenix
    agent = eval_agent()
    browser = RunsBrowser(f"phoenix+{url}", agent=agent, live=False)
    try:
        assert browser.table.total == RUNS and browser.table.complete
        assert browser.table.agents == ["shopper"]
        browser.table.status = "failed"
        (row,) = browser.table.rows
        browser.table.opened = row["id"]
        assert isinstance(browser.explorer, TraceExplorer)
        trace = browser.opened_run
        assert isinstance(trace, wb.Trace) and trace.trace_id == row["id"]
        original = runs.by_trace[row["id"]]
        assert len(trace.spans) == len(runs.telemetry.trace(row["id"]).spans)
        picker, button = browser.pane.children[0].children
        picker.value = 1
        button.click()  # re-run the failed task from its first step, with the agent as it is now
        assert browser.rerun_result is not None
        assert browser.rerun_result.state.rerun_of is not None
        assert browser.rerun_result.messages[1].text == original.messages[1].text
    finally:
        browser.close()


def test_a_listing_is_bounded_and_says_so(phoenix: tuple[str, Eval]) -> None:
    url, _ = phoenix
    source = PhoenixRuns(url, limit=5)
    assert source.count(wb.RunFilter()) == 5 and not source.complete(wb.RunFilter())
    with pytest.warns(UserWarning, match="listed the first 5 runs the filter keeps and stopped"):
        wb.runs(source=source)


def test_a_backend_that_is_down_is_one_clear_error() -> None:
    port = _free_port()
    with pytest.raises(
        wb.TraceLoadError, match=f"cannot reach http://127.0.0.1:{port}/v1/projects"
    ):
        wb.runs(source=f"phoenix+http://127.0.0.1:{port}")
    with pytest.raises(wb.UsageError, match="is not a backend"):
        wb.runs(source="zipkin+http://127.0.0.1:9411")


# -- Jaeger's query API v3, answered as documented ----------------------------------------------


class JaegerAnswers(BaseHTTPRequestHandler):
    """Jaeger's ``/api/v3`` over the spans it was given: services, traces by query, one trace.

    The query parameters are Jaeger's documented ones (``query.service_name``,
    ``query.operation_name``, ``query.start_time_min``/``max`` in RFC 3339, required,
    ``query.search_depth``, ``query.attributes`` as a JSON map); anything else is refused with a
    400, as Jaeger refuses a malformed query. Traces come newest first, at most ``search_depth``.
    """

    traces: ClassVar[dict[str, list[Any]]] = {}  # trace id -> its SDK spans
    asked: ClassVar[list[dict[str, list[str]]]] = []

    def log_message(self, *args: Any) -> None:
        """Quiet."""

    def _answer(self, status: int, body: Any) -> None:
        data = json.dumps(body).encode()
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self) -> None:
        url = urlparse(self.path)
        query = parse_qs(url.query)
        if url.path == "/api/v3/services":
            self._answer(200, {"services": ["jaeger", "workbench"]})
        elif url.path == "/api/v3/traces":
            self.asked.append(query)
            try:
                spans = self._find(query)
            except (KeyError, ValueError) as exc:
                self._answer(400, {"error": {"message": f"malformed query: {exc}"}})
                return
            self._answer(200, {"result": otlp_json(spans)} if spans else {})
        elif url.path.startswith("/api/v3/traces/") and url.path[15:] in self.traces:
            self._answer(200, {"result": otlp_json(self.traces[url.path[15:]])})
        else:
            self._answer(404, {"error": {"message": "trace not found"}})

    def _find(self, query: dict[str, list[str]]) -> list[Any]:
        assert query["query.service_name"] == ["workbench"]
        low = datetime.fromisoformat(query["query.start_time_min"][0]).timestamp() * 1e9
        high = datetime.fromisoformat(query["query.start_time_max"][0]).timestamp() * 1e9
        depth = int(query["query.search_depth"][0])
        operation = query.get("query.operation_name", [None])[0]
        wanted = json.loads(query.get("query.attributes", ["{}"])[0])
        found = []
        for spans in self.traces.values():
            start = min(s.start_time for s in spans)
            match = any(
                (operation is None or s.name == operation)
                and all(s.attributes.get(k) == v for k, v in wanted.items())
                for s in spans
            )
            if low <= start < high and match:
                found.append((start, spans))
        found.sort(key=lambda pair: -pair[0])
        return [s for _, spans in found[:depth] for s in spans]


@pytest.fixture(scope="module")
def jaeger(tmp_path_factory: pytest.TempPathFactory) -> Iterator[tuple[str, Eval]]:
    telemetry = wb.Telemetry(capture_content=True)
    runs = Eval(wb.RunStore(tmp_path_factory.mktemp("store") / "runs.sqlite"), telemetry)
    by_trace: dict[str, list[Any]] = {}
    for span in telemetry.spans:
        by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    JaegerAnswers.traces = by_trace
    server = ThreadingHTTPServer(("127.0.0.1", 0), JaegerAnswers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}", runs
    finally:
        server.shutdown()
        server.server_close()


@pytest.mark.parametrize(
    "filters",
    [
        {},
        {"status": "failed"},
        {"agent": "shopper", "errors": True},
        {"tool": "price"},
        {"text": "expired"},
    ],
    ids=lambda f: ",".join(f"{k}={v}" for k, v in f.items()) or "all",
)
def test_jaegers_traces_list_as_the_stored_runs(
    jaeger: tuple[str, Eval], filters: dict[str, Any]
) -> None:
    url, runs = jaeger
    source = JaegerRuns(url)
    source.depth = 7  # fewer than the runs: the window moves back search by search
    found = set(wb.runs(source=source, **filters)["run"])
    assert found == runs.trace_ids(**filters) and found
    asked = JaegerAnswers.asked[-1]
    assert len(JaegerAnswers.asked) >= 2 and asked["query.search_depth"] == ["7"]
    if "agent" in filters:
        assert asked["query.operation_name"] == ["invoke_agent shopper"]
    if "status" in filters:
        assert json.loads(asked["query.attributes"][0]) == {"workbench.run.status": "failed"}


def test_a_jaeger_row_opens_as_its_trace(jaeger: tuple[str, Eval]) -> None:
    url, runs = jaeger
    browser = RunsBrowser(f"jaeger+{url}/workbench", live=False)
    try:
        assert browser.table.total == RUNS
        browser.table.opened = browser.table.rows[0]["id"]
        assert isinstance(browser.opened_run, wb.Trace)
        assert browser.opened_run.trace_id in runs.by_trace
    finally:
        browser.close()
    fresh = JaegerRuns(url)  # no listing yet: the trace is loaded by its id (/api/v3/traces/ID)
    trace = fresh.open(runs.results[0].trace_id)
    assert len(trace.spans) == len(runs.telemetry.trace(runs.results[0].trace_id).spans)


def test_the_first_page_asks_phoenix_for_the_pages_it_needs_only(
    phoenix: tuple[str, Eval], monkeypatch: pytest.MonkeyPatch
) -> None:
    url, _ = phoenix
    monkeypatch.setattr("workbench.backends.ROOTS", 10)  # 10 traces a page of Phoenix's
    browser = RunsBrowser(f"phoenix+{url}", live=False)
    try:
        table = browser.table  # newest first: three pages of ten give the 25 shown, and 1 more
        assert (table.total, table.complete, len(table.rows)) == (30, False, 25)
        browser._on_message(None, {"type": "sort", "column": "tokens"}, None)  # needs them all
        assert (table.total, table.complete) == (RUNS, True)
    finally:
        browser.close()
