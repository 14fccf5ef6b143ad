"""How a `RunResult`, `RunError`, `PhaseEvent`, `RunDiff` and `Trace` look as a cell's value.

Their ``_repr_html_`` methods call these functions (imported when a notebook asks, so the core
never needs the notebook extra): a summary a reader takes in at a glance, where the default
would print every message of the run. Run text is escaped like everywhere else.
"""

from __future__ import annotations

from html import escape

from workbench._record import html_view
from workbench.diff import RunDiff, StepDiff
from workbench.models.prices import dollars
from workbench.notebook.html import (
    DIFF_COLOURS,
    FAILED_COLOUR,
    _badge,
    errors_html,
    pending_html,
    status_badge,
    summary_html,
)
from workbench.notebook.tables import steps_text
from workbench.records import PhaseEvent, RunError, RunResult, call_label, errors_summary
from workbench.report import trace_summary, trace_top
from workbench.runfilter import INTERRUPTED
from workbench.telemetry.trace import Trace

__all__ = [
    "phase_event_html",
    "run_diff_html",
    "run_error_html",
    "run_result_html",
    "stored_run_html",
    "trace_html",
]

_CELL = "padding:1px 8px;vertical-align:top;text-align:left"


def _rows(rows: dict[str, str]) -> str:
    cells = "".join(
        f"<tr><th style='{_CELL};color:#555'>{escape(k)}</th><td style='{_CELL}'>{v}</td></tr>"
        for k, v in rows.items()
    )
    return f"<table style='font-size:12px;border-collapse:collapse'>{cells}</table>"


@html_view(RunResult)
def run_result_html(result: RunResult) -> str:
    """A run's outcome: what went wrong first, then status, steps, tokens, output, pending.

    The errors are the whole tree's (`RunResult.errors`), each with its traceback, so a tool
    that crashed two sub-agents down is the first thing the cell shows.
    """
    return stored_run_html(result)


def stored_run_html(result: RunResult, *, status: str | None = None, note: str = "") -> str:
    """`run_result_html`, with what a run list says of a stored run beyond its state.

    ``status`` is the list's (``"interrupted"``: its process ended while it ran), ``note`` what
    to know of its process (`workbench.runlist.writer_note`).
    """
    state, usage = result.state, result.usage
    errors = result.errors
    status = status or state.status.value
    cost = f" · {dollars(usage.cost)}" if usage.cost else ""  # unknown or nothing: no cost
    rows = {
        "run": f"<code>{escape(state.run_id)}</code> · agent {escape(state.agent_name)}",
        "status": status_badge(status)
        + escape(f"stop reason {state.stop_reason.value if state.stop_reason else '—'}"),
        "steps": steps_text(result.steps),
        "tokens": f"{usage.input_tokens:,} in / {usage.output_tokens:,} out{cost}",
        "output": (
            f"<span style='white-space:pre-wrap'>{escape(result.output)}</span>"
            if result.output
            else "—"
        ),
    }
    if state.pending:
        rows["waiting on"] = pending_html(state.pending)
    if note:
        rows["process"] = escape(note)
    gone = status == INTERRUPTED  # not a success either: said as an error is
    top = summary_html(errors_summary(status, errors), failed=bool(errors) or gone)
    return (
        f"<div class='wb-run-result'><b>RunResult</b>{top}{errors_html(errors)}{_rows(rows)}</div>"
    )


@html_view(RunError)
def run_error_html(error: RunError) -> str:
    """One error (``result.errors[0]`` in a cell): where, what, and its traceback, open.

    Its repr is one line; the person who asks for one error has come for its traceback.
    """
    return f"<div class='wb-run-error'>{errors_html([error])}</div>"


@html_view(Trace)
def trace_html(trace: Trace) -> str:
    """A trace (``wb.load_trace(...)`` in a cell): what went wrong first, then what it holds.

    The lines `workbench trace` prints. Its text repr names only the trace id and the number
    of spans, so a loaded trace of an agent whose tool crashed looked like any other.
    """
    rows = {k: escape(v) for k, v in trace_summary(trace).items() if k != "errors"}
    return f"<div class='wb-trace'><b>Trace</b>{trace_top(trace)}{_rows(rows)}</div>"


@html_view(PhaseEvent)
def phase_event_html(event: PhaseEvent) -> str:
    """One phase that ran: which, of which agent and step, how long, and where the run is now.

    Stopped at a breakpoint (``run.run_to_breakpoint()`` as a cell's value), it says which, and
    the calls of that phase that failed: the cell showed "tools of step 3 · 1.08 ms → running",
    not that this was the digger, two sub-agents down, or what broke there. A retry or a denial
    is said apart from those, as the step table and the report say it: no error.
    """
    state = event.state
    status = state.status.value
    stop = f" · stop reason {state.stop_reason.value}" if state.stop_reason else ""
    agent = f"{state.agent_name} (depth {event.depth}) · " if event.depth else ""
    line = (
        f"<div>{escape(agent)}<b>{escape(event.phase.value)}</b> "
        f"of step {event.step} · {event.duration * 1e3:.2f} ms → "
        f"{status_badge(status)}next phase "
        f"<b>{escape(state.next_phase.value)}</b>{escape(stop)} · "
        f"{len(state.messages)} messages · {state.usage.total_tokens:,} tokens</div>"
    )
    if event.breakpoint is not None:
        line += f"<div><b>stopped at breakpoint {escape(str(event.breakpoint))}</b></div>"
    return f"<div class='wb-phase-event' style='font-size:12px'>{line}{_failed_calls(event)}</div>"


def _failed_calls(event: PhaseEvent) -> str:
    """The calls of the phase that did not simply run, with what the model read.

    First those that failed (red); then, labelled as a step table labels them, the retries,
    denials and calls that wait: no errors (a denial was listed as failed beside a report
    saying "1 denial: not an error").
    """
    failed = [o for o in event.outcomes if o.is_error]
    others = [o for o in event.outcomes if o.status != "ok" and not o.is_error]
    lines = [
        f"<div style='color:{FAILED_COLOUR}'><b>{escape(o.name)}</b>: "
        f"{escape(o.content[:300])}</div>"
        for o in failed
    ]
    lines += [
        f"<div style='color:#555'><b>{escape(call_label(o.name, o.status))}</b>: "
        f"{escape(o.content[:300])}</div>"
        for o in others
    ]
    return "".join(lines)


def _changes(step: StepDiff) -> str:
    lines = [f"{where}: {what}" for where, what in step.changes()]
    if not lines and (step.calls_a or step.calls_b):
        lines.append(f"calls: {', '.join(step.calls_a or step.calls_b)}")
    return "<br>".join(escape(line) for line in lines)


@html_view(RunDiff)
def run_diff_html(diff: RunDiff) -> str:
    """Two runs step by step: what changed where, with the first divergence marked."""
    rows = []
    for step in diff.steps:
        colour = DIFF_COLOURS.get(step.status, "#636e72")
        delta = "" if step.time_delta is None else f"{step.time_delta * 1e3:+.2f} ms"
        rows.append(
            f"<tr><td style='{_CELL}'>{step.step}</td>"
            f"<td style='{_CELL}'>{_badge(step.status, colour)}</td>"
            f"<td style='{_CELL};white-space:pre-wrap'>{_changes(step)}</td>"
            f"<td style='{_CELL}'>{delta}</td></tr>"
        )
    subruns = "".join(
        f"<div style='margin:6px 0 0 16px'><b>sub-run {i}</b>{run_diff_html(diff.subruns[i - 1])}"
        "</div>"
        for i in diff.differing_subruns
    )
    ends = "".join(
        f"<div>end {label}: {escape(status)}"
        + (f" <span style='color:{FAILED_COLOUR}'>({escape(error)})</span>" if error else "")
        + f", stop reason {escape(stop or '-')}, output "
        f"<span style='white-space:pre-wrap'>{escape(repr(output))}</span></div>"
        for label, (status, stop, output), error in (
            ("a", diff.a_final, diff.a_error),
            ("b", diff.b_final, diff.b_error),
        )
    )
    note = f": {escape(diff.note)}" if diff.note else ""
    return (
        f"<div class='wb-run-diff' style='font-size:12px'><b>diff</b> "
        f"<code>{escape(diff.a_id)}</code> (a) → <code>{escape(diff.b_id)}</code> (b){note}"
        "<table style='border-collapse:collapse;margin:4px 0'><tr>"
        f"<th style='{_CELL}'>step</th><th style='{_CELL}'>status</th>"
        f"<th style='{_CELL}'>what changed</th><th style='{_CELL}'>time b − a</th></tr>"
        f"{''.join(rows)}</table>{ends}<b>{escape(diff.verdict)}</b>{subruns}</div>"
    )
