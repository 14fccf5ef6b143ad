"""The notebooks of the journeys, cell by cell, as a person types them.

A three-level team prices a coat: the lead asks a researcher, who asks a digger, whose tool
``apply_discount`` has a bug (it divides the discount text by 100: a ``TypeError`` on line 4 of
its cell). The digger's model is a small function that calls the tool, then says what the tool
answered, so a re-run after the fix goes on with the agent's own model.

`STEPPING` is another team of the same shape with nothing broken: the digger searches, then
saves a note that needs approval; the lead asks the researcher twice, so there is a sub-agent to
step into after stepping out of the first.
"""

from __future__ import annotations

IMPORT = "import workbench as wb"

BUGGY_TOOL = '''@wb.tool
def apply_discount(price: float, discount: str) -> float:
    """Take a discount such as '25%' off a price."""
    return price * (1 - discount / 100)'''
BUG_LINE = 4
"""The line of `BUGGY_TOOL` the traceback names."""

FIXED_TOOL = '''@wb.tool
def apply_discount(price: float, discount: str) -> float:
    """Take a discount such as '25%' off a price."""
    return price * (1 - float(discount.rstrip("%")) / 100)'''

DIGGER = '''def price_the_coat(messages, request):
    """The digger's model: call the tool, then say what it answered."""
    last = messages[-1]
    if last.role == "user":
        return wb.ModelResponse.tool_call("apply_discount", {"price": 120.0, "discount": "25%"})
    return f"apply_discount says: {last.parts[0].content}"


digger = wb.Agent(model=wb.FunctionModel(price_the_coat), name="digger", tools=[apply_discount])'''

RESEARCHER = """researcher = wb.Agent(
    model=wb.ScriptedModel([
        wb.ModelResponse.tool_call("dig", {"task": "Price the coat with the 25% discount."}),
        "The digger has the price.",
    ]),
    name="researcher",
    tools=[digger.as_tool("dig", "Dig out prices.")],
)"""

LEAD = """lead = wb.Agent(
    model=wb.ScriptedModel([
        wb.ModelResponse.tool_call("research", {"task": "What does the coat cost?"}),
        "Here is what the coat costs.",
    ]),
    name="lead",
    tools=[researcher.as_tool("research", "Find things out.")],
    telemetry=wb.Telemetry(capture_content=True),
)"""

PROMPT = "What does the coat cost after the discount?"

TEAM = [IMPORT, BUGGY_TOOL, DIGGER, RESEARCHER, LEAD]
"""The failing team, defined: one cell each for the import, the tool and each agent."""

RUN = f"""result = lead.run_sync({PROMPT!r})
result"""

STEPPING_TOOLS = '''@wb.tool
def search(query: str) -> str:
    """Search the shop's catalogue."""
    return f"found: {query} costs 120"


@wb.tool(requires_approval=True)
def save_note(text: str) -> str:
    """Keep a note for the team."""
    return "saved"'''

STEPPING_DIGGER = """digger = wb.Agent(
    model=wb.ScriptedModel([
        wb.ModelResponse.tool_call("search", {"query": "winter coat"}),
        wb.ModelResponse.tool_call("save_note", {"text": "winter coat: 120"}),
        "The coat costs 120.",
    ]),
    name="digger",
    tools=[search, save_note],
)"""

STEPPING_RESEARCHER = """researcher = wb.Agent(
    model=wb.ScriptedModel([
        wb.ModelResponse.tool_call("dig", {"task": "Find the coat's price."}),
        "The coat costs 120.",
        "The shoes cost 80.",
    ]),
    name="researcher",
    tools=[digger.as_tool("dig", "Dig through the catalogue.")],
)"""

STEPPING_LEAD = """lead = wb.Agent(
    model=wb.ScriptedModel([
        wb.ModelResponse.tool_call("research", {"task": "What does the coat cost?"}),
        wb.ModelResponse.tool_call("research", {"task": "And the shoes?"}),
        "The coat costs 120 and the shoes 80.",
    ]),
    name="lead",
    tools=[researcher.as_tool("research", "Find things out.")],
)"""

STEPPING = [IMPORT, STEPPING_TOOLS, STEPPING_DIGGER, STEPPING_RESEARCHER, STEPPING_LEAD]
"""The stepping team, defined."""
