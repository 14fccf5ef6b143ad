"""A streamed answer relayed from the upstream to the agent, and read into the recording.

`Relay` passes each piece of the upstream's stream on as it arrives and then hands it to its
`StreamReading`, which reads the server-sent events into the wire's `Reading` (and stops at the
first event that is an error or cannot be read). The agent's time to first token is the
upstream's plus the hop, and a long answer is read in the gaps between its tokens, not all at
its end.
"""

from __future__ import annotations

import asyncio
import codecs
import time
from collections.abc import Callable
from typing import Any, Literal

import aiohttp

from workbench._proxy.headers import returned
from workbench._proxy.usage import UsageHider
from workbench._proxy.wire import Reading
from workbench.errors import MalformedResponseError, ModelError
from workbench.messages import ModelResponse
from workbench.models._wire import SseReader

__all__ = ["UPSTREAM_FAILED", "HangingUp", "Relay", "StreamReading"]

UPSTREAM_FAILED = (aiohttp.ClientError, TimeoutError)
"""What aiohttp raises when the upstream cannot be reached, breaks off or is too slow."""


class StreamReading:
    """A relayed stream read into the recording, piece by piece, as the relay passes it on.

    Reading stops once the wire's reading is `done`, or at the first event that is an error or
    cannot be read (`problem`); the relay goes on passing the stream on either way.
    """

    def __init__(self, reading: Reading) -> None:
        self.reading = reading
        self.problem: tuple[str, str] | None = None
        """What was wrong with the stream, as (error type, message), if something was."""
        self._events = SseReader()
        self._text = codecs.getincrementaldecoder("utf-8")("replace")

    @property
    def done(self) -> bool:
        """The stream said it is whole: the answer is, whatever comes after it."""
        return self.reading.done

    def take(self, piece: bytes) -> None:
        """Read one piece of the stream (its text may end mid-line, or mid-character)."""
        self._read(self._events.feed(self._text.decode(piece)))

    def close(self) -> None:
        """The stream ended: read its last events."""
        self._read([*self._events.feed(self._text.decode(b"", final=True)), *self._events.close()])

    def response(self, model: str, first: float | None) -> ModelResponse | None:
        """The answer read, or None with `problem` set (one that ended early included)."""
        if self.problem is None:
            try:
                return self.reading.response(model, first)
            except MalformedResponseError as exc:
                self.problem = (type(exc).__name__, str(exc))
        return None

    def _read(self, events: list[tuple[str, str]]) -> None:
        for event, data in events:
            if self.reading.done or self.problem is not None:
                return
            try:
                self.reading.feed(event, data)
            except ModelError as exc:
                self.problem = (type(exc).__name__, str(exc))


class HangingUp:
    """While it is open, a client that hangs up (``http.disconnect``) cancels the task in it.

    What the task waits on (the upstream's answer, its stream) is then dropped at once, and the
    cancel is swallowed on the way out: `left` says that it came. Any other cancel (the server
    stopping) goes on up. One task watches the client by a callback on its ``receive``, not two
    more tasks as Starlette's `StreamingResponse` does: a cost that showed in the hop's time
    when the proxy shares the agent's interpreter.
    """

    def __init__(self, receive: Callable[[], Any]) -> None:
        self._receive = receive
        self.left = False
        """The client hung up."""
        self._leaving: asyncio.Future[Any] | None = None

    def __enter__(self) -> HangingUp:
        waiting = asyncio.current_task()
        assert waiting is not None, "ASGI calls its application from a task"
        self._waiting = waiting
        self._leaving = asyncio.ensure_future(self._receive())
        self._leaving.add_done_callback(self._heard)
        return self

    def _heard(self, watch: asyncio.Future[Any]) -> None:
        if not watch.cancelled() and watch.exception() is None:
            self.left = watch.result()["type"] == "http.disconnect"
            if self.left:
                self._waiting.cancel()

    def __exit__(self, kind: type[BaseException] | None, *_: object) -> bool:
        assert self._leaving is not None
        self._leaving.remove_done_callback(self._heard)
        self._leaving.cancel()
        if kind is asyncio.CancelledError and self.left:  # ours: the client hung up
            self._waiting.uncancel()
            return True
        return False


class Relay:
    """The upstream's stream passed on as each piece arrives, each then read into the recording.

    A piece is read only once the agent has been sent it: its time to first token and to the
    last byte are the upstream's plus the hop. A plain ASGI response relayed by the request's own
    task: a client that hangs up cancels it (`HangingUp`), which stops the read from the
    upstream at once.
    """

    def __init__(
        self,
        answer: aiohttp.ClientResponse,
        reading: StreamReading,
        record: Callable[[Relay], None],
        hider: UsageHider | None = None,
    ) -> None:
        self.answer = answer
        self.reading = reading
        self.hider = hider
        """Takes the usage the proxy asked for out of what the agent is sent (`asking_usage`)."""
        self.first: float | None = None
        self.outcome: Literal["ended", "broke", "gone"] = "gone"
        """``gone`` until the stream ends: a relay cut short by the client leaving stays so."""
        self.why = ""
        self._record = record
        self._finished = False
        """The agent was sent the end of the body (with the last piece)."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Relay the status, the headers and each piece of the body; then record."""
        watch = HangingUp(receive)
        try:
            with watch:
                await self._relay(send)
        finally:  # the connection goes back to the pool if the body was read to its end
            if self.outcome == "ended":
                self.answer.release()
            else:
                self.answer.close()
        if not watch.left and not self._finished:
            await send({"type": "http.response.body", "body": self._rest(), "more_body": False})
        self._record(self)

    async def _relay(self, send: Any) -> None:
        kept = returned(self.answer.headers).items()
        headers = [(k.lower().encode("latin-1"), v.encode("latin-1")) for k, v in kept]
        await send(
            {"type": "http.response.start", "status": self.answer.status, "headers": headers}
        )
        stream = self.answer.content
        try:
            async for piece in stream.iter_any():
                self.first = self.first or time.perf_counter()
                # The upstream's last piece and its end often come together (``[DONE]`` and the
                # last chunk of the body): passed on as one write, which the agent reads at once.
                self._finished = stream.at_eof()
                passed = piece if self.hider is None else self.hider.feed(piece)
                if self._finished:
                    passed += self._rest()
                try:
                    if passed or self._finished:
                        more = not self._finished
                        body = {"type": "http.response.body", "body": passed, "more_body": more}
                        await send(body)
                finally:  # read even if the agent hangs up as it is sent: the upstream said it
                    self.reading.take(piece)
            self.outcome = "ended"
        except UPSTREAM_FAILED as exc:
            self.outcome, self.why = "broke", repr(exc)

    def _rest(self) -> bytes:
        """What is held of the stream when it ends (the usage hider holds an unended event)."""
        return self.hider.close() if self.hider is not None else b""
