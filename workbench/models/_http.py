"""What every HTTP model client shares: one exchange with retries, typed errors, redaction.

Each wire's client (`OpenAIModel`, `AnthropicModel`, `OpenAIResponsesModel`) is an `HTTPModel`
that says where it posts, how it authenticates, how it builds a body and how it reads an answer;
everything else is here, once:

- 429, 408, 5xx (Anthropic's 529 "overloaded" included) and connection failures are retried with
  exponential backoff and jitter, honouring ``retry-after-ms`` and ``Retry-After`` (seconds or an
  HTTP date), bounded in count (`RetryPolicy.max_retries`) and in total time
  (`RetryPolicy.max_total_seconds`). A read timeout is not retried: the model was slow, and asking
  again would double the wait.
- A stream is never retried once it has started: its text may already be on the user's screen.
- ``timeout`` bounds each request as a whole (connect, send, every byte of the answer, a stream
  included), so a server that drips one byte a second cannot hold a run.
- The API key is held as a `pydantic.SecretStr`: it is not in the repr, and every error message
  (whichever part built it from what the server said) is scrubbed of it, of the credential
  headers, of the base URL's password and of any bearer token, in one place (`HTTPModel._send`,
  through `HTTPModel.redact`, which telemetry uses as well).
"""

from __future__ import annotations

import asyncio
import email.utils
import logging
import os
import random
import re
import time
import weakref
from abc import ABC, abstractmethod
from collections.abc import AsyncGenerator, AsyncIterator, Awaitable, Callable, Mapping
from datetime import UTC, datetime
from typing import Any, ClassVar
from weakref import WeakKeyDictionary

import httpx
from pydantic import SecretStr

from workbench._record import Record
from workbench.errors import (
    APIError,
    AuthenticationError,
    BadRequestError,
    MalformedResponseError,
    ModelConnectionError,
    ModelTimeoutError,
    RateLimitError,
    ServerError,
)
from workbench.messages import JsonValue, ModelResponse
from workbench.models._wire import EventStream, sse_events
from workbench.models.base import ModelError, ModelRequest, ModelSettings
from workbench.models.prices import ModelPrice, price_for
from workbench.redact import credentials
from workbench.urls import http_url

__all__ = [
    "RETRYABLE_STATUS",
    "HTTPModel",
    "RetryPolicy",
    "Sleep",
    "retry_after_seconds",
    "status_error",
]

logger = logging.getLogger(__name__)


class _StaleConnection(ModelConnectionError):
    """The server closed a kept-alive connection as the request went out; it never saw it.

    llama-server does this after a streamed answer: the next request, sent at once on the same
    pooled connection, meets the close. Sent again once at once, outside the retry budget.
    """


# --- retries -------------------------------------------------------------------------------------

RETRYABLE_STATUS = frozenset({408, 429, 500, 502, 503, 504, 529})
"""Worth asking again: a timeout, a rate limit, a server error, Anthropic's "overloaded"."""


_JITTER = random.Random()
"""A generator of the retries' own: a notebook that seeds `random` for a repeatable experiment
gets the same numbers whether or not a model call was retried meanwhile."""


class RetryPolicy(Record):
    """How hard to try: exponential backoff with jitter, bounded in count and total time.

    Attempt ``n`` (from 0) waits ``min(max_delay, initial_delay * 2**n)``, less up to ``jitter`` of
    it at random so that many clients do not retry in step. A ``Retry-After`` from the server
    replaces that delay. No wait goes past ``max_total_seconds`` from the first attempt: a retry
    that would is not made, and the last error is raised.
    """

    max_retries: int = 3
    initial_delay: float = 0.5
    max_delay: float = 8.0
    max_total_seconds: float = 60.0
    jitter: float = 0.5

    def backoff(self, attempt: int) -> float:
        """Return the delay before retry ``attempt + 1`` when the server gave no Retry-After."""
        delay = min(self.max_delay, self.initial_delay * 2.0**attempt)
        return delay * (1 - self.jitter * _JITTER.random())


def retry_after_seconds(headers: httpx.Headers, now: datetime | None = None) -> float | None:
    """Return how long the server asked us to wait, or ``None`` when it did not say.

    Reads ``retry-after-ms`` (OpenAI's), else ``Retry-After`` in seconds or as an HTTP date.
    Something unreadable counts as not said.
    """
    if (millis := headers.get("retry-after-ms")) is not None:
        try:
            return max(0.0, float(millis) / 1000)
        except ValueError:
            pass
    value = headers.get("retry-after")
    if value is None:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - (now or datetime.now(UTC))).total_seconds())


# --- secrets -------------------------------------------------------------------------------------

_BEARER = re.compile(r"(?i)(bearer\s+)[^\s\"',]+")


def _secrets(
    key: SecretStr | None, headers: Mapping[str, str], base_url: str
) -> tuple[SecretStr, ...]:
    """The client's own secrets, longest first.

    Its key, and what `credentials` finds in its credential headers and in the base URL
    (``https://user:password@host/v1``).
    """
    found = credentials(headers, base_url)
    if key is not None and key.get_secret_value():
        found = sorted({key.get_secret_value(), *found}, key=len, reverse=True)
    return tuple(SecretStr(v) for v in found)


_SHORT = 8
"""A secret shorter than this may also be a word (``k``, ``x``, ``EMPTY``, ``ollama``)."""


def _redact(text: str, secrets: tuple[SecretStr, ...]) -> str:
    """``text`` without the client's secrets (whatever their length) and without bearer tokens.

    A long secret is replaced wherever its text is, glued to other text or not. A short one is
    replaced where it stands as a word, not inside a longer run of letters and digits: local
    servers are often given keys like ``k`` or ``x``, and replaced inside words such a key made a
    recorded ``"text"`` into ``"te[REDACTED]t"``, a cassette its own reader refused. A server
    quoting a key puts it between spaces, quotes, ``=`` or ``:``, where it is replaced.
    """
    present = [v for s in secrets if (v := s.get_secret_value()) in text]
    if present:
        text = re.sub("|".join(map(_alone, present)), "[REDACTED]", text)
    return _BEARER.sub(r"\1[REDACTED]", text)


def _alone(secret: str) -> str:
    """A pattern for ``secret``: a short one not glued to a letter or digit at a letter or digit."""
    if len(secret) >= _SHORT:
        return re.escape(secret)
    before = r"(?<![A-Za-z0-9])" if _alnum(secret[0]) else ""
    after = r"(?![A-Za-z0-9])" if _alnum(secret[-1]) else ""
    return f"{before}{re.escape(secret)}{after}"


def _alnum(char: str) -> bool:
    return char.isascii() and char.isalnum()


def _server_message(response: httpx.Response, redact: Callable[[str], str]) -> str:
    """Return the server's own words about the error: ``error.message`` when it sent JSON.

    Both OpenAI's ``{"error": {"message"}}`` and Anthropic's ``{"type": "error", "error":
    {"type", "message"}}`` carry it there. Scrubbed before it is cut to 500 characters, so no
    piece of a key survives the cut.
    """
    try:
        payload: Any = response.json()
    except ValueError:
        return redact(response.text)[:500] or response.reason_phrase
    if isinstance(payload, dict):
        error = payload.get("error", payload)
        if isinstance(error, dict):
            error = error.get("message") or error.get("detail") or error
        return redact(str(error))[:500]
    return redact(str(payload))[:500]


def status_error(status: int, said: str, where: str) -> APIError:
    """The typed error of an HTTP status (or a stream's error event standing for one)."""
    if status in (401, 403):
        return AuthenticationError(
            f"{status} from {where}: {said} (check the API key)", status_code=status
        )
    if status == 429:
        return RateLimitError(f"429 rate limited by {where}: {said}", status_code=status)
    if status >= 500 or status == 408:
        return ServerError(f"{status} server error from {where}: {said}", status_code=status)
    return BadRequestError(f"{status} bad request to {where}: {said}", status_code=status)


# --- the shared client --------------------------------------------------------------------------


async def _keep_open(
    client: httpx.AsyncClient, on_close: Callable[[], None]
) -> AsyncGenerator[httpx.AsyncClient, None]:
    """Hold ``client`` open until the generator is closed, then close it on its own loop."""
    try:
        yield client
    finally:
        on_close()
        await client.aclose()


Entry = tuple[AsyncGenerator[httpx.AsyncClient, None], httpx.AsyncClient]


class _ClientPerLoop:
    """One `httpx.AsyncClient` per event loop, closed on that loop when the loop shuts down.

    A client's connections belong to the loop that opened them, and a sync caller may use a fresh
    loop per call (``asyncio.run``), a long-lived one (``run_sync``'s portal thread, a notebook)
    or both. So the models that were not given a client share one client per loop, held open by
    an async generator: ``asyncio.run`` (and ``asyncio.Runner``) close async generators on their
    own loop before closing it, which closes the client where its connections live.

    Why shared, and not one per model: a model dropped in the middle of a loop's life (a test, a
    notebook cell run again) would take its pooled sockets to the garbage collector, unclosed.
    Requests carry their own URL, headers and timeout, so one pool serves every model.
    """

    def __init__(self, factory: Callable[[], httpx.AsyncClient]) -> None:
        self._factory = factory
        self._clients: WeakKeyDictionary[asyncio.AbstractEventLoop, Entry] = WeakKeyDictionary()

    async def get(self) -> httpx.AsyncClient:
        """Return the running loop's client, opening it on first use."""
        loop = asyncio.get_running_loop()
        entry = self._clients.get(loop)
        if entry is None:
            keeper = _keep_open(self._factory(), _forgetter(self._clients, loop))
            entry = (keeper, await anext(keeper))
            self._clients[loop] = entry
        return entry[1]


def _forgetter(
    clients: WeakKeyDictionary[asyncio.AbstractEventLoop, Entry], loop: asyncio.AbstractEventLoop
) -> Callable[[], None]:
    """Return a callback that drops ``loop``'s entry, holding ``clients`` only weakly."""
    table = weakref.ref(clients)

    def forget() -> None:
        if (alive := table()) is not None:
            alive.pop(loop, None)

    return forget


_SHARED_CLIENTS = _ClientPerLoop(httpx.AsyncClient)


# --- the model -----------------------------------------------------------------------------------


Sleep = Callable[[float], Awaitable[None]]
Read = Callable[[httpx.Response, float], Awaitable[ModelResponse]]
"""Turns a 2xx answer (and when the request was sent) into the response."""


class HTTPModel(ABC):
    """A model behind an HTTP API: one wire's client is one of these with four methods of its own.

    A subclass sets `PATH`, `DEFAULT_BASE_URL`, `KEY_VARIABLE` (and `BASE_URL_VARIABLE` when its
    SDK reads one) and `DEFAULT_PROVIDER`, and writes `_auth_headers`, `_body` and `_read` with
    its wire module's two mappings. Arguments:

    ``base_url`` defaults to ``$BASE_URL_VARIABLE``, else `DEFAULT_BASE_URL`; ``api_key`` to
    ``$KEY_VARIABLE``; without one no credential is sent (local servers need none).
    ``http_client`` is used as given and never closed here; without one the model uses a client
    shared per event loop and closed with it. ``timeout`` bounds each request as a whole, in
    seconds; an `httpx.Timeout` sets httpx's per-operation limits and its longest one bounds the
    whole request; ``settings={"timeout": ...}`` overrides it for one request. ``price``
    overrides the `PRICES` table for this model; a model with no known price reports
    ``Usage.cost=None``. ``settings`` are defaults under each request's own settings. ``sleep``
    is what waits between retries (tests pass a fake that does not).
    """

    PATH: ClassVar[str]
    """Where a request goes, after the base URL (``/chat/completions``)."""
    DEFAULT_BASE_URL: ClassVar[str]
    KEY_VARIABLE: ClassVar[str]
    BASE_URL_VARIABLE: ClassVar[str | None] = None
    DEFAULT_PROVIDER: ClassVar[str]

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | SecretStr | None = None,
        http_client: httpx.AsyncClient | None = None,
        timeout: float | httpx.Timeout = 120.0,
        max_retries: int | None = None,
        retry: RetryPolicy | None = None,
        price: ModelPrice | None = None,
        provider: str | None = None,
        settings: ModelSettings | None = None,
        headers: Mapping[str, str] | None = None,
        sleep: Sleep | None = None,
    ) -> None:
        self._model = model
        variable = self.BASE_URL_VARIABLE
        if not base_url and variable and os.environ.get(variable):
            base_url, whose = os.environ[variable], variable
        else:
            base_url, whose = base_url or self.DEFAULT_BASE_URL, "base_url"
        # refused here: 'localhost:8088/v1' was retried three times, then 'cannot reach', and a
        # port past 65535 failed the run as 'unhandled errors in a TaskGroup'
        self.base_url = http_url(base_url, whose).rstrip("/")
        key = api_key if api_key is not None else os.environ.get(self.KEY_VARIABLE)
        self._api_key = SecretStr(key) if isinstance(key, str) else key
        self._secrets = _secrets(self._api_key, headers or {}, self.base_url)
        self._timeout = timeout if isinstance(timeout, httpx.Timeout) else httpx.Timeout(timeout)
        retry = retry or RetryPolicy()
        if max_retries is not None:
            retry = retry.model_copy(update={"max_retries": max_retries})
        self.retry = retry
        self.price = price if price is not None else price_for(model)
        self._provider = provider or self.DEFAULT_PROVIDER
        self.settings: ModelSettings = settings or ModelSettings()
        self._extra_headers = dict(headers or {})
        self._sleep: Sleep = sleep or asyncio.sleep
        self._given_client = http_client

    def redact(self, text: str) -> str:
        """``text`` without this client's API key, credential headers or any bearer token.

        Every error this model raises has been through it; telemetry uses it too, so a key that
        fits no built-in secret pattern (short, or not ``sk-`` shaped) is still caught.
        """
        return _redact(text, self._secrets)

    def __repr__(self) -> str:
        return f"{type(self).__name__}({self._model!r}, base_url={self.redact(self.base_url)!r})"

    @property
    def name(self) -> str:
        """The model name sent in each request."""
        return self._model

    @property
    def provider(self) -> str:
        """The provider name for telemetry (the wire's own unless told otherwise)."""
        return self._provider

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Send one request; stream it when ``settings["stream"]`` is true."""
        settings = ModelSettings(**{**self.settings, **request.settings})
        stream = bool(settings.get("stream", False))
        body = self._body(request, settings, stream)
        limits = self._timeout_for(settings)
        return await self._send(body, limits, lambda r, t0: self._read(r, t0, request, stream))

    # --- what each wire says ---------------------------------------------------------------------

    @abstractmethod
    def _auth_headers(self, key: str) -> dict[str, str]:
        """The headers that carry the API key."""

    @abstractmethod
    def _body(
        self, request: ModelRequest, settings: ModelSettings, stream: bool
    ) -> dict[str, JsonValue]:
        """The JSON body of one request: the wire's mapping of our messages to its own."""

    @abstractmethod
    async def _read(
        self, response: httpx.Response, started: float, request: ModelRequest, stream: bool
    ) -> ModelResponse:
        """A 2xx answer, whole or streamed, as our response: the wire's mapping from its own."""

    # --- one HTTP exchange, with retries ---------------------------------------------------------

    async def _send(
        self, body: dict[str, JsonValue], limits: httpx.Timeout, read: Read
    ) -> ModelResponse:
        """POST ``body``; every error raised is scrubbed here, whichever part built its message.

        The messages quote what the server said (an echoed key, a body that is not JSON), so this
        is the one place they all pass before the caller, the store and the spans see them.
        """
        try:
            return await self._send_retrying(body, limits, read)
        except ModelError as exc:
            exc.args = tuple(self.redact(str(a)) for a in exc.args)
            raise

    async def _send_retrying(
        self, body: dict[str, JsonValue], limits: httpx.Timeout, read: Read
    ) -> ModelResponse:
        """POST ``body``, retrying what is worth it; ``read`` turns a 2xx into the response."""
        client = self._given_client or await _SHARED_CLIENTS.get()
        first_attempt = time.monotonic()
        attempt = 0
        resent = False
        while True:
            outcome = await self._attempt(client, body, limits, read)
            if isinstance(outcome, ModelResponse):
                return outcome
            error, retry_after = outcome
            if isinstance(error, _StaleConnection) and not resent:
                # The pool handed out a connection the server had closed: the request never got
                # an answer on a live one. Sent once more on a new connection, outside the retry
                # budget, so `max_retries=0` does not turn a pool's stale socket into an error.
                resent = True
                continue
            delay = self._retry_delay(error, attempt, retry_after, first_attempt)
            if delay is None:
                if isinstance(error, _StaleConnection):  # closed again: a plain connection error
                    raise ModelConnectionError(*error.args) from None
                raise error
            attempt += 1
            logger.warning(
                "%s: %s; retry %d of %d in %.2fs",
                self._model,
                type(error).__name__,
                attempt,
                self.retry.max_retries,
                delay,
            )
            await self._sleep(delay)

    async def _attempt(
        self,
        client: httpx.AsyncClient,
        body: dict[str, JsonValue],
        limits: httpx.Timeout,
        read: Read,
    ) -> ModelResponse | tuple[ModelError, float | None]:
        """Make one attempt: the response, or the error and how long the server asked to wait."""
        started = time.perf_counter()
        answered = False
        try:
            # httpx bounds each read; this bounds the whole exchange, so a server that drips one
            # byte a second cannot hold the request for as long as it likes.
            async with asyncio.timeout(_whole(limits)):
                async with client.stream(
                    "POST", self._url, json=body, headers=self._headers(), timeout=limits
                ) as response:
                    answered = True
                    if response.is_success:
                        return await read(response, started)
                    await response.aread()
                    return self._status_error(response), retry_after_seconds(response.headers)
        except httpx.ConnectTimeout as exc:
            return self._connection_error(exc), None
        except httpx.TimeoutException as exc:
            raise self._timeout_error(type(exc).__name__, limits.read) from None
        except TimeoutError:
            raise self._timeout_error("the whole request", _whole(limits)) from None
        except httpx.DecodingError as exc:  # e.g. "Content-Encoding: gzip" on a body that is not
            raise MalformedResponseError(
                f"the response from {self.base_url} could not be decoded: {exc}"
            ) from None
        except httpx.TransportError as exc:
            # A pooled connection the server had just closed: it never saw the request.
            stale = isinstance(exc, httpx.RemoteProtocolError) and not answered
            return self._connection_error(exc, stale=stale), None

    @property
    def _url(self) -> str:
        return f"{self.base_url}{self.PATH}"

    def _headers(self) -> dict[str, str]:
        headers = dict(self._extra_headers)
        if self._api_key is not None and self._api_key.get_secret_value():
            headers.update(self._auth_headers(self._api_key.get_secret_value()))
        return headers

    def _timeout_for(self, settings: ModelSettings) -> httpx.Timeout:
        if "timeout" in settings:
            return httpx.Timeout(settings["timeout"])
        return self._timeout

    def _retry_delay(
        self, error: ModelError, attempt: int, retry_after: float | None, first_attempt: float
    ) -> float | None:
        """How long to wait before trying again, or ``None`` to give up with ``error``."""
        retryable = isinstance(error, ModelConnectionError) or (
            isinstance(error, APIError) and error.status_code in RETRYABLE_STATUS
        )
        if not retryable or attempt >= self.retry.max_retries:
            return None
        delay = retry_after if retry_after is not None else self.retry.backoff(attempt)
        spent = time.monotonic() - first_attempt
        if spent + delay > self.retry.max_total_seconds:
            return None
        return delay

    # --- errors ----------------------------------------------------------------------------------

    @property
    def where(self) -> str:
        """The model and its server, as errors name them."""
        return f"{self._model} at {self.base_url}"

    def _status_error(self, response: httpx.Response) -> APIError:
        said = _server_message(response, self.redact)
        return status_error(response.status_code, said, self.where)

    def _connection_error(
        self, exc: httpx.TransportError, *, stale: bool = False
    ) -> ModelConnectionError:
        detail = str(exc) or type(exc).__name__
        kind = _StaleConnection if stale else ModelConnectionError
        return kind(f"cannot reach {self.base_url}: {detail}")

    def _timeout_error(self, what: str, seconds: float | None) -> ModelTimeoutError:
        within = f"{seconds:g}s" if seconds is not None else "no limit"
        return ModelTimeoutError(f"{self.where} did not answer within {within} ({what})")

    async def _events(self, response: httpx.Response) -> AsyncIterator[tuple[str, str]]:
        """The stream's events, as they arrive; a stream cut off mid-way is malformed.

        Not retried (part of it may already be on the user's screen); a read timeout is left to
        `_attempt`, which says it timed out.
        """
        try:
            async for event in sse_events(response.aiter_text()):
                yield event
        except httpx.TimeoutException:
            raise
        except httpx.TransportError as exc:
            raise MalformedResponseError(
                f"the stream from {self.base_url} broke off: {type(exc).__name__}: {exc}"
            ) from None

    def _ended_early(self, what: str) -> MalformedResponseError:
        return MalformedResponseError(f"the stream from {self.base_url} ended early, {what}")

    async def _fed(self, response: httpx.Response, stream: EventStream, end: str) -> ModelResponse:
        """The answer ``stream`` makes of the response's events; ``end`` names its last event.

        Read to the end even after the last event, so the connection goes back to the pool.
        """
        async for event, data in self._events(response):
            if not stream.done:
                stream.feed(event, data)
        if not stream.done:
            raise self._ended_early(f"before {end}")
        return stream.response(self.price, self.name)


def _whole(limits: httpx.Timeout) -> float | None:
    """The bound on one whole exchange: the longest of httpx's per-operation limits."""
    values = [v for v in (limits.connect, limits.read, limits.write, limits.pool) if v is not None]
    return max(values) if values else None
