"""Fault table: trace endpoints that err or are slow, as real OTLP/HTTP servers on loopback.

Already covered in ``tests/test_telemetry_export.py``: an endpoint nobody listens on and one that
accepts and never answers (the run is not blocked, the drops are counted, the exit is bounded),
and a dead endpoint for ``workbench push``. Here: an endpoint that answers with errors, one that
is slow but answers, and a shutdown that need not wait for an endpoint that refuses (nor drop
what one that came back can take). In every case the run ends as it would without telemetry.
"""

from __future__ import annotations

import logging
import socket
import time
import warnings

import pytest

import workbench as wb
from tests.faults.server import elapsed, receiving

pytestmark = pytest.mark.timeout(120)


def a_run(telemetry: wb.Telemetry) -> wb.RunResult:
    agent = wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("hi")]), telemetry=telemetry)
    return agent.run_sync("hello")


@pytest.mark.parametrize("status", [400, 404, 500, 503])
def test_an_endpoint_answering_errors_costs_the_run_nothing_and_the_loss_is_counted(
    status: int,
) -> None:
    with receiving(status=status) as endpoint:
        telemetry = wb.Telemetry(otlp_endpoint=endpoint.url, export_timeout=2)
        result = a_run(telemetry)
        assert result.output == "hi"
        with warnings.catch_warnings(record=True) as caught:
            warnings.simplefilter("always")
            stats = telemetry.shutdown(timeout=10)
    assert endpoint.bodies, "the export was tried"
    assert stats is not None and stats.exported == 0
    assert stats.queued == len(telemetry.spans) and stats.unconfirmed == stats.queued
    assert any("were dropped" in str(w.message) for w in caught)
    assert len(telemetry.spans) == stats.queued  # kept in memory all the same


def test_a_slow_endpoint_gets_every_span_and_the_run_does_not_wait_for_it() -> None:
    with receiving(delay=60) as endpoint:  # holds each request until released
        telemetry = wb.Telemetry(otlp_endpoint=endpoint.url, export_timeout=30)
        result = a_run(telemetry)
        stats = telemetry.export_stats
        assert result.output == "hi"  # the run ended while no export was confirmed
        assert stats is not None and stats.exported == 0 and stats.queued > 0
        endpoint.released.set()  # now it answers
        stats = telemetry.shutdown(timeout=30)
        names = endpoint.span_names()
    assert stats is not None and stats.exported == stats.queued == len(telemetry.spans)
    assert sorted(names) == sorted(s.name for s in telemetry.spans)


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


def refused(telemetry: wb.Telemetry) -> bool:
    stats = telemetry.export_stats
    return stats is not None and stats.refused


@pytest.mark.parametrize("retrying", [False, True], ids=["nothing-tried-yet", "backing-off"])
def test_a_shutdown_does_not_wait_for_an_endpoint_that_refuses_the_connection(
    retrying: bool,
) -> None:
    """The flush bound is a minute here (3 s by default, what a cell or ``make demo`` hung for):
    the exporter backs off between refused tries until the bound, so the shutdown waited all of
    it. Whether the shutdown's flush is the first try, or a batch is already waiting out its
    backoff after one, the refusal is known, and nothing more can be sent."""
    telemetry = wb.Telemetry(
        otlp_endpoint=f"http://127.0.0.1:{free_port()}/v1/traces",
        export_timeout=60,
        flush_timeout=60,
        schedule_delay=0.05 if retrying else 60,
    )
    a_run(telemetry)
    spans = len(telemetry.spans)
    while retrying and not refused(telemetry):
        time.sleep(0.05)  # the exporter tries within 0.05 s, is refused, and backs off
    started = time.monotonic()
    dropped = (
        rf"\b{spans} of {spans} spans were dropped: .* \({spans} failed to send, .* It refused"
    )
    with pytest.warns(wb.TelemetryExportWarning, match=dropped):
        stats = telemetry.shutdown()
    assert elapsed(started) < 30  # not the bound's 60 s
    assert stats is not None and stats.refused and (stats.exported, stats.queued) == (0, spans)
    assert len(telemetry.spans) == spans  # kept in memory: the views have them all


def test_an_endpoint_that_refused_and_came_back_gets_what_was_queued_since(
    caplog: pytest.LogCaptureFixture,
) -> None:
    """A refusal said of a try that is over is not taken for 'down' at the shutdown: its flush
    tries again, and an endpoint that came up in between gets the spans. The batch it refused is
    said to be refused, not in the exporter's last words ("Failed to export spans batch due to
    timeout, max retries or shutdown.")."""
    caplog.set_level(logging.WARNING, logger="workbench.telemetry")
    port = free_port()
    telemetry = wb.Telemetry(
        otlp_endpoint=f"http://127.0.0.1:{port}/v1/traces",
        export_timeout=0.5,  # one refused try, then the batch is given up
        flush_timeout=60,
        schedule_delay=60,
    )
    a_run(telemetry)
    assert not telemetry.flush(timeout=30)
    before = telemetry.export_stats
    assert before is not None and before.refused and before.failed == before.queued
    assert before.failure == "the endpoint refused the connection"
    (said,) = [r.getMessage() for r in caplog.records if r.name == "workbench.telemetry"]
    assert said.endswith(f"({before.failed} dropped so far): the endpoint refused the connection")
    with receiving(port=port) as endpoint:
        a_run(telemetry)
        with pytest.warns(wb.TelemetryExportWarning, match=rf"\b{before.queued} of \d+ spans"):
            stats = telemetry.shutdown()
        names = endpoint.span_names()
    assert stats is not None and not stats.refused
    assert stats.exported == stats.queued - before.queued == len(names) > 0
