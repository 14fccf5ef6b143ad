"""Getting JSON from a trace backend within one deadline and a page budget.

A backend is someone else's server, and it can answer slowly forever: one byte every 0.3 s never
trips a read timeout, and a server handing out a new cursor on every page never runs out of
pages. So a call that asks a backend (`load_trace` of a ``jaeger+``/``phoenix+`` source, a
listing of its traces) makes one `Fetch` and sends every request through it: each request gets
only the time left of the call's deadline, the body is read as it arrives and the clock checked
between pieces, and every request counts against the call's page budget. Whichever bound is hit
is a `TraceLoadError` naming it and the URL.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Mapping
from typing import Any

from workbench._json import loads
from workbench.errors import TraceLoadError

__all__ = ["PAGES", "Fetch"]

PAGES = 1_000
"""Requests one call may make by default: a million spans at Phoenix's 1,000 a page."""


class Fetch:
    """The requests of one call to a backend: ``timeout`` seconds in all, ``pages`` requests.

    ``read`` turns a body's text into its value (JSON by default; `load_trace` reads the
    several values a streamed answer holds). Use it as a context manager: its requests share
    one connection, closed at the end.

    >>> with Fetch(timeout=10.0) as fetch:  # doctest: +SKIP
    ...     page = fetch.get("http://127.0.0.1:6006/v1/projects", {"limit": 100})
    """

    def __init__(
        self,
        *,
        timeout: float,
        pages: int = PAGES,
        read: Callable[[str], Any] | None = None,
    ) -> None:
        self.timeout = timeout
        self.pages = pages
        self.requests = 0
        self._read = read or loads
        self._deadline = time.monotonic() + timeout
        self._client: Any = None

    def __enter__(self) -> Fetch:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._client is not None:
            self._client.close()

    def left(self) -> float:
        """Seconds left of the call's deadline (never below zero)."""
        return max(0.0, self._deadline - time.monotonic())

    def get(self, url: str, params: Mapping[str, Any] | None = None) -> Any:
        """The JSON value at ``url``; `TraceLoadError` when it cannot be had within the bounds."""
        import httpx

        if self.requests >= self.pages:
            raise TraceLoadError(
                f"{url}: gave up after {self.requests} requests (the page budget): the backend "
                "kept answering with more pages"
            )
        self.requests += 1
        try:
            status, text = self._body(httpx, url, params)
        except httpx.TimeoutException:
            raise self._late(url) from None
        except httpx.HTTPError as exc:
            raise TraceLoadError(f"cannot reach {url}: {type(exc).__name__}: {exc}") from None
        answer = " ".join(text[:400].split())[:200]  # a web server's error page, on one line
        if status == 404:
            raise TraceLoadError(f"{url}: not found (404): {answer}")
        if status >= 400:
            raise TraceLoadError(f"{url} answered {status}: {answer}")
        try:
            return self._read(text)
        except ValueError:  # not JSON, or nested too deeply
            raise TraceLoadError(f"{url} did not answer with JSON: {text[:80]!r}") from None

    def _body(self, httpx: Any, url: str, params: Mapping[str, Any] | None) -> tuple[int, str]:
        """The status and text of one answer, read piece by piece against the deadline."""
        left = self.left()
        if left <= 0:
            raise self._late(url)
        if self._client is None:
            self._client = httpx.Client()
        pieces: list[bytes] = []
        with self._client.stream("GET", url, params=params, timeout=left) as response:
            for piece in response.iter_bytes():
                pieces.append(piece)
                if self.left() <= 0:  # a drip never trips a read timeout: the clock does
                    raise self._late(url)
            encoding = response.encoding or "utf-8"
            return response.status_code, b"".join(pieces).decode(encoding, errors="replace")

    def _late(self, url: str) -> TraceLoadError:
        return TraceLoadError(f"{url} did not answer within {self.timeout}s")
