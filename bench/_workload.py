"""The run every loop benchmark makes: the model calls ``add`` N-1 times, then answers "done".

Shared by ``loop_overhead.py`` and ``telemetry_overhead.py`` so both measure the same workload
(in our framework and in the peers' versions, which use the same constants).
"""

from __future__ import annotations

from typing import Any

import workbench as wb

PROMPT = "Add numbers until you are done."
ANSWER = "done"
IN_TOKENS, OUT_TOKENS = 10, 5


def step_of(message_count: int) -> int:
    """Which step the model is at: 1 prompt message, then 2 messages (call, result) per step."""
    return (message_count + 1) // 2


def our_agent(
    n: int, *, sync_tool: bool = False, store: wb.RunStore | bool = False, **options: Any
) -> wb.Agent:
    """Our agent for an ``n``-step run, without a run store unless ``store`` is one."""
    usage = wb.Usage(input_tokens=IN_TOKENS, output_tokens=OUT_TOKENS, requests=1)

    async def respond(messages: Any, request: wb.ModelRequest) -> wb.ModelResponse:
        step = step_of(len(messages))
        if step < n:
            args = {"a": step, "b": 1}
            return wb.ModelResponse.tool_call("add", args, call_id=f"c{step}", usage=usage)
        return wb.ModelResponse.text(ANSWER, usage=usage)

    def add_sync(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    async def add_async(a: int, b: int) -> int:
        """Add two integers."""
        return a + b

    add = wb.tool(name="add")(add_sync if sync_tool else add_async)
    agent = wb.Agent(
        wb.FunctionModel(respond),
        tools=[add],
        stop=wb.MaxSteps(n + 10),
        store=store or False,
        **options,
    )
    if agent.store is not (store or None):
        raise SystemExit(f"the bench agent has the wrong store ({agent.store!r})")
    return agent


def ours_ok(result: wb.RunResult, n: int) -> bool:
    """Whether our run did what the workload says."""
    done = result.stop_reason is wb.StopReason.COMPLETED and result.output == ANSWER
    return done and len(result.steps) == n
