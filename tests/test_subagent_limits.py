"""Sub-agent limits hold for a whole tree: across steps, across a pause and a resume elsewhere.

A tool a limit would refuse is hidden from the step (recorded with the reason, and a sub-agent is
told); a model that calls it anyway is told why it is not available.
"""

from __future__ import annotations

import workbench as wb

R = wb.ModelResponse


def _helper() -> wb.Agent:
    return wb.Agent(model=wb.FunctionModel(lambda m, i: "ok"), name="helper", store=False)


def _lead(script: list[R | str], limits: wb.SubagentLimits, **options: object) -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(script, name="lead-model"),
        name="lead",
        tools=[_helper().as_tool("help")],
        store=False,
        subagents=limits,
        **options,  # type: ignore[arg-type]
    )


def test_breadth_counts_every_step_of_the_run_not_one_at_a_time() -> None:
    script: list[R | str] = [R.tool_call("help", {"task": str(n)}) for n in range(4)]
    lead = _lead([*script, "done"], wb.SubagentLimits(max_breadth=2, max_total=10))
    result = lead.run_sync("go")
    assert len(result.children) == 2
    statuses = [o.status for s in result.steps for o in s.tool_outcomes]
    assert statuses == ["ok", "ok", "denied", "denied"]
    # from step 3 on the tool is hidden, with the limit as the reason, and a call says so
    assert result.steps[2].tools_offered == ()
    assert result.steps[2].tools_hidden == (
        ("help", "this run already started 2 sub-agents (max_breadth)"),
    )
    refused = result.steps[2].tool_outcomes[0]
    assert "not available now" in refused.content and "max_breadth" in refused.content
    assert result.state.subruns == {result.run_id: 2}


def test_the_total_counts_the_whole_tree_across_steps() -> None:
    middle = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("help", {"task": "x"}), "m1", "m2"]),
        name="middle",
        tools=[_helper().as_tool("help")],
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel(
            [R.tool_call("mid", {"task": "a"}), R.tool_call("mid", {"task": "b"}), "done"]
        ),
        name="lead",
        tools=[middle.as_tool("mid")],
        store=False,
        subagents=wb.SubagentLimits(max_total=2, max_breadth=5),
    )
    result = lead.run_sync("go")
    # the lead's first call and its sub-run's call fill the tree; the second call is refused
    assert [len(c.children) for c in result.children] == [1]
    second = result.steps[1].tool_outcomes[0]
    assert second.status == "denied" and "max_total" in second.content
    assert sum(result.state.subruns.values()) == 2


def test_limits_hold_after_a_pause_and_a_resume_from_json() -> None:
    @wb.tool(requires_approval=True)
    def publish(text: str) -> str:
        """Publish the text."""
        return "published"

    limits = wb.SubagentLimits(max_breadth=2)

    def lead_agent() -> wb.Agent:
        script: list[R | str] = [
            R.tool_call("help", {"task": "a"}),
            R.tool_call("publish", {"text": "a"}),
            R.tool_call("help", {"task": "b"}),
            R.tool_call("help", {"task": "c"}),
            "done",
        ]
        lead = _lead(script, limits)
        lead.tools["publish"] = publish
        return lead

    paused = lead_agent().run_sync("go")
    assert paused.status is wb.ExecutionStatus.PAUSED
    state = wb.AgentState.from_json(paused.state.to_json())  # as another process would
    assert state.subruns == {paused.run_id: 1}
    resumed = lead_agent()
    resumed.model = wb.ScriptedModel(
        [R.tool_call("help", {"task": "b"}), R.tool_call("help", {"task": "c"}), "done"]
    )
    done = resumed.resume_sync(state, approvals={state.pending[0].call_id: True})
    statuses = [o.status for s in done.steps for o in s.tool_outcomes if o.name == "help"]
    assert statuses == ["ok", "denied"]  # one more before the limit of two, not two more


def test_a_sub_agent_at_the_depth_limit_is_not_offered_its_sub_agents_and_is_told() -> None:
    leaf = wb.Agent(model=wb.FunctionModel(lambda m, i: "leaf"), name="leaf", store=False)
    middle = wb.Agent(
        model=wb.FunctionModel(lambda m, i: "middle"),
        name="middle",
        tools=[leaf.as_tool("deeper")],
        store=False,
    )
    lead = wb.Agent(
        model=wb.ScriptedModel([R.tool_call("mid", {"task": "x"}), "done"]),
        name="lead",
        tools=[middle.as_tool("mid")],
        store=False,
        subagents=wb.SubagentLimits(max_depth=1),
        telemetry=wb.Telemetry(),
    )
    result = lead.run_sync("go")
    step = result.children[0].steps[0]
    assert step.tools_offered == ()
    assert step.tools_hidden == (("deeper", "the sub-agent depth limit (1) is reached"),)
    told = [m.text for m in step.messages_in if m.role == "user"]
    assert any("Tools you do not have in this task: deeper" in t for t in told)
    spans = lead.telemetry.spans_df() if lead.telemetry else None
    assert spans is not None
    filtered = spans["attributes"].map(lambda a: a.get("workbench.tools.filtered"))
    assert any(value and "deeper" in str(value) for value in filtered)
