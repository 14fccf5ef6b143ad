"""Tables and per-step charts from step records: step table, timing breakdown, tokens, cost.

Plain functions of `StepRecord` sequences, so they work on any run (with or without telemetry, live
or loaded from a store) and are tested without a browser.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TypeAlias

import numpy as np
import pandas as pd
import plotly.graph_objects as go

from workbench.notebook._style import TEMPLATE
from workbench.notebook.spans import hook_phase
from workbench.records import StepRecord, step_labels

__all__ = [
    "STEP_COLUMNS",
    "TIMING_PARTS",
    "StepsOrFrame",
    "step_labels",
    "step_table",
    "steps_text",
    "timing_breakdown",
    "timing_figure",
    "token_columns",
    "tokens_figure",
]

STEP_COLUMNS = (
    "step",
    "label",
    "execution_id",
    "status",
    "stop_reason",
    "prepare_ms",
    "inference_ms",
    "tools_ms",
    "hooks_ms",
    "continuation_ms",
    "telemetry_ms",
    "total_ms",
    "ttft_ms",
    "input_tokens",
    "output_tokens",
    "cost",
    "tool_calls",
    "messages_in",
    "new_messages",
    "hook_errors",
)
"""Columns of `step_table`, in order. Times are milliseconds as measured by the loop."""

TIMING_PARTS: dict[str, str] = {
    "prepare": "#a4b0be",
    "inference": "#0984e3",
    "tools": "#e17055",
    "hooks": "#00b894",
    "continuation": "#ced6e0",
}
"""The stacked parts of `timing_breakdown` and their colours."""


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
        return f"{count} {word}"
    resumed = len(steps) - count
    return f"{count} {word} ({len(steps)} records: {resumed} resumed after a pause)"


def step_table(steps: Sequence[StepRecord]) -> pd.DataFrame:
    """One row per step record with its status, timing (ms), tokens, cost and tool calls."""
    rows = []
    for step, label in zip(steps, step_labels(steps), strict=True):
        t = step.timing
        rows.append(
            (
                step.index,
                label,
                step.execution_id,
                step.status.value,
                step.stop_reason.value if step.stop_reason is not None else None,
                t.prepare * 1e3,
                t.inference * 1e3,
                t.tools * 1e3,
                t.hooks * 1e3,
                t.continuation * 1e3,
                t.telemetry * 1e3,
                t.total * 1e3,
                t.time_to_first_token * 1e3 if t.time_to_first_token is not None else np.nan,
                step.usage.input_tokens,
                step.usage.output_tokens,
                step.usage.cost if step.usage.cost is not None else np.nan,
                ", ".join(f"{o.name}:{o.status}" for o in step.tool_outcomes),
                len(step.messages_in),
                len(step.new_messages),
                len(step.hook_errors),
            )
        )
    return pd.DataFrame(rows, columns=list(STEP_COLUMNS))


StepsOrFrame: TypeAlias = Sequence[StepRecord] | pd.DataFrame
"""Step records, or a step table with ``*_ms`` columns (`step_table`, ``Telemetry.steps_df()``)."""


def timing_breakdown(steps: StepsOrFrame) -> pd.DataFrame:
    """Where each step's time went, in ms, as parts that add up to the step's wall time.

    Hooks run inside a phase (PreToolUse inside TOOLS, Stop inside CONTINUATION, ...), so their
    time is taken out of that phase and shown as its own part; nothing is counted twice. From
    step records the phase of each hook is known; a step table only has the hooks' total, which
    is taken out of tools, then continuation, then prepare. Indexed by step label.
    """
    if isinstance(steps, pd.DataFrame):
        return _breakdown_from_table(steps)
    rows = []
    for step in steps:
        t = step.timing
        parts = {
            "prepare": t.prepare,
            "inference": t.inference,
            "tools": t.tools,
            "continuation": t.continuation,
            "hooks": 0.0,
        }
        for hook in t.per_hook:
            phase = hook_phase(hook.event)
            if phase == "outside":  # between phases: its own time, on top of theirs
                parts["hooks"] += hook.duration
                continue
            taken = min(hook.duration, parts[phase])
            parts[phase] -= taken
            parts["hooks"] += taken
        rows.append({part: parts[part] * 1e3 for part in TIMING_PARTS})
    frame = pd.DataFrame(rows, columns=list(TIMING_PARTS), dtype=float)
    frame.index = pd.Index(step_labels(steps), name="step")
    return frame


def _breakdown_from_table(table: pd.DataFrame) -> pd.DataFrame:
    frame = pd.DataFrame(
        {part: table[f"{part}_ms"].fillna(0.0).astype(float).to_numpy() for part in TIMING_PARTS}
    )
    hooks = frame["hooks"].to_numpy().copy()
    for phase in ("tools", "continuation", "prepare"):
        taken = pd.Series(hooks).clip(upper=frame[phase]).to_numpy()
        frame[phase] -= taken
        hooks -= taken
    frame.index = pd.Index(_table_labels(table), name="step")
    return frame


def _table_labels(table: pd.DataFrame) -> list[str]:
    if "label" in table.columns:
        return [str(label) for label in table["label"]]
    return [str(step) for step in table["step"]]


def timing_figure(steps: StepsOrFrame, *, title: str = "Time per step") -> go.Figure:
    """A stacked bar per step: prepare, inference, tools, hooks, continuation (ms)."""
    frame = timing_breakdown(steps)
    labels = np.array(frame.index, dtype=object)  # arrays: plotly checks lists item by item
    traces = [
        go.Bar(
            name=part,
            x=labels,
            y=frame[part].to_numpy(),
            marker={"color": colour},
            hovertemplate=f"step %{{x}}<br>{part}: %{{y:.3f}} ms<extra></extra>",
        )
        for part, colour in TIMING_PARTS.items()
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


def token_columns(
    steps: StepsOrFrame,
) -> tuple[list[str], list[int], list[int], list[float | None]]:
    """Per step: its label, input tokens, output tokens and cost (None where unknown)."""
    if isinstance(steps, pd.DataFrame):
        costs = steps["cost"].tolist() if "cost" in steps.columns else [None] * len(steps)
        return (
            _table_labels(steps),
            [int(v) for v in steps["input_tokens"].fillna(0)],
            [int(v) for v in steps["output_tokens"].fillna(0)],
            [None if c is None or pd.isna(c) else float(c) for c in costs],
        )
    return (
        step_labels(steps),
        [s.usage.input_tokens for s in steps],
        [s.usage.output_tokens for s in steps],
        [s.usage.cost for s in steps],
    )


def tokens_figure(steps: StepsOrFrame, *, title: str = "Tokens per step") -> go.Figure:
    """Stacked input/output tokens per step, with the cumulative cost (USD) on a second axis.

    A step whose cost is unknown (no price for the model) breaks the cost line from there on,
    rather than pretending it was free; with no cost at all the line is left out.
    """
    labels, inputs, outputs, costs = token_columns(steps)
    x = np.array(labels, dtype=object)  # arrays: plotly checks lists item by item
    traces = [
        go.Bar(name="input tokens", x=x, y=np.array(inputs), marker={"color": "#74b9ff"}),
        go.Bar(name="output tokens", x=x, y=np.array(outputs), marker={"color": "#0984e3"}),
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
