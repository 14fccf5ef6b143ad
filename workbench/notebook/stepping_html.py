"""Where stepping is, in the Stepper's words.

The phase log, the line of the sub-run it is in (and how it got there), and who asks for an
approval a sub-run waits on.

Each step down the run tree is read as the parent's call that started the sub-run ("lead's
research ▸ researcher's dig"), which a person recognises, not the call's id.
"""

from __future__ import annotations

import itertools
from collections.abc import Sequence
from html import escape

from workbench.messages import ToolCall
from workbench.notebook.status_line import step_position
from workbench.records import PhaseEvent
from workbench.state import AgentState, ExecutionStatus, Phase

__all__ = ["asked_html", "phase_log_html", "subrun_html"]


def phase_log_html(events: Sequence[PhaseEvent]) -> str:
    """Phases as they ran, each sub-run's indented under the phase of its parent that ran it.

    A phase that paused for an approval says so, and the first phase after the answer (of a new
    execution of the same run) says it resumed.

    >>> import workbench as wb
    >>> state = wb.AgentState(agent_name="<b>", depth=1)
    >>> "&lt;b&gt;" in phase_log_html([wb.PhaseEvent(phase=wb.Phase.PREPARE, step=1, state=state)])
    True
    """
    rows = []
    executions: dict[str, str] = {}  # each run's execution of its last phase listed
    for event in events:
        state = event.state
        who = escape(state.agent_name)
        who = f"↳ {who} (depth {state.depth})" if state.depth else who
        stop = f" · <b>stopped: {escape(str(event.breakpoint))}</b>" if event.breakpoint else ""
        if state.status is ExecutionStatus.PAUSED:
            stop += " · <b>paused</b>: waits for your answer"
        before, executions[event.run_id] = executions.get(event.run_id), state.execution_id
        resumed = " (resumed)" if before not in (None, state.execution_id) else ""
        rows.append(
            f'<div class="wb-phase" style="margin-left:{1.5 * state.depth}em">'
            f"{who} · step {event.step} · {event.phase.value}{resumed} · "
            f"{event.duration * 1e3:.1f} ms{stop}</div>"
        )
    style = "font-size:11px;line-height:1.45"  # not a widget HTML's 28 px a line
    return f'<div class="wb-phase-log" style="{style}">{"".join(rows)}</div>'


def subrun_html(path: Sequence[AgentState], next_phase: Phase | None) -> str:
    """Where stepping stopped inside a sub-run, and how it got there.

    ``path`` is the stepped run's state, then each sub-run's down to the one stopped in.

    >>> import workbench as wb
    >>> call = wb.Message.assistant_tool_call("dig", {}, call_id="d1")
    >>> top = wb.AgentState(agent_name="researcher", messages=(call,))
    >>> sub = wb.AgentState(agent_name="<b>", depth=1, parent_call_id="d1")
    >>> html = subrun_html([top, sub], None)
    >>> "&lt;b&gt;" in html and "via researcher's dig" in html
    True
    """
    state = path[-1]
    via = f", via {_via(path)}" if len(path) > 1 else ""
    return (
        f'<div class="wb-subrun" style="margin-left:{1.5 * state.depth}em;line-height:1.45">'
        "↳ inside sub-run "
        f"<b>{escape(state.agent_name)}</b> (depth {state.depth}{via}): "
        f"{', '.join(step_position(state, next_phase))}</div>"
    )


def asked_html(path: Sequence[AgentState], call_id: str) -> str:
    """Who asks for an approval a sub-run waits on, and through which calls (the id on hover).

    ``path`` is the stepped run's state, then each sub-run's down to the one that asks.

    >>> import workbench as wb
    >>> call = wb.Message.assistant_tool_call("dig", {}, call_id="d1")
    >>> top = wb.AgentState(agent_name="lead", messages=(call,))
    >>> sub = wb.AgentState(agent_name="<b>", depth=1, parent_call_id="d1")
    >>> "sub-agent <b>&lt;b&gt;</b>, via lead's dig" in asked_html([top, sub], "w1")
    True
    """
    who = escape(path[-1].agent_name)
    return (
        f"<div class='wb-asked' title='call {escape(call_id)}'>"
        f"asked by sub-agent <b>{who}</b>, via {_via(path)}</div>"
    )


def _via(path: Sequence[AgentState]) -> str:
    """Each step down ``path`` as the parent's call that started it: "lead's research ▸ …"."""
    return " ▸ ".join(
        f"{escape(parent.agent_name)}'s {escape(_call_name(parent, child.parent_call_id))}"
        for parent, child in itertools.pairwise(path)
    )


def _call_name(state: AgentState, call_id: str | None) -> str:
    """The tool of ``state``'s call ``call_id`` (its id when the call is not in the messages)."""
    for message in reversed(state.messages):
        for part in message.parts:
            if isinstance(part, ToolCall) and part.call_id == call_id:
                return part.name
    return call_id or "?"
