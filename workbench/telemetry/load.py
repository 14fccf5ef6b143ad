"""`load_trace`: a trace from a file, a JSON string or a backend, as a `Trace`.

Sources:

- an OTLP/JSON document (``{"resourceSpans": ...}``: our ``write_otlp_json``, a collector's file
  exporter, whose JSON lines hold one such document per batch), as a path or a string; ids in
  hex or in base64 (protobuf's JSON mapping);
- a Jaeger JSON document (``{"data": [{"traceID", "spans", "processes"}]}``: the UI's upload
  format and query API v1/v2);
- ``jaeger+http://host:16686/TRACE_ID``: Jaeger's query API v3 (``/api/v3/traces/{id}``, OTLP
  JSON under ``result``, in one chunk or several);
- ``phoenix+http://host:6006/PROJECT/TRACE_ID``: Phoenix's REST API
  (``/v1/projects/{project}/spans/otlpv1?trace_id=...``, paged).

The documents are read into spans by `workbench.telemetry.readers` (times in any epoch unit,
string values redacted); this module gets them: from the file, the text or the backend.

Whatever cannot be read raises `TraceLoadError` saying what and where: a truncated file, a shape
that is none of these, ids of the wrong length, a backend that is down, slow, or has no such trace.
"""

from __future__ import annotations

import json
import re
import warnings
from pathlib import Path
from typing import Any
from urllib.parse import quote

from workbench._record import collector_paused
from workbench.errors import TraceLoadError
from workbench.redact import redacted
from workbench.telemetry import otlp_decode
from workbench.telemetry._fetch import Fetch
from workbench.telemetry.readers import phoenix_spans, spans_from_document
from workbench.telemetry.recover import read_json
from workbench.telemetry.trace import SpanData, Trace
from workbench.traceids import valid_trace_id

__all__ = ["load_trace"]

_BACKEND = re.compile(r"(jaeger|phoenix)\+(https?://[^/]+)/(.+)")


def load_trace(source: str | Path, *, trace_id: str | None = None, timeout: float = 10.0) -> Trace:
    """Load a trace from a file, a JSON string, or a backend URL (see the module's docstring).

    ``trace_id`` keeps only that trace of a document holding several. ``timeout`` bounds the
    whole load from a backend, every request and page of it, in seconds (`telemetry._fetch`).
    """
    try:
        return _load(source, trace_id, timeout)
    except TraceLoadError as exc:
        # Errors quote what could not be read (an id, a time, a key, a path): a key there stays out
        message = redacted(str(exc))
        if message == str(exc):
            raise
        raise TraceLoadError(message) from None


def _load(source: str | Path, trace_id: str | None, timeout: float) -> Trace:
    if isinstance(source, str) and (match := _BACKEND.fullmatch(source.strip())):
        backend, base, rest = match.groups()
        read = _from_jaeger if backend == "jaeger" else _from_phoenix
        with Fetch(timeout=timeout, read=_json_values) as fetch:
            spans = read(base, rest, fetch)
    else:
        with collector_paused():  # a big file's spans are built at once, and freed at once
            spans = _spans(source)
    if trace_id is not None:
        spans = [s for s in spans if s.trace_id == trace_id.lower()]
    if not spans:
        raise TraceLoadError(
            f"no spans{f' of trace {trace_id}' if trace_id else ''} in {_name(source)}"
        )
    return Trace.of(spans)


# -- reading the source ------------------------------------------------------------------------


def _name(source: str | Path) -> str:
    text = str(source)
    return text if len(text) < 80 and "\n" not in text else "the JSON text"


def _spans(source: str | Path) -> list[SpanData]:
    """The spans of a file or a JSON text.

    The usual OTLP/JSON document is decoded straight into its types (`otlp_decode`); any other
    (Jaeger's, snake_case keys, NaN, a damaged one) is parsed and read by `readers`.
    """
    if isinstance(source, str) and not source.strip():  # Path("") is the current directory
        raise TraceLoadError("the source is empty: give a file, a JSON text or a backend URL")
    # a text read from a file with a BOM (Windows tools write one) keeps it: it is still JSON
    text = source.lstrip().removeprefix("\ufeff").lstrip() if isinstance(source, str) else ""
    raw: bytes | str = text
    if not text.startswith(("{", "[")) or _names_file(text):
        try:
            raw = Path(source).read_bytes()
        except OSError as exc:  # its text, not str(exc): that quotes the source whole again
            why = exc.strerror or type(exc).__name__
            raise TraceLoadError(f"cannot read trace file {_name(source)}: {why}") from None
    decoded = otlp_decode.spans(raw)
    if decoded is not None:
        return decoded
    if isinstance(raw, bytes):
        _check_plain(raw, source)
    text = _text(raw, Path(source)) if isinstance(raw, bytes) else raw
    try:
        document = _json_values(text)
    except ValueError as exc:
        raise TraceLoadError(f"{_name(source)} is not valid JSON (truncated?): {exc}") from None
    return spans_from_document(document)


_COMPRESSED = {b"\x1f\x8b": "gzip", b"\x28\xb5\x2f\xfd": "zstd", b"PK\x03\x04": "zip"}
"""The first bytes of a compressed file (a trace exported or downloaded compressed)."""


def _check_plain(data: bytes, source: str | Path) -> None:
    """Refuse a file that holds nothing, or a compressed one, saying so (not "not valid JSON")."""
    if not data.strip():
        raise TraceLoadError(f"{_name(source)} is empty: no trace was written to it")
    kind = next((k for magic, k in _COMPRESSED.items() if data.startswith(magic)), None)
    if kind is not None:
        raise TraceLoadError(f"{_name(source)} is {kind}-compressed: decompress it and load that")


def _names_file(text: str) -> bool:
    """Whether a text that starts like JSON names a file after all (``[run 3] trace.json``).

    A document is rarely a short line, and a file's name never holds a line break.
    """
    if len(text) > 4096 or "\n" in text:
        return False
    try:
        return Path(text).is_file()
    except (OSError, ValueError):  # a name too long for the system, a NUL in it
        return False


def _json_values(text: str) -> Any:
    """One JSON value, or a list of the values written one after another.

    The OpenTelemetry Collector's file exporter writes a request per batch, one a line; Jaeger's
    API v3 streams its answer as ``{"result": ...}`` chunks. Only a text that is not one value
    is read a second time, value by value.
    """
    try:
        return read_json(text)
    except json.JSONDecodeError as exc:
        if exc.msg != "Extra data":
            raise
    decoder, values, at = json.JSONDecoder(), [], 0
    while (at := _after_space(text, at)) < len(text):
        try:
            _, end = decoder.raw_decode(text, at)
        except RecursionError:  # read_json says so for the first value; this is a later one
            raise ValueError(f"a value at character {at} is nested too deeply") from None
        values.append(read_json(text[at:end]))  # read again for its lone surrogates
        at = end
    return values


def _after_space(text: str, at: int) -> int:
    while at < len(text) and text[at] in " \t\r\n":
        at += 1
    return at


def _text(data: bytes, path: Path) -> str:
    """A file's text; bytes that are not UTF-8 (a latin-1 writer, a cut character) replaced.

    One bad byte in one attribute value should cost that byte, not the whole trace.
    """
    try:
        return data.decode("utf-8-sig")  # with a BOM (Windows tools write one) or without
    except UnicodeDecodeError as exc:
        warnings.warn(
            f"{path}: bytes that are not UTF-8 (the first at byte {exc.start}) were replaced "
            "by U+FFFD",
            stacklevel=5,  # _text, _spans, _load, load_trace, its caller
        )
        return data.decode("utf-8-sig", errors="replace")


def _checked_trace_id(text: str) -> str:
    trace_id = text.strip().lower()
    if not valid_trace_id(trace_id):
        raise TraceLoadError(f"{text!r} is not a trace id (32 hex digits, not all zero)")
    return trace_id


def _from_jaeger(base: str, rest: str, fetch: Fetch) -> list[SpanData]:
    trace_id = _checked_trace_id(rest)
    return spans_from_document(fetch.get(f"{base}/api/v3/traces/{trace_id}"))


def _from_phoenix(base: str, rest: str, fetch: Fetch) -> list[SpanData]:
    project, _, raw_id = rest.rpartition("/")
    if not project:
        raise TraceLoadError("a Phoenix source is phoenix+http://host:port/PROJECT/TRACE_ID")
    trace_id = _checked_trace_id(raw_id)
    url = f"{base}/v1/projects/{quote(project, safe='')}/spans/otlpv1"
    spans: list[SpanData] = []
    cursor: str | None = None
    seen: set[str] = set()  # the same cursor again would page forever; new ones, the budget
    while True:
        params: dict[str, Any] = {"trace_id": trace_id, "limit": 1000}
        if cursor:
            params["cursor"] = cursor
        page = fetch.get(url, params)
        if not isinstance(page, dict) or not isinstance(page.get("data"), list):
            raise TraceLoadError(f"{url} answered in an unknown shape")
        spans += phoenix_spans(page["data"])
        cursor = page.get("next_cursor")
        if not cursor:
            return spans
        if not isinstance(cursor, str):
            raise TraceLoadError(f"{url} answered a page cursor that is not text: {cursor!r}")
        if cursor in seen:
            raise TraceLoadError(f"{url} answered the same page cursor {cursor!r} twice")
        seen.add(cursor)
