"""``workbench replay RUN --from-step N``: re-run a stored run exactly from a step.

The re-run uses a `ReplayModel`, so it is exact and offline. The agent's tools are not in the
store (only their definitions and results are), so by default the tools are *recorded* too
(``tools="replay"`` on stand-ins with the recorded definitions): each call gets the result the
original run got, a call a guard denied is denied again with the same reason, and a call still
waiting for approval waits again. ``--agent module:name`` uses a real agent's tools instead (an
`Agent`, or a function that returns one), run live, or answered from the recording too with
``--replay-tools`` (its guards, hooks and approvals still decide). Either way the new run is
stored beside the original and diffed against it.
"""

from __future__ import annotations

import argparse
import importlib
from dataclasses import dataclass, field

from workbench.agent import Agent, RunResult
from workbench.cli._common import (
    echo,
    errors_text,
    open_store,
    run_argument,
    step_table,
    store_option,
)
from workbench.conditions import Budget, MaxCost, MaxSteps, MaxTokens, StopCondition, Timeout
from workbench.diff import diff
from workbench.errors import StoreError, UsageError
from workbench.guards import GuardDecision, ToolPermission
from workbench.messages import ToolCall, ToolDefinition
from workbench.models.replay import ReplayModel
from workbench.records import StepContext, ToolOutcome
from workbench.store import RunStore
from workbench.tools import ToolContext
from workbench.toolsets import stand_in

__all__ = ["run_replay", "setup_replay"]


def setup_replay(parser: argparse.ArgumentParser) -> None:
    """``workbench replay RUN --from-step N [--agent MODULE:NAME] [--store PATH]``."""
    run_argument(parser)
    parser.add_argument(
        "--from-step", type=int, default=1, metavar="N", help="first step to re-run"
    )
    parser.add_argument(
        "--agent",
        metavar="MODULE:NAME",
        help="take the tools from this Agent (or function returning one) instead of the recording",
    )
    parser.add_argument(
        "--replay-tools",
        action="store_true",
        help="with --agent: answer its tool calls from the recording instead of running them",
    )
    store_option(parser)


def run_replay(args: argparse.Namespace) -> int:
    """Re-run a stored run exactly from a step, store the new run, and diff the two."""
    store = open_store(args)
    original = store.load(store.resolve(args.run))
    snapshot = _snapshot_at(original, args.from_step)
    if args.agent:
        agent = _import_agent(args.agent)
        agent.store = store  # the replay is stored beside the original, whatever the agent says
        replay_tools = bool(args.replay_tools)
        how = f"tools of {args.agent}" + (", answered from the recording" if replay_tools else "")
    else:
        agent, replay_tools = _recorded_agent(original, snapshot, store), True
        how = "recorded tools"
    replay = ReplayModel.from_run(original, tools="replay" if replay_tools else "live")
    result = agent.rerun_sync(snapshot, model=replay)
    echo(f"replayed {original.run_id} from step {snapshot.step} ({how}) as {result.run_id}")
    echo(f"{result.run_id}: {result.summary}; stop reason {result.stop_reason}")
    if result.errors:  # first, as `show` does: the step table's legend points up at them
        echo()
        echo(errors_text(result.errors))
    echo()
    echo(step_table(result.steps) if result.steps else "(no steps)")
    echo()
    changes = diff(original, result)
    first = changes.first_divergence
    echo("same as the original at every step" if first is None else changes.to_text())
    return 0 if first is None and result.error is None else 1


def _snapshot_at(run: RunResult, step: int) -> StepContext:
    for snapshot in run.snapshots:
        if snapshot.step == step:
            return snapshot
    have = ", ".join(str(s.step) for s in run.snapshots) or "none"
    raise StoreError(f"run {run.run_id} has no snapshot for step {step} (it has: {have})")


def _import_agent(spec: str) -> Agent:
    module_name, _, attr = spec.partition(":")
    if not module_name or not attr:
        raise UsageError(f"--agent wants MODULE:NAME, got {spec!r}")
    try:
        found = getattr(importlib.import_module(module_name), attr)
    except (ImportError, AttributeError) as exc:
        raise UsageError(f"--agent {spec}: {exc}") from exc
    agent = found() if callable(found) and not isinstance(found, Agent) else found
    if not isinstance(agent, Agent):
        raise UsageError(f"--agent {spec} is not an Agent (got {type(agent).__name__})")
    return agent


# -- recorded tools -----------------------------------------------------------------------------


@dataclass
class _Decisions:
    """What the original run decided about its calls: refusals and waits, by call id."""

    denied: dict[str, str] = field(default_factory=dict)
    waiting: set[str] = field(default_factory=set)

    @classmethod
    def of(cls, run: RunResult) -> _Decisions:
        final: dict[str, ToolOutcome] = {}
        for record in run.steps:
            for outcome in record.tool_outcomes:
                final[outcome.call_id] = outcome  # a resumed call's result replaces "pending"
        decisions = cls()
        for outcome in final.values():
            if outcome.status == "pending":
                decisions.waiting.add(outcome.call_id)
            elif outcome.status == "denied" and outcome.content.startswith(_DENIED):
                decisions.denied[outcome.call_id] = outcome.content.removeprefix(_DENIED)
        return decisions

    def guard(self, call: ToolCall, ctx: ToolContext) -> GuardDecision:
        """Deny what was denied and hold what was waiting, as the original run did."""
        if call.call_id in self.denied:
            return ToolPermission.DENY, self.denied[call.call_id]
        if call.call_id in self.waiting:
            return ToolPermission.ASK, "waiting for approval in the recorded run"
        return ToolPermission.ALLOW


_DENIED = "Permission denied: "


def _recorded_agent(run: RunResult, snapshot: StepContext, store: RunStore) -> Agent:
    """An agent with stand-ins for the recorded tools, deciding as the original run did."""
    known = {d.name: d for d in snapshot.tool_definitions}
    definitions = [
        known.get(name) or ToolDefinition(name=name, description="", parameters={"type": "object"})
        for name in snapshot.tool_names
    ]
    return Agent(
        model=ReplayModel([]),
        name=run.state.agent_name,
        tools=[stand_in(d, retries=1_000) for d in definitions],  # retries replay as recorded
        stop=_limits(snapshot.budget),
        guards=[_Decisions.of(run).guard],
        store=store,
    )


def _limits(budget: Budget) -> StopCondition:
    """The hard limits the original run had, read back from a snapshot's budget."""
    found: list[StopCondition] = []
    if budget.steps_left is not None:
        found.append(MaxSteps(budget.steps_used + budget.steps_left))
    if budget.tokens_left is not None:
        found.append(MaxTokens(budget.tokens_used + budget.tokens_left))
    if budget.seconds_left is not None:
        found.append(Timeout(budget.seconds_used + budget.seconds_left))
    if budget.cost_left is not None and budget.cost_used is not None:
        found.append(MaxCost(budget.cost_used + budget.cost_left))
    if not found:
        return MaxSteps(10_000)
    combined = found[0]
    for condition in found[1:]:
        combined = combined | condition
    return combined
