"""The OpenTelemetry SDK pieces: in-memory collection and a counted, bounded OTLP/HTTP pipe.

Imported only when a `Telemetry` is made, so ``import workbench`` works without the ``otlp`` extra.
"""

from __future__ import annotations

import logging
import os
import threading
import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass

from opentelemetry.context import Context
from opentelemetry.sdk.trace import ReadableSpan, Span, SpanProcessor
from opentelemetry.sdk.trace.export import BatchSpanProcessor, SpanExporter, SpanExportResult
from opentelemetry.sdk.trace.id_generator import IdGenerator

from workbench.redact import redacted
from workbench.telemetry.names import SCOPE
from workbench.traceids import random_id

__all__ = ["Collector", "ExportPipe", "ExportStats", "SecretIds"]

log = logging.getLogger("workbench.telemetry")

_CREDENTIALS = "OTEL_PYTHON_EXPORTER_OTLP_HTTP_TRACES_CREDENTIAL_PROVIDER"
"""Names a ``requests`` session of the person's own for the exporter (OpenTelemetry's setting)."""

REFUSED = "the endpoint refused the connection"
"""`ExportStats.failure` of a batch the endpoint refused (nothing listens there)."""

_LOOK_EVERY = 0.05
"""How often a shutdown looks whether the endpoint refused, in seconds, while it flushes."""


def _ours(span: ReadableSpan) -> bool:
    scope = span.instrumentation_scope
    return scope is not None and scope.name == SCOPE


class SecretIds(IdGenerator):
    """The ids of a provider of ours, from `secrets` like a run's own (`traceids.random_id`).

    The SDK's default draws on the `random` module, which the notebook may have seeded: the
    Stepper draws a run on its own thread, and each drawing makes spans, so the numbers a seeded
    experiment got would depend on what the views did meanwhile.
    """

    def generate_span_id(self) -> int:
        """A span id, not zero."""
        return random_id(64)

    def generate_trace_id(self) -> int:
        """A trace id, not zero."""
        return random_id(128)

    def is_trace_id_random(self) -> bool:
        """Random, as W3C Trace Context's flag means it."""
        return True


class Collector(SpanProcessor):
    """Keeps the workbench's finished spans in memory (other instrumentations' are ignored)."""

    def __init__(self) -> None:
        self.spans: list[ReadableSpan] = []

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Keep the span if the workbench made it."""
        if _ours(span):
            self.spans.append(span)

    def shutdown(self) -> None:
        """Nothing to release."""

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Nothing is buffered."""
        return True


@dataclass(frozen=True)
class ExportStats:
    """How the OTLP export went: spans handed to the exporter, sent, and failed to send."""

    endpoint: str
    queued: int
    exported: int
    failed: int
    failure: str = ""
    """Why the last batch that failed did ("the endpoint refused the connection", or what the
    exporter said: "... code: 404, reason: Not Found"), redacted: a server that answers, but not
    as a collector, is not down."""
    refused: bool = False
    """The endpoint refused the last connection tried: nothing listens there (it is down)."""

    @property
    def unconfirmed(self) -> int:
        """Spans not (yet) known to be exported: failed, still queued, or dropped from the queue."""
        return self.queued - self.exported


_exporting = threading.local()
"""On a thread while it exports for us (`_CountingExporter.export`): ``on``, and ``failure``, the
exporter's last error logged meanwhile."""


def _not_ours(record: logging.LogRecord) -> bool:
    """Whether the OTLP exporter logged this while exporting for someone else.

    Ours it says itself ("Transient error ... retrying in 1.20s", three times a batch, on the
    exporter's thread): red lines under whatever cell runs, as if the run had failed, above our
    own count of what was not delivered. Its error, which says why a batch failed ("code: 401,
    reason: Unauthorized"), is kept for that count to say once. A user's own exporters in the
    process keep their logs.
    """
    if not getattr(_exporting, "on", False):
        return True
    if record.levelno >= logging.ERROR:
        _exporting.failure = record.getMessage()
    return False


class _CountingExporter(SpanExporter):
    def __init__(
        self,
        inner: SpanExporter,
        endpoint: str,
        prepare: Callable[[Sequence[ReadableSpan]], Sequence[ReadableSpan]],
        refused: threading.Event,
    ) -> None:
        self.inner = inner
        self.prepare = prepare
        self.refused = refused
        """Set while the endpoint refuses connections (`WatchedSession`)."""
        self.endpoint = endpoint
        self.exported = 0
        self.failed = 0
        self.failure = ""
        """Why the last batch that failed did (`ExportStats.failure`)."""
        self._lock = threading.Lock()
        self.closing = False
        """Set when the pipe's shutdown begins: its warning says what failed from then on."""
        self.sending = False
        """A batch is with the exporter (being sent, or waiting out a backoff to try again)."""
        self._shut = False

    def export(self, spans: Sequence[ReadableSpan]) -> SpanExportResult:
        if self._shut:
            # The batch worker drains its queue after a bounded shutdown gave up on it: what is
            # left is not tried (the shutdown's warning counted it as still queued), nor said.
            return SpanExportResult.FAILURE
        _exporting.on, _exporting.failure = True, ""
        self.sending = True
        try:
            result = self.inner.export(self.prepare(spans))
        except Exception:
            log.exception("workbench telemetry: exporting %d spans raised", len(spans))
            result = SpanExportResult.FAILURE
        finally:
            _exporting.on = self.sending = False
        with self._lock:
            if result is SpanExportResult.SUCCESS:
                self.exported += len(spans)
            else:
                self.failed += len(spans)
                failed = self.failed
                # the refusal, not the exporter's last word on it ("... due to timeout, max
                # retries or shutdown."), which says nothing of why
                refused = self.refused.is_set()
                self.failure = REFUSED if refused else redacted(_exporting.failure)
            said = self.closing  # the shutdown's warning says it, with the exporter's error
        if result is not SpanExportResult.SUCCESS and not said:
            log.warning(
                "workbench telemetry: could not export %d spans to %s (%d dropped so far)%s",
                len(spans),
                self.endpoint,
                failed,
                f": {self.failure}" if self.failure else "",
            )
        return result

    def shutdown(self) -> None:
        with self._lock:
            if self._shut:
                return
            self._shut = True
        self.inner.shutdown()

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        return True


class ExportPipe(SpanProcessor):
    """OTLP/HTTP protobuf export off the loop's thread: a batch processor with a bounded queue.

    ``on_end`` only appends to the queue; a worker thread sends batches. When the queue is full the
    oldest spans are dropped (and counted as not exported), never waited for.
    """

    def __init__(
        self,
        endpoint: str,
        *,
        headers: dict[str, str] | None,
        timeout: float | None,
        max_queue_size: int,
        max_export_batch_size: int,
        schedule_delay: float,
        prepare: Callable[[Sequence[ReadableSpan]], Sequence[ReadableSpan]] = list,
    ) -> None:
        # Imported here: a `Telemetry` that sends nowhere (the views' rebuilt spans) needs only
        # the SDK, which the ``notebook`` extra brings; the exporter is the ``otlp`` extra's.
        from opentelemetry.exporter.otlp.proto.http.trace_exporter import OTLPSpanExporter

        from workbench.telemetry._session import WatchedSession

        # A session of the person's own (a credential provider named in the environment) is
        # theirs to keep: the shutdown then waits its bound even for an endpoint that refused.
        session = None if os.environ.get(_CREDENTIALS) else WatchedSession()
        self._refused = session.refused if session is not None else threading.Event()
        exporter = OTLPSpanExporter(
            endpoint=endpoint, headers=headers, timeout=timeout, session=session
        )
        logging.getLogger(OTLPSpanExporter.__module__).addFilter(_not_ours)  # once: same filter
        endpoint = redacted(endpoint)  # shown in logs and stats: no password of the URL
        self.endpoint = endpoint
        self._exporter = _CountingExporter(exporter, endpoint, prepare, self._refused)
        self._batch = BatchSpanProcessor(
            self._exporter,
            max_queue_size=max_queue_size,
            max_export_batch_size=min(max_export_batch_size, max_queue_size),
            schedule_delay_millis=schedule_delay * 1000,
        )
        self._queued = 0
        self._closed = False

    @property
    def stats(self) -> ExportStats:
        """The counts so far."""
        exporter = self._exporter
        return ExportStats(
            self.endpoint,
            self._queued,
            exporter.exported,
            exporter.failed,
            exporter.failure,
            self._refused.is_set(),
        )

    def on_start(self, span: Span, parent_context: Context | None = None) -> None:
        """Nothing to do when a span starts."""

    def on_end(self, span: ReadableSpan) -> None:
        """Queue a workbench span for export; never blocks."""
        if _ours(span) and not self._closed:
            self._queued += 1
            self._batch.on_end(span)

    def force_flush(self, timeout_millis: int = 30000) -> bool:
        """Send what is queued, waiting at most ``timeout_millis`` (the send goes on after that)."""
        if self._closed:
            return False
        worker = threading.Thread(target=self._batch.force_flush, daemon=True)
        worker.start()
        worker.join(timeout_millis / 1000)
        return not worker.is_alive()

    def shutdown(self, timeout_millis: int = 3000) -> None:
        """Flush within the bound, then stop the worker; what did not make it is counted.

        An endpoint that refuses connections is not waited for: nothing listens there, and the
        exporter would only wait out its backoff until the bound (a cell, ``make demo``, the
        exit of a script hung for it). A refusal from before the shutdown counts only while a
        batch is still being retried after it; otherwise the queue gets a try of its own first,
        so an endpoint that has come back since gets the spans. What is dropped is counted.
        """
        if self._closed:
            return
        self._closed = self._exporter.closing = True
        if not self._exporter.sending:
            self._refused.clear()  # said of a try that is over: the flush tries again
        worker = threading.Thread(target=self._batch.shutdown, daemon=True)
        worker.start()
        deadline = time.monotonic() + timeout_millis / 1000
        while worker.is_alive() and (left := deadline - time.monotonic()) > 0:
            if self._refused.wait(min(left, _LOOK_EVERY)):
                break
        if worker.is_alive():  # stop retrying; a send in flight ends at its own timeout
            self._exporter.shutdown()
            if self._refused.is_set():  # no send in flight: the backoff ends, the counts settle
                worker.join(_LOOK_EVERY * 20)
