"""What a sub-agent call costs, against pydantic-ai's agent delegation and LangGraph's subgraphs.

Two measurements, each framework on the same work, interleaved and repeated:

- **per call**: a lead agent calls a tool ``CALLS`` times (one call per step), then answers. The
  tool either does the work directly (``work(task) -> task``) or hands it to a sub-agent whose
  model answers with the task at once. The overhead of one sub-agent call is
  ``(delegating run - direct run) / CALLS``: what delegation adds over calling the function.
  - ours: ``researcher.as_tool("work")`` (a sub-run with its own state, records, budget cap and
    charge-back) against ``@wb.tool def work``;
  - pydantic-ai: a tool whose body is ``await sub.run(task, usage=ctx.usage)`` (its documented
    agent delegation) against a plain tool;
  - LangGraph: a tool whose body invokes a compiled one-node subgraph against a plain tool, both
    under the prebuilt ``ToolNode`` of a ReAct graph.
- **tree**: a 3-level tree of 50 sub-runs: the lead calls 5 level-1 agents (one call per step),
  each of which calls 9 level-2 agents. Wall time of the whole run, per sub-run.

All models are offline functions with fixed usage; nothing sleeps, so every run is CPU-bound and
is timed in CPU time (``time.process_time``, all threads of the process: LangGraph runs tools in
a thread pool), which other processes on a shared machine do not inflate. Target: our per-call
overhead at most 0.2× each peer's. Figures are medians, in µs, with the spread (lowest-highest);
ratios are from the same run.

    .venv/bin/python bench/subagent_overhead.py            # about a minute
    .venv/bin/python bench/subagent_overhead.py --quick    # smoke run
"""

from __future__ import annotations

import argparse
import asyncio
import gc
import statistics
import sys
import time
from collections.abc import Callable
from typing import Any

from pydantic_ai import RunContext  # the tools' annotations are read from this module's globals

import workbench as wb

CALLS = 20
FANOUT = (5, 9)  # level-1 agents, and level-2 agents each of them calls: 5 + 45 = 50 sub-runs
TARGET = 0.2
USAGE = wb.Usage(input_tokens=10, output_tokens=5, requests=1)
Runner = Callable[[], None]


# -- ours -----------------------------------------------------------------------------------------


def _ours_agent(name: str, tool: wb.Tool | None, calls: int) -> wb.Agent:
    """An agent that calls ``tool`` ``calls`` times (one call a step), then answers."""

    async def respond(messages: Any, request: wb.ModelRequest) -> wb.ModelResponse:
        done = sum(1 for m in messages if m.role == "tool")
        if tool is not None and done < calls:
            return wb.ModelResponse.tool_call(tool.name, {"task": f"t{done}"}, usage=USAGE)
        return wb.ModelResponse.text(f"{name} done", usage=USAGE)

    return wb.Agent(
        model=wb.FunctionModel(respond),
        name=name,
        tools=[tool] if tool else [],
        stop=wb.MaxSteps(calls + 5),
        store=False,
        subagents=wb.SubagentLimits(max_depth=3, max_breadth=50, max_total=100),
    )


@wb.tool(name="work")
async def _work(task: str) -> str:
    """Do the work."""
    return task


def ours_call(delegate: bool, loop: asyncio.AbstractEventLoop) -> Runner:
    tool = _ours_agent("sub", None, 0).as_tool("work") if delegate else _work
    lead = _ours_agent("lead", tool, CALLS)

    def run() -> None:
        result = loop.run_until_complete(lead.run("go"))
        assert result.output == "lead done"
        assert len(result.children) == (CALLS if delegate else 0)

    return run


def ours_tree(loop: asyncio.AbstractEventLoop) -> Runner:
    level2 = _ours_agent("leaf", None, 0).as_tool("work")
    level1 = _ours_agent("middle", level2, FANOUT[1]).as_tool("delegate")
    lead = _ours_agent("lead", level1, FANOUT[0])

    def run() -> None:
        result = loop.run_until_complete(lead.run("go"))
        assert sum(1 + len(c.children) for c in result.children) == 50

    return run


# -- pydantic-ai ----------------------------------------------------------------------------------


def _pai_agent(name: str, tool: Callable[..., Any] | None, calls: int) -> Any:
    from pydantic_ai import Agent
    from pydantic_ai.messages import ModelResponse, TextPart, ToolCallPart, ToolReturnPart
    from pydantic_ai.models.function import AgentInfo, FunctionModel
    from pydantic_ai.usage import RequestUsage

    async def respond(messages: list[Any], info: AgentInfo) -> ModelResponse:
        done = sum(isinstance(p, ToolReturnPart) for m in messages for p in m.parts)
        usage = RequestUsage(input_tokens=10, output_tokens=5)
        if tool is not None and done < calls:
            call = ToolCallPart(tool.__name__, {"task": f"t{done}"}, tool_call_id=f"c{done}")
            return ModelResponse(parts=[call], usage=usage)
        return ModelResponse(parts=[TextPart(f"{name} done")], usage=usage)

    agent = Agent(FunctionModel(respond), name=name)
    if tool is not None:
        agent.tool(tool)
    return agent


def _pai_delegating(sub: Any, tool_name: str) -> Callable[..., Any]:
    from pydantic_ai.usage import UsageLimits

    async def delegate(ctx: RunContext[None], task: str) -> str:
        """Hand the task to the sub-agent."""
        limits = UsageLimits(request_limit=None)
        return str((await sub.run(task, usage=ctx.usage, usage_limits=limits)).output)

    delegate.__name__ = tool_name
    return delegate


def pydantic_ai_call(delegate: bool, loop: asyncio.AbstractEventLoop) -> Runner:
    from pydantic_ai.usage import UsageLimits

    async def work(ctx: RunContext[None], task: str) -> str:
        """Do the work."""
        return task

    tool = _pai_delegating(_pai_agent("sub", None, 0), "work") if delegate else work
    lead = _pai_agent("lead", tool, CALLS)
    limits = UsageLimits(request_limit=None)

    def run() -> None:
        result = loop.run_until_complete(lead.run("go", usage_limits=limits))
        assert result.output == "lead done"

    return run


def pydantic_ai_tree(loop: asyncio.AbstractEventLoop) -> Runner:
    from pydantic_ai.usage import UsageLimits

    leaf = _pai_agent("leaf", None, 0)
    middle = _pai_agent("middle", _pai_delegating(leaf, "work"), FANOUT[1])
    lead = _pai_agent("lead", _pai_delegating(middle, "delegate"), FANOUT[0])
    limits = UsageLimits(request_limit=None)

    def run() -> None:
        assert loop.run_until_complete(lead.run("go", usage_limits=limits)).output == "lead done"

    return run


# -- LangGraph ------------------------------------------------------------------------------------


def _lg_graph(name: str, tool: Any | None, calls: int) -> Any:
    from langchain_core.messages import AIMessage, ToolMessage
    from langgraph.graph import START, MessagesState, StateGraph
    from langgraph.prebuilt import ToolNode, tools_condition

    usage = {"input_tokens": 10, "output_tokens": 5, "total_tokens": 15}

    def model(state: MessagesState) -> dict[str, list[AIMessage]]:
        done = sum(isinstance(m, ToolMessage) for m in state["messages"])
        if tool is not None and done < calls:
            call = {"name": tool.name, "args": {"task": f"t{done}"}, "id": f"c{done}"}
            return {"messages": [AIMessage("", tool_calls=[call], usage_metadata=usage)]}
        return {"messages": [AIMessage(f"{name} done", usage_metadata=usage)]}

    graph = StateGraph(MessagesState)
    graph.add_node("model", model)
    graph.add_edge(START, "model")
    if tool is not None:
        graph.add_node("tools", ToolNode([tool]))
        graph.add_conditional_edges("model", tools_condition)
        graph.add_edge("tools", "model")
    return graph.compile()


def _lg_delegating(sub: Any, tool_name: str) -> Any:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import StructuredTool

    def delegate(task: str) -> str:
        """Hand the task to the subgraph."""
        return str(sub.invoke({"messages": [HumanMessage(task)]})["messages"][-1].content)

    return StructuredTool.from_function(delegate, name=tool_name)


def langgraph_call(delegate: bool, loop: asyncio.AbstractEventLoop) -> Runner:
    from langchain_core.messages import HumanMessage
    from langchain_core.tools import StructuredTool

    def work(task: str) -> str:
        """Do the work."""
        return task

    plain = StructuredTool.from_function(work, name="work")
    tool = _lg_delegating(_lg_graph("sub", None, 0), "work") if delegate else plain
    lead = _lg_graph("lead", tool, CALLS)
    config = {"recursion_limit": 4 * CALLS + 10}

    def run() -> None:
        out = lead.invoke({"messages": [HumanMessage("go")]}, config)
        assert out["messages"][-1].content == "lead done"

    return run


def langgraph_tree(loop: asyncio.AbstractEventLoop) -> Runner:
    from langchain_core.messages import HumanMessage

    leaf = _lg_graph("leaf", None, 0)
    middle = _lg_graph("middle", _lg_delegating(leaf, "work"), FANOUT[1])
    lead = _lg_graph("lead", _lg_delegating(middle, "delegate"), FANOUT[0])
    config = {"recursion_limit": 100}

    def run() -> None:
        out = lead.invoke({"messages": [HumanMessage("go")]}, config)
        assert out["messages"][-1].content == "lead done"

    return run


# -- measuring ------------------------------------------------------------------------------------

FRAMEWORKS = {
    "ours": (ours_call, ours_tree),
    "pydantic-ai": (pydantic_ai_call, pydantic_ai_tree),
    "langgraph": (langgraph_call, langgraph_tree),
}


def _seconds(run: Runner) -> float:
    """CPU seconds of one run: on a shared machine, other processes' load is not counted."""
    gc.collect()
    started = time.process_time()
    run()
    return time.process_time() - started


def measure(repetitions: int) -> dict[str, dict[str, list[float]]]:
    """Per framework: per-call overhead and per-sub-run tree time (µs), one per repetition."""
    loop = asyncio.new_event_loop()
    runners = {
        name: {
            "direct": call(False, loop),
            "delegate": call(True, loop),
            "tree": tree(loop),
        }
        for name, (call, tree) in FRAMEWORKS.items()
    }
    for kinds in runners.values():  # warm up
        for run in kinds.values():
            run()
    samples: dict[str, dict[str, list[float]]] = {
        name: {"per_call_us": [], "tree_per_subrun_us": []} for name in FRAMEWORKS
    }
    names = list(FRAMEWORKS)
    for repetition in range(repetitions):
        shift = repetition % len(names)
        for name in names[shift:] + names[:shift]:
            kinds = runners[name]
            overhead = (_seconds(kinds["delegate"]) - _seconds(kinds["direct"])) / CALLS
            samples[name]["per_call_us"].append(overhead * 1e6)
            samples[name]["tree_per_subrun_us"].append(_seconds(kinds["tree"]) / 50 * 1e6)
    loop.close()
    return samples


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="smoke run: 3 repetitions")
    parser.add_argument("--repetitions", type=int, default=15)
    args = parser.parse_args(argv)
    repetitions = 3 if args.quick else args.repetitions
    samples = measure(repetitions)
    medians = {
        name: {key: statistics.median(values) for key, values in kinds.items()}
        for name, kinds in samples.items()
    }
    print(f"sub-agent overhead, {repetitions} repetitions, {CALLS} calls per run, 50-run tree")
    print(f"{'framework':<12} {'per call (µs)':>20} {'tree per sub-run (µs)':>24}")
    for name, figures in medians.items():
        call, tree = samples[name]["per_call_us"], samples[name]["tree_per_subrun_us"]
        print(
            f"{name:<12} {figures['per_call_us']:>7.0f} ({min(call):.0f}-{max(call):.0f})"
            f" {figures['tree_per_subrun_us']:>10.0f} ({min(tree):.0f}-{max(tree):.0f})"
        )
    ours = medians["ours"]
    missed = False
    for peer in ("pydantic-ai", "langgraph"):
        call = ours["per_call_us"] / medians[peer]["per_call_us"]
        tree = ours["tree_per_subrun_us"] / medians[peer]["tree_per_subrun_us"]
        verdict = "MET" if call <= TARGET else "MISSED"
        missed |= call > TARGET
        print(
            f"ours / {peer}: per call {call:.3f}× (target ≤ {TARGET}×: {verdict}), tree {tree:.3f}×"
        )
    return 1 if missed and "--check" in sys.argv else 0


if __name__ == "__main__":
    sys.exit(main())
