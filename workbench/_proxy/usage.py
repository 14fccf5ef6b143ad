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


class UsageHider:
    """Passes a stream on event by event, without the usage-only chunk the agent did not ask for.

    Bytes come in as the upstream sent them (an event may be cut across pieces, a line end too);
    what `feed` returns are the whole events among them, as they were, but that one.
    """

    def __init__(self) -> None:
        self._event: list[bytes] = []
        """The lines (with their ends) of the event under way."""
        self._partial = b""
        """The end of what came so far that is not a whole line yet."""

    def feed(self, piece: bytes) -> bytes:
        """Take the next piece; the events it completes, to pass on."""
        text = self._partial + piece
        held = b"\r" if text.endswith(b"\r") else b""  # the next piece may start with its LF
        if held:
            text = text[:-1]
        out: list[bytes] = []
        start = 0
        for end in _LINE_END.finditer(text):
            line = text[start : end.end()]
            start = end.end()
            self._event.append(line)
            if line == end.group():  # a blank line ends the event
                out += self._passed(self._event)
                self._event = []
        self._partial = text[start:] + held
        return b"".join(out)

    def close(self) -> bytes:
        """The stream ended: what is left of it (an event with no blank line after it)."""
        last = [*self._event, self._partial] if self._partial else self._event
        self._event, self._partial = [], b""
        return b"".join(self._passed(last))

    @staticmethod
    def _passed(lines: list[bytes]) -> list[bytes]:
        data = b"\n".join(
            line[5:].rstrip(b"\r\n").removeprefix(b" ")
            for line in lines
            if line.startswith(b"data:")
        )
        return [] if _usage_only(data) else lines


def _usage_only(data: bytes) -> bool:
    """Whether an event's data is a chunk with no choices and a usage object."""
    if b'"usage"' not in data or b'"choices"' not in data:
        return False
    try:
        chunk = json.loads(data)
    except ValueError:
        return False
    return isinstance(chunk, dict) and chunk.get("choices") == [] and bool(chunk.get("usage"))
