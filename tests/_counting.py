"""A deterministic "counting" agent for store, replay and diff tests.

The model reads the last tool result (a number), calls ``add(a=<that number>, b=<step>)`` with a
call id derived from the step, and answers ``"total <n>"`` at the last step. Everything is a pure
function of the conversation, so two runs of it agree exactly, and an edited tool result changes
every later step in a predictable way.
"""

from __future__ import annotations

from collections.abc import Sequence

import workbench as wb

PROMPT = "Count for me."
USAGE = wb.Usage(input_tokens=10, output_tokens=5, requests=1)


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def last_number(messages: Sequence[wb.Message]) -> int:
    """The content of the newest tool result, as an int (0 before the first)."""
    for message in reversed(messages):
        for part in message.parts:
            if isinstance(part, wb.ToolResult):
                return int(part.content)
    return 0


def counting_model(steps: int, *, offset: int = 0) -> wb.FunctionModel:
    """Calls ``add`` for ``steps - 1`` steps, then answers; ``offset`` makes a different model."""

    def answer(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        step = 1 + sum(1 for m in messages if m.role == "assistant")
        total = last_number(messages)
        if step >= steps:
            return wb.ModelResponse.text(f"total {total}", usage=USAGE)
        arguments = {"a": total, "b": step + offset}
        return wb.ModelResponse.tool_call("add", arguments, call_id=f"c{step}", usage=USAGE)

    return wb.FunctionModel(answer, name="counter")


def counting_agent(
    steps: int, store: wb.RunStore | None = None, *, model: wb.Model | None = None
) -> wb.Agent:
    """The counting agent, recording to ``store`` (nowhere when None)."""
    return wb.Agent(
        model=model or counting_model(steps),
        name="counter",
        tools=[add],
        stop=wb.MaxSteps(steps + 5),
        store=store if store is not None else False,
    )


def content(messages: Sequence[wb.Message]) -> list[tuple[str, tuple[wb.Part, ...]]]:
    """Role and parts of each message: what a model sees, without provenance."""
    return [(m.role, m.parts) for m in messages]
