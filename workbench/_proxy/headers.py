"""Which headers cross the proxy, each way.

Hop-by-hop headers belong to one connection (RFC 9110 §7.6.1): ``Connection`` and every header it
names, ``Proxy-Connection``, ``Keep-Alive``, ``TE``, ``Trailer``, ``Transfer-Encoding``,
``Upgrade``, and the proxy's own authentication (``Proxy-Authorization``, ``Proxy-Authenticate``).
None goes on to the next hop: a client's credentials for this proxy are not the upstream's
business, and a header a client marked as for this hop only stays here. The framing headers
(``Host``, ``Content-Length``, ``Content-Encoding``) are each side's own too. Everything else,
the wires' own headers (``anthropic-version``, ``anthropic-beta``, ``OpenAI-Beta``) included,
goes on unchanged.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

__all__ = ["forwarded", "returned"]

_HOP_BY_HOP = frozenset(
    {
        "connection",
        "proxy-connection",
        "keep-alive",
        "te",
        "trailer",
        "transfer-encoding",
        "upgrade",
        "proxy-authorization",
        "proxy-authenticate",
    }
)
_NOT_FORWARDED = _HOP_BY_HOP | {"host", "content-length", "accept-encoding"}
"""The encoding is dropped so that the upstream answers in plain text the proxy can read."""
_NOT_RETURNED = _HOP_BY_HOP | {"content-length", "content-encoding"}


def _named(headers: Iterable[tuple[str, str]]) -> set[str]:
    """The headers a message's ``Connection`` (or ``Proxy-Connection``) names as hop-by-hop."""
    return {
        name.strip().lower()
        for key, value in headers
        if key.lower() in ("connection", "proxy-connection")
        for name in value.split(",")
    }


def forwarded(
    headers: Mapping[str, str], dropped: Iterable[str] = (), added: Mapping[str, str] | None = None
) -> dict[str, str]:
    """A client's headers as they go upstream: without the hop's, ``dropped`` or ``added``.

    ``added`` (the proxy's own authorization) replaces the client's headers of those names.
    """
    added = added or {}
    items = list(headers.items())
    skip = _NOT_FORWARDED | _named(items) | {d.lower() for d in dropped} | set(added)
    return {k: v for k, v in items if k.lower() not in skip} | dict(added)


def returned(headers: Mapping[str, str]) -> dict[str, str]:
    """The upstream's headers to pass back, each a string whose latin-1 bytes are those it sent.

    aiohttp decodes header bytes as UTF-8 with surrogate escapes, and starlette encodes header
    strings as latin-1: a value that is not ASCII would otherwise fail the whole response.
    """
    items = list(headers.items())
    skip = _NOT_RETURNED | _named(items)
    return {
        k: v.encode("utf-8", "surrogateescape").decode("latin-1")
        for k, v in items
        if k.lower() not in skip
    }
