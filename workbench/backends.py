"""A trace backend's traces as a run list: Jaeger's query API v3 and Phoenix's REST API.

A team's backend is its shared store of runs (Jaeger on ClickHouse, Cassandra or OpenSearch;
Phoenix on Postgres), so the run list reads it as it reads a store: ``wb.runs(source=URL)`` and
``RunsBrowser(URL)`` with ``"jaeger+http://host:16686[/SERVICE]"`` or
``"phoenix+http://host:6006[/PROJECT]"``. One row is one trace, with the columns its spans have
(`trace_summary`): agent, status, errors and the first, tools, steps, tokens, cost, time.

Neither API can answer every filter, and neither counts, so a listing is two passes, both
bounded. The backend narrows what it can (time range, service, the agent's ``invoke_agent``
operation or attribute, a failed root span) and returns whole traces, newest first, page by
page; the rest of the filter (tools, errors, text in the captured content...) is checked here on
each trace. The listing stops at ``limit`` matches, at the page budget or at the deadline (one
`Fetch` per listing, the mechanism `load_trace` uses), and says it stopped (`complete`): the
browser then reads "1,000+" rather than pretending to know the count.
"""

from __future__ import annotations

import json
import re
import time
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterator, Sequence
from datetime import UTC, datetime
from typing import Any, NamedTuple
from urllib.parse import quote

from workbench.errors import TraceLoadError, UsageError
from workbench.runfilter import Choices, RunFilter
from workbench.store import RunSummary
from workbench.telemetry import names as n
from workbench.telemetry._fetch import Fetch
from workbench.telemetry.load import load_trace
from workbench.telemetry.readers import phoenix_spans, spans_from_document
from workbench.telemetry.trace import SpanData, Trace

__all__ = [
    "BACKEND",
    "NAMES",
    "BackendRuns",
    "JaegerRuns",
    "Listing",
    "Page",
    "PhoenixRuns",
    "backend_runs",
    "trace_summary",
]

NAMES = ("jaeger", "phoenix")
"""The backends a run list reads, by the name before ``+`` in their source."""
BACKEND = re.compile(rf"({'|'.join(NAMES)})\+(https?://[^/]+)(?:/([^/]*))?/?")
"""A backend source: ``jaeger+http://host:16686[/SERVICE]``, ``phoenix+http://host[/PROJECT]``."""

LOOKBACK = 7 * 86400.0
"""How far back a listing looks when the filter gives no ``since`` (Jaeger needs a window)."""

_CONTENT = ("message", "input", "output", "arguments", "result", "instructions", "prompt")
"""Attribute keys holding captured content (what ``text=`` searches in a trace)."""


# -- one trace as one row -----------------------------------------------------------------------


def _int(value: Any) -> int:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else 0


def _tokens(trace: Trace, root: SpanData) -> tuple[int, int]:
    """The trace's tokens: the run's totals when it has them, else its model calls' summed."""
    if n.USAGE_TOTAL_INPUT in root.attributes:
        return _int(root.attributes[n.USAGE_TOTAL_INPUT]), _int(
            root.attributes.get(n.USAGE_TOTAL_OUTPUT)
        )
    pairs = [n.tokens_of(s.attributes) for s in trace.model_calls()]
    return sum(_int(a) for a, _ in pairs), sum(_int(b) for _, b in pairs)


def trace_summary(trace: Trace) -> RunSummary:
    """One trace as a run list's row, from what its spans say (ours, or another framework's)."""
    root = next((s for s in trace.spans if s.parent_id is None), trace.spans[0])
    attributes = root.attributes
    failed = trace.errors()  # as a stored run's are counted: a failure once, where it happened
    called = [s for s in trace.spans if s.category == "tool"]
    tools = {str(name) for s in called if (name := s.attributes.get(n.TOOL_NAME))}
    chats = trace.model_calls()
    steps = sum(1 for s in trace.spans if s.category == "step") or len(chats)
    tokens_in, tokens_out = _tokens(trace, root)
    cost = attributes.get(n.USAGE_TOTAL_COST)
    status = attributes.get(n.RUN_STATUS) or ("failed" if root.is_error else "completed")
    return RunSummary(
        run_id=trace.trace_id,
        agent_name=str(
            attributes.get(n.AGENT_NAME) or root.resource.get("service.name") or root.name
        ),
        status=str(status),
        stop_reason=attributes.get(n.RUN_STOP_REASON),
        steps=_int(attributes.get(n.RUN_STEPS)) or steps,
        model_name=next(
            (str(c.attributes[n.REQUEST_MODEL]) for c in chats if n.REQUEST_MODEL in c.attributes),
            None,
        ),
        input_tokens=tokens_in,
        output_tokens=tokens_out,
        cost=float(cost) if isinstance(cost, int | float) else None,
        created_at=root.start_ns / 1e9,
        updated_at=max(s.end_ns for s in trace.spans) / 1e9,
        parent_run_id=None,
        rerun_of=None,
        rerun_of_step=None,
        output=None,
        errors=len(failed),
        first_error=failed[0].line if failed else None,
        metadata=trace.metadata(),
        tools=tuple(sorted(tools)),
        tool_calls=len(called),
        duration=(root.end_ns - root.start_ns) / 1e9,
        trace_id=trace.trace_id,
    )


def _has_text(trace: Trace, text: str) -> bool:
    """Whether the trace's captured content holds ``text`` (any case)."""
    wanted = text.casefold()
    return any(
        isinstance(value, str) and wanted in value.casefold()
        for span in trace.spans
        for key, value in span.attributes.items()
        if any(word in key for word in _CONTENT)
    )


def matches(row: RunSummary, trace: Trace, spec: RunFilter) -> bool:
    """Whether a trace's row passes the filter (what the backend could not check itself)."""
    started = row.created_at or 0.0
    return not (
        (spec.status and row.status not in spec.status)
        or (spec.agent and row.agent_name not in spec.agent)
        or (spec.tool and not set(spec.tool) & set(row.tools))
        or (spec.errors is not None and bool(row.errors) != spec.errors)
        or (spec.since is not None and started < spec.since)
        or (spec.until is not None and started >= spec.until)
        or (spec.metadata and any(row.metadata.get(k) != v for k, v in spec.metadata.items()))
        or (spec.text and not _has_text(trace, spec.text))
    )


# -- a listing, bounded -----------------------------------------------------------------------


class Page(NamedTuple):
    """One page of a backend's candidate traces, newest first, and whether it is the last."""

    traces: list[Trace]
    last: bool


class Listing:
    """A listing under way: the traces found so far, newest first, and where the pages stand.

    ``pages`` yields the backend's candidate traces a page at a time, newest first, asking for
    a page only when the one before is used; a listing pulls pages until it has the rows it was
    asked for, so the first page of a browser costs a page of the backend, not the listing.
    """

    def __init__(self) -> None:
        self.rows: list[RunSummary] = []
        self.traces: dict[str, Trace] = {}
        self.pages: Iterator[Page] | None = None
        self.fetch: Fetch | None = None
        """The requests of the current pull: one deadline and page budget for each."""
        self.done = False
        """No more candidates (all were read, or a bound stopped the listing)."""
        self.stopped = False
        """A bound stopped it: the backend holds more than the rows say."""

    def get(self, url: str, params: dict[str, Any] | None = None) -> Any:
        """One request, within the current pull's bounds."""
        assert self.fetch is not None, "a listing asks the backend only while it is pulled"
        return self.fetch.get(url, params)


_SORT_KEYS: dict[str, Callable[[RunSummary], Any]] = {
    "started": lambda r: r.created_at or 0.0,
    "updated": lambda r: r.updated_at or 0.0,
    "run": lambda r: r.run_id,
    "agent": lambda r: r.agent_name,
    "status": lambda r: r.status,
    "errors": lambda r: r.errors or 0,
    "steps": lambda r: r.steps,
    "tokens": lambda r: r.input_tokens + r.output_tokens,
    "cost": lambda r: r.cost or 0.0,
    "duration": lambda r: r.duration or 0.0,
}


_UNSEEN = object()


class BackendRuns(ABC):
    """A trace backend as a `workbench.runlist.RunSource`: its traces, listed within bounds.

    ``timeout`` bounds one listing (every request it makes), ``pages`` its requests, ``limit``
    the traces it keeps. A listing is kept until `refresh` (or a new filter) so that turning
    pages and sorting cost no request.
    """

    scheme = ""

    def __init__(
        self, base: str, *, timeout: float = 30.0, pages: int = 50, limit: int = 1_000
    ) -> None:
        self.base = base.rstrip("/")
        self.timeout, self.pages, self.limit = timeout, pages, limit
        self._listings: dict[str, Listing] = {}
        """Listings by filter (its JSON: a filter holds a dict, so it has no hash)."""
        self._seen: object = _UNSEEN

    @property
    def label(self) -> str:
        """The backend's URL."""
        return f"{self.scheme}+{self.base}"

    def listing(self, spec: RunFilter, want: int | None = None) -> Listing:
        """The traces ``spec`` keeps: at least ``want`` of them when there are (all if None).

        The listing is kept per filter and grows as more is asked for; the backend is asked
        only for the pages the rows need.
        """
        key = spec.model_dump_json()  # a filter holds a dict: it has no hash, its JSON has
        listing = self._listings.get(key)
        if listing is None:
            listing = self._listings[key] = Listing()
            listing.pages = self._candidates(listing, spec)
        if not listing.done and (want is None or len(listing.rows) < want):
            try:
                self._pull(listing, spec, want)
            except TraceLoadError:
                del self._listings[key]  # nothing to show: the next ask asks again
                raise
        return listing

    def _pull(self, listing: Listing, spec: RunFilter, want: int | None) -> None:
        """Read pages into the listing until it has ``want`` rows, or no page is left."""
        assert listing.pages is not None
        with Fetch(timeout=self.timeout, pages=self.pages) as fetch:
            listing.fetch = fetch
            try:
                for page in listing.pages:
                    self._keep(listing, spec, page.traces)
                    listing.done = page.last or listing.stopped
                    if listing.done or (want is not None and len(listing.rows) >= want):
                        return  # the pages stay where they are, for the next pull
                listing.done = True
            except TraceLoadError:
                if not listing.rows and fetch.requests <= 1:
                    raise  # the backend is down or refused the question: say so
                listing.done = listing.stopped = True  # a bound, with rows to show: show them
            finally:
                listing.fetch = None

    def _keep(self, listing: Listing, spec: RunFilter, traces: list[Trace]) -> None:
        """Add the traces the filter keeps, up to the listing's ``limit``."""
        for trace in traces:
            row = trace_summary(trace)
            if matches(row, trace, spec):
                if len(listing.rows) == self.limit:
                    listing.stopped = True
                    return
                listing.rows.append(row)
                listing.traces[trace.trace_id] = trace

    def refresh(self) -> None:
        """Forget the listings: the next one asks the backend again."""
        self._listings.clear()

    def count(self, spec: RunFilter) -> int:
        """How many traces the listing has found so far (all of them when `complete`).

        A listing not begun reads its first page for this.
        """
        return len(self.listing(spec, want=1).rows)

    def complete(self, spec: RunFilter) -> bool:
        """Whether the listing holds every trace ``spec`` keeps (it read every page)."""
        listing = self.listing(spec, want=1)
        return listing.done and not listing.stopped

    def find(
        self, spec: RunFilter, *, sort: str, descending: bool, offset: int, limit: int
    ) -> list[RunSummary]:
        """One page of the listing, sorted.

        Newest first is the backend's own order, so that page needs the rows up to it (and
        one more, to know there is a next page); any other order needs the whole listing.
        """
        newest_first = sort == "started" and descending
        listing = self.listing(spec, want=offset + limit + 1 if newest_first else None)
        rows = sorted(listing.rows, key=_SORT_KEYS[sort], reverse=descending)
        return rows[offset : offset + limit]

    def choices(self) -> Choices:
        """The agents and tools of the traces listed so far."""
        rows = [r for listing in self._listings.values() for r in listing.rows]
        return Choices(
            tuple(sorted({r.agent_name for r in rows})),
            tuple(sorted({t for r in rows for t in r.tools})),
        )

    def version(self) -> object:
        """The newest trace's id: when it changes, the listings are asked for again."""
        newest = self._newest()
        if self._seen is not _UNSEEN and newest != self._seen:
            self.refresh()
        self._seen = newest
        return newest

    def open(self, trace_id: str) -> Trace:
        """The whole trace: from the listing when it was read whole, else from the backend."""
        for listing in self._listings.values():
            if trace_id in listing.traces:
                return listing.traces[trace_id]
        return load_trace(self._trace_url(trace_id), timeout=self.timeout)

    @abstractmethod
    def _candidates(self, listing: Listing, spec: RunFilter) -> Iterator[Page]:
        """The backend's traces for ``spec``, newest first, asked for page by page."""

    @abstractmethod
    def _newest(self) -> object:
        """The newest trace's id (None: the backend cannot say cheaply)."""

    @abstractmethod
    def _trace_url(self, trace_id: str) -> str:
        """The `load_trace` source of one trace."""


def _traces(spans: Sequence[SpanData]) -> list[Trace]:
    """Spans of several traces as traces, newest first."""
    grouped: dict[str, list[SpanData]] = {}
    for span in spans:
        grouped.setdefault(span.trace_id, []).append(span)
    traces = [Trace.of(group) for group in grouped.values()]
    return sorted(traces, key=lambda t: t.spans[0].start_ns, reverse=True)


def _tags(spec: RunFilter) -> dict[str, str | int | float | bool]:
    """The metadata filters a backend can ask of the run span's attributes itself.

    Those of a value an attribute holds as itself (`names.metadata_attributes`); a list or an
    object is JSON text there, and checked on each trace like the rest of the filter. A key
    with a colon is too: Phoenix reads ``key:value`` up to the first one.
    """
    return {
        n.RUN_METADATA + key: value
        for key, value in spec.metadata.items()
        if isinstance(value, str | bool | int | float) and ":" not in key
    }


def _tag_text(value: str | int | float | bool) -> str:
    """A tag's value as Jaeger compares it: as text (``true``, not ``True``)."""
    return json.dumps(value) if isinstance(value, bool) else str(value)


def _iso(epoch: float) -> str:
    return datetime.fromtimestamp(epoch, UTC).isoformat().replace("+00:00", "Z")


# -- Phoenix -----------------------------------------------------------------------------------

ROOTS = 50
"""Root spans (traces) asked of Phoenix per page: a browser's first page needs one page."""


class PhoenixRuns(BackendRuns):
    """Phoenix's traces (one project) through its REST API: root spans, then their traces."""

    scheme = "phoenix"

    def __init__(self, base: str, project: str = "default", **bounds: Any) -> None:
        super().__init__(base, **bounds)
        self.project = project or "default"
        self._spans = f"{self.base}/v1/projects/{quote(self.project, safe='')}/spans/otlpv1"

    @property
    def label(self) -> str:
        """The backend's URL and project."""
        return f"{super().label}/{self.project}"

    def _root_params(self, spec: RunFilter) -> dict[str, Any]:
        params: dict[str, Any] = {"parent_id": "null", "limit": ROOTS}
        if spec.since is not None:
            params["start_time"] = _iso(spec.since)
        if spec.until is not None:
            params["end_time"] = _iso(spec.until)
        if spec.status == ("failed",):
            params["status_code"] = "ERROR"
        # each `attribute` narrows further; the value is read as JSON (a string quoted)
        attribute = [f"{key}:{json.dumps(value)}" for key, value in _tags(spec).items()]
        if len(spec.agent) == 1:
            attribute.append(f"{n.AGENT_NAME}:{json.dumps(spec.agent[0])}")
        if attribute:
            params["attribute"] = attribute
        return params

    def _candidates(self, listing: Listing, spec: RunFilter) -> Iterator[Page]:
        """The traces of the project's root spans, newest first, a page of roots at a time."""
        params = self._root_params(spec)
        while True:
            page = _page(listing.get(self._spans, params), self._spans)
            roots = phoenix_spans(page["data"])
            cursor = page.get("next_cursor")
            yield Page(_traces(self._spans_of(listing, [r.trace_id for r in roots])), not cursor)
            if not cursor:
                return
            params = {**params, "cursor": cursor}

    def _spans_of(self, listing: Listing, trace_ids: list[str]) -> list[SpanData]:
        if not trace_ids:
            return []
        spans: list[SpanData] = []
        params: dict[str, Any] = {"trace_id": trace_ids, "limit": 1000}
        while True:
            page = _page(listing.get(self._spans, params), self._spans)
            spans += phoenix_spans(page["data"])
            if not page.get("next_cursor"):
                return spans
            params = {**params, "cursor": page["next_cursor"]}

    def _newest(self) -> object:
        with Fetch(timeout=self.timeout, pages=1) as fetch:
            page = _page(fetch.get(self._spans, {"parent_id": "null", "limit": 1}), self._spans)
        return page["data"][0].get("span_id") if page["data"] else None

    def _trace_url(self, trace_id: str) -> str:
        return f"phoenix+{self.base}/{self.project}/{trace_id}"


def _page(answer: Any, url: str) -> dict[str, Any]:
    if not isinstance(answer, dict) or not isinstance(answer.get("data"), list):
        raise TraceLoadError(f"{url} answered in an unknown shape")
    return answer


# -- Jaeger ------------------------------------------------------------------------------------


class JaegerRuns(BackendRuns):
    """Jaeger's traces through its query API v3: services, then traces in a time window."""

    scheme = "jaeger"
    depth = 100
    """Traces asked for per request (Jaeger's ``search_depth``); older ones by moving the window."""

    def __init__(self, base: str, service: str = "", **bounds: Any) -> None:
        super().__init__(base, **bounds)
        self.service = service

    @property
    def label(self) -> str:
        """The backend's URL (and service)."""
        return f"{super().label}/{self.service}" if self.service else super().label

    def _services(self, listing: Listing) -> list[str]:
        if self.service:
            return [self.service]
        answer = listing.get(f"{self.base}/api/v3/services")
        services = answer.get("services") if isinstance(answer, dict) else None
        if not isinstance(services, list) or not all(isinstance(s, str) for s in services):
            raise TraceLoadError(f"{self.base}/api/v3/services answered in an unknown shape")
        return [s for s in services if s != "jaeger"]  # Jaeger's own traces are not runs

    def _params(self, service: str, spec: RunFilter, newest: float) -> dict[str, Any]:
        oldest = spec.since if spec.since is not None else time.time() - LOOKBACK
        params: dict[str, Any] = {
            "query.service_name": service,
            "query.start_time_min": _iso(oldest),
            "query.start_time_max": _iso(newest),
            "query.search_depth": self.depth,
        }
        if len(spec.agent) == 1:  # the GenAI conventions name an agent's span after it
            params["query.operation_name"] = f"invoke_agent {spec.agent[0]}"
        tags = {key: _tag_text(value) for key, value in _tags(spec).items()}
        if len(spec.status) == 1:  # a workbench run says how it ended on its run span
            tags[n.RUN_STATUS] = spec.status[0]
        if tags:
            params["query.attributes"] = json.dumps(tags)
        return params

    def _candidates(self, listing: Listing, spec: RunFilter) -> Iterator[Page]:
        """Each service's traces, newest first, the window moved back a search at a time."""
        seen: set[str] = set()
        services = self._services(listing)
        for number, service in enumerate(services, 1):
            newest = spec.until if spec.until is not None else time.time() + 60
            while True:
                params = self._params(service, spec, newest)
                document = listing.get(f"{self.base}/api/v3/traces", params)
                found = _traces(spans_from_document(document)) if document else []
                fresh = [t for t in found if t.trace_id not in seen]
                seen.update(t.trace_id for t in fresh)
                more = len(found) == self.depth and bool(fresh)
                yield Page(fresh, not more and number == len(services))
                if not more:
                    break
                # the next search ends where this one's oldest trace started
                newest = found[-1].spans[0].start_ns / 1e9 + 1e-6

    def _newest(self) -> object:
        return None  # Jaeger cannot tell cheaply; a listing is asked again with refresh()

    def _trace_url(self, trace_id: str) -> str:
        return f"jaeger+{self.base}/{trace_id}"


def backend_runs(source: str, **bounds: Any) -> BackendRuns:
    """The backend a source URL names (see `BACKEND`); `UsageError` for anything else."""
    match = BACKEND.fullmatch(source.strip())
    if match is None:
        raise UsageError(
            f"{source!r} is not a backend: jaeger+http://host:16686[/SERVICE] or "
            "phoenix+http://host:6006[/PROJECT]"
        )
    scheme, base, path = match.groups()
    if scheme == "jaeger":
        return JaegerRuns(base, path or "", **bounds)
    return PhoenixRuns(base, path or "default", **bounds)
