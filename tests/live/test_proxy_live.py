"""Foreign agents recorded through the proxy in front of the real model, then replayed offline.

A pydantic-ai agent, a LangGraph ReAct agent and a plain `openai` SDK loop each talk to the real
llama-server through `wb.proxy`; the conversation is loaded from the store, rendered by the
notebook's step view, and run again through a replaying proxy whose upstream is a closed port, so
any request that reached for the model would fail. The replay must give the same answer.
"""

from __future__ import annotations

import asyncio
import json
import socket
import warnings
from collections.abc import Callable
from typing import Any

import pytest

import workbench as wb
from tests.foreign.openai_chat import TOOLS
from tests.live.fewshot import MODEL
from workbench.notebook.html import step_html

pytestmark = pytest.mark.live

PROMPT = "Use the add tool to add 2 and 3, then say the result."
KEY = "sk-live-proxy"


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def pydantic_ai_agent(base_url: str) -> str:
    import httpx2  # what pydantic-ai wants for OpenAI-compatible providers now
    from pydantic_ai import Agent
    from pydantic_ai.models.openai import OpenAIChatModel
    from pydantic_ai.providers.openai import OpenAIProvider

    async def run() -> str:
        async with httpx2.AsyncClient() as http:  # closed here: no connection outlives the run
            provider = OpenAIProvider(base_url=base_url, api_key=KEY, http_client=http)
            model = OpenAIChatModel(MODEL, provider=provider)
            settings: Any = {"temperature": 0, "seed": 1, "max_tokens": 64}
            agent = Agent(model, tools=[add], model_settings=settings, retries=3)
            return str((await agent.run(PROMPT)).output)

    return asyncio.run(run())


def langgraph_agent(base_url: str) -> str:
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent

    # The newline stop keeps the small model from starting a second call it cannot finish
    # (LangChain sends the broken arguments back, which the server refuses), as in fewshot.py.
    model = ChatOpenAI(
        model=MODEL,
        base_url=base_url,
        api_key=KEY,  # type: ignore[arg-type]
        temperature=0,
        seed=1,
        max_tokens=64,
        stop=["\n"],
        max_retries=0,
    )

    with warnings.catch_warnings():  # moved to `langchain.agents` (not installed); same graph
        warnings.simplefilter("ignore", DeprecationWarning)
        agent = create_react_agent(model, [tool(add)])
    state = agent.invoke({"messages": [("user", PROMPT)]}, {"recursion_limit": 8})
    return str(state["messages"][-1].content)


def openai_loop(base_url: str) -> str:
    import openai

    tools: Any = TOOLS
    messages: list[Any] = [{"role": "user", "content": PROMPT}]
    with openai.OpenAI(base_url=base_url, api_key=KEY, max_retries=0) as client:
        for _ in range(4):
            answer = client.chat.completions.create(
                model=MODEL, messages=messages, tools=tools, temperature=0, seed=1, max_tokens=64
            )
            message = answer.choices[0].message.model_dump(exclude_none=True)
            messages.append(message)
            if not message.get("tool_calls"):
                break
            for call in message["tool_calls"]:
                messages.append(
                    {"role": "tool", "tool_call_id": call["id"], "content": run_add(call)}
                )
    return str(messages[-1].get("content") or "")


def run_add(call: dict[str, Any]) -> str:
    """Run one call; broken arguments are answered with the error and replaced in the history.

    Servers reject (500) a history holding the model's own broken JSON, so a careful loop sends
    back ``{}`` in its place, as our own loop does.
    """
    try:
        return str(add(**json.loads(call["function"]["arguments"])))
    except (TypeError, ValueError) as exc:
        call["function"]["arguments"] = "{}"
        return f"error: {exc}"


def closed_port_url() -> str:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}/v1"


@pytest.mark.parametrize("agent", [pydantic_ai_agent, langgraph_agent, openai_loop])
def test_a_foreign_agent_is_recorded_shown_and_replayed_offline(
    base_url: str, agent: Callable[[str], str]
) -> None:
    store = wb.RunStore(":memory:")
    with wb.proxy(base_url, store=store) as proxy:
        answer = agent(proxy.url)
    (run_id,) = proxy.run_ids
    run = store.load(run_id)
    assert run.steps and all(s.response is not None for s in run.steps)
    assert run.steps[0].messages_in[-1].text.startswith(PROMPT[:20]) or any(
        PROMPT in m.text for m in run.steps[0].messages_in
    )
    assert all("<script" not in step_html(s, run.steps) for s in run.steps)
    assert step_html(run.steps[-1], run.steps)  # the views build from the recording
    with wb.proxy(closed_port_url(), replay=run_id, store=store) as replaying:
        replayed = agent(replaying.url)
    assert replayed == answer
    again = store.load(replaying.run_ids[0])
    assert [s.response for s in again.steps] == [s.response for s in run.steps]
    assert again.error is None
