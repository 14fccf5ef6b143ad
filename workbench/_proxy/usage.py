"""A streamed answer's token usage, asked for on the agent's behalf and kept from the agent.

OpenAI-compatible servers (OpenAI, vLLM) send a stream's usage only when the request asks for it
(``stream_options.include_usage``); pydantic-ai and LangChain ask, a plain ``openai`` loop does
not, and its steps would be recorded with no tokens. So the proxy asks for it when the agent did
not (`asking_usage`), and takes the answer's usage-only chunk (no choices, a ``usage`` object) out
of the stream it relays (`UsageHider`), so that the agent reads the stream it asked for. The
recording reads the stream as the upstream sent it.

The other chunks keep the ``"usage": null`` an upstream adds to each of them once asked: a key
every client of the protocol already reads past.
"""

from __future__ import annotations

import json
import re
from typing import Any

__all__ = ["UsageHider", "asking_usage", "asks_usage"]


def asks_usage(request: dict[str, Any]) -> bool:
    """Whether a streamed request asks for its usage itself."""
    options = request.get("stream_options")
    return isinstance(options, dict) and options.get("include_usage") is True


def asking_usage(body: bytes, request: dict[str, Any]) -> bytes:
    """``body`` (whose JSON is ``request``) asking for the stream's usage too.

    The common case, a request without ``stream_options``, gets the option written in front of
    its first key, and keeps the rest of its bytes; one with other stream options is written anew.
    """
    opening = body.find(b"{")
    if "stream_options" not in request and opening != -1:
        option = b'"stream_options":{"include_usage":true}'
        rest = body[opening + 1 :]
        separator = b"," if rest.strip() != b"}" else b""
        return body[: opening + 1] + option + separator + rest
    options = dict(request.get("stream_options") or {}, include_usage=True)
    return json.dumps(request | {"stream_options": options}).encode()


_LINE_END = re.compile(rb"\r\n|\r|\n")
_BLANK_LINES = (b"\n\n", b"\r\n\r\n", b"\r\r")


class UsageHider:
    """Passes a stream on event by event, without the usage-only chunk the agent did not ask for.

    Bytes come in as the upstream sent them (an event may be cut across pieces, a line end too);
    what `feed` returns are the whole events among them, as they were, but that one. Only events
    from the first empty list on (``[]``: that chunk has ``"choices": []``) may be it and are read
    line by line; the whole events before go on at once.
    """

    def __init__(self) -> None:
        self._held = b""
        """What came after the last whole event so far."""

    def feed(self, piece: bytes) -> bytes:
        """Take the next piece; the events it completes, to pass on."""
        text = self._held + piece
        first = text.find(b"[]")
        if first == -1:
            end = _last_event_end(text, len(text))
            self._held = text[end:]
            return text[:end]
        start = _last_event_end(text, first)
        return text[:start] + self._events(text[start:])

    def close(self) -> bytes:
        """The stream ended: what is left of it (an event with no blank line after it)."""
        rest, self._held = self._held, b""
        return b"" if _usage_only(_data(rest)) else rest

    def _events(self, text: bytes) -> bytes:
        held = b"\r" if text.endswith(b"\r") else b""  # the next piece may start with its LF
        text = text[: len(text) - len(held)]
        out: list[bytes] = []
        event = line = 0  # where the event under way, and the line under way, start
        for end in _LINE_END.finditer(text):
            if end.start() == line:  # a blank line ends the event
                if not _usage_only(_data(text[event : end.end()])):
                    out.append(text[event : end.end()])
                event = end.end()
            line = end.end()
        self._held = text[event:] + held
        return b"".join(out)


def _last_event_end(text: bytes, before: int) -> int:
    """Where the last whole event of ``text[:before]`` ends (0: none ends there)."""
    found = ((text.rfind(blank, 0, before), len(blank)) for blank in _BLANK_LINES)
    return max((at + size for at, size in found if at != -1), default=0)


def _data(event: bytes) -> bytes:
    """The data of an event, its ``data:`` lines joined."""
    lines = _LINE_END.split(event)
    return b"\n".join(line[5:].removeprefix(b" ") for line in lines if line.startswith(b"data:"))


def _usage_only(data: bytes) -> bool:
    """Whether an event's data is a chunk with no choices and a usage object."""
    if b'"usage"' not in data or b'"choices"' not in data:
        return False
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    return isinstance(chunk, dict) and chunk.get("choices") == [] and bool(chunk.get("usage"))
