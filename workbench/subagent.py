"""An agent as a tool of another agent (`Agent.as_tool`).

Each call starts a run of the subagent with the task as its prompt and the calling run as its
parent (``parent_run_id``, so telemetry and stores can link the two). The calling run's hooks see
it: SubagentStart before the sub-run, SubagentStop after; a SubagentStop hook that blocks gives
the subagent one more turn with its reason (bounded like Stop hooks).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Protocol

from workbench.errors import SubagentError
from workbench.hooks.events import SubagentStartInput, SubagentStopInput
from workbench.hooks.runner import ParentHooks, parent_hooks
from workbench.messages import Message
from workbench.records import RunResult
from workbench.state import AgentState, ExecutionStatus
from workbench.tools import Tool, ToolContext, tool

__all__ = ["SubagentError", "subagent_tool"]


class _SubRun(Protocol):
    @property
    def state(self) -> AgentState: ...

    async def arun_to_end(self) -> RunResult: ...


class Delegate(Protocol):
    """What a sub-agent must offer its tool: an `Agent`, seen from below (no import of it)."""

    @property
    def name(self) -> str: ...

    def start(
        self,
        prompt: str | None = None,
        *,
        history: Sequence[Message] = (),
        parent_run_id: str | None = None,
    ) -> _SubRun: ...


def subagent_tool(agent: Delegate, name: str, description: str) -> Tool:
    """A tool that runs ``agent`` on a task and answers with its final output."""

    async def run_subagent(task: str, ctx: ToolContext) -> str:
        """Run the subagent.

        Args:
            task: What the subagent should do, with everything it needs to know.
            ctx: The calling run (filled in by the loop).

        """
        parent = parent_hooks.get()
        result = await _run(agent, task, (), ctx.run_id, parent, turn=0)
        return _answer(agent.name, result)

    return tool(name=name, description=description)(run_subagent)


async def _run(
    agent: Delegate,
    prompt: str,
    history: tuple[Message, ...],
    parent_run_id: str,
    parent: ParentHooks | None,
    turn: int,
) -> RunResult:
    run = agent.start(prompt, history=history, parent_run_id=parent_run_id)
    agent_id = run.state.run_id
    if parent is not None:
        await parent.fire(SubagentStartInput(agent_id=agent_id, agent_type=agent.name))
    result = await run.arun_to_end()
    if parent is None:
        return result
    stop = SubagentStopInput(agent_id=agent_id, agent_type=agent.name, stop_hook_active=turn > 0)
    verdict = await parent.fire(stop)
    if not verdict.blocked:
        return result
    if turn >= parent.max_turns:
        parent.note(f"a SubagentStop hook asked {agent.name!r} for more after {turn} turns")
        return result
    earlier = tuple(m for m in result.messages if m.role != "system")
    reason = verdict.reason or "A SubagentStop hook asked you to continue."
    return await _run(agent, reason, earlier, parent_run_id, parent, turn + 1)


def _answer(name: str, result: RunResult) -> str:
    if result.status is ExecutionStatus.PAUSED:
        waiting = ", ".join(p.tool for p in result.pending)
        raise SubagentError(f"subagent {name!r} paused waiting for {waiting}; it cannot ask")
    if result.status is not ExecutionStatus.COMPLETED:
        why = result.error.message if result.error else result.status.value
        raise SubagentError(f"subagent {name!r} did not finish: {why}")
    return result.output or ""
