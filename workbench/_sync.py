"""Run coroutines from sync code, also inside a running event loop (a Jupyter kernel).

All sync entry points hand their coroutine to one long-lived event loop on a daemon thread (a
"portal"). Using one loop for every sync call keeps loop-bound things, such as an httpx client's
connection pool or a stepped run's pending generator, valid from one call to the next.
"""

from __future__ import annotations

import asyncio
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
    connection: a Jupyter kernel's loop is blocked while a sync call runs, the portal never is.
    """
    loop = portal()
    if asyncio.get_running_loop() is loop:
        return await coro
    return await asyncio.wrap_future(asyncio.run_coroutine_threadsafe(coro, loop))
