"""Smoke: Claude Code, Codex and the OpenAI Agents SDK through the proxy to the real local model.

``scripts/llm-server`` (llama.cpp with Gemma 3 270M, a 4,096-token context) answers
``/v1/messages`` and ``/v1/responses``. Claude Code runs lean (``--bare``, no tools, a short
system prompt, 8 output tokens); the base model never ends a turn by itself, so Claude Code asks
it to go on a few times and then says the answer ran past its output limit, which is how it
shows that it read every relayed stream to its end (a stream it could not read fails otherwise);
Codex
sends its whole harness, about 6,000 tokens, which this server refuses as too long for its
context: the refusal must reach Codex as the server said it, and be the run's error.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import workbench as wb
from tests.clients.agents import CODEX_CONFIG, KEY, _dirs
from tests.live.fewshot import BASE_URL, MODEL, server_down_reason

pytestmark = [pytest.mark.live, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def llm_server() -> str:
    reason = server_down_reason(BASE_URL)
    if reason is not None:
        pytest.skip(reason)
    return BASE_URL


def run(command: list[str], env: dict[str, str], cwd: Path) -> tuple[int, str]:
    import subprocess

    done = subprocess.run(command, env=env, cwd=cwd, capture_output=True, text=True, timeout=600)
    return done.returncode, done.stdout + done.stderr


def test_claude_code_through_the_proxy_to_the_local_model(
    llm_server: str, cli_bin: Path, tmp_path: Path
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    home, work = _dirs(tmp_path)
    with wb.proxy(llm_server, store=store) as proxy:
        env = {
            **os.environ,
            "HOME": str(home),
            "ANTHROPIC_BASE_URL": proxy.url.removesuffix("/v1"),
            "ANTHROPIC_API_KEY": KEY,
            "CLAUDE_CODE_MAX_OUTPUT_TOKENS": "8",
        }
        lean = ["--bare", "--system-prompt", "You are terse.", "--tools", "", "--model", MODEL]
        code, said = run([str(cli_bin / "claude"), "-p", "Say hello.", *lean], env, work)
    assert code == 0 or "exceeded the 8 output token maximum" in said, said
    (run_id,) = proxy.run_ids
    recorded = store.load(run_id)
    answered = [s.response for s in recorded.steps if s.response is not None]
    assert answered and all(r.model_name == MODEL for r in answered)
    assert answered[0].usage.input_tokens > 0 and answered[0].usage.output_tokens > 0
    assert recorded.steps[0].messages_in[0].text.endswith("You are terse.")


def test_codex_through_the_proxy_gets_the_local_model_s_own_answer(
    llm_server: str, cli_bin: Path, tmp_path: Path
) -> None:
    store = wb.RunStore(tmp_path / "runs.sqlite")
    home, work = _dirs(tmp_path)
    (home / ".codex").mkdir()
    with wb.proxy(llm_server, store=store) as proxy:
        config = CODEX_CONFIG.format(url=proxy.url).replace("gpt-test", MODEL)
        (home / ".codex" / "config.toml").write_text(config)
        env = {
            **os.environ,
            "HOME": str(home),
            "CODEX_HOME": str(home / ".codex"),
            "OPENAI_API_KEY": KEY,
        }
        flags = ["--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox"]
        code, said = run([str(cli_bin / "codex"), "exec", *flags, "Say hello."], env, work)
    recorded = [store.load(r) for r in proxy.run_ids]
    assert recorded and all(r.state.metadata["proxy"]["wire"] == "responses" for r in recorded)
    first = recorded[0]
    if first.steps[0].response is not None:  # a server with room for Codex's harness answered
        assert code == 0 and first.steps[0].response.model_name == MODEL
        return
    assert code != 0 and first.error is not None
    assert "exceeds the available context size" in first.error.message
    assert "exceeds the available context size" in said  # Codex was told what the server said


def test_the_agents_sdk_through_the_proxy_to_the_local_model(
    llm_server: str, tmp_path: Path
) -> None:
    import asyncio

    import agents
    import openai

    store = wb.RunStore(tmp_path / "runs.sqlite")

    async def ask(url: str) -> str:
        client = openai.AsyncOpenAI(base_url=url, api_key=KEY, max_retries=0)
        model = agents.OpenAIResponsesModel(model=MODEL, openai_client=client)
        settings = agents.ModelSettings(max_tokens=16, temperature=0)
        agent = agents.Agent(
            name="greeter", instructions="Be brief.", model=model, model_settings=settings
        )
        try:
            return str((await agents.Runner.run(agent, "Say hello.")).final_output)
        finally:
            await client.close()

    agents.set_tracing_disabled(True)
    with wb.proxy(llm_server, store=store) as proxy:
        said = asyncio.run(ask(proxy.url))
    (run_id,) = proxy.run_ids
    recorded = store.load(run_id)
    assert recorded.output == said and recorded.steps[0].response is not None
    with wb.proxy(replay=run_id, store=store) as replay:  # and again with the server out of it
        assert asyncio.run(ask(replay.url)) == said
