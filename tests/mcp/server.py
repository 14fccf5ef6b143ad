"""A small MCP server for the tests, written with the `mcp` package's MCPServer (once FastMCP).

``python server.py stdio`` serves over stdin/stdout; ``python server.py http`` binds 127.0.0.1 on
a free port, prints ``PORT <n>`` and serves streamable HTTP at ``/mcp``. Some tools misbehave on
purpose: ``fail`` answers with an MCP error result, ``crash`` kills the server mid-call, ``hang``
never answers, ``broken`` is listed with an input schema that is not valid JSON Schema, and
``dangling`` with one whose ``$ref`` points at nothing.
"""

from __future__ import annotations

import asyncio
import os
import socket
import sys
from typing import Any

from mcp.server import MCPServer
from mcp.server.mcpserver.exceptions import ToolError
from mcp.types import Tool as ListedTool

BROKEN_SCHEMAS = {
    "broken": {"type": "object", "properties": {"x": {"type": 12}}},
    # valid JSON Schema, but its reference leads nowhere: no argument could be checked
    "dangling": {"type": "object", "properties": {"x": {"$ref": "#/$defs/Missing"}}},
}


class TestServer(MCPServer):
    async def list_tools(self) -> list[ListedTool]:
        listed = await super().list_tools()
        return [
            t.model_copy(update={"input_schema": BROKEN_SCHEMAS[t.name]})
            if t.name in BROKEN_SCHEMAS
            else t
            for t in listed
        ]


server = TestServer("workbench-test", log_level="CRITICAL")


@server.tool()
def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


@server.tool()
def echo(text: str) -> str:
    """Say the text back."""
    return text


@server.tool()
def pid() -> int:
    """The server's process id (to tell connections apart)."""
    return os.getpid()


@server.tool()
def fail(message: str) -> str:
    """Always fails, with the message."""
    raise ToolError(message)


@server.tool()
def crash() -> str:
    """Kills the server process in the middle of the call."""
    os._exit(3)


@server.tool()
async def hang() -> str:
    """Never answers."""
    await asyncio.sleep(3600)
    return "too late"


@server.tool()
def broken(x: Any = None) -> str:
    """Listed with a malformed schema."""
    return "unreachable"


@server.tool()
def dangling(x: Any = None) -> str:
    """Listed with a schema whose reference leads nowhere."""
    return "unreachable"


def serve_http() -> None:
    import uvicorn

    sock = socket.socket()
    sock.bind(("127.0.0.1", 0))
    sock.listen()  # connections wait in the backlog until uvicorn serves them
    print(f"PORT {sock.getsockname()[1]}", flush=True)
    config = uvicorn.Config(server.streamable_http_app(), log_level="warning")
    asyncio.run(uvicorn.Server(config).serve(sockets=[sock]))


if __name__ == "__main__":
    if sys.argv[1:] == ["http"]:
        serve_http()
    else:
        server.run("stdio")
