"""A pydantic-ai agent with one tool, traced by pydantic-ai's own instrumentation (its TestModel:
offline). Its chat spans carry the conventions' JSON messages, a tool result as ``result``.

`failing_spans`: an agent whose tool raises, which pydantic-ai lets out of the run: its tool and
agent spans failed, each with the exception's traceback as pydantic-ai records it (every frame
of pydantic-ai between the run and the tool). `retried_spans`: a model that sends a call with
arguments that are no JSON (``{"``), which pydantic-ai sends back to it to fix (the call's span
failed, with the retry's cause), then a good call and the answer."""

from __future__ import annotations

import asyncio
import contextlib
from typing import Any


def traced_spans() -> list[Any]:
    """The finished SDK spans of one run of the agent ``adder``."""
    return _spans(fail=False)


def failing_spans() -> list[Any]:
    """The finished SDK spans of one run of the agent ``weather``, whose tool raised."""
    return _spans(fail=True)


def retried_spans() -> list[Any]:
    """The finished SDK spans of one run of ``adder`` whose model fixed a broken call."""
    from pydantic_ai.messages import ModelMessage, ModelResponse, TextPart, ToolCallPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel

    def model(messages: list[ModelMessage], info: AgentInfo) -> ModelResponse:
        answers = [ToolCallPart("add", '{"'), ToolCallPart("add", {"a": 1, "b": 2}), TextPart("3")]
        return ModelResponse(parts=[answers[min(len(messages) // 2, 2)]])

    agent, exporter = _agent(FunctionModel(model), "adder")

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    asyncio.run(agent.run("What is 1 + 2?"))
    return list(exporter.get_finished_spans())


def no_station(city: str) -> str:
    """The tool ``get_weather`` of `failing_spans`: it raises."""
    raise ValueError(f"no weather station in {city}")


def _spans(*, fail: bool) -> list[Any]:
    from pydantic_ai.models.test import TestModel

    agent, exporter = _agent(TestModel(), "weather" if fail else "adder")
    if fail:
        agent.tool_plain(name="get_weather")(no_station)
        with contextlib.suppress(ValueError):
            asyncio.run(agent.run("What is the weather in Atlantis?"))
        return list(exporter.get_finished_spans())

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    asyncio.run(agent.run("What is 1 + 2?"))  # its run_sync would leave an event loop open
    return list(exporter.get_finished_spans())


def _agent(model: Any, name: str) -> tuple[Any, Any]:
    """An agent on ``model`` traced by pydantic-ai into an in-memory exporter, and the exporter."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = Agent(
        model,
        name=name,
        instructions="Add numbers.",
        capabilities=[Instrumentation(settings=settings)],
    )
    return agent, exporter
