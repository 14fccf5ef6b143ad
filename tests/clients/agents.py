"""The agents the proxy's tests drive, each on the wire it speaks, and the model they are given.

Each `Client` is a real agent run the way its users run it: Claude Code (``claude -p``) and Codex
(``codex exec``) as subprocesses pointed at the proxy the way their docs say
(``ANTHROPIC_BASE_URL``; a ``model_providers`` entry with ``wire_api = "responses"``), the OpenAI
Agents SDK and pydantic-ai with their default (Responses) models, and the ``anthropic`` SDK's own
tool loop. `scripted` is the
upstream they talk to through the proxy: asked anything, it reasons (a signed thinking block, an
encrypted reasoning item) and calls the client's tool; sent the tool's result, it answers quoting
the result's last line.
"""

from __future__ import annotations

import asyncio
import json
import os
import subprocess
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from tests.fake_upstream import Answer, Behaviour
from tests.wires import message, message_events, response, response_events

KEY = "sk-test-client-7f3e91c2"
ROOT_BIN = Path(__file__).parents[2] / ".clients" / "node_modules" / ".bin"
"""Where ``scripts/install-clients`` puts ``claude`` and ``codex``."""
PROMPT = "Run echo hi, then tell me what it printed."
ENDING = "The tool said: {said}."
FORKED = "A different ending, told live."
THOUGHT = ("The user wants the command run first.", "c2lnbmVkIHRob3VnaHQ=")
"""The reasoning the scripted model gives with its call, and its signature (encrypted content):
a client must send it back unchanged for the next request to match the recording."""


def _said(result: Any) -> str:
    """The last line of a tool's result (Codex's output ends with the command's)."""
    text = result if isinstance(result, str) else json.dumps(result)
    lines = [line for line in text.splitlines() if line.strip()]
    return lines[-1].strip() if lines else ""


def _result_of(wire: str, body: dict[str, Any]) -> Any:
    """The tool result the request sends back, or None (the conversation's first call)."""
    if wire == "messages":
        last = body["messages"][-1]["content"]
        found = [
            b["content"] for b in last if isinstance(b, dict) and b.get("type") == "tool_result"
        ]
    else:
        items = body["input"] if isinstance(body["input"], list) else []
        found = [
            i["output"]
            for i in items
            if isinstance(i, dict) and i.get("type") == "function_call_output"
        ]
    return found[-1] if found else None


def scripted(wire: str, tool: str, arguments: dict[str, Any], ending: str = ENDING) -> Behaviour:
    """A model on ``wire`` that calls ``tool`` once, then answers with ``ending``."""

    def answer(body: dict[str, Any], headers: dict[str, str]) -> Answer:
        result = _result_of(wire, body)
        call = (
            []
            if result is not None
            else [("toolu_1" if wire == "messages" else "call_1", tool, arguments)]
        )
        text = ending.format(said=_said(result)) if result is not None else ""
        if wire == "messages":
            thinking = THOUGHT if call else None
            whole = message(text, call, thinking=thinking)
            events = message_events(text, call, thinking=thinking)
        else:
            reasoning = THOUGHT if call else None
            whole = response(text, call, reasoning=reasoning)
            events = response_events(text, call, reasoning=reasoning)
        return Answer(events=events) if body.get("stream") else Answer(body=whole)

    return answer


@dataclass(frozen=True)
class Client:
    """An agent: its wire, the tool the scripted model makes it call, and how to run it."""

    name: str
    wire: str
    tool: str
    arguments: dict[str, Any]
    said: str
    """The tool result's last line: what the scripted model's answer quotes."""
    drive: Callable[[str, Path], str]
    """Run the agent with its model at ``url`` (the proxy's ``.../v1``) in a directory of its
    own (home, working tree); its final answer."""
    cli: bool = False
    normalize: dict[str, str] = field(default_factory=dict)
    """What a replay must tolerate of the client's tool (see `wb.proxy(normalize=...)`)."""


def _run(command: list[str], env: dict[str, str], cwd: Path) -> str:
    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=240)
    if done.returncode != 0:
        raise AssertionError(
            f"{command[0]} failed ({done.returncode}):\n{done.stdout}\n{done.stderr}"
        )
    return done.stdout.strip()


def _dirs(place: Path) -> tuple[Path, Path]:
    home, work = place / "home", place / "work"
    home.mkdir(exist_ok=True)
    work.mkdir(exist_ok=True)
    return home, work


def claude_code(bin_dir: Path, *args: str) -> Callable[[str, Path], str]:
    """``claude -p`` with ``ANTHROPIC_BASE_URL`` at the proxy, as its docs say (the key: any)."""

    def drive(url: str, place: Path, prompt: str = PROMPT) -> str:
        home, work = _dirs(place)
        env = {
            **os.environ,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": KEY,
        }
        return _run([str(bin_dir / "claude"), "-p", prompt, *args], env, work)

    return drive


CODEX_CONFIG = """\
model = "gpt-test"
model_provider = "workbench"

[model_providers.workbench]
name = "workbench proxy"
base_url = "{url}"
wire_api = "responses"
env_key = "OPENAI_API_KEY"
"""
"""``~/.codex/config.toml`` pointing Codex at the proxy."""


def codex(bin_dir: Path) -> Callable[[str, Path], str]:
    """``codex exec`` with a model provider at the proxy (``wire_api = "responses"``)."""

    def drive(url: str, place: Path) -> str:
        home, work = _dirs(place)
        (home / ".codex").mkdir(exist_ok=True)
        (home / ".codex" / "config.toml").write_text(CODEX_CONFIG.format(url=url))
        env = {
            **os.environ,
            "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"),
            "OPENAI_API_KEY": KEY,
        }
        flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
        return _run([str(bin_dir / "codex"), "exec", *flags, PROMPT], env, work).splitlines()[-1]

    return drive


def add(a: int, b: int) -> str:
    """Add two integers."""
    return str(a + b)


def agents_sdk(url: str, place: Path) -> str:
    """The OpenAI Agents SDK with its default model (the Responses API), client at the proxy."""
    import agents
    import openai

    client = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
    agents.set_tracing_disabled(True)  # its traces would go to OpenAI
    agents.set_default_openai_client(client, use_for_tracing=False)
    agent = agents.Agent(
        name="adder", instructions="You add.", model="gpt-test", tools=[agents.function_tool(add)]
    )

    async def run() -> str:
        try:
            result = await agents.Runner.run(agent, "add 1 and 2")
            return str(result.final_output)
        finally:
            await client.close()

    return asyncio.run(run())


def pydantic_ai(url: str, place: Path) -> str:
    """pydantic-ai on its default OpenAI model (``openai:`` means `OpenAIResponsesModel`)."""
    import httpx2  # what pydantic-ai takes for OpenAI-compatible providers
    import pydantic_ai as pai
    from pydantic_ai.models.openai import OpenAIResponsesModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def run() -> str:
        async with httpx2.AsyncClient() as http:  # closed with the run: no socket left behind
            provider = OpenAIProvider(base_url=url, api_key=KEY, http_client=http)
            model = OpenAIResponsesModel("gpt-test", provider=provider)
            agent = pai.Agent(model, instructions="You add.", tools=[add])
            return str((await agent.run("add 1 and 2")).output)

    return asyncio.run(run())


def anthropic_sdk(url: str, place: Path) -> str:
    """The ``anthropic`` SDK's own tool loop (what the Claude Agent SDK does underneath)."""
    import anthropic

    tool = {"name": "add", "description": "Add two integers.", "input_schema": {"type": "object"}}
    with anthropic.Anthropic(
        base_url=url.removesuffix("/v1"), api_key=KEY, max_retries=0
    ) as client:
        messages: list[Any] = [{"role": "user", "content": "add 1 and 2"}]
        for _ in range(3):
            answer = client.messages.create(
                model="claude-test",
                max_tokens=256,
                messages=messages,
                tools=[tool],  # type: ignore[list-item]
            )
            messages.append(
                {"role": "assistant", "content": [b.model_dump() for b in answer.content]}
            )
            calls = [b for b in answer.content if b.type == "tool_use"]
            if not calls:
                return "".join(b.text for b in answer.content if b.type == "text")
            results = [
                {"type": "tool_result", "tool_use_id": c.id, "content": add(**c.input)}
                for c in calls
            ]  # type: ignore[arg-type]
            messages.append({"role": "user", "content": results})
    raise AssertionError("the loop did not end")


SHELL = {"command": "echo hi", "description": "Print hi"}
CODEX_TOLERANCE = {"exec_command": r"Chunk ID: \w+|Wall time: [\d.]+ seconds"}
"""Codex's shell output carries a random chunk id and the wall time: declared, not guessed."""


CLIS = ("claude-code", "codex")
SDKS = ("openai-agents", "pydantic-ai", "anthropic-sdk")


def client(name: str, bin_dir: Path | None) -> Client:
    """The client of that name (a CLI is run from ``bin_dir``)."""
    sdk = {"a": 1, "b": 2}
    match name:
        case "claude-code":
            assert bin_dir is not None
            drive = claude_code(bin_dir, "--allowedTools", "Bash")
            return Client(name, "messages", "Bash", SHELL, "hi", drive, cli=True)
        case "codex":
            assert bin_dir is not None
            tolerance = CODEX_TOLERANCE
            return Client(
                name,
                "responses",
                "exec_command",
                {"cmd": "echo hi"},
                "hi",
                codex(bin_dir),
                True,
                tolerance,
            )
        case "openai-agents":
            return Client(name, "responses", "add", sdk, "3", agents_sdk)
        case "pydantic-ai":
            return Client(name, "responses", "add", sdk, "3", pydantic_ai)
        case "anthropic-sdk":
            return Client(name, "messages", "add", sdk, "3", anthropic_sdk)
    raise ValueError(name)
