"""The OTLP exporter's HTTP session, watched for an endpoint that refuses connections.

The exporter retries a refused connection with backoff until its timeout, and says so only in
log lines; its ``session=`` parameter is how we learn it without reading them. A shutdown that
knows the endpoint refused need not wait out its flush bound (`ExportPipe.shutdown`). Imported
with the exporter (the ``otlp`` extra brings ``requests``).
"""

from __future__ import annotations

import threading
from typing import Any

import requests

__all__ = ["WatchedSession"]


class WatchedSession(requests.Session):
    """A ``requests`` session that remembers whether the last connection it tried was refused."""

    def __init__(self) -> None:
        super().__init__()
        self.refused = threading.Event()
        """Set while the last request could not connect because the endpoint refused it."""

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:
        try:
            response = super().request(*args, **kwargs)
        except requests.ConnectionError as exc:
            if _refused(exc):
                self.refused.set()
            else:  # reset, timed out, a name that does not resolve: not known to be down
                self.refused.clear()
            raise
        self.refused.clear()
        return response


def _refused(exc: BaseException) -> bool:
    """Whether a connection refused is what lies under ``exc`` (requests wraps it three deep)."""
    seen: object = exc
    for _ in range(8):
        if isinstance(seen, ConnectionRefusedError):
            return True
        if not isinstance(seen, BaseException):
            return False
        seen = seen.__cause__ or seen.__context__ or getattr(seen, "reason", None)
    return False
