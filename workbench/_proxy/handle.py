"""`proxy()`: the recording proxy started in a background thread, and the handle that stops it.

The server has its own thread and event loop, so it works the same from a script, a test or a
notebook whose kernel already runs a loop. That loop is uvloop's where it is installed (the
``proxy`` extra installs it but on Windows): the proxy's time is mostly transport and protocol
work, which uvloop does in C, and in a notebook that time is taken from the agent's interpreter.

Its socket is bound and listening before `proxy()` returns, so a client may connect at once: the
connection waits in the socket's backlog until the server accepts it, and ``port=0`` (a free
port) is safe to use.

Stopping it (`ProxyHandle.close`, which Ctrl-C and SIGTERM come to on the command line) gives the
calls in flight ``grace`` seconds to end and be recorded; those still running then are cut off:
the agent is told so, and the run records the call as cut off. Asked to stop again during the
grace (Ctrl-C twice), it cuts them off at once, the same way. The recorder is closed only once
the server's thread is done with it.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import logging
import socket
import threading
from collections.abc import Callable, Mapping, Sequence
from typing import TYPE_CHECKING

from workbench._proxy.recorder import Recorder
from workbench._proxy.replaying import Normalizer
from workbench.errors import UsageError
from workbench.messages import JsonValue
from workbench.records import RunResult
from workbench.store import RunStore
from workbench.urls import http_url

if TYPE_CHECKING:
    from workbench._proxy.server import ProxyApp

__all__ = ["ProxyHandle", "Replay", "proxy"]

Replay = RunResult | str
"""What ``proxy(replay=...)`` takes (alone or in a list): a run, or a run's or a session's id."""

logger = logging.getLogger(__name__)


class ProxyHandle:
    """A running proxy: point an agent's ``base_url`` at `url`; `close` stops it and saves.

    Use it as a context manager, or call `close`: the last step of each conversation is written
    when the proxy closes (its tool results would have come with the next request).
    """

    def __init__(self, app: ProxyApp, sock: socket.socket, timeout: float, grace: float) -> None:
        self.app = app
        self.store = app.recorder.store
        host, port = sock.getsockname()[:2]
        self.host, self.port = str(host), int(port)
        self._sock = sock
        self._timeout = timeout
        self.grace = grace
        """Seconds the calls in flight get to end when the proxy stops, before they are cut off."""
        import uvicorn  # the ``proxy`` extra: ``import workbench`` does not need a web server

        # No ``server`` or ``date`` of uvicorn's own: a forwarded answer has the upstream's, and
        # the proxy dates the answers it makes itself (`ProxyApp`).
        config = uvicorn.Config(
            app,
            log_config=None,
            access_log=False,
            lifespan="off",
            server_header=False,
            date_header=False,
            timeout_graceful_shutdown=grace,  # type: ignore[arg-type]  # a float works as well
        )
        self._server = uvicorn.Server(config)
        self._thread = threading.Thread(target=self._serve, name=f"workbench-proxy-{self.port}")
        self._thread.daemon = True
        self._closed = False
        self._failure: Exception | None = None
        self._loop: asyncio.AbstractEventLoop | None = None
        """The server's event loop, once it runs: what `_end_grace` asks to cut the calls off."""
        self._served = threading.Event()
        """Set when the server's thread is done with the app and the recorder. `close` waits for
        this, not for `Thread.join`: a signal that interrupts a join (Ctrl-C in `wait`) can leave
        the thread marked as ended while it still runs (CPython 3.11's ``join`` releases the lock
        the running thread holds), and the recorder would be closed under calls in flight."""
        self._thread.start()

    def __repr__(self) -> str:
        state = "closed" if self._closed else "open"
        return f"ProxyHandle({self.url!r}, {state})"

    @property
    def url(self) -> str:
        """The base URL to give a client (``.../v1``)."""
        return f"http://{self.host}:{self.port}/v1"

    @property
    def session_id(self) -> str:
        """The proxy's session, of the runs whose client names no session of its own.

        It is their ``metadata["session_id"]``, so ``replay=`` of it replays them as one group.
        """
        return self.app.recorder.session_id

    @property
    def run_ids(self) -> list[str]:
        """The runs recorded so far, one per conversation, in the order they started."""
        return list(self.app.recorder.run_ids)

    def wait(self) -> None:
        """Block until the server stops (the command line waits here for Ctrl-C)."""
        self._until_served()

    def _until_served(self) -> None:
        """Wait for the server's thread to be done, a Ctrl-C getting through within half a second.

        Never one wait without a bound: a signal that lands after the interpreter last looked for
        one and before the wait blocks does not wake it (CPython only runs the handler when the
        wait returns), so a Ctrl-C pressed at that instant was taken only when the server ended:
        the second Ctrl-C of `close` waited out the whole grace. Windows needs the bound too.
        """
        while not self._served.wait(0.5):
            continue

    def close(self) -> None:
        """Stop serving, then write every conversation's last step and end its run.

        Raises what stopped the server, if it failed (its clients were refused meanwhile).
        """
        if self._closed:
            return
        self._closed = True
        try:
            logger.info(
                "stopping the proxy on %s: calls in flight get %s s to end", self.url, self.grace
            )
            self._server.should_exit = True
            self._until_served()
        except KeyboardInterrupt:  # asked again (Ctrl-C twice): the grace ends now
            self._end_grace()
            self._until_served()  # the calls cut off are recorded; a third Ctrl-C leaves at once
        self._sock.close()
        self.app.recorder.close()
        if self._failure is not None:
            raise self._failure

    def _end_grace(self) -> None:
        """Cut off the calls in flight now, as the grace's end would: on the server's thread."""
        logger.info("stopping the proxy on %s now: the calls in flight are cut off", self.url)
        self._server.should_exit = self._server.force_exit = True
        if self._loop is not None:
            with contextlib.suppress(RuntimeError):  # its loop has closed: no call is in flight
                self._loop.call_soon_threadsafe(self.app.cut_off)

    def __enter__(self) -> ProxyHandle:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def _serve(self) -> None:
        try:
            with asyncio.Runner(loop_factory=_loop_factory()) as runner:
                runner.run(self._main())
        except Exception as exc:  # kept for `close` to raise; clients are refused meanwhile
            self._failure = exc
        finally:  # a server that failed must refuse connections, not leave them in the backlog
            self._sock.close()
            self._served.set()

    async def _main(self) -> None:
        # Like httpx's timeout: connecting and each read wait at most this long; a stream that
        # keeps coming may take longer in all.
        import aiohttp  # the ``proxy`` extra, like the server: ``import workbench`` needs neither

        self._loop = asyncio.get_running_loop()
        timeout = aiohttp.ClientTimeout(sock_connect=self._timeout, sock_read=self._timeout)
        async with aiohttp.ClientSession(timeout=timeout) as client:
            self.app.client = client
            await self._server.serve(sockets=[self._sock])
            await self.app.settled()  # the calls cut off at the grace's end tell their agents so


def _loop_factory() -> Callable[[], asyncio.AbstractEventLoop] | None:
    """The event loop to serve on: uvloop's if it is installed, else asyncio's (``None``)."""
    try:
        import uvloop
    except ImportError:
        return None
    return uvloop.new_event_loop


def proxy(
    upstream: str | None = None,
    *,
    port: int = 0,
    host: str = "127.0.0.1",
    store: RunStore | None = None,
    replay: Replay | Sequence[Replay] | None = None,
    until_step: int | None = None,
    normalize: Mapping[str, Normalizer] | None = None,
    timeout: float = 600.0,
    grace: float = 5.0,
    agent_name: str | None = None,
) -> ProxyHandle:
    """Start a recording proxy for an upstream model server (``.../v1``), every wire on one port.

    Every conversation an agent has through it (Chat Completions, the Responses API, Anthropic
    Messages) becomes a run in ``store`` (the default store if omitted). With ``replay`` (a run,
    the id of one in the store, a session id naming the runs recorded under it, or a list of
    these: a group replayed as one) it answers from the recordings instead, strictly, each
    conversation from the run it is; with ``until_step`` too each conversation goes on live from
    ``upstream`` after that step. ``normalize`` declares, per tool name, how a replay compares
    that tool's results, for tools that answer differently every run (Codex's ``exec_command``
    reports wall times and random ids): a pattern whose matches are left out, or a function of
    the text; a departure says which were applied. ``timeout`` bounds each upstream request, in
    seconds; ``grace`` is how long closing waits for the calls in flight before it cuts them
    off. Each run is named ``agent_name``, or else after its client (the product its
    ``User-Agent`` names: ``claude-cli``, ``codex_exec``), or ``proxy``. A ``port`` that cannot
    be listened on (one in use) is a `UsageError` that says so, an ``upstream`` that is no
    ``http(s)://`` URL an `InvalidURL`. Needs the ``proxy`` extra
    (``pip install 'workbench[proxy]'``: starlette, uvicorn and aiohttp).
    """
    try:
        from workbench._proxy.server import ProxyApp, without_credentials
    except ImportError as exc:
        raise ImportError(
            f"the proxy needs the 'proxy' extra: pip install 'workbench[proxy]' ({exc})"
        ) from exc

    if upstream is not None:
        http_url(upstream, "upstream")  # not at the first call, inside the HTTP client
    store = store if store is not None else RunStore.default()
    if store is None:
        raise UsageError("the proxy records into a run store: pass store= (WORKBENCH_STORE=off)")
    recordings = _recordings(store, replay)
    if not recordings and upstream is None:
        raise UsageError("the proxy needs an upstream to forward to, or a run to replay")
    if until_step is not None and (not recordings or upstream is None):
        raise UsageError("until_step forks a replay: it needs both replay= and upstream=")
    shown = without_credentials(upstream) if upstream else None
    metadata: dict[str, JsonValue] = {"proxy": {"upstream": shown}}
    if recordings:
        ids = [run.run_id for run in recordings]
        metadata["proxy"] = {"upstream": shown, "replay_of": ids[0] if len(ids) == 1 else ids}
    recorder = Recorder(store, agent_name=agent_name, metadata=metadata)
    if normalize and not recordings:
        raise UsageError("normalize= says how a replay compares tool results: it needs replay=")
    app = ProxyApp(
        recorder, upstream=upstream, replay=recordings, until_step=until_step, normalize=normalize
    )
    sock = _listening(host, port)
    # Accepted connections inherit this: without it the server writes a response's head and body
    # separately, Nagle holds the body for the client's delayed ACK, and each call waits ~40 ms.
    sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return ProxyHandle(app, sock, timeout, grace)


def _listening(host: str, port: int) -> socket.socket:
    """A socket bound to ``host:port``; a `UsageError` saying why if it cannot be."""
    try:
        return socket.create_server((host, port))
    except OSError as exc:
        why = exc.strerror or str(exc)
        hint = "; another port, or 0 for any free one?" if exc.errno == errno.EADDRINUSE else ""
        raise UsageError(f"the proxy cannot listen on {host}:{port}: {why}{hint}") from None


def _recordings(store: RunStore, replay: Replay | Sequence[Replay] | None) -> tuple[RunResult, ...]:
    """The runs to replay, loaded (`RunNotFound`, `StoreError` if one cannot be) and checked.

    A string is a run (its id, a unique prefix, ``last``) or a session: the runs recorded under
    it, in the order they started.
    """
    if replay is None:
        return ()
    refs = [replay] if isinstance(replay, RunResult | str) else list(replay)
    runs: list[RunResult] = []
    for ref in refs:
        if isinstance(ref, RunResult):
            runs.append(ref)
            continue
        session = store.session(ref)
        ids = [summary.run_id for summary in session] or [store.resolve(ref)]
        runs += [store.load(run_id) for run_id in ids]
    for run in runs:
        if not any(s.response is not None for s in run.steps):
            raise UsageError(f"run {run.run_id} has no recorded model response to replay")
    return tuple({run.run_id: run for run in runs}.values())  # each once, in order
