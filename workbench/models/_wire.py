"""What every wire module shares: lenient models of what servers send, server-sent events, quotes.

Each wire (Chat Completions, Anthropic Messages, the Responses API) keeps its own module with its
two mappings, to the wire and from it; what they all need to read a server's answer lives here,
once: the base of their lenient pydantic models (unknown fields ignored, so a server that adds
fields still works), the reader of server-sent events, and the scrubbed quote of what a server
said that goes into an error.
"""

from __future__ import annotations

import re
import time
from abc import ABC, abstractmethod
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from pydantic import BaseModel, ConfigDict

if TYPE_CHECKING:
    from workbench.messages import ModelResponse
    from workbench.models.prices import ModelPrice

__all__ = [
    "RETRY_INSTRUCTION",
    "EventStream",
    "Lenient",
    "Redact",
    "SseReader",
    "snippet",
    "sse_events",
]

RETRY_INSTRUCTION = "Fix the errors and try again."
"""Appended to a retry prompt so the model knows it must answer again, not just read."""


class Lenient(BaseModel):
    """JSON a server sent: fields we read are checked, fields we do not know are ignored."""

    model_config = ConfigDict(extra="ignore", frozen=True)


Redact = Callable[[str], str]
"""Scrubs the client's secrets from what the server said (servers echo keys back)."""


def snippet(raw: bytes | str, redact: Redact) -> str:
    """The start of what the server sent, scrubbed before it is cut (no half key survives)."""
    text = redact(raw.decode("utf-8", "replace") if isinstance(raw, bytes) else raw)
    return text if len(text) <= 200 else f"{text[:200]}... ({len(text)} characters)"


@dataclass
class EventStream(ABC):
    """A streamed answer read one server-sent event at a time, into one response at its end.

    Each wire whose stream is a sequence of typed events (Anthropic's, the Responses API's) has
    one; the client feeds it as events arrive, and so can a proxy relaying the stream. ``started``
    is the ``time.perf_counter()`` at which the request was sent (the first token sets
    `time_to_first_token`); `done` says whether the stream's last event came (a stream without
    it was cut short); an error event raises the typed error it stands for, naming ``where`` the
    stream came from, with what the server said passed through ``redact``.
    """

    provider: str
    redact: Redact
    where: str = "the server"
    started: float = field(default_factory=time.perf_counter)
    on_text_delta: Callable[[str], None] | None = None
    done: bool = field(default=False, init=False)
    time_to_first_token: float | None = field(default=None, init=False)

    @abstractmethod
    def feed(self, event: str, data: str) -> None:
        """Take in one event (``event`` is the SSE event name; the data's ``type`` decides)."""

    @abstractmethod
    def response(self, price: ModelPrice | None, model: str) -> ModelResponse:
        """The answer the events make (call it once `done`)."""

    def _token(self) -> None:
        """A token arrived: the first one sets `time_to_first_token`."""
        if self.time_to_first_token is None:
            self.time_to_first_token = time.perf_counter() - self.started


class SseReader:
    """Server-sent events: ``(event, data)``, data lines joined, comments skipped.

    An ``error:`` line (older llama.cpp) is taken as the data of an ``error`` event. A client
    reading a stream (`sse_events`) and the proxy relaying one both `feed` it the text of each
    piece as it arrives, lines split across pieces and all, then `close` it.
    """

    def __init__(self) -> None:
        self._event, self._data = "message", list[str]()
        self._partial = ""
        """The end of the text fed so far that is not a whole line yet."""

    def line(self, line: str) -> tuple[str, str] | None:
        """Take one line (without its end); the event it completes, if it completes one."""
        if not line:
            return self.end()
        if line.startswith("data:"):
            self._data.append(line[5:].removeprefix(" "))
        elif line.startswith("event:"):
            self._event = line[6:].strip()
        elif line.startswith("error:"):
            self._event = "error"
            self._data.append(line[6:].removeprefix(" "))
        return None

    def end(self) -> tuple[str, str] | None:
        """The event under way, if it has data; the reader starts afresh."""
        event, data = self._event, self._data
        self._event, self._data = "message", []
        return (event, "\n".join(data)) if data else None

    def feed(self, text: str) -> list[tuple[str, str]]:
        """Take the next piece of a stream's text; the events it completes.

        SSE ends a line with CR, LF or CRLF; a CR that ends the piece is held back, as the next
        piece may start with its LF.
        """
        text = self._partial + text
        held = "\r" if text.endswith("\r") else ""
        *lines, rest = _LINE_END.split(text[: len(text) - len(held)])
        self._partial = rest + held
        return [event for line in lines if (event := self.line(line)) is not None]

    def close(self) -> list[tuple[str, str]]:
        """The stream ended: the events its last lines complete (no blank line needed)."""
        last, self._partial = self._partial.removesuffix("\r"), ""
        events = self.feed(last + "\n") if last else []
        ended = self.end()
        return events if ended is None else [*events, ended]


async def sse_events(pieces: AsyncIterator[str]) -> AsyncIterator[tuple[str, str]]:
    """The events of a stream, each as soon as the pieces of text that hold it have arrived.

    Read by pieces, not by lines: a stream of many small events costs one step of the reader per
    piece the network delivered, not an async step per line.
    """
    reader = SseReader()
    async for piece in pieces:
        for event in reader.feed(piece):
            yield event
    for event in reader.close():
        yield event


_LINE_END = re.compile(r"\r\n|\r|\n")
