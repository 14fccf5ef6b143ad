"""An MCP tool call through our Toolset against the same call with the `mcp` client directly.

One MCP server (the `mcp` package's MCPServer with one tool, ``add``) runs as a stdio subprocess.
Side by side, calls alternating one by one, over separate connections to that server:

- **direct**: ``await client.call_tool("add", {...})`` on an open ``mcp.Client``;
- **ours, portal**: ``await tool.run({...}, ctx)`` for the `Tool` that ``Toolset.from_mcp`` made,
  awaited on the portal loop, where sync runs (``agent.run_sync``) execute: JSON Schema check of
  the arguments, the per-call timeout, the call, the result as text;
- **ours, other loop**: the same from another event loop (``await agent.run(...)`` in a script):
  the call hops to the portal loop, where the connection lives, and back.

Figures are medians per call; the ratios compare with direct on the same loop (target <= 1.2).

    .venv/bin/python bench/mcp_overhead.py            # about half a minute
    .venv/bin/python bench/mcp_overhead.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import json
import statistics
import sys
import tempfile
import time
from collections.abc import Awaitable, Callable
from importlib.metadata import version
from pathlib import Path
from typing import Any

import mcp

import workbench as wb
from workbench._sync import run_sync

SERVER = """
from mcp.server import MCPServer

server = MCPServer("bench", log_level="CRITICAL")


@server.tool()
def add(a: int, b: int) -> int:
    \"\"\"Add two integers.\"\"\"
    return a + b


server.run("stdio")
"""


async def interleaved(
    script: Path, ours: Callable[[int], Awaitable[str]], calls: int
) -> dict[str, float]:
    """Median seconds per call, direct and ours, calls alternating one by one on this loop.

    Alternating single calls (and which goes first) makes a busy machine's stalls hit both alike;
    the median ignores the stalls themselves.
    """
    params = mcp.StdioServerParameters(command=sys.executable, args=[str(script)])
    direct: list[float] = []
    through_us: list[float] = []
    async with mcp.Client(params) as client:

        async def timed(call: Callable[[], Awaitable[Any]], into: list[float]) -> None:
            started = time.perf_counter()
            await call()
            into.append(time.perf_counter() - started)

        for i in range(calls + calls // 5):
            pair = [
                (lambda i=i: client.call_tool("add", {"a": i, "b": 1}), direct),
                (lambda i=i: ours(i), through_us),
            ]
            for call, into in pair if i % 2 else reversed(pair):
                await timed(call, into)
    warm = calls // 5
    return {
        "direct": statistics.median(direct[warm:]),
        "ours": statistics.median(through_us[warm:]),
    }


async def our_tool(toolset: wb.Toolset) -> Callable[[int], Awaitable[str]]:
    view = wb.RunView(state=wb.AgentState(), elapsed=0.0, steps_completed=0)
    offered, _ = await toolset.resolve(view)
    (add,) = offered

    async def call(i: int) -> str:
        return str((await add.run({"a": i, "b": 1}, None)).value)  # type: ignore[arg-type]

    return call


def measure(script: Path, calls: int) -> dict[str, float]:
    toolset = wb.Toolset.from_mcp([sys.executable, str(script)])
    ours = run_sync(our_tool(toolset))
    on_portal = run_sync(interleaved(script, ours, calls))
    on_other = asyncio.run(interleaved(script, ours, calls))
    toolset.close()
    figures = {
        "direct_portal_us": on_portal["direct"] * 1e6,
        "ours_portal_us": on_portal["ours"] * 1e6,
        "direct_other_loop_us": on_other["direct"] * 1e6,
        "ours_other_loop_us": on_other["ours"] * 1e6,
    }
    figures["ratio_portal"] = on_portal["ours"] / on_portal["direct"]
    figures["ratio_other_loop"] = on_other["ours"] / on_other["direct"]
    return figures


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="few calls")
    parser.add_argument("--json", type=Path, help="also write the figures here")
    args = parser.parse_args()
    calls = 50 if args.quick else 1000
    with tempfile.TemporaryDirectory() as scratch:
        script = Path(scratch) / "server.py"
        script.write_text(SERVER)
        figures = measure(script, calls)
    print(f"python {sys.version.split()[0]}, mcp {version('mcp')}; stdio; medians of {calls} calls")
    for key, label in (("portal", "on the portal loop"), ("other_loop", "on another loop")):
        print(
            f"  {label:<20} mcp client {figures[f'direct_{key}_us']:8.1f} µs, "
            f"our Tool.run {figures[f'ours_{key}_us']:8.1f} µs per call "
            f"({figures[f'ratio_{key}']:.2f}x)"
        )
    if args.json:
        args.json.write_text(json.dumps(figures, indent=2))


if __name__ == "__main__":
    main()
