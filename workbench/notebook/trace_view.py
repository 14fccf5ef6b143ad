"""`TraceView`: a run or trace at a glance: its steps, span waterfall, time and tokens per step.

The widget calls the one door (`workbench.trace_of`) once and lays out what the builders draw
from that `Trace` (`trace_figures`, its step table and, for a run tree, its agents).
"""

from __future__ import annotations

from html import escape

import ipywidgets as widgets
import plotly.graph_objects as go

from workbench.notebook._output import figure_output, show
from workbench.notebook.drawn_tables import failed_rows, table_output
from workbench.notebook.spans import waterfall_figure
from workbench.notebook.stepper import Stepper
from workbench.notebook.tables import for_people, timing_figure, tokens_figure, trace_heading
from workbench.report import trace_top
from workbench.telemetry.core import Telemetry
from workbench.telemetry.trace import Trace
from workbench.traces import TraceSource, trace_of

__all__ = ["TraceView", "trace_figures", "trace_top_html"]


def trace_figures(trace: Trace) -> dict[str, go.Figure]:
    """The waterfall, the timing breakdown and the tokens per step, by name."""
    return {
        "waterfall": waterfall_figure(trace),
        "timing": timing_figure(trace),
        "tokens": tokens_figure(trace),
    }


def trace_top_html(trace: Trace) -> str:
    """What TraceView says first: what went wrong, then how many steps, and what is unread.

    What went wrong is the summary line and each error with its traceback (`trace_top`); a
    run whose process ended while it ran (`Trace.interrupted`), why it will not end.
    """
    problems = "".join(f"<li>{escape(p)}</li>" for p in trace.problems()[:20])
    return (
        trace_top(trace)
        + f"<b>{escape(trace_heading(trace))}</b>"
        + (f"<ul class='wb-problems'>{problems}</ul>" if problems else "")
    )


class TraceView(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A run or trace at a glance: the step table, a span waterfall, time and tokens per step.

    ``TraceView(result)`` works for any run, ``TraceView(trace)`` for a loaded trace; with
    ``telemetry=agent.telemetry`` a run's recorded spans are shown, without it the spans its
    records make (the same spans, as ``workbench export`` writes them). ``trace`` is what it
    shows; ``table`` and ``figures`` are the DataFrame and plotly figures, for further use; a
    trace of several agents also shows ``agents``, one row per agent, under the step table.
    """

    def __init__(
        self, source: TraceSource | Stepper, *, telemetry: Telemetry | None = None
    ) -> None:
        run = source.run if isinstance(source, Stepper) else source
        self.trace = trace_of(run, telemetry=telemetry)
        self.table = self.trace.steps_df()
        self.figures = trace_figures(self.trace)
        agents = self.trace.agents()
        self.agents = agents if len(agents) > 1 else None
        tables = {"table": self.table}
        if self.agents is not None:  # a run tree: what each agent took, under the step table
            tables["agents"] = self.agents
        self.outputs = {name: widgets.Output() for name in (*tables, *self.figures)}
        failed = {"table": failed_rows(self.trace)}  # drawn red, as the report draws them
        for name, frame in tables.items():  # named as a person says them; code reads `table`
            show(self.outputs[name], table_output(for_people(frame), marked=failed.get(name, ())))
        for name, figure in self.figures.items():
            show(self.outputs[name], figure_output(figure))
        super().__init__([widgets.HTML(trace_top_html(self.trace)), *self.outputs.values()])
