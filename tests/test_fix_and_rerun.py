"""A tool was wrong: fix it, re-run from its step in one call, and see in the diff that it works.

`Agent.rerun` replaces tools by name (in the whole tree) and keeps the others, and replays what
the model answered at the step (and the sub-runs that step's calls made) when the agent's model
recorded it, so the fixed tool runs on the very call that failed; from the next step, or where a
sub-run departs from its recording, each agent's model answers live.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path

import pytest

import workbench as wb
from tests._report_page import page_table
from workbench.notebook import RerunPanel

R = wb.ModelResponse


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return "the price is 100"


@wb.tool
def apply_discount(price: int, percent: str) -> float:
    """Apply a discount of ``percent`` percent."""
    return price - price * percent / 100  # type: ignore[operator]  # the bug: percent is text


@wb.tool(name="apply_discount")
def apply_discount_fixed(price: int, percent: str) -> float:
    """Apply a discount of ``percent`` percent."""
    return price - price * float(percent) / 100


def _last_result(messages: Sequence[wb.Message]) -> wb.ToolResult | None:
    part = messages[-1].parts[0] if messages[-1].role == "tool" else None
    return part if isinstance(part, wb.ToolResult) else None


def digger_answers(messages: Sequence[wb.Message], request: object) -> R | str:
    """A stand-in for a model: search, then apply the discount, then say what came of it."""
    result = _last_result(messages)
    if result is None:
        return R.tool_call("search", {"query": "price"})
    if result.name == "search":
        return R.tool_call("apply_discount", {"price": 100, "percent": "10"})
    return "I could not apply the discount." if result.is_error else f"It costs {result.content}."


def passes_on(tool: str, task: str) -> wb.FunctionModel:
    """A model that hands the task to ``tool`` (a sub-agent), then repeats what it said."""

    def answer(messages: Sequence[wb.Message], request: object) -> R | str:
        result = _last_result(messages)
        if result is None:
            return R.tool_call(tool, {"task": task})
        return f"{tool} says: {result.content}"

    return wb.FunctionModel(answer, name=f"{tool}-model")


def _digger(store: wb.RunStore | None = None) -> wb.Agent:
    return wb.Agent(
        model=wb.FunctionModel(digger_answers, name="digger-model"),
        name="digger",
        tools=[search, apply_discount],
        store=store or False,
    )


def _team() -> tuple[wb.Agent, wb.Agent]:
    digger = _digger()
    researcher = wb.Agent(
        model=passes_on("dig", "find the discounted price"),
        name="researcher",
        tools=[digger.as_tool("dig")],
        store=False,
    )
    lead = wb.Agent(
        model=passes_on("research", "what does it cost?"),
        name="lead",
        tools=[researcher.as_tool("research")],
        store=False,
    )
    return lead, digger


def test_fix_the_tool_and_rerun_from_its_step_in_one_call() -> None:
    digger = _digger()
    failing = digger.run_sync("What is the discounted price?")
    assert failing.summary == "completed, 1 tool error: step 2, apply_discount in digger"
    calls_before = len(digger.model.calls)  # type: ignore[attr-defined]

    fixed = digger.rerun_sync(failing.snapshot(step=2), tools=[apply_discount_fixed])

    assert fixed.output == "It costs 90.0." and fixed.errors == ()
    # step 2 was the recorded answer (the same call, by its id), only step 3 asked the model
    assert len(digger.model.calls) - calls_before == 1  # type: ignore[attr-defined]
    step_2 = fixed.steps[0]
    assert step_2.tool_calls == failing.steps[1].tool_calls
    assert [(o.name, o.status, o.content) for o in step_2.tool_outcomes] == [
        ("apply_discount", "ok", "90.0")
    ]
    # replaced by name: the same tools offered (search kept), no divergence from the recording
    assert step_2.tools_offered == failing.steps[1].tools_offered == ("search", "apply_discount")

    report = wb.diff(failing, fixed)
    step = report.steps[1]
    assert [(o.tool, o.before, o.after) for o in step.outcomes] == [
        ("apply_discount", "error", "ok")
    ]
    text = report.to_text()
    assert "tool apply_discount failed in a (Tool 'apply_discount' failed: TypeError" in text
    assert "succeeds in b: '90.0'" in text
    assert (
        "first divergence: step 2 (apply_discount failed in a and succeeds in b at step 2)" in text
    )


def test_the_fixed_tool_reaches_a_sub_agent_two_levels_down_from_the_leads_rerun() -> None:
    lead, _ = _team()
    failing = lead.run_sync("What does it cost?")
    assert failing.summary == "completed, 1 tool error: step 2, apply_discount in digger"
    assert failing.output == "research says: dig says: I could not apply the discount."

    fixed = lead.rerun_sync(failing.snapshot(step=1), tools=[apply_discount_fixed])

    assert fixed.output == "research says: dig says: It costs 90.0."
    assert fixed.errors == ()
    (researcher,) = fixed.children
    (dug,) = researcher.children
    assert [o.status for step in dug.steps for o in step.tool_outcomes] == ["ok", "ok"]
    # the digger's steps 1 and 2 replayed (same calls), it departed at step 3 and went live
    assert [s.tool_calls for s in dug.steps[:2]] == [
        s.tool_calls for s in failing.children[0].children[0].steps[:2]
    ]
    text = wb.diff(failing, fixed).to_text()
    assert "failed in a (Tool 'apply_discount' failed: TypeError" in text
    assert "succeeds in b: '90.0'" in text


def test_the_sub_runs_own_failing_run_reruns_the_same_way() -> None:
    lead, digger = _team()
    failing = lead.run_sync("What does it cost?").children[0].children[0]
    fixed = digger.rerun_sync(failing.snapshot(step=2), tools=[apply_discount_fixed])
    assert fixed.output == "It costs 90.0." and fixed.parent_run_id is None  # a root of its own


def test_giving_the_model_goes_live_at_the_step_itself() -> None:
    digger = _digger()
    failing = digger.run_sync("go")
    before = len(digger.model.calls)  # type: ignore[attr-defined]
    live = digger.rerun_sync(
        failing.snapshot(step=2), model=digger.model, tools=[apply_discount_fixed]
    )
    assert live.output == "It costs 90.0."
    assert len(digger.model.calls) - before == 2  # type: ignore[attr-defined]  # steps 2 and 3
    assert live.steps[0].tool_calls[0].call_id != failing.steps[1].tool_calls[0].call_id


def test_without_the_recording_or_with_another_model_the_rerun_is_live(tmp_path: Path) -> None:
    digger = _digger()
    failing = digger.run_sync("go")
    other = wb.Agent(
        model=wb.FunctionModel(digger_answers, name="another-model"),
        tools=[search, apply_discount],
        store=False,
    )
    other.rerun_sync(failing.snapshot(step=2), tools=[apply_discount_fixed])
    assert len(other.model.calls) == 2  # type: ignore[attr-defined]  # its model: not the recorder

    with wb.RunStore(tmp_path / "runs.sqlite") as store:  # the store is a recording too
        stored = _digger(store)
        first = stored.run_sync("go")
        before = len(stored.model.calls)  # type: ignore[attr-defined]
        again = stored.rerun_sync(store.snapshot(first.run_id, 2), tools=[apply_discount_fixed])
        assert again.output == "It costs 90.0."
        assert len(stored.model.calls) - before == 1  # type: ignore[attr-defined]


def test_tools_must_name_tools_the_tree_has() -> None:
    digger = _digger()
    failing = digger.run_sync("go")
    with pytest.raises(wb.UsageError, match="no agent of this tree has a tool named 'discount'"):
        digger.rerun_sync(
            failing.snapshot(step=2), tools=[apply_discount.with_options(name="discount")]
        )
    with pytest.raises(wb.UsageError, match="not toolsets"):
        digger.rerun_sync(failing.snapshot(step=2), tools=[wb.Toolset([apply_discount_fixed])])


def test_the_rerun_panel_with_the_agents_scripted_model_replays_the_step() -> None:
    script = [
        R.tool_call("search", {"query": "price"}, call_id="s1"),
        R.tool_call("apply_discount", {"price": 100, "percent": "10"}, call_id="a1"),
        "I could not apply the discount.",
        "It costs 90.",
    ]
    agent = wb.Agent(model=wb.ScriptedModel(script), tools=[search, apply_discount], store=False)
    original = agent.run_sync("go")
    panel = RerunPanel(original, agent)
    panel.step_picker.value = 1  # step 2, whose call failed
    panel.rerun()
    assert panel.error.value == "" and panel.fork is not None
    # the recorded call, not the script's next (or first) response, answers step 2
    assert panel.fork.steps[0].tool_calls == original.steps[1].tool_calls
    assert panel.fork.output == "It costs 90."  # step 3: the script goes on live
    # its diff table is drawn by the page, fitted to the output as TraceView's (a pandas table
    # of its 14 columns was as wide as their texts): every step of the diff, as its JSON says
    (shown,) = panel.diff_table.outputs
    html = shown["data"]["text/html"]
    assert '<div class="wb-table" data-table="' in html
    element = html.split('data-table="')[1].split('-data"')[0]
    names, *rows = page_table(html, element)
    assert names[:4] == ["step", "status", "changes", "calls a"]
    assert [row[0] for row in rows] == [str(s.step) for s in panel.diff.steps]


def test_what_the_live_model_raises_where_the_rerun_departs_is_its_own_error() -> None:
    """Going live where a sub-run departs from its recording is no error, so it is not in one.

    The failing team's scripted models are used up by its first run: once the fixed tool's
    result departs from the recording, each agent's live model raises `ScriptExhausted`. That is
    the error its traceback shows, not "during handling of" the divergence the replay noticed.
    """
    from tests._failing_team import team

    @wb.tool(name="apply_discount")
    def fixed(price: str, rate: float) -> float:
        """The price after a discount."""
        return float(price) * (1 - rate)

    lead = team()
    failing = lead.run_sync("What does a hat cost?")
    rerun = lead.rerun_sync(failing.snapshot(step=1), tools=[fixed])
    assert [(e.agent, e.type) for e in rerun.errors] == [
        ("digger", "ScriptExhausted"),
        ("researcher", "ScriptExhausted"),
        ("lead", "ScriptExhausted"),
    ]
    for error in rerun.errors:
        assert error.traceback is not None
        assert "ReplayDivergence" not in error.traceback
        assert "During handling of the above exception" not in error.traceback


def test_what_is_no_step_number_or_no_tool_is_said_plainly() -> None:
    """A step as text read "has no step 3: it has steps 1-4"; a tool as its name or None raised
    AttributeError from deep inside (``'str' object has no attribute '__name__'``)."""
    import numpy as np

    digger = _digger()
    failing = digger.run_sync("What is the discounted price?")
    assert failing.snapshot(step=np.int64(2)) is failing.snapshot(step=2)  # a DataFrame's number
    for step in ("2", 2.0, None, True):
        with pytest.raises(wb.UsageError, match=r"step= takes a step's number .*, not "):
            failing.snapshot(step=step)  # type: ignore[arg-type]
    for item in ("apply_discount", None):
        with pytest.raises(wb.UsageError, match="tools are functions, tools and toolsets, not "):
            digger.rerun_sync(failing.snapshot(step=2), tools=[item])  # type: ignore[list-item]
        with pytest.raises(wb.UsageError, match="tools are functions, tools and toolsets, not "):
            wb.Agent(model=digger.model, tools=[item])  # type: ignore[list-item]
    with pytest.raises(wb.UsageError, match=r"a name goes as @tool\(name='apply_discount'\)"):
        wb.tool("apply_discount")  # type: ignore[call-overload]
