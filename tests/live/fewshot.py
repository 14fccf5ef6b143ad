"""The few-shot setup that makes a base model (Gemma 3 270M) call a tool: shared by the live tests.

A base model follows patterns, not instructions. Three worked exchanges (the user asks, the
assistant calls ``add``, the tool answers, the assistant answers) at temperature 0 with a fixed
seed make it call ``add`` with the right numbers and then answer "a + b = c", after which it
rambles: ``max_tokens`` and the stop sequence cut that off.
"""

from __future__ import annotations

import os

import httpx

from workbench.messages import Message
from workbench.models import ModelSettings
from workbench.tools import ToolDefinition

_PORT = os.environ.get("WORKBENCH_LLM_PORT", "8088")
BASE_URL = os.environ.get("WORKBENCH_LLM_BASE_URL", f"http://127.0.0.1:{_PORT}/v1").rstrip("/")
"""``$WORKBENCH_LLM_BASE_URL``, else where ``scripts/llm-server`` starts it."""
MODEL = "gemma-3-270m"
SETTINGS = ModelSettings(temperature=0, seed=1, max_tokens=64, stop=["\n"])
MALFORMED = ModelSettings(temperature=0, seed=1, max_tokens=50)
"""Without the newline stop the model calls add(17, 25), then starts a second call that
``max_tokens`` cuts short: its arguments are truncated, invalid JSON. A real fault, on purpose."""
EXAMPLES = [(2, 3), (10, 4), (7, 8)]

ADD = ToolDefinition(
    name="add",
    description="Add two integers.",
    parameters={
        "type": "object",
        "properties": {"a": {"type": "integer"}, "b": {"type": "integer"}},
        "required": ["a", "b"],
    },
)


def examples() -> list[Message]:
    """The three worked exchanges."""
    history: list[Message] = []
    for n, (a, b) in enumerate(EXAMPLES, start=1):
        history += [
            Message.user(f"What is {a} + {b}?"),
            Message.assistant_tool_call("add", {"a": a, "b": b}, call_id=f"ex{n}"),
            Message.tool_result(f"ex{n}", str(a + b), name="add"),
            Message.assistant(f"{a} + {b} = {a + b}"),
        ]
    return history


def add_history(a: int, b: int) -> list[Message]:
    """The examples, then the question: the model should call ``add(a, b)``."""
    return [*examples(), Message.user(f"What is {a} + {b}?")]


def answer_history(a: int, b: int) -> list[Message]:
    """The question, the call and its result: the model should answer."""
    return [
        *add_history(a, b),
        Message.assistant_tool_call("add", {"a": a, "b": b}, call_id="q1"),
        Message.tool_result("q1", str(a + b), name="add"),
    ]


def server_down_reason(base_url: str = BASE_URL) -> str | None:
    """Why the live tests cannot run, or ``None`` when the server answers ``/health``."""
    health = base_url.removesuffix("/v1") + "/health"
    try:
        response = httpx.get(health, timeout=3)
    except httpx.HTTPError as exc:
        return f"no LLM server at {health} ({type(exc).__name__}); run `scripts/llm-server start`"
    if response.status_code != 200:
        return f"LLM server at {health} is not ready (HTTP {response.status_code})"
    return None
