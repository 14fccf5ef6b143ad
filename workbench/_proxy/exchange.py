"""`Exchange`: one model call on its way through the proxy, whatever its wire.

It knows what to record (the call, its snapshot, the answer or the error) and how to answer the
agent: forwarded (the body goes upstream as it came, the answer comes back as it was sent, a
stream piece by piece through the `Relay`), replayed (a recorded response written in the wire's
shape), or failed (an error in the wire's shape, recorded as the call's error). Failures are
answers, not exceptions: an upstream that is down is a 502, a slow one a 504, and an upstream's
own error or garbage reaches the agent as sent.
"""

from __future__ import annotations

import io
import time

import aiohttp
from starlette.background import BackgroundTask
from starlette.responses import JSONResponse, Response

from workbench._proxy.calls import Call, Outcome
from workbench._proxy.headers import returned
from workbench._proxy.recorder import Recorder
from workbench._proxy.relay import Relay, StreamReading
from workbench._proxy.scrub import Scrubber
from workbench._proxy.usage import UsageHider
from workbench._proxy.wire import Read, Wire
from workbench.errors import MalformedResponseError
from workbench.messages import ModelResponse
from workbench.records import StepContext
from workbench.state import ErrorInfo, Phase

__all__ = ["Exchange", "cannot_reach", "posted", "sent"]


async def posted(
    client: aiohttp.ClientSession, target: str, body: bytes, headers: dict[str, str]
) -> aiohttp.ClientResponse:
    """The upstream's answer to a POST, asked again once if a pooled connection was stale.

    A server closes a kept-alive connection it has had idle for a while (llama.cpp's after a few
    seconds); a request that finds it closed before any answer came was never answered, and
    asking again on a new connection is what every HTTP client does. Only once: a server that
    hangs up again is down.
    """
    try:
        return await client.post(target, data=sent(body), headers=headers, allow_redirects=False)
    except aiohttp.ServerDisconnectedError:  # the stale connection is dropped: a new one now
        return await client.post(target, data=sent(body), headers=headers, allow_redirects=False)


def sent(body: bytes) -> io.BytesIO:
    """``body`` as aiohttp sends it upstream: written in pieces, with its ``Content-Length``.

    Handed bytes, aiohttp writes them in one go and warns (a `ResourceWarning`) about any body
    over 1 MiB: where warnings are errors, a long conversation could not be forwarded at all.
    """
    return io.BytesIO(body)


def cannot_reach(upstream: str, exc: Exception) -> str:
    """What the agent and the recording are told of an upstream that cannot be reached."""
    return f"cannot reach the upstream {upstream}: {type(exc).__name__}: {exc}"


class Exchange:
    """One model call: what to record, and how to answer the agent (see the module docstring).

    ``target`` is the upstream URL the call is forwarded to (the wire's path, the query kept).
    """

    def __init__(
        self,
        wire: Wire,
        recorder: Recorder,
        snapshot: StepContext,
        call: Call,
        read: Read,
        body: bytes,
        scrubber: Scrubber,
        headers: dict[str, str],
    ) -> None:
        self.wire, self.recorder, self.snapshot, self.call = wire, recorder, snapshot, call
        self.stream = read.stream
        self.body = read.sent or body
        """What goes upstream: the agent's body, or the wire's version of it (`Read.sent`)."""
        self.hider = UsageHider() if read.sent is not None and read.stream else None
        """Takes what the proxy asked for on the agent's behalf out of what the agent is sent."""
        self.headers = headers
        self.scrubber = scrubber
        self.started = time.perf_counter()

    def answered(self, response: ModelResponse, ttft: float | None) -> None:
        """Record the answer, without the call's credentials if the upstream echoed them."""
        duration = time.perf_counter() - self.started
        response = self.scrubber.record(response.writable())
        outcome = Outcome(response=response, duration=duration, time_to_first_token=ttft)
        self.recorder.end(self.snapshot, self.call, outcome)

    def record_error(self, kind: str, message: str, status: int | None = None) -> None:
        """Record that the call ended without an answer (the credentials scrubbed out).

        ``status``: the error status the agent was answered with, if it was one.
        """
        error = ErrorInfo(
            type=kind,
            message=self.scrubber.text(message),
            phase=Phase.INFERENCE,
            step=self.snapshot.step,
        )
        duration = time.perf_counter() - self.started
        outcome = Outcome(response=None, error=error, duration=duration, status=status)
        self.recorder.end(self.snapshot, self.call, outcome)

    def failed(self, status: int, kind: str, message: str) -> Response:
        """Record the error and give it to the agent, in the wire's shape."""
        self.record_error(kind, message, status)
        return JSONResponse(self.wire.error(message, kind, status), status_code=status)

    def replayed(self, response: ModelResponse) -> Response:
        """Record a recorded answer as this call's, and give it to the agent in the wire."""
        self.answered(response, 0.0 if self.stream else None)
        if self.stream:
            events = b"".join(self.wire.rendered_events(response))
            return Response(events, media_type="text/event-stream")
        return JSONResponse(self.wire.rendered(response))

    async def forward(
        self, client: aiohttp.ClientSession, upstream: str, query: str = ""
    ) -> Response | Relay:
        """Send the body upstream and hand back what it answered, as it answered it.

        ``upstream`` is the base URL without credentials (it may be quoted); ``query`` is the
        agent's query string (``?beta=true``), passed on with the wire's path.
        """
        target = f"{upstream}{self.wire.path}{query}"
        try:
            answer = await posted(client, target, self.body, self.headers)
            if self._streams(answer):
                reading = StreamReading(self.wire.reading(self.scrubber.text))
                return Relay(answer, reading, self._record_stream, self.hider)
            async with answer:
                content = await answer.read()
        except TimeoutError as exc:
            message = f"the upstream {upstream} did not answer in time ({type(exc).__name__})"
            return self.failed(504, "ModelTimeoutError", message)
        except aiohttp.ClientError as exc:
            return self.failed(502, "ModelConnectionError", cannot_reach(upstream, exc))
        return Response(
            content,
            answer.status,
            returned(answer.headers),
            background=BackgroundTask(self._record_answer, answer.status, content),  # agent first
        )

    def _streams(self, answer: aiohttp.ClientResponse) -> bool:
        """Whether the answer is relayed as a stream: a streamed call's successful answer."""
        return self.stream and 200 <= answer.status < 300

    def _record_stream(self, relay: Relay) -> None:
        """Record the stream the relay passed on (and read), once the agent has all of it."""
        reading = relay.reading
        # Once the stream said it is whole, the answer is: an agent may hang up then without
        # waiting for the body's end (the openai SDK does), and the upstream may break off.
        # Once it said something wrong, that is what went wrong: an agent that cannot read an
        # event hangs up on it (the anthropic SDK does), before or after the stream's end.
        if not reading.done and reading.problem is None:
            if relay.outcome == "gone":
                self.record_error("ClientDisconnected", "the client went away mid-stream")
                return
            if relay.outcome == "broke":
                self.record_error(
                    "MalformedResponseError", f"the upstream's stream broke off: {relay.why}"
                )
                return
        reading.close()
        first = None if relay.first is None else relay.first - self.started
        response = reading.response(self.call.model, first)
        if response is None:
            assert reading.problem is not None
            self.record_error(*reading.problem)
            return
        self.answered(response, first)

    async def _record_answer(self, status: int, content: bytes) -> None:
        """Record a forwarded answer once the agent has it (on the proxy's loop, not a thread)."""
        if not 200 <= status < 300:
            said = self.scrubber.quote(content.decode("utf-8", "replace"))
            self.record_error("APIError", f"{status} from the upstream: {said}", status)
            return
        try:
            response = self.wire.answer(content, self.scrubber.text, self.call.model)
        except MalformedResponseError as exc:
            self.record_error("MalformedResponseError", str(exc))
            return
        self.answered(response, None)
