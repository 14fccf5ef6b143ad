"""`Scrubber`: the client's API key kept out of what the proxy records.

The key travels in the request's ``Authorization`` header, which is passed on and never kept; but
an upstream may echo it back, in an error or inside an answer, and an agent sends an answer back
in its next request. Everything the proxy records of a call (the request's messages and settings,
the answer, an error's message) goes through the scrubber of that call's key first. What the
agent is sent is the upstream's answer, unchanged.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import TypeVar

from workbench._record import Record
from workbench.messages import JsonValue

__all__ = ["REDACTED", "Scrubber"]

REDACTED = "[redacted]"
_BEARER = "bearer "
_SHORTEST = 8
"""A shorter key is a placeholder (``x``, ``EMPTY``: what local servers are given), not a secret:
replacing it in what is recorded would garble every answer that happens to contain it."""

R = TypeVar("R", bound=Record)


class Scrubber:
    """Replaces one request's API key with ``[redacted]`` in what is recorded of it."""

    def __init__(self, headers: Mapping[str, str]) -> None:
        auth = headers.get("authorization", "")
        secret = auth[len(_BEARER) :] if auth.lower().startswith(_BEARER) else auth
        self.secret = secret if len(secret) >= _SHORTEST else ""
        self._raw = self.secret.encode()

    def __repr__(self) -> str:
        return f"Scrubber({'a key' if self.secret else 'no key'})"

    def text(self, text: str) -> str:
        """``text`` without the key."""
        return text.replace(self.secret, REDACTED) if self.secret else text

    def found_in(self, raw: bytes) -> bool:
        """True when ``raw`` holds the key: then what is read from it must be scrubbed.

        One search of the bytes, so that a request or an answer without the key (all of them,
        nearly) is recorded as it was read, with no copy made.
        """
        return bool(self._raw) and self._raw in raw

    def json(self, value: JsonValue) -> JsonValue:
        """``value`` with the key taken out of every string in it (not out of object keys)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.json(v) for k, v in value.items()}
        return value

    def record(self, record: R) -> R:
        """``record`` (a message, an answer) with the key out of each of its strings.

        The same record when the key is not in it, which one look at its JSON tells.
        """
        if not self.secret or self.secret not in record.model_dump_json():
            return record
        return type(record).model_validate(self.json(record.model_dump(mode="json")))
