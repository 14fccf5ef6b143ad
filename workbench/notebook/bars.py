"""Per-step bar charts as plain HTML: time and tokens per step for the standalone report.

The notebook draws these with plotly (`timing_figure`, `tokens_figure`); the report draws the
same numbers of the same `Trace` (`timing_breakdown`, `token_columns`) as rows of stacked
``div`` bars, because inlining plotly.js made every report 4.8 MB for two small charts. A
bar's parts carry their value in a tooltip and the total is written beside it, so nothing
needs a script.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape

from workbench.models.prices import dollars
from workbench.notebook.tables import TIMING_PARTS, timing_breakdown, token_columns
from workbench.telemetry.trace import Trace

__all__ = ["MAX_BARS", "grouped", "stacked_bars_html", "timing_bars_html", "tokens_bars_html"]

TOKEN_PARTS = {"input tokens": "#74b9ff", "output tokens": "#0984e3"}
"""The stacked parts of the tokens chart and their colours (as in `tokens_figure`)."""


MAX_BARS = 500
"""The most bars a chart draws: past that, each bar is a run of consecutive steps."""

Bar = tuple[str, Mapping[str, float], str]
"""A bar: its label, the value of each part, a note written after its total."""


def grouped(rows: Sequence[Bar], limit: int = MAX_BARS) -> list[Bar]:
    """``rows``, or runs of consecutive rows summed into a bar each past ``limit`` rows.

    A run's bar is labelled by its first and last step and noted with how many it holds (the
    last one's note kept). A bar per step of a 16,000-step run is 9 MB of HTML, and no one can
    tell its bars apart.
    """
    if len(rows) <= limit:
        return list(rows)
    size = -(-len(rows) // limit)
    out: list[Bar] = []
    for start in range(0, len(rows), size):
        chunk = rows[start : start + size]
        parts: dict[str, float] = {}
        for _, values, _ in chunk:
            for part, value in values.items():
                parts[part] = parts.get(part, 0.0) + value
        first, last = chunk[0][0], chunk[-1][0]
        label = first if len(chunk) == 1 else f"{first} to {last.removeprefix('step ')}"
        out.append((label, parts, f" ({len(chunk)} steps){chunk[-1][2]}"))
    return out


def stacked_bars_html(
    rows: Sequence[Bar],
    colours: Mapping[str, str],
    *,
    unit: str,
    digits: int = 3,
    empty: str = "nothing to draw",
) -> str:
    """One stacked bar per row (label, value of each part, a note), scaled to the largest.

    At most `MAX_BARS` bars: more rows are drawn as runs of consecutive ones (`grouped`).
    """
    rows = grouped(rows)
    largest = max((sum(parts.values()) for _, parts, _ in rows), default=0.0)
    if largest <= 0:
        return (
            f'<div class="wb-bars-empty" style="color:#888;font-style:italic">{escape(empty)}</div>'
        )
    legend = "".join(
        f'<span style="margin-right:10px"><span style="display:inline-block;width:10px;'
        f'height:10px;background:{c};margin-right:3px"></span>{escape(p)}</span>'
        for p, c in colours.items()
    )
    lines = []
    for label, parts, note in rows:
        segments = "".join(
            f'<div title="{escape(part)}: {value:,.{digits}f} {unit}" '
            f'style="background:{colours[part]};width:{value / largest * 100:.3f}%"></div>'
            for part, value in parts.items()
            if value > 0
        )
        total = sum(parts.values())
        lines.append(
            f'<tr><td style="white-space:nowrap;padding-right:8px">{escape(label)}</td>'
            f'<td style="width:100%"><div class="wb-bar" style="display:flex;height:14px">'
            f"{segments}</div></td>"
            f'<td style="white-space:nowrap;text-align:right;padding-left:8px">'
            f"{total:,.{digits}f} {unit}{escape(note)}</td></tr>"
        )
    return (
        f'<div class="wb-bars" style="font-size:12px"><div style="margin:4px 0">{legend}</div>'
        f'<table style="width:100%;border-collapse:collapse">{"".join(lines)}</table></div>'
    )


def timing_bars_html(trace: Trace) -> str:
    """Where each step's time went (ms): prepare, inference, tools, hooks, continuation."""
    frame = timing_breakdown(trace)
    rows = [  # by position: the labels are unique, but a row is read where it is
        (f"step {label}", dict(zip(TIMING_PARTS, map(float, values), strict=True)), "")
        for label, values in zip(frame.index, frame[list(TIMING_PARTS)].to_numpy(), strict=True)
    ]
    return stacked_bars_html(rows, TIMING_PARTS, unit="ms", empty="no steps yet")


def tokens_bars_html(trace: Trace) -> str:
    """Input and output tokens per step, with the cost so far when the model has a price."""
    rows = []
    total: float | None = 0.0
    for label, inputs, outputs, cost in zip(*token_columns(trace), strict=True):
        total = None if total is None or cost is None else total + cost
        note = f" · {dollars(total)} so far" if total else ""
        parts = {"input tokens": float(inputs), "output tokens": float(outputs)}
        rows.append((f"step {label}", parts, note))
    return stacked_bars_html(
        rows, TOKEN_PARTS, unit="tokens", digits=0, empty="the model reported no tokens"
    )
