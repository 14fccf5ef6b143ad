"""The Stepper's status line: how the run stands, what comes next, and what it has left.

The Stepper draws it whenever it redraws a run, and a stored run's history (`StepperHistory`)
draws it too, so a run reads the same whether it is stepped now or was stepped before; the phase
log's line (`stepping_html`) names the step and next phase as this line does (`step_position`).
"""

from __future__ import annotations

from html import escape

from workbench.conditions import Budget
from workbench.models.prices import dollars
from workbench.notebook.html import error_html, status_badge, traceback_html
from workbench.state import AgentState, ExecutionStatus, Phase

__all__ = ["status_html", "step_position"]


def _budget_text(budget: Budget | None) -> str:
    if budget is None:
        return "budget: not started"
    left = []
    if budget.steps_left is not None:
        left.append(f"{budget.steps_left} steps")
    if budget.tokens_left is not None:
        left.append(f"{budget.tokens_left:,} tokens")
    if budget.seconds_left is not None:
        left.append(f"{budget.seconds_left:.1f} s")
    if budget.cost_left is not None:
        left.append(dollars(budget.cost_left))
    return "budget left: " + (", ".join(left) if left else "unlimited")


def status_html(
    state: AgentState,
    next_phase: Phase | None,
    budget: Budget | None,
    *,
    note: str = "",
    traceback: str | None = None,
    under_way: bool = False,
    status: str | None = None,
) -> str:
    """The Stepper's status line: status, stop reason, step, next phase, budget left, errors.

    ``traceback`` goes under the note: a breakpoint whose predicate raised (`Break.traceback`).
    ``under_way``: the next phase has started (a button or a cell drives the run), which a
    person waiting on a slow model call must be able to tell from a run waiting on them.
    ``status`` is shown instead of the state's: a run list's (``"interrupted"``).
    """
    done, following = step_position(state, next_phase)
    if under_way and next_phase is not None:
        following = f"<b>{next_phase.value}</b> under way…"
    parts = [
        status_badge(status or state.status.value),
        done,
        following,
        f"stop reason <b>{state.stop_reason.value if state.stop_reason else '—'}</b>",
        escape(_budget_text(budget)),
        f"tokens {state.usage.total_tokens:,}",
    ]
    error = error_html(state.error) if state.error is not None else ""
    extra = f'<div style="color:#555">{escape(note)}</div>' if note else ""
    extra += traceback_html(traceback, open_=True) if traceback else ""
    # line-height: a widget's HTML has lines as high as a button (28 px), so a status line that
    # wraps beside the file browser read as two ('budget left: 50 steps · tokens', then '29')
    return (
        f'<div class="wb-status" style="line-height:1.45">{" · ".join(parts)}{error}{extra}</div>'
    )


def step_position(state: AgentState, next_phase: Phase | None) -> tuple[str, str]:
    """The step, and what comes next: between steps, the next PREPARE is the next step's."""
    if next_phase is Phase.PREPARE and state.step:
        done, following = f"<b>{state.step}</b>", f"<b>{state.step + 1}</b>"
        return f"step {done} done", f"next phase <b>prepare</b> of step {following}"
    return f"step <b>{state.step}</b>", _next_text(state, next_phase)


def _next_text(state: AgentState, next_phase: Phase | None) -> str:
    """What comes next: a phase, the answer a paused run waits for, or nothing (it ended)."""
    if next_phase is not None:
        return f"next phase <b>{next_phase.value}</b>"
    waiting = len(state.pending)
    if state.status is ExecutionStatus.PAUSED and waiting:
        return f"waits for your answer to <b>{waiting}</b> call{'s' if waiting > 1 else ''}"
    return "next phase <b>—</b>"
