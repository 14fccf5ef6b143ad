"""A LangGraph ReAct agent with one tool, traced by OpenInference's LangChain instrumentation.

The chat model (LangChain's ``ChatOpenAI``) is answered by the client's own transport (offline),
with the answers of `tests.foreign.openai_chat`: a call of ``add(1, 2)``, then the answer. The
spans are OpenInference's: CHAIN and AGENT spans for the graph, LLM for each model call, TOOL
(``tool.name``) for the call.
"""

from __future__ import annotations

import contextlib
import warnings
from typing import Any

from tests.foreign.openai_chat import ANSWERS, httpx


def add(a: int, b: int) -> int:
    """Add two integers."""
    return a + b


def broken_add(a: int, b: int) -> int:
    """Add two integers."""
    raise ValueError(f"cannot add {a} and {b}")


def traced_spans(*, server_error: bool = False, tool_raises: bool = False) -> list[Any]:
    """The finished SDK spans of one run of the agent.

    ``server_error``: the second model call is answered with a 500 (as the llm-server answered
    the local model's own broken call sent back), which the graph raises. ``tool_raises``: the
    tool raises, which LangGraph's tool node lets out of the graph (it hands the model only a
    call it could not make).
    """
    from langchain_core.tools import tool
    from langchain_openai import ChatOpenAI
    from langgraph.prebuilt import create_react_agent
    from openinference.instrumentation.langchain import LangChainInstrumentor
    from opentelemetry.sdk.trace import TracerProvider
    from opentelemetry.sdk.trace.export import SimpleSpanProcessor
    from opentelemetry.sdk.trace.export.in_memory_span_exporter import InMemorySpanExporter

    exporter = InMemorySpanExporter()
    provider = TracerProvider()
    provider.add_span_processor(SimpleSpanProcessor(exporter))
    instrumentor = LangChainInstrumentor()
    instrumentor.instrument(tracer_provider=provider)
    answers = [httpx.Response(200, json=answer) for answer in ANSWERS]
    if server_error:
        answers[1] = httpx.Response(500, json={"error": {"message": "cannot parse the arguments"}})
    transport = httpx.MockTransport(lambda request: answers.pop(0))
    try:
        model = ChatOpenAI(
            model="gpt-4o-mini",
            api_key="sk-test",  # type: ignore[arg-type]
            base_url="http://llm.test/v1",
            http_client=httpx.Client(transport=transport),
            max_retries=0,
        )
        with warnings.catch_warnings():  # moved to `langchain.agents` (not installed); same graph
            warnings.simplefilter("ignore", DeprecationWarning)
            adder = tool("add")(broken_add) if tool_raises else tool(add)
            agent = create_react_agent(model, [adder], name="adder")
        failing = server_error or tool_raises
        with contextlib.suppress(Exception) if failing else contextlib.nullcontext():
            agent.invoke({"messages": [("user", "1 + 2?")]}, {"recursion_limit": 8})
    finally:
        instrumentor.uninstrument()
    return list(exporter.get_finished_spans())
