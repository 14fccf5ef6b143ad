"""An MCP server's tools as workbench tools (`Toolset.from_mcp`), through the ``mcp`` package.

Each tool the server lists becomes a plain `Tool`: its schema is the server's ``inputSchema``,
arguments are checked against it before the call leaves the process, and its result is the text
of the MCP content. So an MCP call goes through guards, hooks, approval, spans, snapshots and
replay like any other tool call; a run replayed with ``tools="replay"`` never needs the server
(its calls are answered from the recording, its tools offered as recorded if it cannot be listed).

Lifecycle. Nothing starts until the tools are first needed (the first `Toolset.resolve`). The
connection is then held open by one task that owns the ``mcp`` client from start to close, because
the client's task groups must be entered and left in the same task; calls are made from whatever
task the run is in. `MCPServer.aclose` (or `Toolset.aclose`, or leaving ``async with toolset:``)
ends the connection and the server process; the agent does not close it at the end of a run, so
one connection serves many runs. A server that goes away is reconnected on the next call.

Event loops. The connection lives on the workbench's portal loop (the one sync calls such as
``agent.run_sync`` run on), whatever loop the caller is on: that loop is never blocked by user code,
whereas a Jupyter kernel's own loop is blocked for as long as a sync call runs.

Failures are never a hung run: a call that outlives its timeout is a `ToolTimeout`, a server that
dies during a call or answers with ``isError`` is a `MCPServerError` the model reads as a tool
error, and a server that cannot be started or listed raises `MCPServerError` before the model call.
A tool whose schema is not valid JSON Schema, or refers (``$ref``) to a part of itself that is not
there, is not offered; `MCPServer.unusable` says why.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shlex
import sys
from collections.abc import Awaitable, Callable
from typing import Any, TextIO
from urllib.parse import urlsplit, urlunsplit

import httpx2
import mcp
import pydantic_core
from mcp import types as mcp_types
from mcp.client.streamable_http import streamable_http_client

from workbench._sync import on_portal
from workbench.errors import MCPServerError
from workbench.redact import redacted
from workbench.tools import Tool
from workbench.urls import http_url

__all__ = ["MCPServer"]


class _Live:
    """One open connection: the client, and the task that holds it open until ``stop`` is set."""

    def __init__(self) -> None:
        self.ready: asyncio.Future[mcp.Client] = asyncio.get_running_loop().create_future()
        self.stop = asyncio.Event()
        self.task: asyncio.Task[None] | None = None

    @property
    def usable(self) -> bool:
        """The holder task still holds the connection."""
        return self.task is not None and not self.task.done()


class MCPServer:
    """One MCP server, over stdio (a command) or streamable HTTP (a URL): a `ToolSource`."""

    def __init__(
        self,
        command_or_url: str | list[str],
        *,
        env: dict[str, str] | None = None,
        cwd: str | None = None,
        headers: dict[str, str] | None = None,
        timeout: float | None = 30.0,
        connect_timeout: float = 30.0,
    ) -> None:
        if isinstance(command_or_url, str) and command_or_url.startswith(("http://", "https://")):
            # refused here, not at the first run ("http://": UnsupportedProtocol from inside)
            self._url: str | None = http_url(command_or_url, "MCP server")
            self._command: list[str] = []
        else:
            command = (
                shlex.split(command_or_url)
                if isinstance(command_or_url, str)
                else list(command_or_url)
            )
            if not command:
                raise ValueError("an MCP server needs a command or a URL")
            self._url, self._command = None, command
        self._env, self._cwd, self._headers = env, cwd, headers
        self._timeout, self._connect_timeout = timeout, connect_timeout
        self._live: _Live | None = None
        self._tools: tuple[Tool, ...] | None = None
        self._listing = asyncio.Lock()  # used on the portal loop only
        self.unusable: tuple[tuple[str, str], ...] = ()
        """``(name, reason)`` for each listed tool that cannot be offered (a malformed schema)."""

    def __repr__(self) -> str:  # never the headers or the environment: they may hold secrets
        return f"MCPServer({self.where!r})"

    @property
    def where(self) -> str:
        """The URL (without credentials) or the command (redacted), for messages."""
        if self._url is None:  # a command line may carry a key (--api-key sk-...)
            return redacted(shlex.join(self._command))
        parts = urlsplit(self._url)
        host = parts.netloc.rpartition("@")[2]
        return urlunsplit((parts.scheme, host, parts.path, "", ""))

    # -- the ToolSource protocol ----------------------------------------------------------------

    async def tools(self) -> tuple[Tool, ...]:
        """The server's tools, listed once per connection lifetime (connecting if need be)."""
        return await on_portal(self._list_tools())

    async def aclose(self) -> None:
        """Close the connection and stop the server process; a later use reconnects."""
        await on_portal(self._close())

    async def _close(self) -> None:
        live, self._live, self._tools = self._live, None, None
        if live is not None:
            await _stop(live)

    # -- calls ------------------------------------------------------------------------------------

    async def call(self, name: str, arguments: dict[str, Any]) -> str:
        """Call tool ``name``; its content as text, or `MCPServerError` if the server failed it."""
        return await on_portal(self._call(name, arguments))

    async def _call(self, name: str, arguments: dict[str, Any]) -> str:
        live = await self._connected()
        client = live.ready.result()
        assert live.task is not None
        request = asyncio.ensure_future(client.call_tool(name, arguments))
        try:
            await asyncio.wait({request, live.task}, return_when=asyncio.FIRST_COMPLETED)
        finally:
            if not request.done():
                request.cancel()
        if not request.done() or request.cancelled():
            raise MCPServerError(
                f"MCP server {self.where} went away during the call of {name!r}"
                f"{_why_ended(live.task)}"
            )
        try:
            result = request.result()
        except mcp.MCPError as exc:
            if exc.code == mcp_types.CONNECTION_CLOSED:  # the server is gone: reconnect next time
                await _stop(live)
                raise MCPServerError(
                    f"MCP server {self.where} went away during the call of {name!r} ({exc})"
                ) from None
            raise MCPServerError(f"MCP server {self.where} refused {name!r}: {exc}") from None
        text = _content_text(result)
        if result.is_error:
            raise MCPServerError(f"the tool reported an error: {text}")
        return text

    # -- the connection -------------------------------------------------------------------------

    async def _list_tools(self) -> tuple[Tool, ...]:
        async with self._listing:  # concurrent first steps list once, and get the same tools
            live = await self._connected()
            if self._tools is None:
                self._tools = await self._listed(live.ready.result())
            return self._tools

    async def _listed(self, client: mcp.Client) -> tuple[Tool, ...]:
        listed: list[mcp_types.Tool] = []
        cursor: str | None = None
        try:
            async with asyncio.timeout(self._connect_timeout):
                while True:
                    page = await client.list_tools(cursor=cursor)
                    listed.extend(page.tools)
                    cursor = page.next_cursor
                    if cursor is None:
                        break
        except Exception as exc:
            raise MCPServerError(
                f"MCP server {self.where} could not list its tools: {type(exc).__name__}: {exc}"
            ) from None
        return self._make_tools(listed)

    def _make_tools(self, listed: list[mcp_types.Tool]) -> tuple[Tool, ...]:
        made: list[Tool] = []
        unusable: list[tuple[str, str]] = []
        for spec in listed:
            try:
                made_tool = Tool(
                    function=self._caller(spec.name),
                    name=spec.name,
                    description=spec.description or spec.title or "",
                    parameters=spec.input_schema,
                    timeout=self._timeout,
                )
            except ValueError as exc:
                unusable.append((spec.name, f"not offered: {exc}"))
            else:
                made.append(made_tool)
        self.unusable = tuple(unusable)
        return tuple(made)

    def _caller(self, name: str) -> Callable[..., Awaitable[str]]:
        async def call_mcp_tool(**arguments: Any) -> str:
            return await self.call(name, arguments)

        call_mcp_tool.__qualname__ = call_mcp_tool.__name__ = name
        return call_mcp_tool

    async def _connected(self) -> _Live:
        """The open connection, opened now if there is none (or the last one ended).

        Concurrent first calls share one attempt, and all get its error if it fails.
        """
        live = self._live
        if live is None or not live.usable:
            live = self._live = _Live()
            live.task = asyncio.create_task(self._hold(live), name=f"mcp {self.where}")
        try:
            async with asyncio.timeout(self._connect_timeout):
                await asyncio.shield(live.ready)
        except TimeoutError:
            await _stop(live)
            raise MCPServerError(
                f"MCP server {self.where} did not answer within {self._connect_timeout:g}s"
            ) from None
        except Exception as exc:
            raise MCPServerError(
                f"could not connect to MCP server {self.where}: {type(exc).__name__}: {exc}"
            ) from None
        return live

    async def _hold(self, live: _Live) -> None:
        """Own the client from open to close, in this one task (as anyio requires)."""
        try:
            async with contextlib.AsyncExitStack() as stack:
                client = await stack.enter_async_context(mcp.Client(self._transport(stack)))
                live.ready.set_result(client)
                await live.stop.wait()
        except BaseException as exc:
            if not live.ready.done():
                failed = isinstance(exc, Exception)
                error = _unwrap(exc) if failed else ConnectionAbortedError("stopped while opening")
                live.ready.set_exception(error)
                live.ready.exception()  # waiters still get it; with none left, nothing to log
            if not isinstance(exc, Exception):
                raise

    def _transport(self, stack: contextlib.AsyncExitStack) -> Any:
        """What `mcp.Client` connects to; an HTTP client of ours is closed with ``stack``."""
        if self._url is None:
            params = mcp.StdioServerParameters(
                command=self._command[0], args=self._command[1:], env=self._env, cwd=self._cwd
            )
            return mcp.stdio_client(params, errlog=_server_log())
        if self._headers is None:
            return self._url
        http = httpx2.AsyncClient(headers=self._headers, timeout=httpx2.Timeout(30, read=300))
        stack.push_async_callback(http.aclose)
        return streamable_http_client(self._url, http_client=http)


def _server_log() -> TextIO:
    """Where a stdio server's stderr goes: the process's own stderr.

    Not ``sys.stderr``: in a Jupyter kernel that is a stream with no file descriptor, which a
    subprocess cannot write to (the server would not start).
    """
    real = sys.__stderr__
    if real is not None:
        try:
            real.fileno()
        except (OSError, ValueError):
            pass
        else:
            return real
    return open(os.devnull, "w")  # lives as long as the process, like stderr


async def _stop(live: _Live) -> None:
    """End the holder task: the client closes, the server process is stopped.

    A task still opening the connection (a server that never completes the handshake) never
    looks at ``stop``: it is cancelled, which closes the transport and stops the process too.
    """
    live.stop.set()
    if live.task is not None:
        if not live.ready.done():
            live.task.cancel()
        await asyncio.wait({live.task})


def _unwrap(exc: BaseException) -> BaseException:
    """The first real error inside anyio's exception groups."""
    while isinstance(exc, BaseExceptionGroup) and exc.exceptions:
        exc = exc.exceptions[0]
    return exc


def _why_ended(task: asyncio.Task[None]) -> str:
    if task.done() and not task.cancelled() and task.exception() is not None:
        exc = _unwrap(task.exception())  # type: ignore[arg-type]
        return f" ({type(exc).__name__}: {exc})"
    return ""


def _content_text(result: mcp_types.CallToolResult) -> str:
    """What the model reads of an MCP result: its text blocks, and a note for anything else."""
    parts = [_block_text(block) for block in result.content]
    if not parts and result.structured_content is not None:
        return pydantic_core.to_json(result.structured_content).decode()
    return "\n".join(parts)


def _block_text(block: Any) -> str:
    if isinstance(block, mcp_types.TextContent):
        return block.text
    if isinstance(block, mcp_types.ImageContent | mcp_types.AudioContent):
        return f"[{block.type} ({block.mime_type}), {len(block.data):,} base64 characters]"
    if isinstance(block, mcp_types.EmbeddedResource):
        resource = block.resource
        if isinstance(resource, mcp_types.TextResourceContents):
            return resource.text
        return f"[resource {resource.uri} ({resource.mime_type or 'binary'})]"
    if isinstance(block, mcp_types.ResourceLink):
        return f"[resource link {block.uri}]"
    return f"[{getattr(block, 'type', type(block).__name__)} content]"
