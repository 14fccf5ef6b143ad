"""`Scrubber`: the credentials of a call kept out of what the proxy records.

The credentials travel in the request's headers (``Authorization``, ``x-api-key``, ``api-key``,
whatever the wire uses), which are passed on and never kept; and in what the proxy sends itself
(the Basic authorization it makes of ``--upstream http://user:password@host``). But an upstream
may echo any of them back, in an error or inside an answer, and an agent sends an answer back in
its next request. Everything the proxy records of a call (the request's messages and settings,
the answer, an error's message) goes through the scrubber of that call's credentials first, and
a quote is cut short only after it is scrubbed, so no piece of a key survives a cut. What the
agent is sent is the upstream's answer, unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import TypeVar

from workbench._record import Record
from workbench.messages import JsonValue
from workbench.redact import credentials

__all__ = ["REDACTED", "Scrubber"]

REDACTED = "[redacted]"
_SHORTEST = 8
"""A shorter key is a placeholder (``x``, ``EMPTY``: what local servers are given), not a secret:
replacing it in what is recorded would garble every answer that happens to contain it."""

R = TypeVar("R", bound=Record)


class Scrubber:
    """Replaces one call's credentials with ``[redacted]`` in what is recorded of it."""

    def __init__(self, secrets: Iterable[str] = ()) -> None:
        kept = {s for s in secrets if len(s) >= _SHORTEST}
        self.secrets = tuple(sorted(kept, key=len, reverse=True))
        """Longest first: a whole header value goes before the token inside it."""
        self._raw = tuple(s.encode() for s in self.secrets)

    @classmethod
    def of(cls, headers: Mapping[str, str], *sent: Mapping[str, str]) -> Scrubber:
        """The scrubber of a request's ``headers`` and of the headers the proxy ``sent`` itself."""
        return cls(secret for h in (headers, *sent) for secret in credentials(h))

    def __repr__(self) -> str:
        return f"Scrubber({len(self.secrets)} secrets)"

    def text(self, text: str) -> str:
        """``text`` without the credentials."""
        for secret in self.secrets:
            text = text.replace(secret, REDACTED)
        return text

    def quote(self, text: str, limit: int = 500) -> str:
        """``text`` scrubbed, then cut to ``limit`` characters (in that order: see the module)."""
        return self.text(text)[:limit]

    def found_in(self, raw: bytes) -> bool:
        """True when ``raw`` holds a credential: then what is read from it must be scrubbed.

        A search of the bytes per secret, so that a request or an answer without one (all of
        them, nearly) is recorded as it was read, with no copy made.
        """
        return any(secret in raw for secret in self._raw)

    def json(self, value: JsonValue) -> JsonValue:
        """``value`` with the credentials taken out of every string in it (not out of keys)."""
        if isinstance(value, str):
            return self.text(value)
        if isinstance(value, list):
            return [self.json(v) for v in value]
        if isinstance(value, dict):
            return {k: self.json(v) for k, v in value.items()}
        return value

    def record(self, record: R) -> R:
        """``record`` (a message, an answer) with the credentials out of each of its strings.

        The same record when none is in it, which one look at its JSON tells.
        """
        if not self.secrets:
            return record
        dumped = record.model_dump_json()
        if not any(secret in dumped for secret in self.secrets):
            return record
        return type(record).model_validate(self.json(record.model_dump(mode="json")))
