"""Fault table: trace backends that never finish answering.

Already covered in ``tests/test_load_trace.py``: a backend that is down, has no such trace,
stalls past the timeout, or answers the same page cursor twice. Here: the servers that keep a
per-read timeout happy forever, as real HTTP servers on loopback: a Jaeger that drips its answer
one byte at a time, a Phoenix that hands out a new cursor on every page. A call is bounded by
one deadline (``timeout=``, every request and page of it) and a page budget.
"""

from __future__ import annotations

import itertools
import json
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

import workbench as wb
from tests.faults.traces import TRACE_ID, otlp_span
from workbench.telemetry._fetch import PAGES

pytestmark = pytest.mark.timeout(120)


@contextmanager
def backend(answer: Callable[[BaseHTTPRequestHandler], None]) -> Iterator[str]:
    """A real HTTP server on a free loopback port that answers every GET with ``answer``."""
    stop = threading.Event()

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:
            self.stop = stop
            answer(self)

        def log_message(self, format: str, *args: Any) -> None:
            """Quiet."""

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        stop.set()  # a drip still under way stops at once
        server.shutdown()
        server.server_close()


def drip(handler: Any) -> None:
    """A whole, valid Jaeger answer, one byte every 0.3 s: each read is quick, the answer 40 s."""
    body = json.dumps({"result": {"resourceSpans": []}}).encode().ljust(130)
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(body)))
    handler.end_headers()
    for byte in body:
        if handler.stop.wait(0.3):
            return
        handler.wfile.write(bytes([byte]))
        handler.wfile.flush()


def endless_pages(handler: Any) -> None:
    """Phoenix's span pages, each with one span and a cursor never seen before."""
    cursor = next(_cursors)
    body = json.dumps({"data": [otlp_span(spanId=f"{cursor:016x}")], "next_cursor": f"c{cursor}"})
    data = body.encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


_cursors = itertools.count(1)


def test_a_jaeger_that_drips_is_bounded_by_the_whole_calls_timeout() -> None:
    with backend(drip) as url:
        started = time.monotonic()
        with pytest.raises(wb.TraceLoadError, match=r"did not answer within 1\.0s"):
            wb.load_trace(f"jaeger+{url}/{TRACE_ID}", timeout=1.0)
        assert time.monotonic() - started < 10  # the whole answer would take 40 s


def test_a_phoenix_with_endless_pages_is_bounded_by_the_page_budget() -> None:
    budget = pytest.raises(wb.TraceLoadError, match=f"gave up after {PAGES} requests")
    with backend(endless_pages) as url, budget:
        wb.load_trace(f"phoenix+{url}/default/{TRACE_ID}", timeout=120)


def test_a_phoenix_with_endless_pages_is_also_bounded_by_the_deadline() -> None:
    def slow_pages(handler: Any) -> None:
        handler.stop.wait(0.2)
        endless_pages(handler)

    with backend(slow_pages) as url:
        started = time.monotonic()
        with pytest.raises(wb.TraceLoadError, match=r"did not answer within 1\.0s"):
            wb.load_trace(f"phoenix+{url}/default/{TRACE_ID}", timeout=1.0)
        assert time.monotonic() - started < 10


def test_a_cursor_that_is_not_text_is_a_trace_load_error() -> None:
    def odd_cursor(handler: Any) -> None:
        data = json.dumps({"data": [otlp_span()], "next_cursor": {"page": 2}}).encode()
        handler.send_response(200)
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    refused = pytest.raises(wb.TraceLoadError, match="cursor that is not text")
    with backend(odd_cursor) as url, refused:
        wb.load_trace(f"phoenix+{url}/default/{TRACE_ID}")
