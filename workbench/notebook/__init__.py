"""The notebook workbench: `Stepper`, `TraceView`, `RerunPanel`, and the builders behind them.

Needs the ``notebook`` extra (ipywidgets, plotly, pandas). The builders are plain functions of run
data (step records, span tables) returning DataFrames, plotly figures or HTML, usable without
widgets: in scripts, tests and `workbench.report`.
"""

from workbench.notebook.data import as_result, combine_results, run_view_data, trace_figures
from workbench.notebook.edit import (
    MessageFormatError,
    messages_from_json,
    messages_from_text,
    messages_to_json,
    messages_to_text,
)
from workbench.notebook.html import (
    message_html,
    messages_diff_html,
    messages_html,
    status_html,
    step_html,
)
from workbench.notebook.rerun_panel import RerunPanel
from workbench.notebook.spans import normalize_spans, spans_from_steps, waterfall_figure
from workbench.notebook.stepper import Stepper
from workbench.notebook.tables import (
    step_table,
    timing_breakdown,
    timing_figure,
    tokens_figure,
)
from workbench.notebook.trace_view import TraceView
from workbench.notebook.tree import agents_table, walk

__all__ = [
    "MessageFormatError",
    "RerunPanel",
    "Stepper",
    "TraceView",
    "agents_table",
    "as_result",
    "combine_results",
    "message_html",
    "messages_diff_html",
    "messages_from_json",
    "messages_from_text",
    "messages_html",
    "messages_to_json",
    "messages_to_text",
    "normalize_spans",
    "run_view_data",
    "spans_from_steps",
    "status_html",
    "step_html",
    "step_table",
    "timing_breakdown",
    "timing_figure",
    "tokens_figure",
    "trace_figures",
    "walk",
    "waterfall_figure",
]
