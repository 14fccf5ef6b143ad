"""The recording proxy's HTTP side: every wire an agent speaks, on one port, before an upstream.

Routes (after ``/v1``): each wire's own (``POST /chat/completions``, ``/responses``,
``/messages``: `WIRES`), recorded; ``GET /models`` and ``POST /messages/count_tokens`` passed
through, not recorded (they are no model call). A model call is read once into our messages by
its wire (`workbench._proxy.wire`), handed to the `Recorder`, and then answered one of two ways
(`workbench._proxy.exchange`):

- forwarded: the body goes to the upstream's same path (and query) as it came, with the client's
  own headers (its API key, ``anthropic-version``, ``anthropic-beta`` included) but the
  hop-by-hop ones, and the upstream's answer comes back as it was sent, bytes and status alike
  (a redirect too: it is not followed). A stream is relayed piece by piece as it arrives, and
  each piece is read into the recording once it is passed on.
- replayed: a strict `ReplayModel` of the recorded run the conversation is answers in the wire
  the client speaks, after checking that the request is the one recorded for that step; a
  request that departs gets a 400 whose message is the difference (a 5xx makes clients retry,
  Claude Code for minutes). With ``until_step`` each conversation goes live after that step
  (`workbench._proxy.replaying`).

Failures are answers, not exceptions, in the wire's own error shape. So is a call the server
cuts off when it stops (after its grace, see `workbench._proxy.handle`): a 503, or an error
event in a stream under way. The client's headers are passed on and never kept; its credentials
are scrubbed from anything recorded.
"""

from __future__ import annotations

import asyncio
import json
import re
from collections.abc import Mapping, MutableMapping, Sequence
from email.utils import formatdate
from typing import Any

import aiohttp
import yarl
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from workbench._proxy.anthropic import MESSAGES
from workbench._proxy.calls import Call
from workbench._proxy.chat import CHAT
from workbench._proxy.exchange import Exchange, cannot_reach, sent
from workbench._proxy.headers import forwarded, returned
from workbench._proxy.recorder import Recorder
from workbench._proxy.relay import UPSTREAM_FAILED, HangingUp, Relay
from workbench._proxy.replaying import Normalizer, Replayer
from workbench._proxy.responses import RESPONSES
from workbench._proxy.scrub import Scrubber
from workbench._proxy.wire import Read, Wire
from workbench.errors import (
    MalformedResponseError,
    MessageFormatError,
    ReplayDivergence,
    ReplayExhausted,
)
from workbench.models.base import ModelRequest
from workbench.records import ModelTry, RunResult

__all__ = ["CONVERSATION_HEADER", "SESSION_HEADERS", "WIRES", "ProxyApp", "without_credentials"]

CONVERSATION_HEADER = "x-workbench-run"
"""A client that sends this header has its calls grouped by its value instead of by prefix."""
SESSION_HEADERS = ("x-claude-code-session-id", "session-id")
"""Headers in which clients name their session (Claude Code, Codex): its runs are grouped."""

WIRES: dict[str, Wire] = {wire.path: wire for wire in (CHAT, RESPONSES, MESSAGES)}
"""The wires served, by their path after ``/v1``."""
_PASSED = (("GET", "/models"), ("POST", "/messages/count_tokens"))
"""Routes passed through to the upstream and not recorded (``/models`` and what follows it)."""

MAX_BODY = 64 * 2**20
"""The largest request body the proxy takes: 64 MiB, twice what Anthropic's Messages API takes
(32 MB). A bigger one is refused with a 413 and never held whole, so a client that sends without
end cannot make the proxy (in a notebook, the agent's own interpreter) hold it."""

_DEPARTED = 400
"""A request the recording cannot answer is the client's bad request: SDKs show it at once (they
retry a 409 or a 5xx, which would only ask the recording the same question again)."""


_GAVE_UP = "the client hung up before the upstream answered (it stopped waiting)"
_GAVE_UP_STATUS = 499
"""A client that hung up before its answer (nginx's code for it): no client reads it."""

_FAILED_TRY = 500
"""What a replay answers a failed try recorded with no error status (a stream that broke off):
one a client asks again after, as it did."""


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part: what may be recorded or shown of it."""
    return str(yarl.URL(url).with_user(None))


class ProxyApp:
    """The ASGI application (see the module docstring).

    ``client`` is set by the server once its event loop runs (an `aiohttp.ClientSession`
    belongs to one loop).
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        upstream: str | None,
        replay: Sequence[RunResult] = (),
        until_step: int | None = None,
        normalize: Mapping[str, Normalizer] | None = None,
    ) -> None:
        self.recorder = recorder
        self.upstream = without_credentials(upstream.rstrip("/")) if upstream else None
        """Where requests go, without credentials: it may be shown in errors and recorded."""
        # Credentials in the upstream's URL authenticate the proxy in the client's place.
        auth = aiohttp.BasicAuth.from_url(yarl.URL(upstream)) if upstream else None
        self._credentials = {"authorization": auth.encode()} if auth is not None else {}
        live = self.upstream is not None
        self.replayer = (
            Replayer(replay, until_step, live=live, tolerances=normalize) if replay else None
        )
        self.client: aiohttp.ClientSession | None = None
        self._calls: set[asyncio.Task[Any]] = set()
        """The requests being answered, for `settled`."""

    async def __call__(self, scope: Any, receive: Any, send: Any) -> None:
        """Answer a request; one the server cuts off as it stops is told so."""
        if scope["type"] != "http":
            return
        answering = _Answering(send)
        call = asyncio.current_task()
        assert call is not None, "ASGI calls its application from a task"
        self._calls.add(call)
        try:
            await self._route(scope, receive, answering)
        except asyncio.CancelledError:
            # Only the server cancels a call: it is stopping, and the call outlived its grace or
            # was cut off at once (`cut_off`). A client that leaves a stream is the relay's. The
            # recorder writes the call as cut off.
            call.uncancel()
            await answering.cut_off()
        finally:
            self._calls.discard(call)

    def cut_off(self) -> None:
        """End the requests in flight now, each told and recorded as cut off (on the loop)."""
        for call in self._calls:
            call.cancel()

    async def settled(self) -> None:
        """Wait until every request has been answered (the ones cut off included)."""
        if self._calls:
            await asyncio.wait(self._calls)

    async def _route(self, scope: Any, receive: Any, send: _Answering) -> None:
        """Route a request (anything else is a 404 in the OpenAI error shape)."""
        request = Request(scope, receive)
        path = request.url.path.removeprefix("/v1")
        wire = WIRES.get(path)
        response: Response | Relay
        if wire is not None and request.method == "POST":
            send.wire = wire
            response = await self.call(request, wire)
        elif any(request.method == m and path.startswith(p) for m, p in _PASSED):
            response = await self.passed(request, path)
        else:
            message = f"the workbench proxy serves no {request.method} {request.url.path}"
            error = (wire or CHAT).error(message, "not_found", 404)
            response = JSONResponse(error, status_code=404)
        await response(scope, receive, send)

    # --- what is passed through --------------------------------------------------------------

    async def passed(self, request: Request, path: str) -> Response:
        """A request that is no model call, passed to the upstream (not recorded).

        Without an upstream (an offline replay) ``/models`` lists the recorded model, and
        anything else is a 400 saying there is no upstream to ask.
        """
        body = await _body(request)
        if body is None:
            return _own_error(path, _TOO_LARGE, "request_too_large", 413)
        if self.upstream is None:
            return self._offline(path)
        target = f"{self.upstream}{path}{_query(request)}"
        headers = forwarded(request.headers, (CONVERSATION_HEADER,), self._credentials)
        try:
            async with self._client.request(
                request.method,
                target,
                data=sent(body),
                headers=headers,
                allow_redirects=False,
            ) as answer:
                content = await answer.read()
        except UPSTREAM_FAILED as exc:
            return _own_error(path, cannot_reach(self.upstream, exc), "upstream_unreachable", 502)
        return Response(content, answer.status, returned(answer.headers))

    def _offline(self, path: str) -> Response:
        assert self.replayer is not None, "proxy() refuses neither an upstream nor a replay"
        if path.startswith("/models"):
            name = self.replayer.model_name
            model = {"id": name, "object": "model", "type": "model", "owned_by": "workbench"}
            return JSONResponse({"object": "list", "data": [model], "has_more": False})
        message = f"the workbench proxy replays offline: there is no upstream to ask for {path}"
        return _own_error(path, message, "invalid_request_error", 400)

    # --- model calls -------------------------------------------------------------------------

    async def call(self, request: Request, wire: Wire) -> Response | Relay:
        """Record one model call and answer it, from the upstream or from the recording."""
        body = await _body(request)
        if body is None:
            error = wire.error(_TOO_LARGE, "request_too_large", 413)
            return JSONResponse(error, status_code=413)
        headers = request.headers
        scrubber = Scrubber.of(headers, self._credentials)
        try:
            call, read = _read_call(wire, body, headers, scrubber)
        except (MessageFormatError, MalformedResponseError) as exc:
            error = wire.error(str(exc), "invalid_request_error", 400)
            return JSONResponse(error, status_code=400)
        snapshot = self.recorder.begin(call)
        sent = forwarded(headers, (CONVERSATION_HEADER,), self._credentials)
        exchange = Exchange(wire, self.recorder, snapshot, call, read, body, scrubber, sent)
        if self.replayer is not None:
            answer = await self._from_recording(exchange)
            if answer is not None:
                return answer
        return await self._forwarded(exchange, request)

    async def _forwarded(self, exchange: Exchange, request: Request) -> Response | Relay:
        """The call forwarded upstream, unless the client hangs up before the answer comes.

        A client that stopped waiting (its own timeout: the openai SDK's default is ten minutes,
        many agents set less) asks again on a new connection: its call is recorded as failed
        then, so that the new request is that step tried again, and the upstream's request is
        dropped (a local server stops generating what nobody will read). Once the answer's
        stream has begun, the `Relay` watches for the client leaving instead.
        """
        assert self.upstream is not None, "proxy() refuses neither an upstream nor a replay"
        with HangingUp(request.receive):
            return await exchange.forward(self._client, self.upstream, _query(request))
        exchange.record_error("ClientDisconnected", _GAVE_UP)  # it hung up: the with swallowed it
        return Response(status_code=_GAVE_UP_STATUS)  # nobody reads it

    async def _from_recording(self, exchange: Exchange) -> Response | None:
        """The recorded answer, or a refusal; None when the conversation goes on live."""
        assert self.replayer is not None
        call = exchange.call
        settings = {"model": call.model, **call.settings}  # checked as the recording's are
        request = ModelRequest(messages=call.messages, tools=call.tools, settings=settings)
        run_id = exchange.snapshot.run_id
        try:
            response = await self.replayer.answer(run_id, request)
        except ReplayExhausted as exc:
            return exchange.failed(_DEPARTED, "replay_exhausted", str(exc))
        except ReplayDivergence as exc:
            return exchange.failed(_DEPARTED, "replay_divergence", str(exc))
        if response is None:
            return None
        origin = self.replayer.origin(run_id)
        if origin is not None:
            self.recorder.rerun(run_id, origin)
        if isinstance(response, ModelTry):  # a try that failed, answered as it was
            status = response.status or _FAILED_TRY
            return exchange.failed(status, response.error.type, response.error.message)
        return exchange.replayed(response)

    @property
    def _client(self) -> aiohttp.ClientSession:
        assert self.client is not None, "the proxy's HTTP client is made when its loop starts"
        return self.client


def _own_error(path: str, message: str, kind: str, status: int) -> Response:
    """An error the proxy answers on a route passed through, in its wire's shape."""
    wire = MESSAGES if path.startswith(MESSAGES.path) else CHAT
    return JSONResponse(wire.error(message, kind, status), status_code=status)


_TOO_LARGE = (
    f"the request body is over the workbench proxy's {MAX_BODY // 2**20} MiB limit: "
    "it was neither sent upstream nor recorded"
)


async def _body(request: Request) -> bytes | None:
    """The request's body; None, once all of it has come, when it is over `MAX_BODY`.

    What is over the bound is read to its end and dropped, not kept: a client reads the answer
    once it has sent its request, so one cut off mid-send would see a broken connection instead
    of the 413 that says why.
    """
    chunks: list[bytes] = []
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
        if size > MAX_BODY:
            chunks.clear()
        else:
            chunks.append(chunk)
    return b"".join(chunks) if size <= MAX_BODY else None


def _query(request: Request) -> str:
    query = request.url.query
    return f"?{query}" if query else ""


def _read_call(
    wire: Wire, body: bytes, headers: Mapping[str, str], scrubber: Scrubber
) -> tuple[Call, Read]:
    """The call ``body`` makes, as it is recorded (without credentials), and what the wire read.

    An agent sends back the answers it was given: one that echoed a key brings it back.
    """
    read = wire.read(body)
    call = read.call
    update: dict[str, object] = {
        "conversation": headers.get(CONVERSATION_HEADER),
        "session": next((headers[h] for h in SESSION_HEADERS if h in headers), None),
        "wire": wire.name,
        "client": _product(headers.get("user-agent", "")),
    }
    if scrubber.found_in(body):
        update["messages"] = tuple(scrubber.record(m) for m in call.messages)
        update["tools"] = tuple(scrubber.record(t) for t in call.tools)
        update["settings"] = {k: scrubber.json(v) for k, v in call.settings.items()}
    return call.model_copy(update=update), read


def _product(agent: str) -> str | None:
    """The product a ``User-Agent`` names first (``claude-cli`` of ``claude-cli/2.1 (...)``)."""
    product = agent.split("/", 1)[0].split(" ", 1)[0].strip()[:64]
    return product if re.fullmatch(r"[\w.-]+", product) else None


class _Answering:
    """The ``send`` of one answer: it dates an answer the proxy made, and knows how far it got.

    A forwarded answer keeps the upstream's own ``date`` and ``server``, and gets no second one.
    """

    def __init__(self, send: Any) -> None:
        self._send = send
        self.wire: Wire = CHAT
        """The wire of the call answered: the shape of an error it is told."""
        self.started = False
        self.streaming = False
        """The answer is an event stream: it can still say that it failed, in an event."""
        self.ended = False

    async def __call__(self, message: MutableMapping[str, Any]) -> None:
        if message["type"] == "http.response.start":
            headers = list(message.get("headers", ()))
            if not any(name.lower() == b"date" for name, _ in headers):
                headers.append((b"date", formatdate(usegmt=True).encode()))
                message = {**message, "headers": headers}
            self.started = True
            self.streaming = any(
                name.lower() == b"content-type" and value.startswith(b"text/event-stream")
                for name, value in headers
            )
        elif message["type"] == "http.response.body":
            self.ended = not message.get("more_body", False)
        await self._send(message)

    async def cut_off(self) -> None:
        """Tell the agent that the proxy stopped before its call ended, as the answer still can.

        Before the answer began, an error answer; in a stream, an error event (the SDKs raise
        it). A plain answer cut between its head and its end is left for the server to close,
        which the agent sees as a broken connection.
        """
        message = "the workbench proxy was stopped before the call ended"
        if not self.started:
            body = json.dumps(self.wire.error(message, "proxy_stopped", 503)).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ]
            await self({"type": "http.response.start", "status": 503, "headers": headers})
            await self({"type": "http.response.body", "body": body})
        elif self.streaming and not self.ended:
            event = self.wire.error_event(message, "proxy_stopped")
            await self({"type": "http.response.body", "body": event})
