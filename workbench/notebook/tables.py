"""Per-step charts of a trace: where each step's time went, and its tokens and cost.

Plain functions of a `Trace` (`workbench.trace_of` makes one of any run or trace), reading its
one step table (``trace.steps_df()``), so they draw any run (with or without telemetry, live or
loaded from a store) and any loaded trace the same way, and are tested without a browser.
`steps_text` and `step_labels` say how many step records a run has and label them, for the
Stepper's step picker and a result's display.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from workbench.notebook._style import TEMPLATE
from workbench.records import StepRecord, step_labels
from workbench.telemetry import names as n
from workbench.telemetry.trace import Trace
from workbench.traces import RunSource, trace_of
from workbench.waits import SHORTEST, left_out, waited_text

__all__ = [
    "READABLE_COLUMNS",
    "TIMING_PARTS",
    "agents_table",
    "clocks_behind",
    "for_people",
    "hook_phase",
    "step_labels",
    "steps_text",
    "timing_breakdown",
    "timing_figure",
    "token_columns",
    "tokens_figure",
    "trace_heading",
    "waited_note",
]

READABLE_COLUMNS: dict[str, str] = {
    "label": "step",
    "agent": "agent",
    "errors": "failed spans",
    "status": "run after it",
    "stop_reason": "stop reason",
    "tools": "tool calls",
    "runs": "runs",
    "steps": "steps",
    "duration_ms": "time (ms)",
    "prepare_ms": "prepare (ms)",
    "inference_ms": "model (ms)",
    "tries": "model tries",
    "tools_ms": "tools (ms)",
    "hooks_ms": "hooks (ms)",
    "continuation_ms": "continuation (ms)",
    "telemetry_ms": "recording (ms)",  # what recording the step cost: its spans, store writes
    "ttft_ms": "first token (ms)",
    "input_tokens": "tokens in",
    "output_tokens": "tokens out",
    "cost": "cost ($)",
}
"""The columns of the step and agent tables a person is shown, named as a person says them, in
the order shown. The DataFrames keep their names (``ttft_ms``...) for code."""
_COUNTS = ("errors", "runs", "steps", "tries", "input_tokens", "output_tokens")
"""Columns of whole numbers: shown as such when one is missing (a column holding a NaN is a
column of floats, and another framework's failed model call has no tokens: "217.000")."""
_PAST_INT64 = 2.0**63
"""A count this large is no whole number of a table's (a trace from elsewhere said 2**70 tokens):
its column is shown as the floats it holds, where casting it raised and took the view with it."""


def for_people(frame: pd.DataFrame) -> pd.DataFrame:
    """A step or agent table to look at, its columns as `READABLE_COLUMNS` names them.

    Ids and start times (for code) are left out, a step's label says which step it is, and a
    column with no value in any row, or an agent column of a single agent, is dropped: a run
    whose steps ran no hook has no hooks column, one nothing recorded (no telemetry, no store)
    no recording column, rather than a column of zeros that reads as measured. A cost column
    with nothing above $0 (offline models, or none with a price) is left out as the summary
    leaves its cost out: a column of 0.000 reads as a price known to be zero. The model tries
    are shown only when a client asked again after a failed call (the proxy's SDK retries).
    Counts read as whole numbers, a missing one as an empty cell.
    """
    kept = [c for c in READABLE_COLUMNS if c in frame.columns]
    shown = frame[kept].dropna(axis=1, how="all")
    counts = {
        c: shown[c].round().astype("Int64")
        for c in _COUNTS
        if c in shown and not (shown[c].abs() >= _PAST_INT64).any()  # else shown as it is
    }
    shown = shown.assign(**counts)  # a missing one stays missing (<NA>)
    if "cost" in shown and not (shown["cost"] > 0).any():
        shown = shown.drop(columns="cost")
    if "tries" in shown and not (shown["tries"] > 1).any():  # every call made once
        shown = shown.drop(columns="tries")
    if "agent" in shown and "label" in shown:
        if shown["agent"].nunique() < 2:
            shown = shown.drop(columns="agent")
        else:  # the agent has its column: the label need not say it again
            labels = [
                str(label).replace(f" · {agent}", "", 1)
                for label, agent in zip(shown["label"], shown["agent"], strict=True)
            ]
            shown = shown.assign(label=labels)
    return shown.rename(columns=READABLE_COLUMNS)


TIMING_PARTS: dict[str, str] = {
    "prepare": "#a4b0be",
    "inference": "#0984e3",
    "tools": "#e17055",
    "hooks": "#00b894",
    "continuation": "#ced6e0",
}
"""The stacked parts of `timing_breakdown` and their colours."""

_HOOK_PHASES = {
    "PreToolUse": "tools",
    "PostToolUse": "tools",
    "PostToolUseFailure": "tools",
    "Notification": "tools",
    "SubagentStart": "tools",
    "SubagentStop": "tools",
    "PermissionRequest": "tools",
    "PermissionDenied": "tools",
    "Stop": "continuation",
    "PreCompact": "prepare",
}


def hook_phase(event: str) -> str:
    """The phase whose time includes a hook event's: prepare, tools, continuation or outside.

    SessionStart, UserPromptSubmit and SessionEnd run between phases ("outside").

    >>> hook_phase("PreToolUse"), hook_phase("SessionEnd")
    ('tools', 'outside')
    """
    return _HOOK_PHASES.get(event, "outside")


def steps_text(steps: Sequence[StepRecord]) -> str:
    """How many steps the records make, saying so when a step paused and resumed (two records).

    >>> steps_text([])
    'no steps yet'
    """
    if not steps:
        return "no steps yet"
    count = len({(s.run_id, s.index) for s in steps})
    word = "step" if count == 1 else "steps"
    if count == len(steps):
        return f"{count:,} {word}"
    resumed = len(steps) - count
    return f"{count:,} {word} ({len(steps):,} records: {resumed:,} resumed after a pause)"


def _hooks_by_phase(trace: Trace) -> dict[str, dict[str, float]]:
    """For each step span, the milliseconds its hooks took inside each phase."""
    tree = trace.tree
    out: dict[str, dict[str, float]] = {}
    for position in range(len(tree)):
        span = tree.span_at(position)
        parent = tree.parent_of(position)
        if span.category != "hook" or parent is None:
            continue
        step = tree.span_at(parent)
        if step.category != "step":
            continue
        phase = hook_phase(span.name.partition(" ")[2])
        parts = out.setdefault(step.span_id, {})
        parts[phase] = parts.get(phase, 0.0) + span.duration_ns / 1e6
    return out


def timing_breakdown(trace: Trace) -> pd.DataFrame:
    """Where each step's time went, in ms, as parts that add up to the step's wall time.

    Hooks run inside a phase (PreToolUse inside TOOLS, Stop inside CONTINUATION, ...), so their
    time is taken out of that phase and shown as its own part; nothing is counted twice. Another
    framework's step is its model call (inference) and the tool calls after it. Indexed by the
    step table's labels.
    """
    table = trace.steps_df()
    hooks = _hooks_by_phase(trace)
    rows = []
    for row in table.itertuples(index=False):
        parts = {
            part: _ms(getattr(row, f"{part}_ms")) for part in ("prepare", "inference", "tools")
        }
        parts["continuation"] = _ms(row.continuation_ms)
        parts["hooks"] = 0.0
        for phase, spent in hooks.get(row.span_id, {}).items():
            taken = spent if phase == "outside" else min(spent, parts[phase])
            if phase != "outside":
                parts[phase] -= taken
            parts["hooks"] += taken
        rows.append({part: parts[part] for part in TIMING_PARTS})
    frame = pd.DataFrame(rows, columns=list(TIMING_PARTS), dtype=float)
    frame.index = pd.Index([str(label) for label in table["label"]], name="step")
    return frame


def _ms(value: float | None) -> float:
    """A duration from the step table (NaN where the trace has none) as a number of ms."""
    return 0.0 if value is None or pd.isna(value) else float(value)


def timing_figure(trace: Trace, *, title: str = "Time per step") -> go.Figure:
    """A stacked bar per step: prepare, inference, tools, hooks, continuation (ms).

    Hooks have a bar only in a run where a hook ran: in the legend of any other, "hooks" said
    that something was measured, as the column of zeros in the step table did.
    """
    frame = timing_breakdown(trace)
    labels = np.array(frame.index, dtype=object)  # arrays: plotly checks lists item by item
    parts = {p: c for p, c in TIMING_PARTS.items() if p != "hooks" or frame["hooks"].any()}
    traces = [
        go.Bar(
            name=part,
            x=labels,
            y=frame[part].to_numpy(),
            marker={"color": colour},
            hovertemplate=f"step %{{x}}<br>{part}: %{{y:.3f}} ms<extra></extra>",
        )
        for part, colour in parts.items()
    ]
    layout = dict(
        title=title,
        barmode="stack",
        xaxis={"title": "step", "type": "category"},
        yaxis={"title": "ms"},
        **_LAYOUT,
    )
    return go.Figure(data=traces, layout=layout)  # the layout at once: update_layout is slow


_LAYOUT = {  # the legend under the plot: above it, a long title and the legend overlapped
    "legend": {"orientation": "h", "y": -0.25, "yanchor": "top", "x": 0, "traceorder": "normal"},
    "margin": {"l": 10, "r": 10, "t": 50, "b": 40},
    "template": TEMPLATE,
    "height": 360,
}


def token_columns(trace: Trace) -> tuple[list[str], list[int], list[int], list[float | None]]:
    """Per step: its label, input tokens, output tokens and cost (None where unknown)."""
    table = trace.steps_df()
    return (
        [str(label) for label in table["label"]],
        [int(v) for v in table["input_tokens"].fillna(0)],
        [int(v) for v in table["output_tokens"].fillna(0)],
        [None if pd.isna(c) else float(c) for c in table["cost"]],
    )


def tokens_figure(trace: Trace, *, title: str = "Tokens per step") -> go.Figure:
    """Stacked input/output tokens per step, with the cumulative cost (USD) on a second axis.

    A step whose cost is unknown (no price for the model) breaks the cost line from there on,
    rather than pretending it was free; with no cost at all the line is left out.
    """
    labels, inputs, outputs, costs = token_columns(trace)
    x = np.array(labels, dtype=object)  # arrays: plotly checks lists item by item
    # floats: a count past 64 bits (a trace from elsewhere) is no JSON integer the page takes
    traces = [
        go.Bar(name="input tokens", x=x, y=np.array(inputs, float), marker={"color": "#74b9ff"}),
        go.Bar(name="output tokens", x=x, y=np.array(outputs, float), marker={"color": "#0984e3"}),
    ]
    cumulative: list[float | None] = []
    total: float | None = 0.0
    for cost in costs:
        total = None if total is None or cost is None else total + cost
        cumulative.append(total)
    if any(c for c in cumulative):
        traces.append(
            go.Scatter(
                name="cost so far (USD)",
                x=x,
                y=np.array(cumulative, dtype=object),
                yaxis="y2",
                mode="lines+markers",
                line={"color": "#d63031"},
            )
        )
    counted = any(inputs) or any(outputs)
    layout = dict(
        title=title if counted else f"{title} (the model reported no tokens)",
        barmode="stack",
        xaxis={"title": "step", "type": "category"},
        yaxis={"title": "tokens", "rangemode": "tozero", **({} if counted else {"range": [0, 1]})},
        yaxis2={"title": "USD", "overlaying": "y", "side": "right", "showgrid": False},
        **_LAYOUT,
    )
    return go.Figure(data=traces, layout=layout)


def agents_table(run: RunSource) -> pd.DataFrame:
    """One row per agent of a run tree: its runs, steps, own tokens and cost, where time went.

    The trace's agents table (`Trace.agents`), for a run.
    """
    return trace_of(run).agents()


def trace_heading(trace: Trace) -> str:
    """How many steps (and agents) the trace has, and what could not be read of it.

    >>> trace_heading(Trace.of([]))
    'no steps yet'
    """
    heads = trace.step_heads()
    if not heads:
        return "no steps yet"
    agents = {head.agent for head in heads}
    count = len({(head.agent, head.run_id, head.step) for head in heads})
    text = f"{count:,} step{'s' if count != 1 else ''}"
    if len(agents) > 1:
        text += f" of {len(agents)} agents"
    resumed = len(heads) - count
    if resumed:
        text += f" ({resumed} resumed after a pause)"
    problems = trace.problems()
    if problems:
        text += f"; {len(problems)} value{'s' if len(problems) > 1 else ''} could not be read"
    return text + waited_note(trace, "; ")


def waited_note(trace: Trace, before: str = "") -> str:
    """What a stepped run's views left out: ``12.3 s waiting on you left out`` (`Trace.waits`).

    Empty for a trace with less than a twentieth of a second of it (a run nobody stepped; a
    run driven from code records no wait shorter than `waits.SHORTEST`). The views' own
    drawing of it (`Trace.drawn`) is said apart: nobody waited then. A run its clocks say
    resumed before it paused (`clocks_behind`) left no wait out there, and says so.
    """
    notes = [left_out(trace.waited - trace.drawn)]
    if trace.drawn >= SHORTEST:  # a run driven from a cell while the Stepper showed it
        notes.append(f"{waited_text(trace.drawn)} drawing the views left out")
    if (behind := clocks_behind(trace)) >= SHORTEST:
        notes.append(
            f"resumed {waited_text(behind)} before its pause by the clocks (one is off): "
            "drawn as recorded"
        )
    note = "; ".join(text for text in notes if text)
    return before + note if note else ""


def clocks_behind(trace: Trace) -> float:
    """Seconds a run's resumed step began before that step, paused, ended, by its spans' clocks.

    Zero unless the clocks disagree: the run paused where the clock was ahead (another machine)
    or resumed after this one's was set back. Its pause (`AgentState.paused_at`, in the
    future) is then no wait (`Waits.away` clamps it), and its executions are drawn where their
    clocks put them, the resumed one first.
    """
    if not any(s.attributes.get(n.STEP_RESUMED) for s in trace.spans):
        return 0.0  # no step resumed after a pause: a view that needs no step table builds none
    steps: dict[tuple[Any, Any], list[dict[str, Any]]] = {}
    for row in trace.step_rows():
        steps.setdefault((row["run_id"], row["step"]), []).append(row)
    behind = 0.0
    for rows in steps.values():
        paused = [r["start"] + r["duration_ms"] * 1e6 for r in rows if not r["resumed"]]
        again = [r["start"] for r in rows if r["resumed"]]
        if paused and again:
            behind = max(behind, (max(paused) - min(again)) / 1e9)
    return behind
