"""An OpenAI Agents SDK agent with two tools, traced by OpenInference's instrumentation of it.

The model (the SDK's Chat Completions model) is answered by the client's own transport
(offline): the first answer asks for ``add(1, 2)`` and ``get_weather("Paris")``, a tool that
raises (the SDK tells the model, "non-fatal"); the second is a 500, as the llm-server answers a
conversation holding arguments it cannot parse (what the local model did when this was walked),
which the run raises. The spans are OpenInference's: an AGENT span for the workflow, AGENT for
the agent (``agent.name``), CHAIN for each turn, LLM for each model call, TOOL for each call;
or OpenLLMetry's.
"""

from __future__ import annotations

import asyncio
import copy
from typing import Any

from tests.foreign.openai_chat import ANSWERS, httpx

CALLS = copy.deepcopy(ANSWERS[0])  # add(1, 2), and a call of the tool that raises beside it
CALLS["choices"][0]["message"]["tool_calls"].append(
    {
        "id": "call_2",
        "type": "function",
        "function": {"name": "get_weather", "arguments": '{"city": "Paris"}'},
    }
)
SERVER_ERROR = {"error": {"message": "Failed to parse tool call arguments as JSON"}}


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def get_weather(city: str) -> str:
    """The weather in a city."""
    raise ValueError(f"no weather station in {city!r}")


def _instrumentor(name: str) -> Any:
    if name == "openinference":
        from openinference.instrumentation.openai_agents import OpenAIAgentsInstrumentor
    else:
        import agents
        from opentelemetry.instrumentation.openai_agents import OpenAIAgentsInstrumentor

        agents.set_trace_processors([])  # theirs only: the SDK's own would send to OpenAI
    return OpenAIAgentsInstrumentor()


def failing_spans(instrumentation: str = "openinference") -> list[Any]:
    """The finished SDK spans of one run of the agent (the run raised the 500).

    Traced by ``openinference`` or ``openllmetry`` (whose spans are the conventions' names:
    ``invoke_agent``, ``chat``, ``execute_tool``; no token counts on Chat Completions).
    """
    import agents
    import openai
    from agents import Agent, ModelSettings, OpenAIChatCompletionsModel, Runner, function_tool
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = _instrumentor(instrumentation)
    instrumentor.instrument(tracer_provider=provider)  # its processor alone: nothing sent away
    answers = [httpx.Response(200, json=CALLS), httpx.Response(500, json=SERVER_ERROR)]
    transport = httpx.MockTransport(lambda request: answers.pop(0))
    client = openai.AsyncOpenAI(
        api_key="sk-test",
        base_url="http://llm.test/v1",
        http_client=httpx.AsyncClient(transport=transport),
        max_retries=0,
    )
    agent = Agent(
        name="forecaster",
        instructions="Use the tools.",
        model=OpenAIChatCompletionsModel(model="gpt-4o-mini", openai_client=client),
        tools=[function_tool(add), function_tool(get_weather)],
        model_settings=ModelSettings(max_tokens=48),
    )
    # The SDK's tracing is one switch for the process, and the proxy's client tests turn it off
    # (tests/clients): on for this run, then off again, so nothing of it goes on to OpenAI.
    agents.set_tracing_disabled(False)
    try:
        asyncio.run(Runner.run(agent, "What is the weather in Paris?", max_turns=3))
    except openai.InternalServerError:
        pass  # the run raised the model's 500, as it did on the local model
    finally:
        instrumentor.uninstrument()
        agents.set_tracing_disabled(True)
    return list(exporter.get_finished_spans())
