"""The run list over a trace backend: a real Phoenix (SQLite and PostgreSQL) and Jaeger's API.

The eval's runs are made once, by the same agent, into a run store and as spans with their
content; the spans are then sent to each backend. The same filters must find the same runs in
the store and in the backend (by trace id), a row must open as the whole trace, and a run must
re-run from a step of it.

Phoenix runs as ``phoenix serve`` on loopback (tests/_phoenix.py): the session's one on its
default SQLite (shared with tests/test_phoenix_e2e.py: these runs go to a project of their own),
and one on PostgreSQL, a throwaway cluster of Debian's PostgreSQL (installed by
``scripts/install-postgres``) on a free port in a temporary folder, run as the unprivileged
``postgres`` user when the tests run as root. On PostgreSQL Phoenix answers the questions a
listing asks of it itself (status, agent, time, metadata) with SQL of its own, so those are
asked of both; the rest of a filter is checked here on the traces, by the same code whatever
the database, and is asked of SQLite only. Jaeger cannot be installed here, so its query API v3
is answered by a small server on loopback that keeps the traces as Jaeger documents them (OTLP
JSON under ``result``) and honours the documented query parameters, checking each.
"""

from __future__ import annotations

import glob
import json
import os
import shutil
import subprocess
import tempfile
import threading
import time
from collections.abc import Iterator, Sequence
from datetime import datetime
from html import escape
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import parse_qs, urlparse

import httpx
import pandas as pd
import pytest

import workbench as wb
from tests._phoenix import Phoenix, free_port
from workbench.backends import JaegerRuns, PhoenixRuns
from workbench.demo import eval_agent, eval_task
from workbench.notebook import RunsBrowser, TraceExplorer
from workbench.telemetry.files import otlp_json

RUNS = 40
"""The eval's first tasks: completed runs, tool errors (an unknown item, an expired code), and
a failed run (the model server drops) among them."""
PROJECT = "workbench-runs"
"""The Phoenix project the eval's runs are sent to (the session's Phoenix has others)."""


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


@pytest.fixture(scope="module")
def runs(tmp_path_factory: pytest.TempPathFactory) -> Eval:
    """The eval's runs, made once for every backend, as spans of the project `PROJECT`."""
    from opentelemetry.sdk.resources import Resource
    from opentelemetry.sdk.trace import TracerProvider

    resource = Resource.create({"service.name": "workbench", "openinference.project.name": PROJECT})
    telemetry = wb.Telemetry(TracerProvider(resource=resource), capture_content=True)
    return Eval(wb.RunStore(tmp_path_factory.mktemp("store") / "runs.sqlite"), telemetry)


def _send(spans: Sequence[Any], url: str) -> None:
    """Spans to a backend's OTLP endpoint, in one request."""
    from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter
    from opentelemetry.sdk.trace.export import SpanExportResult

    exporter = OTLPSpanExporter(endpoint=f"{url}/v1/traces", timeout=60)
    try:
        assert exporter.export(spans) is SpanExportResult.SUCCESS
    finally:
        exporter.shutdown()


def _wait_for_roots(url: str, count: int) -> None:
    """Phoenix ingests in the background: wait (bounded) until every run's root span is in."""
    deadline = time.monotonic() + 90
    pause = threading.Event()
    while time.monotonic() < deadline:
        answer = httpx.get(
            f"{url}/v1/projects/{PROJECT}/spans/otlpv1",
            params={"parent_id": "null", "limit": 1000},
            timeout=10,
        )
        if answer.status_code == 200 and len(answer.json()["data"]) >= count:
            return
        pause.wait(0.3)  # 404 until the project's first span is in
    raise TimeoutError(f"Phoenix at {url} did not ingest {count} runs within 90 s")


def _holding(server: Phoenix, runs: Eval) -> str:
    """The server with the eval's runs in it; its URL."""
    _send(runs.telemetry.spans, server.url)
    _wait_for_roots(server.url, RUNS)
    return server.url


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


@pytest.fixture(scope="module")
def postgres() -> Iterator[str]:
    """A throwaway PostgreSQL cluster on a free loopback port; yields its URL."""
    bin_dir = _initdb()
    as_user: list[str] = []
    home = Path(tempfile.mkdtemp(prefix="workbench-pg-"))
    if os.geteuid() == 0:  # PostgreSQL refuses to run as root
        shutil.chown(home, "postgres", "postgres")
        as_user = ["runuser", "-u", "postgres", "--"]
    data, port = home / "data", free_port()

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


@pytest.fixture(scope="module")
def on_sqlite(phoenix: Phoenix, runs: Eval) -> str:
    """The session's Phoenix (SQLite) holding the eval's runs; its URL."""
    return _holding(phoenix, runs)


@pytest.fixture(scope="module")
def on_postgresql(
    postgres: str, runs: Eval, tmp_path_factory: pytest.TempPathFactory
) -> Iterator[str]:
    """A Phoenix on PostgreSQL holding the eval's runs; its URL."""
    server = Phoenix(tmp_path_factory.mktemp("phoenix-pg"), {"PHOENIX_SQL_DATABASE_URL": postgres})
    try:
        server.wait_ready()
        yield _holding(server, runs)
    finally:
        server.stop()


@pytest.fixture(params=["sqlite", "postgresql"])
def both(request: pytest.FixtureRequest) -> str:
    """Each Phoenix in turn (tests that ask Phoenix itself a question); its URL."""
    return str(request.getfixturevalue(f"on_{request.param}"))


def test_a_phoenix_project_lists_as_its_runs(both: str, runs: Eval) -> None:
    frame = wb.runs(source=f"phoenix+{both}/{PROJECT}")
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
        assert (row.tokens, row.errors, row.metadata) == (run.tokens, run.errors, run.metadata)
    # a trace starts when its run span opened, a stored run when its state was made: in order
    by_start = frame.sort_values("started")["run"].tolist()
    assert by_start == stored.sort_values("started").index.tolist()
    for row in frame.itertuples():  # the first error, as the store words it
        first = stored.loc[row.run].first_error
        assert row.first_error == first or (pd.isna(row.first_error) and pd.isna(first)), row.run


ASKED = [
    {"status": "failed"},
    {"metadata": {"split": "dev"}},
    {"metadata": {"item": "unicorn", "task": 5}},
    {"agent": "shopper", "metadata": {"code": "SAVE10"}},
]
"""Filters Phoenix answers itself (``status_code=``, ``attribute=``), with SQL of its own."""


def _ids(filters: dict[str, Any]) -> str:
    return ",".join(f"{k}={v}" for k, v in filters.items()) or "all"


@pytest.mark.parametrize("filters", ASKED, ids=_ids)
def test_phoenix_itself_keeps_the_runs_a_filter_asks_for(
    both: str, runs: Eval, filters: dict[str, Any], monkeypatch: pytest.MonkeyPatch
) -> None:
    source = f"phoenix+{both}/{PROJECT}"
    found = set(wb.runs(source=source, **filters)["run"])
    assert found == runs.trace_ids(**filters) and found
    # what Phoenix answered, before the filter is checked here: the same runs
    monkeypatch.setattr("workbench.backends.matches", lambda row, trace, spec: True)
    assert set(wb.runs(source=source, **filters)["run"]) == found


@pytest.mark.parametrize(
    "filters",
    [
        {"errors": True},
        {"errors": False},
        {"tool": "apply_discount"},
        {"agent": "shopper", "errors": True},
        {"text": "unicorn"},
        {"metadata": {"item": ["a", "list"]}},
    ],
    ids=_ids,
)
def test_the_rest_of_a_filter_is_checked_on_each_trace(
    on_sqlite: str, runs: Eval, filters: dict[str, Any]
) -> None:
    found = set(wb.runs(source=f"phoenix+{on_sqlite}/{PROJECT}", **filters)["run"])
    assert found == runs.trace_ids(**filters)
    assert found or filters.get("metadata")  # nothing has a list for its item


def test_a_time_range_is_asked_of_phoenix(both: str, runs: Eval) -> None:
    source = f"phoenix+{both}/{PROJECT}"
    middle = runs.results[RUNS // 2].state.created_at
    assert set(wb.runs(source=source, since=middle)["run"]) == runs.trace_ids(since=middle)
    assert wb.runs(source=source, until="2000-01-01").empty


def test_the_browser_over_phoenix_opens_a_trace_and_re_runs_from_its_step(
    on_sqlite: str, runs: Eval
) -> None:
    agent = eval_agent()
    browser = RunsBrowser(f"phoenix+{on_sqlite}/{PROJECT}", agent=agent, live=False)
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
        buttons, rerun = browser.pane.children[:2]  # "Step through…", then the re-run row
        assert [b.description for b in buttons.children] == ["Step through…"]
        picker, button = rerun.children
        picker.value = 1
        button.click()  # re-run the failed task from its first step, with the agent as it is now
        assert browser.rerun_result is not None
        assert browser.rerun_result.state.rerun_of is not None
        assert browser.rerun_result.messages[1].text == original.messages[1].text
    finally:
        browser.close()


def test_a_listing_is_bounded_and_says_so(on_sqlite: str) -> None:
    source = PhoenixRuns(on_sqlite, PROJECT, limit=5)
    assert source.count(wb.RunFilter()) == 5 and not source.complete(wb.RunFilter())
    with pytest.warns(UserWarning, match="listed the first 5 runs the filter keeps and stopped"):
        wb.runs(source=source)


def test_the_first_page_asks_phoenix_for_the_pages_it_needs_only(
    on_sqlite: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr("workbench.backends.ROOTS", 10)  # 10 traces a page of Phoenix's
    browser = RunsBrowser(f"phoenix+{on_sqlite}/{PROJECT}", live=False)
    try:
        table = browser.table  # newest first: three pages of ten give the 25 shown, and 1 more
        assert (table.total, table.complete, len(table.rows)) == (30, False, 25)
        browser._on_message(None, {"type": "sort", "column": "tokens"}, None)  # needs them all
        assert (table.total, table.complete) == (RUNS, True)
    finally:
        browser.close()


def test_a_backend_that_is_down_is_one_clear_error() -> None:
    port = free_port()
    with pytest.raises(
        wb.TraceLoadError, match=f"cannot reach http://127.0.0.1:{port}/v1/projects"
    ):
        wb.runs(source=f"phoenix+http://127.0.0.1:{port}")
    with pytest.raises(wb.UsageError, match="is not a backend"):
        wb.runs(source="zipkin+http://127.0.0.1:9411")
    with pytest.raises(wb.UsageError, match=r"'jaeger\+notaurl' is not a backend"):
        wb.runs(source="jaeger+notaurl")  # read as a store's path, it listed no runs


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
                and all(_text(s.attributes.get(k)) == v for k, v in wanted.items())
                for s in spans
            )
            if low <= start < high and match:
                found.append((start, spans))
        found.sort(key=lambda pair: -pair[0])
        return [s for _, spans in found[:depth] for s in spans]


def _text(value: Any) -> str | None:
    """A tag's value as Jaeger compares it with a query's: as text."""
    return None if value is None else json.dumps(value) if isinstance(value, bool) else str(value)


@pytest.fixture(scope="module")
def jaeger(runs: Eval) -> Iterator[str]:
    """Jaeger's API over the eval's runs; its URL."""
    by_trace: dict[str, list[Any]] = {}
    for span in runs.telemetry.spans:
        by_trace.setdefault(format(span.context.trace_id, "032x"), []).append(span)
    JaegerAnswers.traces = by_trace
    server = ThreadingHTTPServer(("127.0.0.1", 0), JaegerAnswers)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
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
        {"metadata": {"split": "dev"}},
        {"status": "failed", "metadata": {"task": 13, "item": "dates"}},
    ],
    ids=_ids,
)
def test_jaegers_traces_list_as_the_stored_runs(
    jaeger: str, runs: Eval, filters: dict[str, Any]
) -> None:
    source = JaegerRuns(jaeger)
    source.depth = 7  # fewer than the runs: the window moves back search by search
    found = set(wb.runs(source=source, **filters)["run"])
    assert found == runs.trace_ids(**filters) and found
    asked = JaegerAnswers.asked[-1]
    assert len(JaegerAnswers.asked) >= 2 and asked["query.search_depth"] == ["7"]
    if "agent" in filters:
        assert asked["query.operation_name"] == ["invoke_agent shopper"]
    tags = {f"workbench.run.metadata.{k}": str(v) for k, v in filters.get("metadata", {}).items()}
    if "status" in filters:
        tags["workbench.run.status"] = "failed"
    assert json.loads(asked.get("query.attributes", ["{}"])[0]) == tags  # asked of Jaeger itself


def test_a_jaeger_row_opens_as_its_trace_and_two_compare(jaeger: str, runs: Eval) -> None:
    browser = RunsBrowser(f"jaeger+{jaeger}/workbench", live=False)
    try:
        assert browser.table.total == RUNS
        browser.table.opened = browser.table.rows[0]["id"]
        assert isinstance(browser.opened_run, wb.Trace)
        assert browser.opened_run.trace_id in runs.by_trace
        stepped = browser.step_through().result  # its run, rebuilt from the spans
        run = runs.by_trace[browser.opened_run.trace_id]
        assert [s.index for s in stepped.steps] == [s.index for s in run.steps]
        assert stepped.status == run.status and stepped.run_id == run.run_id
        failed = runs.trace_ids(status="failed").pop()  # beside a good run: as the runs compare
        good = runs.trace_ids(status="completed", errors=False).pop()
        browser.compare(failed, good)
        (shown,) = [child.value for child in browser.pane.children]
        expected = wb.diff(runs.by_trace[failed], runs.by_trace[good])
        assert escape(expected.verdict) in shown and expected.first_divergence is not None
        assert runs.by_trace[failed].run_id in shown and runs.by_trace[good].run_id in shown
    finally:
        browser.close()
    fresh = JaegerRuns(jaeger)  # no listing yet: the trace is loaded by its id (/api/v3/traces/ID)
    trace = fresh.open(runs.results[0].trace_id)
    assert len(trace.spans) == len(runs.telemetry.trace(runs.results[0].trace_id).spans)
