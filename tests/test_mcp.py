"""MCP tools against a real MCP server (tests/mcp/server.py): over stdio and streamable HTTP.

The server is written with the `mcp` package and runs as a subprocess; the agent is driven by a
ScriptedModel. Some of its tools misbehave on purpose (an error result, a crash mid-call, a hang,
a malformed schema): each must end as a tool error or a clear error, never a hung run.
"""

from __future__ import annotations

import asyncio
import os
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

import workbench as wb
from workbench._sync import run_sync
from workbench.mcp_tools import MCPServer

SERVER = Path(__file__).parent / "mcp" / "server.py"
STDIO = [sys.executable, str(SERVER), "stdio"]


def view() -> wb.RunView:
    return wb.RunView(state=wb.AgentState(step=1), elapsed=0.0, steps_completed=0)


def outcomes(result: wb.RunResult) -> list[wb.ToolOutcome]:
    return [o for step in result.steps for o in step.tool_outcomes]


def script(*calls: tuple[str, dict[str, object]]) -> wb.ScriptedModel:
    return wb.ScriptedModel(
        [
            *(wb.ModelResponse.tool_call(name, args) for name, args in calls),
            wb.ModelResponse.text("ok"),
        ]
    )


@pytest.fixture
def stdio_tools() -> Iterator[wb.Toolset]:
    toolset = wb.Toolset.from_mcp(STDIO, timeout=20)
    yield toolset
    toolset.close()


@pytest.fixture
def http_url() -> Iterator[str]:
    process = subprocess.Popen(
        [sys.executable, str(SERVER), "http"], stdout=subprocess.PIPE, text=True
    )
    assert process.stdout is not None
    line = process.stdout.readline()  # the server prints its port once it is bound
    assert line.startswith("PORT "), line
    yield f"http://127.0.0.1:{int(line.split()[1])}/mcp"
    process.terminate()
    process.wait(timeout=30)
    process.stdout.close()


def gone(pid: int, within: float = 30.0) -> bool:
    """True once process ``pid`` has exited (polled: its exit is not ours to wait on)."""
    deadline = time.monotonic() + within
    while time.monotonic() < deadline:
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return True
        time.sleep(0.05)
    return False


def test_stdio_server_tools_are_offered_with_their_schemas(stdio_tools: wb.Toolset) -> None:
    offered, hidden = run_sync(stdio_tools.resolve(view()))
    names = [t.name for t in offered]
    assert names == ["add", "echo", "pid", "fail", "crash", "hang"]
    add = offered[0]
    assert add.description == "Add two integers."
    assert add.definition.parameters["required"] == ["a", "b"]
    assert add.timeout == 20
    broken, dangling = hidden  # malformed schemas: listed by the server, not offered, and why
    assert broken[0] == "broken"
    assert "invalid JSON schema at properties/x/type" in broken[1]
    assert dangling == (
        "dangling",
        "not offered: tool 'dangling': its schema refers to '#/$defs/Missing' (at "
        "properties/x), which is not in it",
    )


def test_sync_agent_calls_stdio_tools_and_reuses_the_connection(stdio_tools: wb.Toolset) -> None:
    offered, _ = run_sync(stdio_tools.resolve(view()))
    agent = wb.Agent(
        model=script(("add", {"a": 2, "b": 3}), ("echo", {"text": "hi"})), tools=offered
    )
    result = agent.run_sync("add and echo")
    assert result.status is wb.ExecutionStatus.COMPLETED
    assert [(o.name, o.status, o.content) for o in outcomes(result)] == [
        ("add", "ok", "5"),
        ("echo", "ok", "hi"),
    ]
    pids = [
        int(outcomes(wb.Agent(model=script(("pid", {})), tools=offered).run_sync("pid"))[0].content)
        for _ in range(2)
    ]
    assert pids[0] == pids[1]  # one server process serves run after run
    stdio_tools.close()
    assert gone(pids[0])  # closing stops the server process
    again = wb.Agent(model=script(("pid", {})), tools=offered).run_sync("pid")
    assert int(outcomes(again)[0].content) != pids[0]  # used after close: reconnects


def test_arguments_are_checked_against_the_servers_schema(stdio_tools: wb.Toolset) -> None:
    offered, _ = run_sync(stdio_tools.resolve(view()))
    agent = wb.Agent(model=script(("add", {"a": "two", "b": 3})), tools=offered)
    (outcome,) = outcomes(agent.run_sync("add"))
    assert outcome.status == "retry"
    assert "argument 'a': 'two' is not of type 'integer'" in outcome.content


def test_server_errors_crashes_and_hangs_are_tool_errors(stdio_tools: wb.Toolset) -> None:
    # one server, two layerings: `hang` with a short timeout, the rest with the default (a call
    # after the crash reconnects first, which takes a fresh server process's start-up)
    quick = stdio_tools.with_timeout(1.0).filtered(lambda t, v: t.name == "hang")
    rest = stdio_tools.filtered(lambda t, v: t.name != "hang")
    offered, _ = run_sync(wb.Toolset([quick, rest]).resolve(view()))
    assert {t.name: t.timeout for t in offered}["hang"] == 1.0
    assert len(wb.Toolset([quick, rest]).sources()) == 1
    calls = [
        ("fail", {"message": "disk full"}),
        ("hang", {}),
        ("crash", {}),
        ("add", {"a": 1, "b": 1}),
    ]
    result = wb.Agent(model=script(*calls), tools=offered).run_sync("misbehave")
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == "ok"
    fail, hang, crash, add = outcomes(result)
    assert fail.status == "error"
    assert "MCPServerError: the tool reported an error" in fail.content
    assert "disk full" in fail.content
    assert hang.status == "retry" and "'hang' timed out after 1s" in hang.content
    assert crash.status == "error" and "went away during the call of 'crash'" in crash.content
    assert (add.status, add.content) == ("ok", "2")  # the next call reconnects


def test_concurrent_first_uses_share_one_connection_and_one_listing() -> None:
    server = MCPServer(STDIO)

    async def twice() -> tuple[tuple[wb.Tool, ...], tuple[wb.Tool, ...]]:
        first, second = await asyncio.gather(server.tools(), server.tools())
        return first, second

    first, second = run_sync(twice())
    assert first is second
    pid = {t.name: t for t in first}["pid"]

    async def pids() -> list[str]:
        return [r.value for r in await asyncio.gather(*(pid.run({}, None) for _ in range(3)))]  # type: ignore[arg-type]

    assert len(set(run_sync(pids()))) == 1
    run_sync(server.aclose())


def test_a_server_that_cannot_start_is_a_clear_error() -> None:
    toolset = wb.Toolset.from_mcp([sys.executable, "-c", "raise SystemExit(4)"], connect_timeout=20)
    with pytest.raises(wb.MCPServerError, match=r"could not connect to MCP server .*-c"):
        run_sync(toolset.resolve(view()))
    toolset.close()
    missing = wb.Toolset.from_mcp("/no/such/mcp-server --flag")
    with pytest.raises(wb.MCPServerError, match=r"could not connect.*/no/such/mcp-server"):
        run_sync(missing.resolve(view()))

    async def together() -> list[BaseException | object]:
        return await asyncio.gather(
            missing.resolve(view()), missing.resolve(view()), return_exceptions=True
        )

    assert all(isinstance(e, wb.MCPServerError) for e in run_sync(together()))


@pytest.mark.parametrize("url", ["http://", "http://127.0.0.1:99999/mcp", "https://u:hunter2@h:x/"])
def test_a_url_that_is_no_url_is_refused_when_given(url: str) -> None:
    """It was taken and failed at the first run, inside the HTTP client ('UnsupportedProtocol:
    Request URL is missing an 'http://' or 'https://' protocol', 'OverflowError: connect():
    port must be 0-65535')."""
    with pytest.raises(wb.InvalidURL, match=r"^MCP server: '.*' is not") as raised:
        wb.Toolset.from_mcp(url)
    assert "hunter2" not in str(raised.value)


def test_nothing_listening_at_the_url_is_a_clear_error() -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        url = f"http://user:hunter2@127.0.0.1:{port}/mcp"
        toolset = wb.Toolset.from_mcp(url, connect_timeout=10)
        with pytest.raises(wb.MCPServerError, match=f"127.0.0.1:{port}") as refused:
            run_sync(toolset.resolve(view()))
    assert "hunter2" not in str(refused.value)
    toolset.close()


async def test_async_agent_over_streamable_http_with_layers_and_guards(http_url: str) -> None:
    def no_echo(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        if call.name == "srv_echo":
            return wb.ToolPermission.DENY, "no echoing"
        return wb.ToolPermission.ALLOW

    async with wb.Toolset.from_mcp(http_url).prefixed("srv_") as toolset:
        offered, hidden = await toolset.resolve(view())
        assert [t.name for t in offered][:3] == ["srv_add", "srv_echo", "srv_pid"]
        assert hidden[0][0] == "srv_broken"  # as the model would call it
        model = script(("srv_add", {"a": 20, "b": 22}), ("srv_echo", {"text": "x"}))
        result = await wb.Agent(model=model, tools=offered, guards=[no_echo]).run("go")
        add, echo = outcomes(result)
        assert (add.status, add.content) == ("ok", "42")
        assert echo.status == "denied" and "no echoing" in echo.content

        approving = toolset.requiring_approval(["srv_add"])
        offered, _ = await approving.resolve(view())
        paused = await wb.Agent(model=script(("srv_add", {"a": 1, "b": 2})), tools=offered).run("x")
        assert paused.status is wb.ExecutionStatus.PAUSED
        assert paused.state.pending[0].reason == "tool requires approval"


def test_headers_and_url_credentials_never_show(http_url: str) -> None:
    secret_url = http_url.replace("http://", "http://user:hunter2@")
    server = MCPServer(secret_url, headers={"Authorization": "Bearer sk-very-secret"})
    assert "hunter2" not in repr(server) and "sk-very-secret" not in repr(server)
    assert server.where == http_url
    toolset = wb.Toolset([server])
    offered, _ = run_sync(toolset.resolve(view()))  # headers are sent; the server ignores them
    assert offered[0].name == "add"
    toolset.close()


def test_a_toolset_as_async_context_manager_closes_its_servers() -> None:
    async def use() -> int:
        async with wb.Toolset.from_mcp(STDIO) as toolset:
            offered, _ = await toolset.resolve(view())
            pid = {t.name: t for t in offered}["pid"]
            return int((await pid.run({}, None)).value)  # type: ignore[arg-type]

    assert gone(run_sync(use()))


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    "answer",
    ["sys.stdin.read()", "[print('garbage', flush=True) for line in sys.stdin]"],
    ids=["silent", "garbage"],
)
def test_a_server_that_never_completes_the_handshake_times_out(answer: str, tmp_path: Path) -> None:
    pid_file = tmp_path / "pid"
    program = f"import os, sys; open({str(pid_file)!r}, 'w').write(str(os.getpid())); {answer}"
    toolset = wb.Toolset.from_mcp([sys.executable, "-c", program], connect_timeout=1)
    agent = wb.Agent(model=wb.ScriptedModel([wb.ModelResponse.text("x")]), tools=[toolset])
    result = agent.run_sync("go")
    assert result.status is wb.ExecutionStatus.FAILED
    assert result.error is not None and result.error.type == "MCPServerError"
    assert "did not answer within 1s" in result.error.message
    assert gone(int(pid_file.read_text()))  # the half-open connection was closed, not left
    toolset.close()


def test_a_key_on_the_servers_command_line_never_shows() -> None:
    key = "sk-live0123456789abcdefghij"
    toolset = wb.Toolset.from_mcp(
        [sys.executable, "-c", "raise SystemExit(3)", "--api-key", key], connect_timeout=20
    )
    (server,) = toolset.sources()
    assert isinstance(server, MCPServer)
    assert key not in repr(toolset) and key not in server.where
    assert server.where.endswith("--api-key [REDACTED]")
    with pytest.raises(wb.MCPServerError) as failed:
        run_sync(toolset.resolve(view()))
    assert key not in str(failed.value) and "--api-key [REDACTED]" in str(failed.value)
    toolset.close()


def test_a_tool_a_prefixed_toolset_cannot_offer_is_hidden_under_its_prefixed_name(
    stdio_tools: wb.Toolset,
) -> None:
    prefixed = stdio_tools.prefixed("srv_")
    offered, hidden = run_sync(prefixed.resolve(view()))
    assert {t.name for t in offered} >= {"srv_add", "srv_echo"}
    assert [name for name, _ in hidden] == ["srv_broken", "srv_dangling"]
    agent = wb.Agent(model=script(("srv_broken", {"x": 1})), tools=[prefixed])
    result = agent.run_sync("call the broken one")
    (outcome,) = outcomes(result)
    assert outcome.status == "denied"  # told why, not "unknown tool"
    assert "invalid JSON schema" in outcome.content
    stdio_tools.close()
