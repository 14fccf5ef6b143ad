"""OTLP/HTTP export against real sockets on loopback: a collector that answers, one that nobody
listens on, and one that accepts and never answers; and the CLI's ``export`` and ``push``.

No sleeps: the tests wait on events the servers set, and the only time bounds are generous
("the exit is bounded": far above what a normal run takes, far below what blocking would cost).
"""

from __future__ import annotations

import json
import logging
import socket
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from opentelemetry.proto.collector.trace.v1.trace_service_pb2 import (
    ExportTraceServiceRequest,
    ExportTraceServiceResponse,
)
from opentelemetry.sdk.trace import TracerProvider

import workbench as wb
from tests.test_telemetry import calculator, run_with_pause
from workbench.cli import main
from workbench.telemetry import names as n
from workbench.telemetry import otlp_traces_endpoint


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@dataclass
class Collector:
    """An OTLP/HTTP receiver: decodes each request and keeps its spans and headers."""

    url: str
    names: list[str] = field(default_factory=list)
    trace_ids: set[str] = field(default_factory=set)
    headers: list[dict[str, str]] = field(default_factory=list)
    attributes: list[dict[str, str]] = field(default_factory=list)
    """Each span's string attributes, as they arrived."""


@pytest.fixture
def collector() -> Iterator[Collector]:
    received = Collector("")

    class Handler(BaseHTTPRequestHandler):
        def do_POST(self) -> None:
            body = self.rfile.read(int(self.headers["Content-Length"]))
            request = ExportTraceServiceRequest.FromString(body)
            for resource in request.resource_spans:
                for scope in resource.scope_spans:
                    for span in scope.spans:
                        received.names.append(span.name)
                        received.attributes.append(
                            {a.key: a.value.string_value for a in span.attributes}
                        )
                        received.trace_ids.add(span.trace_id.hex())
            received.headers.append({k.lower(): v for k, v in self.headers.items()})
            answer = ExportTraceServiceResponse().SerializeToString()
            self.send_response(200 if self.path == "/v1/traces" else 404)
            self.send_header("Content-Type", "application/x-protobuf")
            self.send_header("Content-Length", str(len(answer)))
            self.end_headers()
            self.wfile.write(answer)

        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    received.url = f"http://127.0.0.1:{server.server_address[1]}"
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield received
    server.shutdown()
    server.server_close()


class HangingEndpoint:
    """Accepts connections, reads the request, and answers nothing until released."""

    def __init__(self) -> None:
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen()
        self.sock.settimeout(0.2)
        self.url = f"http://127.0.0.1:{self.sock.getsockname()[1]}/v1/traces"
        self.received = threading.Event()
        self.released = threading.Event()
        self._thread = threading.Thread(target=self._serve, daemon=True)
        self._thread.start()

    def _serve(self) -> None:
        connections = []
        deadline = time.monotonic() + 120  # bounded: the server stops by itself
        while not self.released.is_set() and time.monotonic() < deadline:
            try:
                conn, _ = self.sock.accept()
            except TimeoutError:
                continue
            conn.recv(65536)
            connections.append(conn)
            self.received.set()
        for conn in connections:
            conn.close()
        self.sock.close()

    def release(self) -> None:
        self.released.set()
        self._thread.join(10)


def test_spans_reach_a_collector_with_headers_from_the_environment(
    collector: Collector, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", collector.url)
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_HEADERS", "x-workbench-test=yes")
    telemetry = wb.Telemetry()
    assert telemetry.endpoint == f"{collector.url}/v1/traces"
    paused, done = run_with_pause(telemetry)
    stats = telemetry.shutdown(timeout=10)
    assert stats is not None and stats.exported == stats.queued == len(telemetry.spans)
    assert sorted(collector.names) == sorted(s.name for s in telemetry.spans)
    assert collector.trace_ids == {paused.trace_id, done.trace_id}
    assert all(h.get("x-workbench-test") == "yes" for h in collector.headers)
    assert {h["content-type"] for h in collector.headers} == {"application/x-protobuf"}


def test_flush_delivers_what_is_queued(collector: Collector) -> None:
    telemetry = wb.Telemetry(otlp_endpoint=collector.url, schedule_delay=60)
    calculator(telemetry, ["hi"]).run_sync("hello")
    assert telemetry.flush(timeout=10)
    assert sorted(collector.names) == sorted(s.name for s in telemetry.spans)
    telemetry.shutdown()


def test_endpoint_settings(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    assert otlp_traces_endpoint() is None and wb.Telemetry().endpoint is None
    assert otlp_traces_endpoint("http://h:4318/") == "http://h:4318/v1/traces"
    assert otlp_traces_endpoint("http://h:4318/custom/path") == "http://h:4318/custom/path"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", "http://base:4318")
    assert otlp_traces_endpoint() == "http://base:4318/v1/traces"
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "http://traces:9999/t")
    assert otlp_traces_endpoint() == "http://traces:9999/t"
    assert wb.Telemetry(export_timeout=1).endpoint == "http://traces:9999/t"


@pytest.mark.parametrize(
    "given",
    ["notaurl", "localhost:4318", "ftp://h/x", "http://", "http://h:99999", "http://u:hunter2@h:x"],
)
def test_an_endpoint_that_is_no_http_url_is_refused_when_given(
    given: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    """It was taken, and failed only at the first export, in a warning at exit ("No scheme
    supplied", after a posting to 'notaurl/v1/traces'): the run's spans went nowhere."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_ENDPOINT", raising=False)
    provider = TracerProvider()
    with pytest.raises(wb.InvalidURL, match=r"^otlp_endpoint: '.*' is not (a|an http).* URL"):
        wb.Telemetry(tracer_provider=provider, otlp_endpoint=given)
    assert provider._active_span_processor._span_processors == ()  # left as it was given
    with pytest.raises(ValueError) as raised:  # what it has always been, too
        wb.Telemetry(otlp_endpoint=given)
    assert "hunter2" not in str(raised.value)
    assert wb.Telemetry(otlp_endpoint=False).endpoint is None  # nowhere: no URL to check


@pytest.mark.parametrize(
    "variable", ["OTEL_EXPORTER_OTLP_ENDPOINT", "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT"]
)
def test_an_endpoint_variable_that_is_no_http_url_is_named(
    variable: str,
    monkeypatch: pytest.MonkeyPatch,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """``localhost:4318`` (no scheme) is how an address is often written; the variable is named,
    since nothing in the code the person wrote says where the URL came from."""
    monkeypatch.delenv("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", raising=False)
    monkeypatch.setenv(variable, "localhost:4318")
    with pytest.raises(wb.InvalidURL, match=f"^{variable}: 'localhost:4318' is not an http"):
        wb.Telemetry()
    assert wb.Telemetry(otlp_endpoint=False).endpoint is None
    assert wb.Telemetry(otlp_endpoint="http://h:4318").endpoint == "http://h:4318/v1/traces"
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    assert main(["demo"]) == 2  # one line, before anything ran
    said = capsys.readouterr()
    assert said.err == (
        f"workbench: {variable}: 'localhost:4318' is not an http:// or https:// URL\n"
    )
    assert said.out == "" and not (tmp_path / "workbench-demo").exists()


def test_a_refused_endpoint_costs_the_run_nothing_and_reports_the_drops(
    caplog: pytest.LogCaptureFixture,
) -> None:
    caplog.set_level(logging.WARNING)
    telemetry = wb.Telemetry(
        otlp_endpoint=f"http://127.0.0.1:{free_port()}/v1/traces",
        export_timeout=2,
        max_export_batch_size=1,
        flush_timeout=1,
    )
    paused, done = run_with_pause(telemetry)
    assert done.status is wb.ExecutionStatus.COMPLETED
    spans = len(telemetry.spans)
    started = time.perf_counter()
    with pytest.warns(wb.TelemetryExportWarning, match=rf"\b{spans} of {spans} spans were dropped"):
        stats = telemetry.shutdown()
    assert time.perf_counter() - started < 20  # bounded exit (the flush bound is 1 s)
    assert stats is not None and (stats.exported, stats.queued) == (0, spans)
    assert sum(s.timing.telemetry for s in [*paused.steps, *done.steps]) < 5
    # said once, by us: not also the exporter's "Transient error ... retrying" for each batch
    assert [r.name for r in caplog.records if r.name.startswith("opentelemetry")] == []


def test_after_shutdown_nothing_of_ours_keeps_trying_or_says_more(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The exporter is waiting out its backoff on the first batch when the bounded shutdown
    gives up; its worker then drains the queue. That must end quietly: the warning said what was
    dropped, and a later test or cell must not get a line per batch from this one."""
    caplog.set_level(logging.WARNING)
    before = set(threading.enumerate())
    telemetry = wb.Telemetry(
        otlp_endpoint=f"http://127.0.0.1:{free_port()}/v1/traces",
        export_timeout=30,
        max_export_batch_size=1,
        flush_timeout=1,
    )
    (worker,) = set(threading.enumerate()) - before  # the batch processor's
    run_with_pause(telemetry)
    caplog.clear()
    with pytest.warns(wb.TelemetryExportWarning) as warned:
        telemetry.shutdown()
    worker.join(30)
    assert not worker.is_alive()
    assert len(warned) == 1 and "It refused the connection" in str(warned[0].message)
    assert [r.getMessage() for r in caplog.records] == []


def test_an_endpoint_that_refuses_the_spans_says_why(
    collector: Collector, caplog: pytest.LogCaptureFixture
) -> None:
    """A wrong path (404) or a missing token (401) is said with the server's answer: the
    exporter's own line saying it is dropped while it exports for us (the transient retries'
    lines with it), so ours must carry it, or the person sees "could not export" and no why."""
    caplog.set_level(logging.WARNING)
    telemetry = wb.Telemetry(otlp_endpoint=f"{collector.url}/wrong/path", schedule_delay=60)
    calculator(telemetry, ["hi"]).run_sync("hello")
    telemetry.flush(timeout=10)
    with pytest.warns(wb.TelemetryExportWarning, match="The exporter said: .*code: 404"):
        telemetry.shutdown()
    endpoint = f"{collector.url}/wrong/path"  # an earlier test's exporter may still be saying
    said = [
        r.getMessage()
        for r in caplog.records
        if r.name == "workbench.telemetry" and endpoint in r.getMessage()
    ]
    assert said and all("code: 404" in line for line in said), said
    assert [r.name for r in caplog.records if r.name.startswith("opentelemetry")] == []


def test_a_hanging_endpoint_does_not_block_the_run_and_the_exit_is_bounded() -> None:
    endpoint = HangingEndpoint()
    try:
        telemetry = wb.Telemetry(
            otlp_endpoint=endpoint.url, export_timeout=30, max_export_batch_size=1, flush_timeout=1
        )
        run_with_pause(telemetry)
        assert endpoint.received.wait(30), "the exporter never sent anything"
        # The exporter's worker is now stuck in a request that will not be answered for 30 s.
        paused, done = run_with_pause(telemetry)
        assert done.status is wb.ExecutionStatus.COMPLETED
        assert not endpoint.released.is_set()
        stats = telemetry.export_stats
        assert stats is not None and stats.exported == 0 and stats.queued == len(telemetry.spans)
        assert sum(s.timing.telemetry for s in [*paused.steps, *done.steps]) < 5
        spans = len(telemetry.spans)
        started = time.perf_counter()
        with pytest.warns(wb.TelemetryExportWarning, match=rf"\b{spans} of {spans} spans"):
            telemetry.shutdown()
        assert time.perf_counter() - started < 20  # not the exporter's 30 s
    finally:
        endpoint.release()


def test_cli_export_and_push_a_stored_run(
    collector: Collector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    telemetry = wb.Telemetry()
    agent = calculator(telemetry)
    agent.store = store
    paused = agent.run_sync("What is 17 + 25, doubled? Save it.")
    done = agent.resume_sync(paused.state, approvals={p.call_id: True for p in paused.pending})
    out = tmp_path / "run.jaeger.json"
    argv = ["export", done.run_id[:10], "--store", str(store.path), "-o", str(out)]
    assert main(argv) == 0
    document = json.loads(out.read_text())
    assert [t["traceID"] for t in document["data"]] == [paused.trace_id, done.trace_id]
    names = sorted(s["operationName"] for t in document["data"] for s in t["spans"])
    assert names == sorted(s.name for s in telemetry.spans)
    otlp = tmp_path / "run.otlp.json"
    argv = ["export", "last", "--format", "otlp", "--store", str(store.path), "-o", str(otlp)]
    assert main(argv) == 0
    assert json.loads(otlp.read_text())["resourceSpans"][0]["scopeSpans"][0]["spans"]
    argv = ["push", done.run_id, "--store", str(store.path), "--endpoint", collector.url]
    assert main(argv) == 0
    assert f"{len(telemetry.spans)} of {len(telemetry.spans)} spans sent" in capsys.readouterr().out
    assert collector.trace_ids == {paused.trace_id, done.trace_id}
    assert sorted(collector.names) == names
    assert main(["export", "nope", "--store", str(store.path)]) == 2
    store.close()


@pytest.mark.filterwarnings("default::workbench.TelemetryExportWarning")
def test_cli_push_to_a_dead_endpoint_fails_with_one_line_that_says_so(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Not Python's warning format (``traces.py:90: TelemetryExportWarning: ...`` and the source
    line), nor the exporter's count said again beside the warning's."""
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = calculator(None, ["hi"])
    agent.store = store
    result = agent.run_sync("hello")
    dead = f"http://user:hunter2pass@127.0.0.1:{free_port()}"  # a password in the URL
    argv = ["push", result.run_id, "--store", str(store.path), "--endpoint", dead, "--timeout", "1"]
    assert main(argv) == 1
    said = capsys.readouterr()
    assert said.out.startswith(f"run {result.run_id} ") and " 0 of " in said.out
    assert "user:[REDACTED]@127.0.0.1" in said.out  # where it went, without its password
    assert "hunter2pass" not in said.out + said.err
    assert said.err.count("\n") == 1, said.err
    assert said.err.startswith("warning: workbench telemetry: ")
    assert "It refused the connection: is the endpoint up?" in said.err
    store.close()


@pytest.mark.filterwarnings("default::workbench.TelemetryExportWarning")
def test_cli_push_to_an_endpoint_that_refuses_says_why_once(
    collector: Collector, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    agent = calculator(None, ["hi"])
    agent.store = store
    result = agent.run_sync("hello")
    argv = ["push", result.run_id, "--store", str(store.path), "--endpoint"]
    assert main([*argv, f"{collector.url}/wrong/path"]) == 1
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith("warning: ") and "code: 404" in said, said
    with pytest.raises(SystemExit) as exit_:  # was sent to 'notaurl/v1/traces/v1/traces'
        main([*argv, "notaurl"])
    assert exit_.value.code == 2
    assert "argument --endpoint: 'notaurl' is not an http:// or https:// URL" in (
        capsys.readouterr().err
    )
    store.close()


def test_demo_writes_its_trace_files(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    assert main(["demo"]) == 0
    jaeger = json.loads((tmp_path / "workbench-demo" / "run.jaeger.json").read_text())
    otlp = json.loads((tmp_path / "workbench-demo" / "run.otlp.json").read_text())
    assert len(jaeger["data"]) == 2  # the run paused for an approval, then resumed
    spans = otlp["resourceSpans"][0]["scopeSpans"][0]["spans"]
    assert sum(len(t["spans"]) for t in jaeger["data"]) == len(spans)


@pytest.mark.filterwarnings("default::workbench.TelemetryExportWarning")
def test_demo_with_its_endpoint_down_says_so_in_one_line(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    """Said by the verb, while its problems are lines: not at exit, in Python's warning format."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("WORKBENCH_STORE", "off")
    monkeypatch.setenv("OTEL_EXPORTER_OTLP_ENDPOINT", f"http://127.0.0.1:{free_port()}")
    assert main(["demo"]) == 0
    said = capsys.readouterr().err
    assert said.count("\n") == 1 and said.startswith("warning: workbench telemetry: "), said
    assert "spans were dropped" in said


def test_content_kept_once_leaves_as_the_text(collector: Collector) -> None:
    """Chat spans in memory refer to their conversation; the content is built on the way out."""
    telemetry = wb.Telemetry(capture_content=True, otlp_endpoint=collector.url)
    run_with_pause(telemetry)
    stats = telemetry.shutdown(timeout=10)
    assert stats is not None and stats.exported == stats.queued
    held = [s for s in telemetry._collector.spans if s.name.startswith("chat")]
    assert held and all(
        n.INPUT_MESSAGES not in (s.attributes or {})
        and n.INPUT_MESSAGES_REF in (s.attributes or {})
        for s in held
    )
    read = {
        s.context.span_id: s for s in telemetry.spans if s.name.startswith("chat") and s.context
    }
    sent = [a for a in collector.attributes if a.get(n.OPERATION) == "chat"]
    assert len(sent) == len(read) == len(held)
    assert sorted(a[n.INPUT_MESSAGES] for a in sent) == sorted(
        str((s.attributes or {})[n.INPUT_MESSAGES]) for s in read.values()
    )
    assert not any(n.INPUT_MESSAGES_REF in a for a in collector.attributes)
    first = json.loads(min(sent, key=lambda a: len(a[n.INPUT_MESSAGES]))[n.INPUT_MESSAGES])
    assert [m["role"] for m in first] == ["system", "user"]


def test_a_provider_passed_in_gets_the_text_on_the_span() -> None:
    """Other processors of a provider passed in read spans as they end: they get the text."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    run_with_pause(wb.Telemetry(provider, capture_content=True))
    chats = [s for s in exporter.get_finished_spans() if s.name.startswith("chat")]
    assert chats and all(n.INPUT_MESSAGES in (s.attributes or {}) for s in chats)
