"""A three-level team whose deepest agent's tool crashes: the run a person debugs first.

``lead`` asks ``researcher`` (a sub-agent), which asks ``digger`` (a sub-agent of it), whose
``apply_discount`` raises ``TypeError: unsupported operand ...`` at the digger's step 3. The model
reads the error and answers anyway, so every run of the tree completes: the error is only in
the records, which is why it has to reach the top of every view. Offline (scripted models).
"""

from __future__ import annotations

import workbench as wb

R = wb.ModelResponse

BROKEN_LINE = "return price - float(price) * rate"
"""The line of `apply_discount` that raises: a traceback must show it."""


@wb.tool
def lookup_price(item: str) -> str:
    """The price of an item, as text."""
    return "9.99"


@wb.tool
def apply_discount(price: str, rate: float) -> float:
    """The price after a discount."""
    return price - float(price) * rate  # type: ignore[operator]  # the bug: price is text


def team(*, store: wb.RunStore | None = None, telemetry: wb.Telemetry | None = None) -> wb.Agent:
    """The lead of the three-level team (a fresh one: scripted models are used up by a run).

    Every agent of it writes to ``store`` (none: no store), so a stored lead loads whole.
    """
    kept: wb.RunStore | bool = store if store is not None else False
    digger = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_call("lookup_price", {"item": "hat"}, call_id="d1"),
                R.tool_call("lookup_price", {"item": "scarf"}, call_id="d2"),
                R.tool_call("apply_discount", {"price": "9.99", "rate": 0.1}, call_id="d3"),
                R.text("the discount could not be applied"),
            ],
            name="digger-model",
        ),
        name="digger",
        tools=[lookup_price, apply_discount],
        store=kept,
    )
    researcher = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("dig", {"task": "price the hat"}, call_id="r1"), R.text("about 9.99")],
            name="researcher-model",
        ),
        name="researcher",
        tools=[digger.as_tool("dig", "Find prices.")],
        store=kept,
    )
    return wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("research", {"task": "hat prices"}, call_id="l1"), R.text("9.99")],
            name="lead-model",
        ),
        name="lead",
        tools=[researcher.as_tool("research", "Research a question.")],
        telemetry=telemetry,
        store=kept,
    )
