"""The one rule for a URL the workbench sends to: ``http://`` or ``https://``, with a host.

A telemetry endpoint (given or from the ``OTEL_EXPORTER_OTLP_*`` variables), the proxy's upstream
and the command line's ``--endpoint`` and ``--upstream`` are all checked here, where they are
given: ``notaurl`` or ``localhost:4318`` (no scheme) used to be taken and to fail only later,
inside an HTTP client (the OTLP exporter posted to ``notaurl/v1/traces`` at its first export and
said "No scheme supplied" in a warning at exit).
"""

from __future__ import annotations

from urllib.parse import urlsplit

from workbench.errors import InvalidURL
from workbench.redact import redacted

__all__ = ["http_url"]


def http_url(text: str, name: str = "") -> str:
    """``text`` itself if it is an ``http://`` or ``https://`` URL with a host and a usable port.

    Otherwise an `InvalidURL` naming ``name`` (what the URL was given as: ``otlp_endpoint``, a
    variable's name) and quoting the text without the password a URL may carry.

    >>> http_url("http://localhost:4318")
    'http://localhost:4318'
    """
    whose = f"{name}: " if name else ""
    try:
        parts = urlsplit(text)  # a port that is no number, or out of range, raises on reading
        usable = parts.scheme in ("http", "https") and bool(parts.hostname) and parts.port != 0
    except ValueError as exc:
        raise InvalidURL(f"{whose}{redacted(text)!r} is not a URL: {exc}") from None
    if not usable:
        raise InvalidURL(f"{whose}{redacted(text)!r} is not an http:// or https:// URL")
    return text
