"""Run coroutines from sync code, also inside a running event loop (a Jupyter kernel).

All sync entry points hand their coroutine to one long-lived event loop on a daemon thread (a
"portal"). Using one loop for every sync call keeps loop-bound things, such as an httpx client's
connection pool or a stepped run's pending generator, valid from one call to the next.

One loop for every run also means one stuck function would stop them all: a breakpoint predicate
that blocked froze every other synchronous run in the process. So the user's sync code (tools,
guards, hooks, breakpoint predicates, stop conditions, history processors, toolset filters)
never runs on a loop: `call_user` runs it in a worker thread of its own pool while the loop goes
on with everything else, bounded by the timeout its caller has. (An ``async def`` runs on the
loop, as async code does; one that blocks there is a bug no loop can survive.)
"""

from __future__ import annotations

import asyncio
import contextlib
import contextvars
import functools
import inspect
import threading
from collections.abc import Callable, Coroutine
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

__all__ = ["call_user", "in_worker", "on_portal", "portal", "run_sync"]

T = TypeVar("T")

_lock = threading.Lock()
_loop: asyncio.AbstractEventLoop | None = None

_workers = ThreadPoolExecutor(max_workers=256, thread_name_prefix="workbench-user")
"""Where the user's sync code runs. Its own pool, and a large one: a function that never returns
keeps its thread, and asyncio's default pool (a handful of threads on a small machine) would
then run out for everyone. Threads are made only when none is idle."""


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


def in_worker(function: Callable[..., T], /, *args: Any) -> asyncio.Future[T]:
    """``function(*args)`` in a worker thread, with the caller's context variables, awaitable."""
    context = contextvars.copy_context()
    call = functools.partial(context.run, function, *args)
    return asyncio.get_running_loop().run_in_executor(_workers, call)


async def call_user(function: Callable[..., Any], /, *args: Any) -> Any:
    """The answer of the user's ``function(*args)``, without ever blocking the loop.

    A sync function runs in a worker thread (`in_worker`); an ``async def`` runs on the loop; an
    awaitable answer (a sync function handing back a coroutine) is awaited on the loop. What it
    raises is raised here. A caller with a timeout wraps this in ``asyncio.wait_for``: a sync
    function past it is left to finish in its thread, which nothing waits for.
    """
    if _is_async(function):
        result = function(*args)
    else:
        result = await in_worker(function, *args)
    return await result if inspect.isawaitable(result) else result


def _is_async(function: Callable[..., Any]) -> bool:
    """True for an ``async def`` (a partial of one, or an object whose ``__call__`` is one)."""
    return inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
        type(function).__call__
    )


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
