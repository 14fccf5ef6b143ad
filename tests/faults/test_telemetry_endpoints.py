"""Fault table: trace endpoints that err or are slow, as real OTLP/HTTP servers on loopback.

Already covered in ``tests/test_telemetry_export.py``: an endpoint nobody listens on and one that
accepts and never answers (the run is not blocked, the drops are counted, the exit is bounded),
and a dead endpoint for ``workbench push``. Here: an endpoint that answers with errors, and one
that is slow but answers. In every case the run ends as it would without telemetry.
"""

from __future__ import annotations

import warnings

import pytest

import workbench as wb
from tests.faults.server import receiving

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
