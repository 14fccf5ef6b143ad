"""An agent as a tool of another agent (`Agent.as_tool`): one run tree, one budget.

Each call starts a run of the sub-agent with the task as its prompt and the calling run as its
parent (``parent_run_id``, ``parent_call_id``, ``depth``). What the sub-agent sees of its parent
is the `SubagentContext` (the last messages, with tool calls and their results kept together,
some metadata, extra instructions). The parent's budget left caps the sub-run's, and what the
sub-run spends is charged to the parent (`ToolReturn.usage`), so ``MaxTokens`` and ``MaxCost`` on
the parent count the whole tree. `SubagentLimits` bound the tree: depth, calls per parent run,
runs in the whole tree; a call over a limit is a tool error naming it. The parent's model reads
the sub-run's answer, or a tool error when it failed, hit a limit or paused; the parent's step
record keeps a `SubagentResult`, and the parent's `RunResult.children` the sub-run itself.

The calling run's hooks see it: SubagentStart before the sub-run, SubagentStop after; a
SubagentStop hook that blocks gives the sub-agent one more turn with its reason (bounded like
Stop hooks).
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any, Literal, Protocol

from workbench._record import Record
from workbench.conditions import Budget, MaxCost, MaxTokens, StopCondition, Timeout
from workbench.errors import ReplayDivergence
from workbench.hooks.events import SubagentStartInput, SubagentStopInput
from workbench.hooks.runner import ParentHooks, parent_hooks
from workbench.messages import JsonValue, Message, Usage, answered_only
from workbench.models.base import Model
from workbench.models.replay import ReplayModel
from workbench.records import RunResult, SubagentResult
from workbench.state import AgentState, ExecutionStatus, StopReason
from workbench.stepping import SubRun as _SubRun
from workbench.stepping import drive
from workbench.tools import Tool, ToolContext, ToolReturn
from workbench.toolsets import Toolset, tool_table

__all__ = [
    "SubagentContext",
    "SubagentLimits",
    "SubagentTool",
    "SubagentTree",
    "reachable_tools",
    "subagent_tool",
    "subagent_tree",
]


class SubagentContext(Record):
    """What a sub-agent sees of its parent run, besides the task it is given."""

    messages: int | Literal["all"] = 0
    """How many of the parent's last messages it sees (0: none; "all"). A tool call and its
    result are never separated, and the parent's calls still under way are left out."""
    metadata_keys: tuple[str, ...] = ()
    """Which keys of the parent run's metadata pass on to the sub-run's metadata."""
    inject: tuple[str, ...] = ()
    """Extra instructions, given as a user message before the task."""

    def history(self, parent: AgentState) -> tuple[Message, ...]:
        """The messages the sub-agent starts with, before its task."""
        shared = _last_messages(parent.messages, self.messages)
        if self.inject:
            shared += (Message.user("\n\n".join(self.inject)),)
        return shared

    def metadata(self, parent: AgentState) -> dict[str, JsonValue]:
        """The sub-run's metadata: the keys passed on that the parent has."""
        return {k: parent.metadata[k] for k in self.metadata_keys if k in parent.metadata}


class SubagentLimits(Record):
    """How large a tree of sub-agents may grow (set on the agent at its root)."""

    max_depth: int = 3
    """How deep sub-agents may nest: a run's sub-run is at depth 1, its sub-run at 2."""
    max_breadth: int = 5
    """How many sub-runs one run may start."""
    max_total: int = 10
    """How many sub-runs the whole tree may have."""


class SubagentTree:
    """The sub-runs started so far in one tree, against its limits (shared by the whole tree).

    The root run keeps it for its whole execution, and its counts in its state
    (`AgentState.subruns`), so the limits hold across steps, and across a pause and a resume in
    another process.
    """

    def __init__(
        self,
        limits: SubagentLimits,
        observer_for: Callable[[Any], Any] | None = None,
        started: Mapping[str, int] | None = None,
        fixes: Mapping[str, Tool] | None = None,
    ) -> None:
        self.limits = limits
        self.fixes: Mapping[str, Tool] = fixes or {}
        """Tools a re-run replaces by name, in every run of the tree (`Agent.start_rerun`)."""
        self.observer_for = observer_for
        """The root's telemetry for sub-runs of agents without their own (one tree, one trace)."""
        self.per_parent: Counter[str] = Counter(started or {})
        """Sub-runs started so far, by the run that started them."""

    @property
    def total(self) -> int:
        """Sub-runs started so far in the whole tree."""
        return sum(self.per_parent.values())

    def limit_reached(self, run_id: str, depth: int) -> str | None:
        """Which limit refuses a new sub-run of the run ``run_id`` (at ``depth``), if one does."""
        limits = self.limits
        if depth + 1 > limits.max_depth:
            return f"the sub-agent depth limit ({limits.max_depth}) is reached"
        if self.per_parent[run_id] >= limits.max_breadth:
            return f"this run already started {limits.max_breadth} sub-agents (max_breadth)"
        if self.total >= limits.max_total:
            return f"the tree already has {limits.max_total} sub-runs (max_total)"
        return None

    def admit(self, ctx: ToolContext, budget: Budget) -> str | None:
        """Count a new sub-run of the calling run; or say which limit refuses it.

        ``budget`` is what the calling run has left (``ctx.budget``, which the caller has).
        """
        refusal = self.limit_reached(ctx.run_id, ctx.view.state.depth)
        if refusal is not None:
            return refusal
        if budget.tokens_left == 0 or budget.cost_left == 0 or budget.seconds_left == 0:
            return "the calling run's budget is spent"
        self.per_parent[ctx.run_id] += 1
        return None


subagent_tree: ContextVar[SubagentTree | None] = ContextVar("workbench_subagents", default=None)
"""The tree the tools running now belong to; set by the loop's tool runner at a tree's root."""


class Delegate(Protocol):
    """What a sub-agent must offer its tool: an `Agent`, seen from below (no import of it)."""

    @property
    def name(self) -> str: ...

    @property
    def tools(self) -> Mapping[str, Tool]: ...

    @property
    def toolsets(self) -> tuple[Toolset, ...]: ...

    @property
    def model(self) -> Model: ...

    def start(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        metadata: Mapping[str, JsonValue] | None = None,
        parent: ToolContext | None = None,
        stop: StopCondition | None = None,
        tools: Iterable[Tool | Toolset | Callable[..., Any]] | None = None,
        model: Model | None = None,
    ) -> _SubRun: ...

    def start_resume(
        self,
        state: AgentState,
        approvals: Mapping[str, bool | str] | None = None,
        results: Mapping[str, JsonValue] | None = None,
        *,
        model: Model | None = None,
    ) -> _SubRun: ...


@dataclass(frozen=True, eq=False)
class SubagentTool(Tool):
    """The tool `Agent.as_tool` makes: a call starts a sub-run (a replay replays it instead)."""

    delegate: Delegate | None = None
    """The agent a call runs."""
    own_tools: tuple[Tool | Toolset | Callable[..., Any], ...] | None = None
    """The tools its runs get instead of the agent's (``as_tool(tools=...)``), if any."""


def reachable_tools(
    tools: Mapping[str, Tool], toolsets: Sequence[Toolset], *, deep: bool = True
) -> frozenset[str] | None:
    """The names of every tool a run with ``tools`` and ``toolsets`` can call.

    With ``deep``, its sub-agents' too (any depth). None when some are known only once a run
    lists them (an MCP server's).
    """
    names: set[str] = set()
    seen: set[int] = set()  # sub-agent tools walked: an agent may be its own sub-agent
    pending: list[tuple[Mapping[str, Tool], Sequence[Toolset]]] = [(tools, toolsets)]
    while pending:
        table, sets = pending.pop()
        members = list(table.values())
        names |= set(table)
        for toolset in sets:
            listed = toolset.listed()
            if listed is None:
                return None
            names |= listed[0]
            members += listed[1]
        for member in members if deep else ():
            if not isinstance(member, SubagentTool) or member.delegate is None:
                continue
            if id(member) in seen:
                continue
            seen.add(id(member))
            own, delegate = member.own_tools, member.delegate
            pending.append(
                tool_table(own) if own is not None else (delegate.tools, delegate.toolsets)
            )
    return frozenset(names)


def subagent_tool(
    agent: Delegate,
    name: str,
    description: str,
    context: SubagentContext,
    tools: Iterable[Tool | Toolset | Callable[..., Any]] | None,
) -> Tool:
    """A tool that runs ``agent`` on a task and answers with its final output."""
    own_tools = None if tools is None else tuple(tools)

    async def run_subagent(task: str, ctx: ToolContext) -> ToolReturn:
        """Run the sub-agent.

        Args:
            task: What the sub-agent should do, with everything it needs to know.
            ctx: The calling run (filled in by the loop).

        """
        parent_state, budget = ctx.view.state, ctx.budget  # worked out once: it is not free
        stop = _budget_cap(budget)
        paused = parent_state.waiting_subruns.get(ctx.call_id or "")
        if paused is None:
            tree = subagent_tree.get() or SubagentTree(SubagentLimits())
            refusal = tree.admit(ctx, budget)
            if refusal is not None:
                return _refused(agent.name, refusal)
        model = _replay_model(agent.name, ctx, agent.model)

        def start(
            prompt: str, history: tuple[Message, ...], metadata: dict[str, JsonValue]
        ) -> _SubRun:
            return agent.start(
                prompt,
                history=history,
                metadata=metadata,
                parent=ctx,
                stop=stop,
                tools=own_tools,
                model=model,
            )

        if paused is None:
            first = start(task, context.history(parent_state), context.metadata(parent_state))
        else:  # the sub-run paused with its parent: resume it with the answers given to the parent
            in_parent_trace = paused.model_copy(update={"trace_id": parent_state.trace_id})
            answers = _subrun_answers(parent_state, paused)
            first = agent.start_resume(in_parent_trace, *answers, model=model)
        hooks = parent_hooks.get()
        runs, last = await _run_with_hooks(agent.name, first, start, hooks, paused is None)
        returned = _returned(agent.name, runs, paused)
        if model is None or not isinstance(last.failure, ReplayDivergence):
            return returned
        departed = _departed(agent.name, ctx, last.failure)  # where the replay really departed
        return returned.model_copy(update={"departed": departed})

    return SubagentTool(
        function=run_subagent,
        name=name,
        description=description,
        delegate=agent,
        own_tools=own_tools,
    )


def _departed(name: str, ctx: ToolContext, divergence: ReplayDivergence) -> ReplayDivergence:
    """A sub-run's departure from its recording, as the calling run's: where it really happened.

    The sub-run failed on it; answered as a tool error, the parent's next request would depart
    in turn and report that instead, the sub-run's cause cut short inside a tool result.
    """
    detail = (
        f"sub-agent {name!r} (call {ctx.call_id}) departs from its recording at its step "
        f"{divergence.step}: {divergence.detail}"
    )
    return ReplayDivergence(ctx.step, detail, diff=divergence.diff)


def _replay_model(name: str, ctx: ToolContext, live: Model) -> ReplayModel | None:
    """In a replay, the sub-run's model: a replay of what this call recorded; else None.

    ``live`` is the sub-agent's own model, which takes over where a forking replay departs.
    """
    recorded = ctx.replaying
    if recorded is None:
        return None
    if not recorded.runs:
        if recorded.departs == "live":  # a fork: the sub-run is new, its agent's model answers
            return None
        raise ReplayDivergence(
            ctx.step,
            f"tool call {ctx.call_id} starts a sub-run of {name!r}, but the recording has none "
            "for it",
        )
    return ReplayModel.of_subruns(recorded, then=live)


_Start = Callable[[str, tuple[Message, ...], dict[str, JsonValue]], _SubRun]


async def _run_with_hooks(
    name: str, run: _SubRun, start: _Start, parent: ParentHooks | None, fresh: bool
) -> tuple[tuple[RunResult, ...], _SubRun]:
    """Run the sub-run; SubagentStop hooks of the parent may give it more turns (bounded).

    Each extra turn is a new sub-run on the conversation so far; all of their results are
    returned, with the last turn's run.
    SubagentStart fires when the sub-run starts (not when it resumes), SubagentStop when it
    ends (not when it pauses).
    """
    agent_id = run.state.run_id
    if parent is not None and fresh:
        await parent.fire(SubagentStartInput(agent_id=agent_id, agent_type=name))
    runs = [await drive(run)]  # through the gate of a parent stepped into (workbench.stepping)
    while parent is not None and runs[-1].status is not ExecutionStatus.PAUSED:
        turn = len(runs) - 1
        stop = SubagentStopInput(agent_id=agent_id, agent_type=name, stop_hook_active=turn > 0)
        verdict = await parent.fire(stop)
        if not verdict.blocked:
            break
        if turn >= parent.max_turns:
            parent.note(f"a SubagentStop hook asked {name!r} for more after {turn} turns")
            break
        last = runs[-1]
        earlier = tuple(m for m in last.messages if m.role != "system")
        reason = verdict.reason or "A SubagentStop hook asked you to continue."
        run = start(reason, earlier, last.state.metadata)
        runs.append(await drive(run))
    return tuple(runs), run


def _budget_cap(budget: Budget) -> StopCondition | None:
    """Stop conditions for what the calling run has left, if it has limits."""
    caps: list[StopCondition] = []
    if budget.tokens_left is not None:
        caps.append(MaxTokens(budget.tokens_left))
    if budget.cost_left is not None:
        caps.append(MaxCost(budget.cost_left))
    if budget.seconds_left is not None:
        caps.append(Timeout(budget.seconds_left))
    if not caps:
        return None
    cap = caps[0]
    for more in caps[1:]:
        cap = cap | more
    return cap


def _summary(name: str, runs: tuple[RunResult, ...], usage: Usage) -> SubagentResult:
    """The sub-run as the parent sees it; the turns SubagentStop hooks added count in it."""
    result = runs[-1]
    tools_used = dict.fromkeys(o.name for r in runs for s in r.steps for o in s.tool_outcomes)
    return SubagentResult(
        run_id=result.run_id,
        agent=name,
        output=result.output,
        status=result.status,
        stop_reason=result.stop_reason,
        steps=sum(len({s.index for s in r.steps}) for r in runs),
        tools_used=tuple(tools_used),
        usage=usage,
        error=result.error.message if result.error else None,  # redacted when made
    )


def _returned(name: str, runs: tuple[RunResult, ...], paused: AgentState | None) -> ToolReturn:
    """What the parent gets: the answer, a tool error saying why there is none, or a pause.

    What a resumed sub-run spent before its pause was charged to the parent then, not again.
    """
    result = runs[-1]
    used = sum((r.usage for r in runs[1:]), runs[0].usage)
    spent = used - paused.usage if paused is not None else used
    summary = _summary(name, runs, used)
    if result.status is ExecutionStatus.PAUSED:
        return ToolReturn(value="", usage=spent, runs=runs, subagent=summary, waiting=result.state)
    problem = _problem(name, result)
    return ToolReturn(
        value=problem or result.output or "",
        usage=spent,
        runs=runs,
        subagent=summary,
        is_error=problem is not None,
        exception=result.error,
    )


def _problem(name: str, result: RunResult) -> str | None:
    if result.status is not ExecutionStatus.COMPLETED:
        why = result.error.message if result.error else result.status.value
        return f"Sub-agent {name!r} did not finish: {why}"
    if result.stop_reason not in (StopReason.COMPLETED, StopReason.TASK_COMPLETE):
        assert result.stop_reason is not None
        return (
            f"Sub-agent {name!r} stopped at a limit ({result.stop_reason.value}) before "
            f"answering; its last words: {result.output or '(none)'}"
        )
    return None


def _refused(name: str, why: str) -> ToolReturn:
    return ToolReturn(value=f"Sub-agent {name!r} was not started: {why}.", is_error=True)


def _last_messages(messages: Sequence[Message], count: int | Literal["all"]) -> tuple[Message, ...]:
    """The last ``count`` non-system messages, with every tool call next to its result.

    Calls without a result (the parent's calls under way, this one included) are left out
    first, and a message left empty with them, so ``count`` counts what the sub-agent sees; the
    slice is then widened to take in the call of a result it starts with.
    """
    if count != "all" and count <= 0:  # the default: nothing to look through
        return ()
    kept = answered_only(m for m in messages if m.role != "system")
    if count != "all":
        start = max(0, len(kept) - count)
        while start > 0 and kept[start].role == "tool":
            start -= 1
        kept = kept[start:]
    return kept


def _subrun_answers(
    state: AgentState, paused: AgentState
) -> tuple[dict[str, bool | str], dict[str, JsonValue]]:
    """The approvals and results given to ``state`` for the calls of its paused sub-run."""
    approvals: dict[str, bool | str] = {}
    results: dict[str, JsonValue] = {}
    for pending in paused.pending:
        answers = state.subrun_answers
        if (key := f"result:{pending.call_id}") in answers:
            results[pending.call_id] = answers[key]
        elif (key := f"approval:{pending.call_id}") in answers:
            decision = answers[key]
            approvals[pending.call_id] = decision if isinstance(decision, bool | str) else False
    return approvals, results
