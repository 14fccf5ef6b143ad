"""The recording proxy's HTTP side: a Chat Completions endpoint in front of an upstream model.

A request is read once into our messages (the wire module's `from_wire_messages`), handed to the
`Recorder`, and then answered in one of two ways:

- forwarded: the body goes to the upstream as it came, with the client's own headers (its API key
  included), and the upstream's answer comes back as it was sent, bytes and status alike (a
  redirect too: it is not followed). A stream is relayed piece by piece as it arrives, and each
  piece is read into the recording once it is passed on, so the agent's time to first token is
  the upstream's, and a long answer is read in the gaps between its tokens, not all at its end.
- replayed: a strict `ReplayModel` made from a recorded run answers, after checking that the
  request is the one recorded for that step (messages, each tool's definition, the model and its
  settings); a request that departs gets an HTTP 400 whose message is the difference. With
  ``until_step`` the conversation goes live (forwarded) after that step.

Failures are answers, not exceptions: an upstream that is down, slow or answering garbage gives
the agent an OpenAI-style error (or the upstream's own), and the step records what happened. So
is a call the server cuts off when it stops (after its grace, see `workbench._proxy.handle`): a
503, or an error event in a stream under way. The client's headers are passed on and never kept;
the API key is scrubbed from anything recorded.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import AsyncIterator, Mapping, MutableMapping
from email.utils import formatdate
from typing import Any

import aiohttp
import yarl
from starlette.background import BackgroundTask
from starlette.requests import Request
from starlette.responses import JSONResponse, Response, StreamingResponse

from workbench._proxy.headers import forwarded, returned
from workbench._proxy.recorder import Call, Outcome, Recorder
from workbench._proxy.relay import UPSTREAM_FAILED, Relay, StreamReading, assembled
from workbench._proxy.scrub import Scrubber
from workbench._proxy.usage import UsageHider, asking_usage, asks_usage
from workbench._proxy.wire import (
    completion_chunks,
    completion_json,
    from_wire_messages,
    parse_request,
    request_tools,
)
from workbench.errors import (
    MalformedResponseError,
    MessageFormatError,
    ReplayDivergence,
    ReplayExhausted,
)
from workbench.messages import JsonValue, ModelResponse
from workbench.models._openai_wire import (
    completion_response,
    parse_completion,
)
from workbench.models.base import ModelRequest
from workbench.models.prices import price_for
from workbench.models.replay import ReplayModel
from workbench.records import RunResult, StepContext
from workbench.state import ErrorInfo, Phase

__all__ = ["CONVERSATION_HEADER", "ProxyApp", "without_credentials"]

CONVERSATION_HEADER = "x-workbench-run"
"""A client that sends this header has its calls grouped by its value instead of by prefix."""

_NOT_SETTINGS = ("model", "messages", "tools", "stream", "stream_options")
"""What a request's body holds besides its settings: the model is the snapshot's ``model_name``
(as an agent of ours records it, so that its strict replay of a proxy's run agrees), the
messages and tools are their own fields, and how the answer travels is not recorded."""
_DEPARTED = 400
"""A request the recording cannot answer is the client's bad request: SDKs show it at once (they
retry a 409 or a 5xx, which would only ask the recording the same question again)."""


def without_credentials(url: str) -> str:
    """``url`` without a ``user:password@`` part: what may be recorded or shown of it."""
    return str(yarl.URL(url).with_user(None))


def error_body(message: str, kind: str, status: int) -> dict[str, Any]:
    """An error in the shape OpenAI clients read (``error.message`` is what they show)."""
    return {"error": {"message": message, "type": kind, "code": status}}


class ProxyApp:
    """The ASGI application: ``POST /v1/chat/completions`` and ``GET /v1/models``.

    ``client`` is set by the server once its event loop runs (an `aiohttp.ClientSession`
    belongs to one loop).
    """

    def __init__(
        self,
        recorder: Recorder,
        *,
        upstream: str | None,
        replay: RunResult | None = None,
        until_step: int | None = None,
    ) -> None:
        self.recorder = recorder
        self.upstream = without_credentials(upstream.rstrip("/")) if upstream else None
        """Where requests go, without credentials: it may be shown in errors and recorded."""
        # Credentials in the upstream's URL authenticate the proxy in the client's place.
        auth = aiohttp.BasicAuth.from_url(yarl.URL(upstream)) if upstream else None
        self._credentials = {"authorization": auth.encode()} if auth is not None else {}
        self.replay = replay
        self._recording = _with_model_setting(replay) if replay is not None else None
        self.until_step = until_step
        self.client: aiohttp.ClientSession | None = None
        self._replays: dict[str, ReplayModel] = {}
        self._live: set[str] = set()
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
        if request.method == "POST" and path == "/chat/completions":
            response = await self.chat(request)
        elif request.method == "GET" and path == "/models":
            response = await self.models(request)
        else:
            message = f"the workbench proxy serves no {request.method} {request.url.path}"
            response = JSONResponse(error_body(message, "not_found", 404), status_code=404)
        await response(scope, receive, send)

    # --- the two routes ----------------------------------------------------------------------

    async def models(self, request: Request) -> Response:
        """The upstream's model list; when replaying offline, the recorded model."""
        if self.upstream is None:
            name = self._recorded_model()
            data = [{"id": name, "object": "model", "owned_by": "workbench-replay"}]
            return JSONResponse({"object": "list", "data": data})
        try:
            async with self._client.get(
                f"{self.upstream}/models",
                headers=self._forwarded(request.headers),
                allow_redirects=False,
            ) as answer:
                content = await answer.read()
        except UPSTREAM_FAILED as exc:
            return _unreachable(self.upstream, exc)
        return Response(content, answer.status, returned(answer.headers))

    async def chat(self, request: Request) -> Response | Relay:
        """Record one model call and answer it, from the upstream or from the recording."""
        body = await request.body()
        headers = request.headers
        scrubber = Scrubber.of(headers, self._credentials)
        try:
            call, stream, asking = _read_call(body, headers, scrubber)
        except (MessageFormatError, MalformedResponseError) as exc:
            return JSONResponse(error_body(str(exc), "invalid_request_error", 400), 400)
        snapshot = self.recorder.begin(call)
        forwarded = self._forwarded(headers)
        exchange = _Exchange(self.recorder, snapshot, call, body, scrubber, forwarded)
        exchange.asking_usage = asking
        if self.replay is not None and snapshot.run_id not in self._live:
            return await self._from_recording(exchange, stream=stream)
        assert self.upstream is not None, "proxy() refuses neither an upstream nor a replay"
        if stream:
            return await exchange.stream(self._client, self.upstream)
        return await exchange.forward(self._client, self.upstream)

    # --- answering from a recording ----------------------------------------------------------

    async def _from_recording(self, exchange: _Exchange, *, stream: bool) -> Response | Relay:
        assert self._recording is not None
        run_id = exchange.snapshot.run_id
        model = self._replays.get(run_id)
        if model is None:
            model = self._replays[run_id] = ReplayModel.from_run(
                self._recording, until_step=self.until_step, strict=True
            )
        call = exchange.call
        settings = {"model": call.model, **call.settings}  # checked as the recording's are
        request = ModelRequest(messages=call.messages, tools=call.tools, settings=settings)
        try:
            response = await model.request(request)
        except ReplayExhausted as exc:
            if self.until_step is None or self.upstream is None:
                return exchange.failed(_DEPARTED, "replay_exhausted", str(exc))
            self._live.add(run_id)  # the fork point is passed: the rest of the run is live
            if stream:
                return await exchange.stream(self._client, self.upstream)
            return await exchange.forward(self._client, self.upstream)
        except ReplayDivergence as exc:
            return exchange.failed(_DEPARTED, "replay_divergence", str(exc))
        exchange.answered(response, 0.0 if stream else None)
        if stream:
            return StreamingResponse(_replayed_events(response), media_type="text/event-stream")
        return JSONResponse(completion_json(response))

    def _forwarded(self, headers: Mapping[str, str]) -> dict[str, str]:
        return forwarded(headers, (CONVERSATION_HEADER,), self._credentials)

    @property
    def _client(self) -> aiohttp.ClientSession:
        assert self.client is not None, "the proxy's HTTP client is made when its loop starts"
        return self.client

    def _recorded_model(self) -> str:
        steps = self.replay.steps if self.replay is not None else ()
        return next((s.response.model_name for s in steps if s.response is not None), "replay")


def _read_call(
    body: bytes, headers: Mapping[str, str], scrubber: Scrubber
) -> tuple[Call, bool, bytes | None]:
    """The call ``body`` makes, as it is recorded (without the API key), and if it streams.

    The third is the body that asks for a stream's usage when the agent's does not (see
    `workbench._proxy.usage`). An agent sends back the answers it was given: one that echoed the
    key brings it back.
    """
    wire = parse_request(body)
    messages = from_wire_messages(wire.messages)
    tools = request_tools(wire)
    request: dict[str, JsonValue] = json.loads(body)
    asking = asking_usage(body, request) if wire.stream and not asks_usage(request) else None
    settings = {k: v for k, v in request.items() if k not in _NOT_SETTINGS}
    if scrubber.found_in(body):
        messages = tuple(scrubber.record(m) for m in messages)
        tools = tuple(scrubber.record(t) for t in tools)
        settings = {k: scrubber.json(v) for k, v in settings.items()}
    call = Call(
        model=wire.model,
        messages=messages,
        tools=tools,
        settings=settings,
        conversation=headers.get(CONVERSATION_HEADER),
    )
    return call, wire.stream, asking


class _Exchange:
    """One model call on its way through: what to record, and how to answer the agent."""

    def __init__(
        self,
        recorder: Recorder,
        snapshot: StepContext,
        call: Call,
        body: bytes,
        scrubber: Scrubber,
        forwarded: dict[str, str],
    ) -> None:
        self.recorder, self.snapshot, self.call, self.body = recorder, snapshot, call, body
        self.headers = forwarded
        self.scrubber = scrubber
        self.started = time.perf_counter()
        self.asking_usage: bytes | None = None
        """A stream's body asking for its usage, which the agent's did not: sent instead."""

    def answered(self, response: ModelResponse, ttft: float | None) -> None:
        """Record the answer, without the client's API key if the upstream echoed it."""
        duration = time.perf_counter() - self.started
        response = self.scrubber.record(response)
        outcome = Outcome(response=response, duration=duration, time_to_first_token=ttft)
        self.recorder.end(self.snapshot, self.call, outcome)

    def scrub(self, text: str) -> str:
        """``text`` without the client's API key (an upstream may echo it back)."""
        return self.scrubber.text(text)

    def record_error(self, kind: str, message: str) -> None:
        """Record that the call ended without an answer (the key scrubbed from the message)."""
        message = self.scrub(message)
        error = ErrorInfo(
            type=kind, message=message, phase=Phase.INFERENCE, step=self.snapshot.step
        )
        duration = time.perf_counter() - self.started
        self.recorder.end(
            self.snapshot, self.call, Outcome(response=None, error=error, duration=duration)
        )

    def failed(self, status: int, kind: str, message: str) -> Response:
        """Record the error and give it to the agent."""
        self.record_error(kind, message)
        return JSONResponse(error_body(message, kind, status), status_code=status)

    async def forward(self, client: aiohttp.ClientSession, upstream: str) -> Response:
        """Send the body upstream and hand back what it answered, as it answered it."""
        try:
            async with client.post(
                f"{upstream}/chat/completions",
                data=self.body,
                headers=self.headers,
                allow_redirects=False,
            ) as answer:
                content = await answer.read()
        except TimeoutError as exc:
            return self._timed_out(upstream, exc)
        except aiohttp.ClientError as exc:
            self.record_error("ModelConnectionError", _cannot_reach(upstream, exc))
            return _unreachable(upstream, exc)
        return Response(
            content,
            answer.status,
            returned(answer.headers),
            background=BackgroundTask(self._record_answer, answer.status, content),  # agent first
        )

    async def stream(self, client: aiohttp.ClientSession, upstream: str) -> Response | Relay:
        """Relay the upstream's stream event by event, assembling the recording on the way."""
        try:
            answer = await client.post(
                f"{upstream}/chat/completions",
                data=self.asking_usage or self.body,
                headers=self.headers,
                allow_redirects=False,
            )
            refusal = None if _succeeded(answer.status) else await answer.read()
        except TimeoutError as exc:
            return self._timed_out(upstream, exc)
        except aiohttp.ClientError as exc:
            self.record_error("ModelConnectionError", _cannot_reach(upstream, exc))
            return _unreachable(upstream, exc)
        if refusal is not None:
            self._record_completion(answer.status, refusal)
            return Response(refusal, answer.status, returned(answer.headers))
        hider = UsageHider() if self.asking_usage is not None else None
        return Relay(answer, StreamReading(self.started, self.scrub), self._record_stream, hider)

    def _record_stream(self, relay: Relay) -> None:
        """Record the stream the relay passed on (and read), once the agent has all of it."""
        reading = relay.reading
        # Once ``[DONE]`` has passed, the answer is whole: an agent may hang up then without
        # waiting for the body's end (the openai SDK does), and the upstream may break off.
        if relay.outcome == "gone" and not reading.done:
            self.record_error("ClientDisconnected", "the client went away mid-stream")
            return
        if relay.outcome == "broke" and not reading.done:
            self.record_error(
                "MalformedResponseError", f"the upstream's stream broke off: {relay.why}"
            )
            return
        reading.close()
        if reading.problem is not None:
            self.record_error(*reading.problem)
            return
        first = None if relay.first is None else relay.first - self.started
        self.answered(assembled(reading.assembler, self.call.model, first), first)

    async def _record_answer(self, status: int, content: bytes) -> None:
        """Record a forwarded answer once the agent has it (on the proxy's loop, not a thread)."""
        self._record_completion(status, content)

    def _record_completion(self, status: int, content: bytes) -> None:
        if not _succeeded(status):
            said = self.scrubber.quote(content.decode("utf-8", "replace"))
            self.record_error("APIError", f"{status} from the upstream: {said}")
            return
        try:
            completion = parse_completion(content, self.scrub)
        except MalformedResponseError as exc:
            self.record_error("MalformedResponseError", str(exc))
            return
        self.answered(
            completion_response(completion, price_for(self.call.model), self.call.model), None
        )

    def _timed_out(self, upstream: str, exc: TimeoutError) -> Response:
        message = f"the upstream {upstream} did not answer in time ({type(exc).__name__})"
        return self.failed(504, "ModelTimeoutError", message)


def _with_model_setting(run: RunResult) -> RunResult:
    """``run`` with each snapshot's model name among its settings, for the proxy's replay.

    A strict replay compares settings, not the model name: the proxy puts the name in both the
    recorded settings and the request's, so that asking another model departs from the recording
    (runs recorded before the model left the settings already have it there).
    """
    snapshots = tuple(
        s.model_copy(update={"model_settings": {"model": s.model_name, **s.model_settings}})
        for s in run.snapshots
    )
    return run.model_copy(update={"snapshots": snapshots})


async def _replayed_events(response: ModelResponse) -> AsyncIterator[str]:
    for chunk in completion_chunks(response):
        yield f"data: {json.dumps(chunk)}\n\n"
    yield "data: [DONE]\n\n"


class _Answering:
    """The ``send`` of one answer: it dates an answer the proxy made, and knows how far it got.

    A forwarded answer keeps the upstream's own ``date`` and ``server``, and gets no second one.
    """

    def __init__(self, send: Any) -> None:
        self._send = send
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

        Before the answer began, an error answer; in a stream, an error event (OpenAI's SDKs
        raise it). A plain answer cut between its head and its end is left for the server to
        close, which the agent sees as a broken connection.
        """
        error = error_body(
            "the workbench proxy was stopped before the call ended", "proxy_stopped", 503
        )
        if not self.started:
            body = json.dumps(error).encode()
            headers = [
                (b"content-type", b"application/json"),
                (b"content-length", b"%d" % len(body)),
            ]
            await self({"type": "http.response.start", "status": 503, "headers": headers})
            await self({"type": "http.response.body", "body": body})
        elif self.streaming and not self.ended:
            event = f"data: {json.dumps(error)}\n\n".encode()
            await self({"type": "http.response.body", "body": event})


def _succeeded(status: int) -> bool:
    return 200 <= status < 300


def _cannot_reach(upstream: str, exc: Exception) -> str:
    return f"cannot reach the upstream {upstream}: {type(exc).__name__}: {exc}"


def _unreachable(upstream: str, exc: Exception) -> Response:
    body = error_body(_cannot_reach(upstream, exc), "upstream_unreachable", 502)
    return JSONResponse(body, status_code=502)
