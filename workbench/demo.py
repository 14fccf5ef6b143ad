"""The built-in demo agent: offline, scripted, and showing a retry and an approval."""

from __future__ import annotations

import workbench as wb

__all__ = ["DEMO_PROMPT", "demo_agent", "run_demo"]


@wb.tool
def add(a: int, b: int) -> int:
    """Add two integers.

    Args:
        a: The first number.
        b: The second number.

    """
    return a + b


@wb.tool
def multiply(a: int, b: int) -> int:
    """Multiply two integers."""
    return a * b


@wb.tool(requires_approval=True)
def save_result(name: str, value: int) -> str:
    """Save a named result (needs approval)."""
    return f"saved {name} = {value}"


def demo_agent(**options: object) -> wb.Agent:
    """A calculator agent on a scripted model: a bad argument, a retry, an approval."""
    model = wb.ScriptedModel(
        [
            wb.ModelResponse.tool_call("add", {"a": 17, "b": "twenty-five"}),
            wb.ModelResponse.tool_call("add", {"a": 17, "b": 25}),
            wb.ModelResponse.tool_calls(
                [("multiply", {"a": 42, "b": 2}), ("save_result", {"name": "double", "value": 84})]
            ),
            wb.ModelResponse.text("17 + 25 = 42; doubled that is 84, saved as 'double'."),
        ],
        name="scripted-calculator",
    )
    return wb.Agent(
        model=model,
        name="calculator",
        system_prompt="You are a careful calculator. Use the tools.",
        tools=[add, multiply, save_result],
        stop=wb.MaxSteps(10) | wb.Timeout(60),
        **options,  # type: ignore[arg-type]
    )


DEMO_PROMPT = "What is 17 + 25, doubled? Save the doubled value as 'double'."


def run_demo(agent: wb.Agent | None = None) -> list[wb.RunResult]:
    """Run the demo, approving every pending call; returns each execution's result."""
    agent = agent or demo_agent()
    results = [agent.run_sync(DEMO_PROMPT)]
    while results[-1].status is wb.ExecutionStatus.PAUSED:
        approvals: dict[str, bool | str] = {p.call_id: True for p in results[-1].pending}
        results.append(agent.resume_sync(results[-1].state, approvals=approvals))
    return results
