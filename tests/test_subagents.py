"""Sub-agents: one run tree, one budget, a structured result, limits, and what a sub-agent sees."""

from __future__ import annotations

import asyncio

import workbench as wb

R = wb.ModelResponse
USAGE = wb.Usage(input_tokens=100, output_tokens=20, requests=1)


@wb.tool
def search(query: str) -> str:
    """Look something up."""
    return f"found {query}"


def _researcher(script: list[R | str], **options: object) -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(script, name="researcher-model"),
        name="researcher",
        tools=[search],
        store=False,
        **options,  # type: ignore[arg-type]
    )


def _lead(tool: wb.Tool, script: list[R | str], **options: object) -> wb.Agent:
    return wb.Agent(
        model=wb.ScriptedModel(script, name="lead-model"),
        name="lead",
        tools=[search, tool],
        **options,  # type: ignore[arg-type]
    )


def test_a_sub_run_is_a_child_with_a_structured_result_and_its_usage_charged() -> None:
    researcher = _researcher(
        [
            R.tool_call("search", {"query": "tides"}, usage=USAGE),
            R.text("high at noon", usage=USAGE),
        ]
    )
    lead = _lead(
        researcher.as_tool("research", "Look things up."),
        [
            R.tool_call("research", {"task": "when is high tide?"}, call_id="r1", usage=USAGE),
            R.text("noon", usage=USAGE),
        ],
        store=False,
    )
    result = lead.run_sync("plan a swim", metadata={"user": "ada"})
    assert result.output == "noon"
    (child,) = result.children
    assert child.parent_run_id == result.run_id and child.parent_call_id == "r1"
    assert child.state.depth == 1 and child.output == "high at noon"
    outcome = result.steps[0].tool_outcomes[0]
    assert outcome.status == "ok" and outcome.content == "high at noon"
    sub = outcome.subagent
    assert sub is not None and sub.run_id == child.run_id and sub.agent == "researcher"
    assert (sub.status, sub.stop_reason, sub.steps) == (
        wb.ExecutionStatus.COMPLETED,
        wb.StopReason.COMPLETED,
        2,
    )
    assert sub.tools_used == ("search",) and sub.usage.total_tokens == 240
    # the parent's usage counts its own two model calls and the sub-run's two
    assert result.usage.total_tokens == 2 * 120 + 240
    assert result.usage.requests == 4


def test_the_context_policy_decides_what_the_sub_agent_sees_on_its_first_step() -> None:
    researcher = _researcher(["ok"])
    tool = researcher.as_tool(
        "research",
        context=wb.SubagentContext(messages=2, metadata_keys=("user",), inject=("Be brief.",)),
    )
    lead = _lead(
        tool,
        [
            R.tool_call("search", {"query": "a"}, call_id="s1"),
            R.tool_call("research", {"task": "dig"}, call_id="r1"),
            "done",
        ],
        store=False,
    )
    result = lead.run_sync("go", metadata={"user": "ada", "secret": "x"})
    child = result.children[0]
    assert child.state.metadata == {"user": "ada"}
    seen = child.steps[0].messages_in
    # the last two parent messages would cut a call from its result: the call comes along;
    # the parent's call under way (r1) is left out
    assert [m.role for m in seen] == ["assistant", "tool", "user", "user"]
    assert seen[0].tool_calls[0].call_id == "s1"
    assert [m.text for m in seen[2:]] == ["Be brief.", "dig"]


def test_a_failed_sub_run_is_a_tool_error_the_parent_reads_and_is_still_a_child() -> None:
    broken = wb.Agent(model=wb.ScriptedModel([]), name="broken", store=False)
    lead = _lead(
        broken.as_tool("delegate"),
        [R.tool_call("delegate", {"task": "x"}), "recovered"],
        store=False,
    )
    result = lead.run_sync("go")
    assert result.output == "recovered"
    outcome = result.steps[0].tool_outcomes[0]
    assert outcome.status == "error" and "did not finish" in outcome.content
    assert "'broken'" in outcome.content and "ScriptedModel" in outcome.content
    assert outcome.subagent is not None and outcome.subagent.status is wb.ExecutionStatus.FAILED
    assert result.children[0].status is wb.ExecutionStatus.FAILED
    answer = result.messages[2].parts[0]
    assert isinstance(answer, wb.ToolResult) and answer.is_error


def test_an_approval_inside_a_sub_run_pauses_the_parent_and_resumes_as_one() -> None:
    @wb.tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Wipe."""
        return f"wiped {path}"

    store = wb.RunStore(":memory:")
    cleaner = wb.Agent(
        model=wb.ScriptedModel(
            [
                R.tool_call("wipe", {"path": "/tmp"}, call_id="w1", usage=USAGE),
                R.text("clean", usage=USAGE),
            ]
        ),
        name="cleaner",
        tools=[wipe],
        store=store,
    )
    lead = _lead(
        cleaner.as_tool("clean"),
        [
            R.tool_call("clean", {"task": "x"}, call_id="c1", usage=USAGE),
            R.text("all done", usage=USAGE),
        ],
        store=store,
    )
    paused = lead.run_sync("go")
    assert paused.status is wb.ExecutionStatus.PAUSED
    (waiting,) = paused.pending
    assert (waiting.call_id, waiting.tool, waiting.via) == ("w1", "wipe", "c1")
    assert paused.steps[0].tool_outcomes[0].status == "pending"
    state = wb.AgentState.from_json(paused.state.to_json())  # e.g. in another process
    done = lead.resume_sync(state, approvals={"w1": True})
    assert done.status is wb.ExecutionStatus.COMPLETED and done.output == "all done"
    (child,) = done.children
    assert child.status is wb.ExecutionStatus.COMPLETED and child.output == "clean"
    assert any(o.content == "wiped /tmp" for s in child.steps for o in s.tool_outcomes)
    assert done.usage.total_tokens == 4 * 120  # two calls each, the sub-run's charged once
    assert done.state.waiting_subruns == {} and done.state.subrun_answers == {}


def test_a_denial_inside_a_sub_run_reaches_the_sub_agent() -> None:
    @wb.tool(requires_approval=True)
    def wipe(path: str) -> str:
        """Wipe."""
        return "wiped"

    cleaner = wb.Agent(
        model=wb.FunctionModel(
            lambda m, i: (
                R.tool_call("wipe", {"path": "/"}, call_id="w1")
                if len(m) == 1
                else m[-1].parts[0].content
            )  # type: ignore[union-attr]
        ),
        name="cleaner",
        tools=[wipe],
        store=False,
    )
    lead = _lead(cleaner.as_tool("clean"), [R.tool_call("clean", {"task": "x"}), "ok"], store=False)
    paused = lead.run_sync("go")
    done = lead.resume_sync(paused.state, approvals={"w1": "not the root"})
    assert done.output == "ok"
    assert done.steps[-2].tool_outcomes[0].content == "The user denied this call: not the root."


def test_limits_refuse_a_call_naming_the_limit() -> None:
    recursive = wb.Agent(
        model=wb.FunctionModel(lambda messages, info: R.tool_call("self", {"task": "again"})),
        name="recursive",
        stop=wb.MaxSteps(2),
        store=False,
        subagents=wb.SubagentLimits(max_depth=2),
    )
    recursive.tools["self"] = recursive.as_tool("self")
    result = recursive.run_sync("go")
    depth_two = result.children[0].children[0]
    # at the limit the tool is not offered; a model that calls it anyway is told why
    hidden = depth_two.steps[0].tools_hidden
    assert hidden == (("self", "the sub-agent depth limit (2) is reached"),)
    refusal = depth_two.steps[0].tool_outcomes[0]
    assert refusal.status == "denied" and "depth limit (2)" in refusal.content
    assert depth_two.children == ()


def test_breadth_and_total_limits() -> None:
    helper = wb.Agent(model=wb.FunctionModel(lambda m, i: "ok"), name="helper", store=False)
    calls = [("help", {"task": str(n)}) for n in range(3)]
    lead = _lead(
        helper.as_tool("help"),
        [R.tool_calls(calls), "done"],
        store=False,
        subagents=wb.SubagentLimits(max_breadth=2),
    )
    result = lead.run_sync("go")
    statuses = [o.status for o in result.steps[0].tool_outcomes]
    assert statuses.count("ok") == 2 and statuses.count("error") == 1
    assert len(result.children) == 2
    refused = next(o for o in result.steps[0].tool_outcomes if o.status == "error")
    assert "max_breadth" in refused.content


def test_parallel_sub_agent_calls_are_children_in_call_order() -> None:
    async def slow_then_fast(messages: list[wb.Message], info: object) -> str:
        task = messages[-1].text
        await asyncio.sleep(0.05 if task == "first" else 0)
        return f"did {task}"

    helper = wb.Agent(model=wb.FunctionModel(slow_then_fast), name="helper", store=False)
    lead = _lead(
        helper.as_tool("help"),
        [R.tool_calls([("help", {"task": "first"}), ("help", {"task": "second"})]), "done"],
        store=False,
    )
    result = lead.run_sync("go")
    assert [c.output for c in result.children] == ["did first", "did second"]


def test_the_parents_budget_caps_the_sub_run_and_counts_what_it_spent() -> None:
    spender = wb.Agent(
        model=wb.FunctionModel(lambda m, i: R.tool_call("search", {"query": "q"}, usage=USAGE)),
        name="spender",
        tools=[search],
        store=False,
    )
    lead = _lead(
        spender.as_tool("spend"),
        [R.tool_call("spend", {"task": "x"}, usage=USAGE), "never"],
        store=False,
        stop=wb.MaxTokens(500),
    )
    result = lead.run_sync("go")
    child = result.children[0]
    assert child.stop_reason is wb.StopReason.TOKEN_LIMIT  # capped at the 380 tokens left
    assert child.usage.total_tokens <= 380 + 120
    assert result.stop_reason is wb.StopReason.TOKEN_LIMIT  # the parent counts them
    assert result.usage.total_tokens == 120 + child.usage.total_tokens


def test_a_sub_agent_that_hangs_hits_its_own_time_limit_and_the_parent_reads_it() -> None:
    async def hang(messages: list[wb.Message], info: object) -> str:
        await asyncio.sleep(30)
        return "late"

    sleeper = wb.Agent(
        model=wb.FunctionModel(hang), name="sleeper", stop=wb.Timeout(0.2), store=False
    )
    lead = _lead(sleeper.as_tool("sleep"), [R.tool_call("sleep", {"task": "x"}), "ok"], store=False)
    result = lead.run_sync("go")
    outcome = result.steps[0].tool_outcomes[0]
    assert outcome.status == "error" and "time_limit" in outcome.content
    assert result.output == "ok"


def test_the_store_keeps_the_tree() -> None:
    store = wb.RunStore(":memory:")
    researcher = wb.Agent(model=wb.ScriptedModel(["fact"]), name="researcher", store=store)
    lead = _lead(
        researcher.as_tool("research"),
        [R.tool_call("research", {"task": "x"}, call_id="r1"), "done"],
        store=store,
    )
    result = lead.run_sync("go")
    loaded = store.load(result.run_id)
    assert [c.run_id for c in loaded.children] == [result.children[0].run_id]
    assert loaded.children[0].parent_call_id == "r1"
    summaries = {s.run_id: s for s in store.runs()}
    assert summaries[result.children[0].run_id].parent_run_id == result.run_id
    assert [(s.agent_name, s.depth) for s in store.runs()] == [("lead", 0), ("researcher", 1)]
    assert [s.run_id for s in store.runs(roots_only=True)] == [result.run_id]
    frame = store.list_runs()
    assert list(frame["depth"]) == [0, 1] and list(frame["parent_run_id"])[1] == result.run_id
    assert list(store.list_runs(roots_only=True)["run_id"]) == [result.run_id]
    store.delete(result.run_id)
    assert store.runs() == []


def test_the_tree_rolls_up_per_agent_and_diff_says_which_sub_run_diverged() -> None:
    from workbench.notebook import agents_table

    def lead_with(answer: str) -> wb.Agent:
        researcher = _researcher([R.text(answer, usage=USAGE), R.text(answer, usage=USAGE)])
        return _lead(
            researcher.as_tool("research"),
            [
                R.tool_call("research", {"task": "a"}, usage=USAGE),
                R.tool_call("research", {"task": "b"}, usage=USAGE),
                R.text("done", usage=USAGE),
            ],
            store=False,
        )

    a = lead_with("same")
    b = lead_with("same")
    first, second = a.run_sync("go"), b.run_sync("go")
    table = agents_table(first).set_index("agent")
    assert table.loc["lead", "runs"] == 1 and table.loc["researcher", "runs"] == 2
    assert table.loc["lead", "steps"] == 3 and table.loc["researcher", "steps"] == 2
    assert table.loc["researcher", "input_tokens"] == 200
    assert table["input_tokens"].sum() == first.usage.input_tokens
    assert wb.diff(first, second).diverged_subruns == ()
    changed = lead_with("different").run_sync("go")
    report = wb.diff(first, changed)
    assert len(report.subruns) == 2 and len(report.diverged_subruns) == 2
    assert "sub-run 1:" in report.to_text()


def test_as_tool_takes_one_toolset_as_the_design_shows() -> None:
    @wb.tool
    def delete(path: str) -> str:
        """Delete a file."""
        return "deleted"

    researcher = _researcher(["ok"])
    tools = wb.Toolset([search, delete]).filtered(lambda t, view: t.name != "delete")
    lead = _lead(
        researcher.as_tool("research", "Look things up.", tools=tools),
        [R.tool_call("research", {"task": "x"}), "done"],
        store=False,
    )
    step = lead.run_sync("go").children[0].steps[0]
    assert step.tools_offered == ("search",)
    assert [name for name, _ in step.tools_hidden] == ["delete"]


def test_the_context_counts_only_messages_the_sub_agent_can_see() -> None:
    researcher = _researcher(["ok"])
    lead = _lead(
        researcher.as_tool("research", context=wb.SubagentContext(messages=1)),
        [R.tool_call("research", {"task": "dig"}, call_id="r1"), "done"],
        store=False,
    )
    child = lead.run_sync("what is up?").children[0]
    # the parent's call under way is not one of the one message shared: its prompt is
    assert [m.text for m in child.steps[0].messages_in] == ["what is up?", "dig"]


def test_a_cost_cap_from_the_parent_stops_the_sub_run_where_the_parent_would() -> None:
    cent = wb.Usage(input_tokens=1, output_tokens=1, requests=1, cost=0.01)
    spender = wb.Agent(
        model=wb.FunctionModel(lambda m, i: R.tool_call("search", {"query": "q"}, usage=cent)),
        name="spender",
        tools=[search],
        store=False,
    )
    half = wb.Usage(input_tokens=1, output_tokens=1, requests=1, cost=0.005)
    lead = _lead(
        spender.as_tool("spend"),
        [R.tool_call("spend", {"task": "x"}, usage=half), "never"],
        store=False,
        stop=wb.MaxCost(0.035),
    )
    result = lead.run_sync("go")
    # 0.035 - 0.005 is 0.030000000000000002 in floats: three steps of a cent reach it
    assert len(result.children[0].steps) == 3
    assert result.usage.cost is not None and abs(result.usage.cost - 0.035) < 1e-9


def test_the_structured_result_counts_the_turns_a_subagent_stop_hook_added() -> None:
    def check_once(data: wb.SubagentStopInput) -> wb.HookResult | None:
        return None if data.stop_hook_active else wb.HookResult(decision="block", reason="again")

    researcher = _researcher([R.text("draft", usage=USAGE), R.text("final", usage=USAGE)])
    lead = _lead(
        researcher.as_tool("research"),
        [R.tool_call("research", {"task": "x"}), "done"],
        store=False,
        hooks=[wb.Hook(wb.HookEvent.SUBAGENT_STOP, check_once)],
    )
    result = lead.run_sync("go")
    summary = result.steps[0].tool_outcomes[0].subagent
    assert summary is not None and summary.output == "final"
    assert summary.steps == 2 and summary.usage.total_tokens == 240
    assert [c.output for c in result.children] == ["draft", "final"]


def test_a_failed_sub_runs_error_reaches_the_parents_model_without_secrets() -> None:
    def leak(messages: list[wb.Message], info: object) -> str:
        raise RuntimeError("upstream said: api_key=sk-abcdef1234567890abcdef")

    broken = wb.Agent(model=wb.FunctionModel(leak), name="broken", store=False)
    lead = _lead(broken.as_tool("delegate"), [R.tool_call("delegate", {"task": "x"}), "ok"])
    result = lead.run_sync("go")
    outcome = result.steps[0].tool_outcomes[0]
    assert "did not finish" in outcome.content and "upstream said" in outcome.content
    assert "sk-abcdef" not in outcome.content
    assert outcome.subagent is not None and "sk-abcdef" not in (outcome.subagent.error or "")
    assert "sk-abcdef" not in result.messages[-2].parts[0].content  # what the model read
