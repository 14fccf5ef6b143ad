"""Replayed tool results (``tools="replay"``) and whole-tree replay, through the public API.

A replay of a run with ``tools="replay"`` executes no tool: every call of a replayed response is
answered with what the recording says it returned (results, tool errors and retries alike); guards
and PreToolUse hooks still decide. A call that departs from the recording is a
`ReplayDivergence`. Sub-runs replay from their own recordings, so a whole tree runs offline.
"""

from __future__ import annotations

import json
import socket
import sys
from collections import Counter
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Literal

import pytest

import workbench as wb
from tests._counting import PROMPT, content, counting_agent, counting_model
from tests.test_widgets_kernel import DELETE_FILE_PANEL, Kernel, kernel
from workbench.cli import main
from workbench.notebook.html import outcomes_html

__all__ = ["kernel"]  # the module-scoped fixture of tests/test_widgets_kernel.py, used by name

R = wb.ModelResponse


class Calls:
    """Tools that count how often they really ran."""

    def __init__(self) -> None:
        self.ran: Counter[str] = Counter()

    def tools(self) -> list[wb.Tool]:
        ran = self.ran

        @wb.tool
        def add(a: int, b: int) -> int:
            """Add two integers."""
            ran["add"] += 1
            return a + b

        @wb.tool
        def boom(why: str) -> str:
            """Always fails."""
            ran["boom"] += 1
            raise ValueError(f"cannot: {why}")

        @wb.tool(retries=2)
        def picky(n: int) -> str:
            """Wants an even number."""
            ran["picky"] += 1
            if n % 2:
                raise wb.ToolRetry("send an even number")
            return f"even {n}"

        @wb.tool(requires_approval=True)
        def delete(path: str) -> str:
            """Delete a file."""
            ran["delete"] += 1
            return f"deleted {path}"

        return [add, boom, picky, delete]


SCRIPT = [
    R.tool_call("add", {"a": 1, "b": 2}, call_id="c1"),
    R(
        parts=(
            wb.ToolCall(call_id="c2", name="boom", arguments={"why": "disk"}),
            wb.ToolCall(call_id="c3", name="picky", arguments={"n": 3}),
        )
    ),
    R.tool_call("picky", {"n": 4}, call_id="c4"),
    R.text("done: 3, even 4"),
]


def _agent(
    model: wb.Model, calls: Calls, store: wb.RunStore | Literal[False] = False, **options: object
) -> wb.Agent:
    return wb.Agent(model=model, name="worker", tools=calls.tools(), store=store, **options)  # type: ignore[arg-type]


def _outcomes(result: wb.RunResult) -> list[tuple[int, str, str, str]]:
    return [(s.index, o.name, o.status, o.content) for s in result.steps for o in s.tool_outcomes]


@pytest.fixture
def original() -> wb.RunResult:
    calls = Calls()
    result = _agent(wb.ScriptedModel(SCRIPT), calls).run_sync("work")
    assert calls.ran == Counter(add=1, boom=1, picky=2)
    assert [o[2] for o in _outcomes(result)] == ["ok", "error", "retry", "ok"]
    return result


def test_a_replay_with_tools_replay_executes_nothing_and_matches(original: wb.RunResult) -> None:
    calls = Calls()
    replay = wb.ReplayModel.from_run(original, tools="replay", strict=True)
    telemetry = wb.Telemetry()
    result = _agent(replay, calls, telemetry=telemetry).run_sync("work")
    assert calls.ran == Counter()  # no tool function ran
    assert result.status is wb.ExecutionStatus.COMPLETED and result.output == original.output
    assert _outcomes(result) == _outcomes(original)  # results, the tool error, the retry
    assert content(result.messages) == content(original.messages)
    assert result.state.retries == original.state.retries
    assert result.state.errors_total == original.state.errors_total == 2
    assert all(o.replayed for s in result.steps for o in s.tool_outcomes)
    assert "replayed" in outcomes_html(result.steps[0].tool_outcomes)
    assert "replayed" not in outcomes_html(original.steps[0].tool_outcomes)
    replay.assert_complete()
    spans = [s for s in telemetry.spans if s.name.startswith("execute_tool")]
    assert len(spans) == 4
    assert all(s.attributes["workbench.tool.replayed"] is True for s in spans)


def test_without_tools_replay_the_tools_run_live(original: wb.RunResult) -> None:
    calls = Calls()
    result = _agent(wb.ReplayModel.from_run(original), calls).run_sync("work")
    assert calls.ran == Counter(add=1, boom=1, picky=2)
    assert _outcomes(result) == _outcomes(original)
    assert not any(o.replayed for s in result.steps for o in s.tool_outcomes)


def test_guards_and_hooks_still_decide_in_a_replay(original: wb.RunResult) -> None:
    seen: list[str] = []

    def watch(data: object) -> wb.HookResult | None:
        seen.append(getattr(data, "tool_name", ""))
        return None

    hook = wb.Hook(wb.HookEvent.PRE_TOOL_USE, watch)
    calls = Calls()
    replay = wb.ReplayModel.from_run(original, tools="replay")
    result = _agent(replay, calls, hooks=[hook]).run_sync("work")
    assert seen == ["add", "boom", "picky", "picky"] and calls.ran == Counter()
    assert result.status is wb.ExecutionStatus.COMPLETED

    def deny_add(call: wb.ToolCall, ctx: wb.ToolContext) -> wb.GuardDecision:
        return (
            (wb.ToolPermission.DENY, "no adding") if call.name == "add" else wb.ToolPermission.ALLOW
        )

    replay = wb.ReplayModel.from_run(original, tools="replay")
    denied = _agent(replay, calls, guards=[deny_add]).run_sync("work")
    assert (
        denied.steps[0].tool_outcomes[0].status == "denied"
    )  # the guard decided, not the recording
    assert denied.status is wb.ExecutionStatus.FAILED  # ...and the next request departs from it
    assert denied.error is not None and denied.error.type == "ReplayDivergence"
    assert calls.ran == Counter()


def test_a_call_with_changed_arguments_is_a_divergence_not_a_live_call(
    original: wb.RunResult,
) -> None:
    calls = Calls()
    run = _agent(wb.ReplayModel.from_run(original, tools="replay"), calls).start("work")
    while run.next_phase_name is not wb.Phase.TOOLS:
        run.next_phase()
    run.edit_call("c1", {"a": 1, "b": 40})
    result = run.run_to_end()
    assert calls.ran == Counter()
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    message = result.error.message
    assert "step 1" in message and "tool call c1" in message
    assert '- recorded: add({"a": 1, "b": 2})' in message
    assert '+ sent:     add({"a": 1, "b": 40})' in message


def test_a_hook_that_rewrites_arguments_differently_diverges(original: wb.RunResult) -> None:
    def rewrite(data: object) -> wb.HookResult | None:
        return wb.HookResult(updated_input={"a": 9, "b": 9}) if data.tool_name == "add" else None  # type: ignore[attr-defined]

    replay = wb.ReplayModel.from_run(original, tools="replay")
    hook = wb.Hook(wb.HookEvent.PRE_TOOL_USE, rewrite)
    result = _agent(replay, Calls(), hooks=[hook]).run_sync("work")
    assert result.error is not None and result.error.type == "ReplayDivergence"
    assert 'add({"a": 9, "b": 9})' in result.error.message


def _paused_original(calls: Calls) -> tuple[wb.RunResult, wb.RunResult]:
    """A run that paused for approval, and the same run resumed (its whole record)."""
    script = [R.tool_call("delete", {"path": "/tmp/x"}, call_id="d1"), R.text("gone")]
    agent = _agent(wb.ScriptedModel(script), calls, store=wb.RunStore(":memory:"))
    paused = agent.run_sync("clean up")
    assert paused.status is wb.ExecutionStatus.PAUSED
    done = agent.resume_sync(paused.state, approvals={"d1": True})
    return paused, done


def test_a_paused_recording_has_no_result_to_replay() -> None:
    calls = Calls()
    paused, _ = _paused_original(calls)
    replay = wb.ReplayModel.from_run(paused, tools="replay")
    again = _agent(replay, calls).run_sync("clean up")
    assert again.status is wb.ExecutionStatus.PAUSED  # the approval is asked again
    after = _agent(replay, calls).resume_sync(again.state, approvals={"d1": True})
    assert after.status is wb.ExecutionStatus.FAILED and after.error is not None
    assert after.error.type == "ReplayDivergence"
    assert "no result for tool call d1 (delete)" in after.error.message
    assert "pending" in after.error.message
    assert calls.ran == Counter(delete=1)  # only the original ran it


def test_a_resumed_replay_answers_from_the_recording_even_in_a_fresh_process() -> None:
    calls = Calls()
    _, done = _paused_original(calls)
    assert calls.ran == Counter(delete=1)
    paused = _agent(wb.ReplayModel.from_run(done, tools="replay"), calls).run_sync("clean up")
    assert paused.status is wb.ExecutionStatus.PAUSED
    state = wb.AgentState.from_json(paused.state.to_json())  # resumed elsewhere: a new model
    fresh = wb.ReplayModel.from_run(done, tools="replay")
    finished = _agent(fresh, calls).resume_sync(state, approvals={"d1": True})
    assert finished.status is wb.ExecutionStatus.COMPLETED and finished.output == "gone"
    assert calls.ran == Counter(delete=1)
    (outcome,) = finished.steps[-2].tool_outcomes
    assert outcome.replayed and outcome.content == "deleted /tmp/x"


def test_a_paused_replayed_fork_resumed_on_its_model_runs_nothing() -> None:
    calls = Calls()
    _, done = _paused_original(calls)
    replay = wb.ReplayModel.from_run(done)  # built for live tools; the re-run switches it
    agent = _agent(wb.ScriptedModel([]), calls)
    fork = agent.rerun_sync(done.snapshots[0], model=replay, tools="replay")
    assert fork.status is wb.ExecutionStatus.PAUSED and replay.tools == "replay"
    finished = agent.resume_sync(fork.state, approvals={"d1": True}, model=replay)
    assert finished.status is wb.ExecutionStatus.COMPLETED and finished.output == "gone"
    assert calls.ran == Counter(delete=1)  # the original's execution only


def test_rerun_with_tools_replay_forks_after_the_replayed_steps(tmp_path: Path) -> None:
    calls = Calls()
    with wb.RunStore(tmp_path / "runs.sqlite") as store:
        first = _agent(wb.ScriptedModel(SCRIPT), calls, store=store).run_sync("work")
        recorded = store.load(first.run_id)
    calls.ran.clear()
    live = wb.ScriptedModel([R.tool_call("add", {"a": 5, "b": 5}, call_id="c9"), R.text("10")])
    replay = wb.ReplayModel.from_run(recorded, until_step=2, then=live)
    agent = _agent(wb.ScriptedModel([]), calls)
    fork = agent.rerun_sync(recorded.snapshots[0], model=replay, tools="replay")
    assert fork.status is wb.ExecutionStatus.COMPLETED and fork.output == "10"
    assert calls.ran == Counter(add=1)  # steps 1 and 2 replayed; the live step 3 ran its call
    replayed = [o.replayed for s in fork.steps for o in s.tool_outcomes]
    assert replayed == [True, True, True, False]
    assert _outcomes(fork)[:3] == _outcomes(recorded)[:3]


def test_rerun_from_a_trace_with_tools_replay(original: wb.RunResult) -> None:
    telemetry = wb.Telemetry(capture_content=True)
    first_calls = Calls()
    first = _agent(wb.ScriptedModel(SCRIPT), first_calls, telemetry=telemetry).run_sync("work")
    trace = telemetry.trace(first.trace_id)
    calls = Calls()
    agent = _agent(wb.ScriptedModel([]), calls)
    for step in (1, 2):  # from step 2 the messages include tool results recovered from spans
        fork = agent.rerun_from_trace_sync(
            trace, step, model=wb.ReplayModel.from_run(first, strict=True), tools="replay"
        )
        assert fork.output == first.output and calls.ran == Counter()
        assert _outcomes(fork) == [o for o in _outcomes(first) if o[0] >= step]
    with pytest.raises(wb.UsageError, match="not a ReplayModel"):
        agent.rerun_from_trace_sync(trace, 2, tools="replay")


def test_tools_replay_needs_a_replay_model(original: wb.RunResult) -> None:
    agent = _agent(wb.ScriptedModel(SCRIPT), Calls())
    with pytest.raises(wb.UsageError, match=r"not a ReplayModel.*until_step=N"):
        agent.rerun_sync(original.snapshots[1], tools="replay")
    with pytest.raises(wb.UsageError, match="not a ReplayModel"):
        agent.start_rerun(original.snapshots[1], model=wb.ScriptedModel([]), tools="replay")
    with pytest.raises(wb.UsageError, match='"live" or "replay"'):
        wb.ReplayModel.from_run(original, tools="recorded")  # type: ignore[arg-type]


def test_rerun_tools_replay_turns_it_on_for_a_replay_model(original: wb.RunResult) -> None:
    calls = Calls()
    agent = _agent(wb.ScriptedModel([]), calls)
    fork = agent.rerun_sync(
        original.snapshots[1], model=wb.ReplayModel.from_run(original), tools="replay"
    )
    assert fork.output == original.output and calls.ran == Counter()


# -- whole-tree replay ------------------------------------------------------------------------


def _never(name: str) -> wb.FunctionModel:
    def refuse(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        raise AssertionError(f"the live model of {name} was called in a replay")

    return wb.FunctionModel(refuse, name=name)


def _tree(
    lead_model: wb.Model,
    sub_model: Callable[[str], wb.Model],
    searched: Counter[str],
    *,
    research_is_subagent: bool = True,
    store: wb.RunStore | None = None,
) -> wb.Agent:
    @wb.tool
    def search(query: str) -> str:
        """Look something up."""
        searched[query] += 1
        return f"found {query}"

    keep: wb.RunStore | Literal[False] = store if store is not None else False
    writer = wb.Agent(model=sub_model("writer"), name="writer", store=keep)
    researcher = wb.Agent(
        model=sub_model("researcher"),
        name="researcher",
        tools=[search, writer.as_tool("write", "Write it up.")],
        store=keep,
    )

    def research(task: str) -> str:
        """Look things up."""
        return "found nothing"

    tool: wb.Tool | Callable[..., str] = (
        researcher.as_tool("research", "Look things up.") if research_is_subagent else research
    )
    return wb.Agent(model=lead_model, name="lead", tools=[tool], store=keep)


LEAD = [
    R(
        parts=(
            wb.ToolCall(call_id="r1", name="research", arguments={"task": "tides"}),
            wb.ToolCall(call_id="r2", name="research", arguments={"task": "winds"}),
        )
    ),
    R.text("swim at noon"),
]


def _sub_script(name: str) -> wb.Model:
    if name == "writer":
        return wb.FunctionModel(lambda messages, request: "written", name="writer-model")

    def research(messages: Sequence[wb.Message], request: wb.ModelRequest) -> wb.ModelResponse:
        task = next(m.text for m in messages if m.role == "user")
        answered = sum(1 for m in messages if m.role == "tool")
        if answered == 0:
            return R.tool_call("search", {"query": task}, call_id=f"s-{task}")
        if answered == 1:
            return R.tool_call("write", {"task": f"about {task}"}, call_id=f"w-{task}")
        return R.text(f"{task}: noon")

    return wb.FunctionModel(research, name="researcher-model")


def _shape(run: wb.RunResult) -> list[object]:
    """The tree: each run's agent, messages and outcomes, children in order."""
    return [
        run.state.agent_name,
        content(run.messages),
        [(o.name, o.status, o.content) for s in run.steps for o in s.tool_outcomes],
        [_shape(c) for c in run.children],
    ]


@pytest.fixture
def tree(tmp_path: Path) -> wb.RunResult:
    searched: Counter[str] = Counter()
    with wb.RunStore(tmp_path / "tree.sqlite") as store:
        result = _tree(wb.ScriptedModel(LEAD), _sub_script, searched, store=store).run_sync("plan")
        loaded = store.load(result.run_id)  # the tree as another process reads it
    assert searched == Counter(tides=1, winds=1)
    assert len(loaded.children) == 2 and all(len(c.children) == 1 for c in loaded.children)
    assert _shape(loaded) == _shape(result)
    return loaded


def test_a_whole_tree_replays_offline_with_live_tools(tree: wb.RunResult) -> None:
    searched: Counter[str] = Counter()
    replay = wb.ReplayModel.from_run(tree)
    result = _tree(replay, _never, searched).run_sync("plan")
    assert result.status is wb.ExecutionStatus.COMPLETED, result.error
    assert _shape(result) == _shape(tree)  # no sub-agent's own model was asked
    assert searched == Counter(tides=1, winds=1)  # the plain tools ran live
    assert [c.parent_call_id for c in result.children] == ["r1", "r2"]


def test_a_whole_tree_replay_with_tools_replay_executes_nothing(tree: wb.RunResult) -> None:
    searched: Counter[str] = Counter()
    telemetry = wb.Telemetry()
    replay = wb.ReplayModel.from_run(tree, tools="replay", strict=True)
    lead = _tree(replay, _never, searched)
    lead.telemetry = telemetry
    result = lead.run_sync("plan")
    assert result.status is wb.ExecutionStatus.COMPLETED, result.error
    assert _shape(result) == _shape(tree) and searched == Counter()
    grandchild = result.children[0].children[0]
    assert grandchild.state.agent_name == "writer" and grandchild.state.depth == 2
    replayed = [s for s in telemetry.spans if s.attributes.get("workbench.tool.replayed")]
    assert sorted(s.name for s in replayed) == ["execute_tool search", "execute_tool search"]


def test_a_sub_run_removed_from_the_tree_is_a_divergence(tree: wb.RunResult) -> None:
    replay = wb.ReplayModel.from_run(tree, tools="replay")
    result = _tree(replay, _never, Counter(), research_is_subagent=False).run_sync("plan")
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.type == "ReplayDivergence"
    assert "started a sub-run in the recording; 'research' is not a sub-agent now" in (
        result.error.message
    )


def test_a_sub_run_added_to_the_tree_is_a_divergence_not_a_live_call() -> None:
    flat = _tree(wb.ScriptedModel(LEAD), _sub_script, Counter(), research_is_subagent=False)
    recorded = flat.run_sync("plan")
    assert recorded.output == "swim at noon" and not recorded.children
    for tools in ("live", "replay"):
        replay = wb.ReplayModel.from_run(recorded, tools=tools)  # type: ignore[arg-type]
        result = _tree(replay, _never, Counter()).run_sync("plan")
        assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
        assert "starts a sub-run of 'researcher', but the recording has none" in (
            result.error.message
        )


# -- MCP tools replayed without their server --------------------------------------------------

MCP_SERVER = Path(__file__).parent / "mcp" / "server.py"


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])  # closed again when the block ends


def test_mcp_tools_replay_after_the_server_is_gone() -> None:
    script = [
        R.tool_call("add", {"a": 2, "b": 3}, call_id="m1"),
        R.tool_call("echo", {"text": "hi"}, call_id="m2"),
        R.text("5, hi"),
    ]
    live = wb.Toolset.from_mcp([sys.executable, str(MCP_SERVER), "stdio"], timeout=20)
    try:
        recorded = wb.Agent(model=wb.ScriptedModel(script), tools=[live], store=False).run_sync(
            "use the server"
        )
    finally:
        live.close()
    assert [o.content for s in recorded.steps for o in s.tool_outcomes] == ["5", "hi"]
    gone_places: list[str | list[str]] = [
        ["/nonexistent/mcp-server-that-was-removed"],
        f"http://127.0.0.1:{_closed_port()}/mcp",
    ]
    for gone in gone_places:
        toolset = wb.Toolset.from_mcp(gone, connect_timeout=10)
        replay = wb.ReplayModel.from_run(recorded, tools="replay", strict=True)
        again = wb.Agent(model=replay, tools=[toolset], store=False).run_sync("use the server")
        assert again.status is wb.ExecutionStatus.COMPLETED, again.error
        assert _outcomes(again) == _outcomes(recorded) and again.output == "5, hi"
        assert [s.tools_offered for s in again.steps] == [s.tools_offered for s in recorded.steps]
        replay.assert_complete()
        toolset.close()


def test_mcp_tools_without_tools_replay_still_need_the_server() -> None:
    recorded_step = R.tool_call("add", {"a": 2, "b": 3}, call_id="m1")
    live = wb.Toolset.from_mcp([sys.executable, str(MCP_SERVER), "stdio"], timeout=20)
    try:
        recorded = wb.Agent(
            model=wb.ScriptedModel([recorded_step, R.text("5")]), tools=[live], store=False
        ).run_sync("add")
    finally:
        live.close()
    gone = wb.Toolset.from_mcp(["/nonexistent/mcp-server-that-was-removed"])
    again = wb.Agent(model=wb.ReplayModel.from_run(recorded), tools=[gone], store=False).run_sync(
        "add"
    )
    assert again.status is wb.ExecutionStatus.FAILED and again.error is not None
    assert again.error.type == "MCPServerError"  # its tools would run: the server is needed


# -- the command line ---------------------------------------------------------------------------

EXECUTED: Counter[str] = Counter()


def cli_agent() -> wb.Agent:
    """The counting agent with an ``add`` that counts its executions (for ``--agent``)."""

    @wb.tool
    def add(a: int, b: int) -> int:
        """Add two integers."""
        EXECUTED["add"] += 1
        return a + b

    return wb.Agent(model=counting_model(5), name="counter", tools=[add], stop=wb.MaxSteps(10))


@pytest.mark.parametrize(("flags", "executed"), [((), 4), (("--replay-tools",), 0)])
def test_the_replay_verb_answers_an_agents_tools_from_the_recording(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], flags: tuple[str, ...], executed: int
) -> None:
    path = tmp_path / "runs.sqlite"
    with wb.RunStore(path) as store:
        run = counting_agent(5, store).run_sync(PROMPT)
    EXECUTED.clear()
    spec = "tests.test_replay_tools:cli_agent"
    argv = ["replay", run.run_id, "--from-step", "1", "--agent", spec, *flags]
    assert main([*argv, "--store", str(path)]) == 0
    out = capsys.readouterr().out
    assert "same as the original at every step" in out
    assert EXECUTED["add"] == executed
    assert ("answered from the recording" in out) is bool(flags)
    assert ("add (replayed)" in out) is bool(flags)  # the step table says nothing ran


# -- the rerun panel, in a real kernel ------------------------------------------------------------

PANEL_SETUP = (
    DELETE_FILE_PANEL
    + """
# the third response is only for a re-run that goes on live after replaying step 0
script = [R.tool_call("delete_file", {"path": "/important"}, call_id="d1"), "done", "done, live"]
agent = wb.Agent(model=wb.ScriptedModel(script), tools=[delete_file], store=wb.RunStore(":memory:"))
paused = agent.run_sync("clean up")
original = agent.resume_sync(paused.state, approvals={"d1": True})
deleted.clear()
live = wb.ScriptedModel([R.tool_call("delete_file", {"path": "/"})], name="live")
replay = wb.ReplayModel.from_run(original)
panel = RerunPanel(original, agent, models={"replay": replay, "live": live})
panel.step_picker.value = 0
panel.replay_tools.value = True

def shown():
    return {
        "deleted": list(deleted),
        "fork": panel.fork.status.value if panel.fork else None,
        "output": panel.fork.output if panel.fork else None,
        "rows": [r.pending.tool for r in panel.approval_rows],
        "on_screen": panel.replay_tools in panel.children[0].children,
        "error": panel.error.value,
    }
"""
)


def test_the_rerun_panel_replays_tool_results(kernel: Kernel) -> None:
    kernel.run(PANEL_SETUP)
    out, _ = kernel.run(
        "panel.model_picker.value = 'replay'\n"
        "panel.rerun_button.click()\nawait panel.wait()\n"
        "panel.approval_rows[0].approve_button.click()\nawait panel.wait()\n"
        "print(json.dumps(shown()))"
    )
    replayed = json.loads(out.strip().splitlines()[-1])
    assert replayed["on_screen"] is True and replayed["error"] == ""
    assert replayed["fork"] == "completed" and replayed["output"] == "done"
    assert replayed["deleted"] == []  # approved as in the original, answered from the recording
    out, _ = kernel.run(  # the agent's model: its replay of step 0, then live
        "panel.model_picker.value = panel.model_picker.options[0]\n"
        "panel.rerun_button.click()\nawait panel.wait()\n"
        "panel.approval_rows[0].approve_button.click()\nawait panel.wait()\n"
        "print(json.dumps(shown()))"
    )
    own = json.loads(out.strip().splitlines()[-1])
    assert own["error"] == "" and own["fork"] == "completed" and own["output"] == "done, live"
    assert own["deleted"] == []  # the approved call is answered from the recording after the pause
    out, _ = kernel.run(
        "panel.model_picker.value = 'live'\n"
        "panel.rerun_button.click()\nawait panel.wait()\nprint(json.dumps(shown()))"
    )
    refused = json.loads(out.strip().splitlines()[-1])
    assert "is not a ReplayModel" in refused["error"] and refused["deleted"] == []


def test_a_recording_of_responses_alone_runs_its_calls_live_and_cannot_answer_them(
    original: wb.RunResult,
) -> None:
    bare = [
        wb.RecordedCall(step=c.step, request=c.request, response=c.response)
        for c in wb.ReplayModel.from_run(original).recording
    ]
    calls = Calls()
    live = _agent(wb.ReplayModel(bare), calls).run_sync("work")
    assert live.output == original.output and calls.ran == Counter(add=1, boom=1, picky=2)
    replayed = _agent(wb.ReplayModel(bare, tools="replay"), Calls()).run_sync("work")
    assert replayed.error is not None and replayed.error.type == "ReplayDivergence"
    assert "the recording has no tool call c1 (add) to replay" in replayed.error.message


def test_a_sub_run_given_more_turns_by_a_subagent_stop_hook_replays_each_turn() -> None:
    def double_check(data: wb.SubagentStopInput) -> wb.HookResult | None:
        return None if data.stop_hook_active else wb.HookResult(decision="block", reason="Sure?")

    def lead(model: wb.Model, sub_model: wb.Model) -> wb.Agent:
        researcher = wb.Agent(sub_model, name="researcher", store=False)
        return wb.Agent(
            model,
            tools=[researcher.as_tool("researcher", "Looks things up.")],
            hooks=[wb.Hook(wb.HookEvent.SUBAGENT_STOP, double_check)],
            store=False,
        )

    script = [R.tool_call("researcher", {"task": "Capital of France?"}, call_id="s1"), "Paris."]
    recorded = lead(wb.ScriptedModel(script), wb.ScriptedModel(["Lyon", "Paris"])).run_sync("?")
    assert [c.output for c in recorded.children] == ["Lyon", "Paris"]
    replay = wb.ReplayModel.from_run(recorded, tools="replay", strict=True)
    again = lead(replay, _never("researcher")).run_sync("?")
    assert again.status is wb.ExecutionStatus.COMPLETED, again.error
    assert _shape(again) == _shape(recorded)


def _chain(search_description: str, lead_model: wb.Model | None = None) -> wb.Agent:
    """lead -> delegate (mid) -> deeper (inner) -> search, with search described as given."""

    @wb.tool(description=search_description)
    def search(q: str) -> str:
        return f"found {q}"

    inner = wb.Agent(
        wb.ScriptedModel([R.tool_call("search", {"q": "x"}, call_id="s"), "inner done"]),
        name="inner",
        tools=[search],
        store=False,
    )
    mid = wb.Agent(
        wb.ScriptedModel([R.tool_call("deeper", {"task": "t"}, call_id="d"), "mid done"]),
        name="mid",
        tools=[inner.as_tool("deeper")],
        store=False,
    )
    lead_model = lead_model or wb.ScriptedModel(
        [R.tool_call("delegate", {"task": "x"}, call_id="c"), "lead done"]
    )
    return wb.Agent(lead_model, name="lead", tools=[mid.as_tool("delegate")], store=False)


def test_a_departure_deep_in_the_tree_fails_the_lead_where_it_happened_and_keeps_the_tree() -> None:
    recorded = _chain("Search.").run_sync("go")
    replay = wb.ReplayModel.from_run(recorded, strict=True)
    result = _chain("Search the web.", replay).run_sync("go")
    assert result.status is wb.ExecutionStatus.FAILED and result.error is not None
    assert result.error.step == 1 and result.error.phase is wb.Phase.TOOLS  # not at step 2
    assert result.error.message.startswith(
        "replay departs from the recording at step 1: sub-agent 'mid' (call c) departs from its "
        "recording at its step 1: sub-agent 'inner' (call d) departs from its recording at its "
        "step 1: tool 'search' (description)"
    )
    assert "+ sent:     '\"Search the web.\"'" in result.error.message
    mid = result.children[0]  # nothing is lost: the failed sub-runs are in the tree
    assert mid.status is wb.ExecutionStatus.FAILED and mid.children[0].state.agent_name == "inner"
    assert [s.index for s in result.steps] == [1] and result.steps[0].tool_outcomes[0].subagent
