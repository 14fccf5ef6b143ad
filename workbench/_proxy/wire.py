"""What the proxy needs of a wire: one protocol for Chat Completions, Messages and Responses.

Everything that differs between the wires an agent speaks is behind `Wire`: how a request reads
into our messages, tools and settings (and which of its fields change on every run, so a strict
replay leaves them out), how the upstream's answer reads into a `ModelResponse` (complete, or a
stream read event by event as the relay passes it on), and how a recorded response, or an error,
is written back in the wire's own shape. The routes, the relay, the recorder and replay are the
same for every wire (`workbench._proxy.server`), so a new wire touches none of them.

The reading of answers is the model clients' own (``workbench.models._*_wire``), so the proxy and
the clients cannot drift apart; what a wire module here adds is the server's half: requests in,
answers out.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from pydantic import ValidationError

from workbench._proxy.calls import Call
from workbench._record import Record
from workbench.errors import MalformedResponseError, MessageFormatError
from workbench.messages import JsonValue, ModelResponse
from workbench.models._wire import EventStream, snippet
from workbench.models.prices import price_for
from workbench.state import validation_summary

__all__ = ["EventReading", "Read", "Reading", "Redact", "Wire", "not_a_request"]

Redact = Callable[[str], str]
"""Scrubs a call's credentials from what an upstream said, before it is quoted or recorded."""


def not_a_request(kind: str, exc: ValidationError, raw: bytes) -> MessageFormatError:
    """What a client is told of a body that is not ``kind`` (a 400): what is wrong, and where.

    The first problems by their place in the body (``messages: Input should be a valid list``),
    then how the body began, quoted back to the client that sent it as it was sent.
    """
    began = f"the body began: {snippet(raw, str)}" if raw.strip() else "the body was empty"
    return MessageFormatError(
        f"the request is not {kind}: {validation_summary(exc, limit=3)} ({began})"
    )


class Read(Record):
    """A request as the proxy records it, and how it travels.

    The call's settings are the body's other fields but how the answer travels (``stream``) and
    those that change on every run of the same agent (session ids, cache keys): what a strict
    replay compares. The server adds whose conversation and session it is.
    """

    call: Call
    stream: bool
    sent: bytes | None = None
    """The body to send upstream instead of the agent's, if the wire needs one: a stream that
    must be asked for its usage (`workbench._proxy.usage`)."""


class Reading(Protocol):
    """An upstream's stream read into a response, one server-sent event at a time."""

    @property
    def done(self) -> bool:
        """The stream said that it is whole (``[DONE]``, ``message_stop``, ...).

        What comes after is not read, and a client may hang up without losing the answer.
        """

    def feed(self, event: str, data: str) -> None:
        """Read one event; a `ModelError` if it is an error, or cannot be read."""

    def response(self, model: str, first: float | None) -> ModelResponse:
        """The response the events made.

        ``model`` if they name none; ``first``: the seconds to the first piece. A
        `MalformedResponseError` if the stream ended before it was whole.
        """


class EventReading:
    """A `Reading` of a stream of typed events, by the client's own `EventStream` for the wire.

    Messages and Responses stream typed events, which their clients read with an `EventStream`
    (`AnthropicStream`, `ResponsesStream`); the proxy relaying such a stream reads it the same
    way, so the two cannot read one answer differently.
    """

    def __init__(self, stream: EventStream) -> None:
        self.stream = stream

    @property
    def done(self) -> bool:
        return self.stream.done

    def feed(self, event: str, data: str) -> None:
        self.stream.feed(event, data)

    def response(self, model: str, first: float | None) -> ModelResponse:
        if not self.stream.done:
            raise MalformedResponseError("the upstream's stream ended early")
        response = self.stream.response(price_for(model), model)
        return response.model_copy(update={"time_to_first_token": first})


class Wire(Protocol):
    """One wire's side of the proxy (see the module docstring)."""

    name: str
    """Recorded in the run's metadata (``proxy.wire``): ``chat``, ``messages``, ``responses``."""
    path: str
    """Where the wire is served and forwarded, after ``/v1`` (``/chat/completions``)."""

    def read(self, body: bytes) -> Read:
        """A request body; one that is not the wire's is a `MessageFormatError`."""

    def answer(self, content: bytes, redact: Redact, model: str) -> ModelResponse:
        """A complete answer read into our response.

        A `MalformedResponseError` (quoting it through ``redact``) if it is not one, or is an
        error the upstream sent with a success status.
        """

    def reading(self, redact: Redact) -> Reading:
        """A new reading of a streamed answer."""

    def rendered(self, response: ModelResponse) -> dict[str, JsonValue]:
        """A recorded response as the complete answer the wire's server sends."""

    def rendered_events(self, response: ModelResponse) -> list[bytes]:
        """A recorded response as the events of the wire's stream, each a whole event."""

    def error(self, message: str, kind: str, status: int) -> dict[str, JsonValue]:
        """An error in the shape the wire's clients read (and show)."""

    def error_event(self, message: str, kind: str) -> bytes:
        """An error told in a stream under way, as the wire's clients read it."""
