"""`Telemetry`: where a run's spans go, and what you can get back from them.

``Telemetry()`` collects spans in memory (notebooks, tests). With ``otlp_endpoint=`` (or the
standard ``OTEL_EXPORTER_OTLP_*`` variables) it also sends them over OTLP/HTTP protobuf, batched on
a worker thread with a bounded queue: a slow or dead endpoint never slows the loop, and whatever
could not be sent is counted and reported by `Telemetry.shutdown` (and at interpreter exit). A
tracer provider passed in is used as it is, never installed globally.
"""

from __future__ import annotations

import atexit
import functools
import os
import re
import warnings
import weakref
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any, Literal

from workbench.records import RecordedRun
from workbench.redact import Redactor
from workbench.telemetry import names
from workbench.telemetry.content import ContentStore, expand
from workbench.telemetry.observer import Instruments, SpanObserver
from workbench.urls import http_url

if TYPE_CHECKING:
    import pandas as pd
    from opentelemetry.sdk.trace import ReadableSpan, TracerProvider

    from workbench.models.base import Model
    from workbench.telemetry._sdk import ExportStats
    from workbench.telemetry.spandata import SpanData
    from workbench.telemetry.trace import Trace

__all__ = ["RunLike", "Telemetry", "TelemetryExportWarning", "otlp_traces_endpoint"]


class TelemetryExportWarning(UserWarning):
    """Spans could not be delivered to the OTLP endpoint (it is down, slow, or refused them)."""


RunLike = RecordedRun
"""What rebuilding a run's spans needs of it: a `RunResult`, or a run loaded from a store."""


def otlp_traces_endpoint(endpoint: str | None = None) -> str | None:
    """The OTLP/HTTP traces URL to send to, or None when none is configured.

    The argument, else ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT``, else ``OTEL_EXPORTER_OTLP_ENDPOINT``
    plus ``/v1/traces``. A bare ``http://host:4318`` argument gets the ``/v1/traces`` path. The
    one used must be an ``http://`` or ``https://`` URL: else an `InvalidURL` names it (the
    argument or the variable), here rather than at the first export.

    >>> otlp_traces_endpoint("http://localhost:4318")
    'http://localhost:4318/v1/traces'
    """
    if endpoint:
        http_url(endpoint, "otlp_endpoint")
        return (
            endpoint if re.search(r"//[^/]+/.", endpoint) else endpoint.rstrip("/") + "/v1/traces"
        )
    traces = os.environ.get("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    if traces:
        return http_url(traces, "OTEL_EXPORTER_OTLP_TRACES_ENDPOINT")
    base = os.environ.get("OTEL_EXPORTER_OTLP_ENDPOINT")
    if base:
        return http_url(base, "OTEL_EXPORTER_OTLP_ENDPOINT").rstrip("/") + "/v1/traces"
    return None


def _require_sdk() -> Any:
    try:
        from opentelemetry.sdk import trace as sdk_trace
    except ImportError as exc:  # pragma: no cover - exercised only without the extra
        raise ImportError(
            "workbench telemetry needs OpenTelemetry: pip install 'workbench[otlp]'"
        ) from exc
    return sdk_trace


class Telemetry:
    """OpenTelemetry spans for every run of an `Agent` (``Agent(telemetry=Telemetry())``).

    Args:
        tracer_provider: an SDK ``TracerProvider`` to use; None makes one of its own (with a
            ``service.name`` resource). It is never set as the global provider.
        capture_content: record messages, system instructions and tool arguments/results
            (``gen_ai.input.messages`` and friends). Secrets are redacted either way.
        otlp_endpoint: send spans over OTLP/HTTP protobuf to this URL (``/v1/traces`` is added to
            a bare ``http://host:port``). None uses ``OTEL_EXPORTER_OTLP_TRACES_ENDPOINT`` or
            ``OTEL_EXPORTER_OTLP_ENDPOINT`` when set; False sends nowhere whatever they say. One
            that is not an ``http(s)://`` URL is an `InvalidURL` here, naming it.
            Headers come from ``otlp_headers`` or ``OTEL_EXPORTER_OTLP_(TRACES_)HEADERS``.
            Sending needs the ``otlp`` extra; collecting in memory only the SDK.
        service_name: the ``service.name`` of a provider made here (``OTEL_SERVICE_NAME`` wins
            over the default).
        redact: extra regular expressions to redact, on top of the built-in secret patterns.
        conventions: which GenAI attribute names to write where the conventions renamed one:
            ``current`` (those of `names.CONVENTIONS_VERSION`), ``older``, or ``both``.

    Spans are always collected in memory as well (`spans`, the DataFrames, the file writers).

    """

    def __init__(
        self,
        tracer_provider: TracerProvider | None = None,
        capture_content: bool = False,
        otlp_endpoint: str | Literal[False] | None = None,
        service_name: str = "workbench",
        redact: Iterable[str | re.Pattern[str]] = (),
        *,
        otlp_headers: Mapping[str, str] | None = None,
        export_timeout: float | None = None,
        max_queue_size: int = 2048,
        max_export_batch_size: int = 512,
        schedule_delay: float = 1.0,
        flush_timeout: float = 3.0,
        conventions: names.Conventions = "current",
    ) -> None:
        # False: nowhere, whatever the OTEL_* variables say (spans rebuilt for a view). Read
        # first: a URL refused must not leave our processor on a provider passed in.
        endpoint = None if otlp_endpoint is False else otlp_traces_endpoint(otlp_endpoint)
        sdk_trace = _require_sdk()
        from workbench.telemetry._sdk import Collector, ExportPipe, SecretIds

        # With a provider of our own, chat spans refer to conversations kept once and the
        # content is built when spans are read or exported; a provider passed in may feed other
        # processors, which must get the text itself.
        self._content_store = (
            ContentStore() if capture_content and tracer_provider is None else None
        )
        if tracer_provider is None:
            tracer_provider = sdk_trace.TracerProvider(
                resource=_resource(service_name), id_generator=SecretIds(), shutdown_on_exit=False
            )
        self.tracer_provider = tracer_provider
        self.capture_content = capture_content
        self.redactor = Redactor(redact)
        self.flush_timeout = flush_timeout
        self._collector = Collector()
        tracer_provider.add_span_processor(self._collector)
        self._converted: dict[tuple[int, int], SpanData] = {}
        """The spans read as `SpanData` so far (`span_data`), by trace and span id."""
        self._resources: dict[int, dict[str, Any]] = {}
        self._whole_trace: Trace | None = None
        """Every span collected as one `Trace` (`trace`), kept until a span arrives."""
        self.endpoint = endpoint
        self._pipe: ExportPipe | None = None
        if self.endpoint is not None:
            self._pipe = ExportPipe(
                self.endpoint,
                headers=dict(otlp_headers) if otlp_headers else None,
                timeout=export_timeout,
                max_queue_size=max_queue_size,
                max_export_batch_size=max_export_batch_size,
                schedule_delay=schedule_delay,
                prepare=self._expanded,
            )
            tracer_provider.add_span_processor(self._pipe)
            atexit.register(_shutdown_at_exit, weakref.ref(self))
        version = _version()
        tracer = tracer_provider.get_tracer(names.SCOPE, version)
        if conventions not in ("current", "older", "both"):
            raise ValueError(f"conventions must be current, older or both, not {conventions!r}")
        self._instruments = Instruments(
            tracer, self.redactor, capture_content, conventions, self._content_store
        )

    def __repr__(self) -> str:
        where = f", otlp_endpoint={self.redactor.text(self.endpoint)!r}" if self.endpoint else ""
        return f"Telemetry(capture_content={self.capture_content}{where}, spans={len(self.spans)})"

    def __enter__(self) -> Telemetry:
        return self

    def __exit__(self, *exc_info: object) -> None:
        self.shutdown()

    # -- recording ------------------------------------------------------------------------------

    def observer(self, model: Model) -> SpanObserver:
        """A fresh observer for one execution of a run on ``model`` (the `Agent` calls this).

        A model that can scrub its own secrets (``redact``, as `OpenAIModel` has) adds that to
        the redaction of these spans: it knows its key even when no pattern would.
        """
        instruments = self._instruments
        redactor = self.redactor.with_model(model)
        if redactor is not self.redactor:
            instruments = Instruments(
                tracer=instruments.tracer,
                redactor=redactor,
                capture_content=instruments.capture_content,
                conventions=instruments.conventions,
                content_store=instruments.content_store,
            )
        return SpanObserver(instruments, getattr(model, "provider", None), model.name)

    @property
    def spans(self) -> list[ReadableSpan]:
        """The finished spans collected so far, in the order they ended."""
        return self._expanded(self._collector.spans)

    def span_data(self) -> list[SpanData]:
        """The finished spans collected so far as `SpanData` (what `workbench.trace_of` reads).

        Each span is converted once, the first time it is read: a notebook asks for the
        trace of a run, its DataFrames and its explorer many times over the same spans, and
        reading the SDK's attributes span by span is the dearest part of every one of them.
        """
        from workbench.telemetry.spandata import span_data

        store, converted = self._content_store, self._converted
        out = []
        for span in self._collector.spans:
            context = span.context
            key = (context.trace_id, context.span_id) if context is not None else (0, id(span))
            found = converted.get(key)
            if found is None:
                shown = expand(span, store) if store is not None else span
                found = converted[key] = span_data(shown, self._resources)
            out.append(found)
        return out

    def _expanded(self, spans: Sequence[ReadableSpan]) -> list[ReadableSpan]:
        """The spans as they leave: content references replaced by the content."""
        store = self._content_store
        if store is None:
            return list(spans)
        return [expand(span, store) for span in spans]

    def trace(self, trace_id: str | None = None) -> Trace:
        """The spans collected in memory as a `Trace` (those of ``trace_id``, or all of them).

        Runs that have ended are whole; a run still going has the spans of its finished steps.
        All of them are one `Trace`, kept until a span arrives (spans are only ever added, until
        `clear`), with what it derived: the DataFrames, the explorer and the other views of a
        run's telemetry read it again without deriving its tree again. A ``trace_id`` none of
        the spans has raises `LookupError`.
        """
        from workbench.telemetry.trace import Trace

        if trace_id is None:
            kept = self._whole_trace
            if kept is None or len(kept.spans) != len(self._collector.spans):
                kept = self._whole_trace = Trace.of(self.span_data())
            return kept
        wanted = trace_id.lower()
        spans = [s for s in self.span_data() if s.trace_id == wanted]
        if not spans:
            raise LookupError(f"no spans of trace {trace_id} collected")
        return Trace.of(spans)

    def clear(self) -> None:
        """Forget the spans collected in memory (exports are not affected)."""
        self._collector.spans.clear()
        self._converted.clear()
        self._whole_trace = None
        if self._content_store is not None and self._pipe is None:
            self._content_store.clear()  # with an export, queued spans may still refer to it

    # -- exports --------------------------------------------------------------------------------

    def write_jaeger_json(self, path: str | Path, *, trace_id: str | None = None) -> Path:
        """Write the spans as a Jaeger UI upload file (``{"data": [trace, ...]}``); redacted."""
        from workbench.telemetry.files import write_jaeger_json

        return write_jaeger_json(self._select(trace_id), path, self.redactor)

    def write_otlp_json(self, path: str | Path, *, trace_id: str | None = None) -> Path:
        """Write the spans as an OTLP/JSON ``ExportTraceServiceRequest``; redacted."""
        from workbench.telemetry.files import write_otlp_json

        return write_otlp_json(self._select(trace_id), path, self.redactor)

    def spans_df(self) -> pd.DataFrame:
        """One row per span collected (`Trace.spans_df` of every span: ``frames.SPAN_COLUMNS``)."""
        return self.trace().spans_df()

    def steps_df(self) -> pd.DataFrame:
        """One row per step (`Trace.steps_df` of every span: ``frames.STEP_COLUMNS``)."""
        return self.trace().steps_df()

    def timing_df(self) -> pd.DataFrame:
        """Where the time went (`Trace.timing_df` of every span: ``frames.TIMING_COLUMNS``)."""
        return self.trace().timing_df()

    # -- delivery -------------------------------------------------------------------------------

    @property
    def export_stats(self) -> ExportStats | None:
        """Counts of the OTLP export (None without an endpoint)."""
        return self._pipe.stats if self._pipe is not None else None

    def flush(self, timeout: float | None = None) -> bool:
        """Send what is queued, waiting at most ``timeout`` seconds; True if all got through."""
        if self._pipe is None:
            return True
        done = self._pipe.force_flush(int((timeout or self.flush_timeout) * 1000))
        return done and self._pipe.stats.unconfirmed == 0

    def shutdown(self, timeout: float | None = None) -> ExportStats | None:
        """Flush (bounded by ``timeout``) and stop exporting; warns with the count of lost spans.

        An endpoint that refuses the connection is not waited for (nothing listens there): the
        spans not sent are counted at once. They stay in `spans`, and a stored run can be sent
        again (``workbench push``). Returns the final export counts (None without an endpoint).
        Safe to call twice.
        """
        pipe = self._pipe
        if pipe is None:
            return None
        pipe.shutdown(int((timeout or self.flush_timeout) * 1000))
        stats = pipe.stats
        if stats.unconfirmed and not getattr(self, "_warned", False):
            self._warned = True
            warnings.warn(
                f"workbench telemetry: {stats.unconfirmed} of {stats.queued} spans were dropped: "
                f"not delivered to {stats.endpoint} ({stats.failed} failed to send, the rest "
                f"still queued at shutdown). {_why(stats)}",
                TelemetryExportWarning,
                stacklevel=2,
            )
        return stats

    def _select(self, trace_id: str | None) -> list[ReadableSpan]:
        spans = self.spans
        if trace_id is None:
            return spans
        wanted = int(trace_id, 16)
        return [s for s in spans if s.context is not None and s.context.trace_id == wanted]


def _why(stats: ExportStats) -> str:
    """Why spans were not delivered, as far as the export knows."""
    if stats.refused:
        return "It refused the connection: is the endpoint up?"
    if stats.failure:
        return f"The exporter said: {stats.failure}"
    return "Is the endpoint up?"


def _shutdown_at_exit(ref: weakref.ReferenceType[Telemetry]) -> None:
    telemetry = ref()
    if telemetry is not None:
        telemetry.shutdown()


def _resource(service_name: str) -> Any:
    from opentelemetry.sdk.resources import Resource

    if service_name == "workbench" and os.environ.get("OTEL_SERVICE_NAME"):
        service_name = os.environ["OTEL_SERVICE_NAME"]
    return Resource.create({"service.name": service_name, "service.version": _version()})


@functools.cache
def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("workbench")
    except PackageNotFoundError:  # pragma: no cover - running from a source tree
        return "0"
