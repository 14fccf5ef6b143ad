"""`TraceView`: one run's step table, span waterfall, timing breakdown and tokens.

The figures come from `workbench.notebook.data.trace_figures`; the widget only lays them out.
"""

from __future__ import annotations

import ipywidgets as widgets

from workbench.notebook._output import figure_output, show, table_output
from workbench.notebook.data import Source, Spans, SpanSource, run_view_data, trace_figures
from workbench.notebook.tables import steps_text

__all__ = ["TraceView"]


class TraceView(widgets.VBox):  # type: ignore[misc]  # ipywidgets is untyped
    """A run at a glance: the step table, a span waterfall, time and tokens per step.

    ``TraceView(result)`` works for any run; without ``telemetry=agent.telemetry`` its spans are
    rebuilt from its step records, as ``workbench export`` writes them. ``table`` and
    ``figures`` are the DataFrame and plotly figures shown, for further use; a run with
    sub-agents also shows
    ``agents``, one row per agent of the tree (`agents_table`), under the step table.
    """

    def __init__(
        self,
        source: Source,
        *,
        telemetry: SpanSource | None = None,
        spans: Spans | None = None,
    ) -> None:
        self.data = run_view_data(source, telemetry=telemetry, spans=spans)
        self.table = self.data.table
        self.figures = trace_figures(self.data)
        self.agents = self.data.agents
        tables = {"table": self.table}
        if self.agents is not None:  # a run tree: what each agent took, under the step table
            tables["agents"] = self.agents
        self.outputs = {name: widgets.Output() for name in (*tables, *self.figures)}
        for name, frame in tables.items():
            show(self.outputs[name], table_output(frame))
        for name, figure in self.figures.items():
            show(self.outputs[name], figure_output(figure))
        heading = widgets.HTML(f"<b>{steps_text(self.data.steps)}</b>" if self.data.steps else "")
        super().__init__([heading, *self.outputs.values()])
