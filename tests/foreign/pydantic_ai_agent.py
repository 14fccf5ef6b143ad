"""A pydantic-ai agent with one tool, traced by pydantic-ai's own instrumentation (its TestModel:
offline). Its chat spans carry the conventions' JSON messages, a tool result as ``result``."""

from __future__ import annotations

import asyncio
from typing import Any


def traced_spans() -> list[Any]:
    """The finished SDK spans of one run of the agent ``adder``."""
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter
    from pydantic_ai import Agent
    from pydantic_ai.capabilities.instrumentation import Instrumentation
    from pydantic_ai.models.instrumented import InstrumentationSettings
    from pydantic_ai.models.test import TestModel

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    settings = InstrumentationSettings(tracer_provider=provider, include_content=True)
    agent = Agent(
        TestModel(),
        name="adder",
        instructions="Add numbers.",
        capabilities=[Instrumentation(settings=settings)],
    )

    @agent.tool_plain
    def add(a: int, b: int) -> int:
        return a + b

    asyncio.run(agent.run("What is 1 + 2?"))  # its run_sync would leave an event loop open
    return list(exporter.get_finished_spans())
