"""Run coroutines from sync code, also inside a running event loop (a Jupyter kernel).

All sync entry points hand their coroutine to one long-lived event loop on a daemon thread (a
"portal"). Using one loop for every sync call keeps loop-bound things, such as an httpx client's
connection pool or a stepped run's pending generator, valid from one call to the next.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
from collections.abc import Coroutine
from typing import Any, TypeVar

__all__ = ["on_portal", "portal", "run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None


def portal() -> asyncio.AbstractEventLoop:
    """The portal loop (started on first use): the one loop every sync call and widget uses."""
    global _loop
    with _lock:
        if _loop is None or _loop.is_closed():
            loop = asyncio.new_event_loop()
            thread = threading.Thread(target=loop.run_forever, name="workbench-portal", daemon=True)
            thread.start()
            _loop = loop
        return _loop


def run_sync(coro: Coroutine[Any, Any, T]) -> T:
    """Run ``coro`` to completion on the portal loop and return its result.

    Interrupting the wait (Ctrl+C) cancels the coroutine instead of leaving it running.
    """
    loop = portal()
    if threading.current_thread().name == "workbench-portal":
        coro.close()
        raise RuntimeError("a sync workbench call was made from inside the workbench loop itself")
    future = asyncio.run_coroutine_threadsafe(coro, loop)
    try:
        return future.result()
    except BaseException:
        future.cancel()
        raise


async def on_portal(coro: Coroutine[Any, Any, T]) -> T:
    """Await ``coro`` on the portal loop, from any loop.

    For things that must outlive the caller's loop and never wait on a blocked one, such as an MCP
    connection or a phase stepped into: a Jupyter kernel's loop is blocked while a sync call runs,
    the portal never is. Cancelling the caller cancels ``coro`` and waits until it has ended, so
    what its cancellation does (a run ended as ABORTED) is done when the caller sees it.
    """
    loop = portal()
    here = asyncio.get_running_loop()
    if here is loop:
        return await coro
    ended: asyncio.Future[T] = here.create_future()
    tasks: list[asyncio.Task[T]] = []

    def start() -> None:
        task = loop.create_task(coro)
        tasks.append(task)
        task.add_done_callback(lambda done: _tell(here, done, ended))

    loop.call_soon_threadsafe(start)
    try:
        return await asyncio.shield(ended)
    except asyncio.CancelledError:
        loop.call_soon_threadsafe(lambda: tasks[0].cancel())  # after `start`: one queue, in order
        with contextlib.suppress(asyncio.CancelledError):  # cancelled again: stop waiting
            await asyncio.wait({ended})
        raise


def _tell(loop: asyncio.AbstractEventLoop, task: asyncio.Task[T], ended: asyncio.Future[T]) -> None:
    """Copy how ``task`` (on the portal) ended onto ``ended`` (on ``loop``, the caller's)."""

    def copy() -> None:
        if ended.done():
            return
        if task.cancelled():
            ended.cancel()
        elif (error := task.exception()) is not None:
            ended.set_exception(error)
        else:
            ended.set_result(task.result())

    with contextlib.suppress(RuntimeError):  # the caller's loop has closed: nobody waits
        loop.call_soon_threadsafe(copy)
