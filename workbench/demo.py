"""The built-in demo agent: offline, scripted, and showing a retry and an approval."""

from __future__ import annotations

from collections.abc import Sequence

import workbench as wb

__all__ = [
    "DEMO_PROMPT",
    "apply_discount",
    "demo_agent",
    "eval_agent",
    "eval_task",
    "price",
    "run_demo",
    "run_eval",
    "shopper_model",
]


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


# -- an eval: many runs of one agent over a small task set (the run list's demo) ----------------

PRICES = {"apple": 1.25, "bread": 3.5, "cheese": 7.0, "dates": 4.75, "eggs": 2.9}
CODES = ("SAVE10", "SAVE20", "HALF", "EXPIRED", "NONE")
_DISCOUNTS = {"SAVE10": 0.10, "SAVE20": 0.20, "HALF": 0.50, "NONE": 0.0}


@wb.tool
def price(item: str) -> float:
    """The shelf price of an item, in dollars."""
    if item not in PRICES:
        raise KeyError(f"no item {item!r} in the catalog")
    return PRICES[item]


@wb.tool
def apply_discount(amount: float, code: str) -> float:
    """The amount after a discount code."""
    if code not in _DISCOUNTS:
        raise ValueError(f"discount code {code!r} has expired")
    return round(amount * (1 - _DISCOUNTS[code]), 2)


def eval_task(i: int) -> tuple[str, dict[str, wb.messages.JsonValue]]:
    """The prompt and metadata of task ``i`` of the eval (a few items, codes and misspellings)."""
    item = "unicorn" if i % 17 == 5 else list(PRICES)[i % len(PRICES)]
    code = CODES[i % len(CODES)]
    prompt = f"Task {i}: what does one {item} cost with code {code}?"
    return prompt, {"task": i, "item": item, "code": code, "split": "test" if i % 4 else "dev"}


def _usage(messages: Sequence[wb.Message]) -> wb.Usage:
    tokens = sum(len(p.model_dump_json()) // 4 for m in messages for p in m.parts)
    return wb.Usage(input_tokens=tokens, output_tokens=24, requests=1, cost=tokens * 2e-7)


def _shopper(
    messages: Sequence[wb.Message], request: wb.ModelRequest, *, drops: bool = True
) -> wb.ModelResponse:
    """The eval's model: look up the price, apply the code, answer; it stumbles now and then."""
    prompt = messages[1].text if len(messages) > 1 else ""
    task = int(prompt.split()[1].rstrip(":"))
    item, code = prompt.split("one ")[1].split(" cost")[0], prompt.rsplit(" ", 1)[1].rstrip("?")
    results = [p for m in messages for p in m.parts if isinstance(p, wb.ToolResult)]
    usage = _usage(messages)
    if drops and task % 29 == 13 and len(results) == 1:
        raise ConnectionError("the model server closed the connection (502 Bad Gateway)")
    if not results:
        return wb.ModelResponse.tool_call("price", {"item": item}, usage=usage)
    last = results[-1]
    if last.is_error:
        return wb.ModelResponse.text(
            f"Sorry, I could not work that out: {last.content}", usage=usage
        )
    if len(results) == 1:
        return wb.ModelResponse.tool_call(
            "apply_discount", {"amount": float(last.content), "code": code}, usage=usage
        )
    return wb.ModelResponse.text(f"One {item} costs ${last.content} with {code}.", usage=usage)


def shopper_model(*, drops: bool = True) -> wb.FunctionModel:
    """The eval's model (offline): with ``drops``, its server drops one task in 29 at step 2."""

    def answer(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        return _shopper(messages, request, drops=drops)

    return wb.FunctionModel(answer, name="shopper-v1")


def eval_agent(**options: object) -> wb.Agent:
    """The eval's agent: a shop assistant with two tools, on an offline function model."""
    return wb.Agent(
        model=shopper_model(),
        name="shopper",
        system_prompt="You answer price questions with the tools.",
        tools=[price, apply_discount],
        stop=wb.MaxSteps(6),
        **options,  # type: ignore[arg-type]
    )


def run_eval(n: int, store: wb.RunStore) -> list[wb.RunResult]:
    """``n`` runs of the eval's agent into ``store``, as an eval of a real agent goes.

    Most complete; some meet a tool error (an item not in the catalog, an expired code) and
    answer anyway; a few fail (the model server drops the connection).
    """
    agent = eval_agent(store=store)
    return [agent.run_sync(prompt, metadata=meta) for prompt, meta in map(eval_task, range(n))]
