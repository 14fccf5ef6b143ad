"""The notebook workbench: the Stepper, trace views, explorer, re-run panel, runs browser, builders.

Needs the ``notebook`` extra (ipywidgets, anywidget, plotly, pandas). The builders are plain
functions of run data (step records, span tables) returning DataFrames, plotly figures or HTML,
usable without widgets: in scripts, tests and `workbench.report`.
"""

from workbench.notebook.data import as_result, combine_results, run_view_data, trace_figures
from workbench.notebook.edit import (
    MessageFormatError,
    messages_from_json,
    messages_from_text,
    messages_to_json,
    messages_to_text,
)
from workbench.notebook.explorer import TraceExplorer
from workbench.notebook.explorer_data import ExplorerSpan, SpanFilter, SpanTree, explorer_spans
from workbench.notebook.explorer_html import genai_messages_html, span_detail_html
from workbench.notebook.explorer_view import ExplorerView, explorer_page_html
from workbench.notebook.html import (
    message_html,
    messages_diff_html,
    messages_html,
    status_html,
    step_html,
)
from workbench.notebook.reprs import phase_event_html, run_diff_html, run_result_html
from workbench.notebook.rerun_panel import RerunPanel
from workbench.notebook.runs_browser import RunsBrowser
from workbench.notebook.runs_view import RunsView, compare_html
from workbench.notebook.spans import normalize_spans, run_span_rows, waterfall_figure
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
    "ExplorerSpan",
    "ExplorerView",
    "MessageFormatError",
    "RerunPanel",
    "RunsBrowser",
    "RunsView",
    "SpanFilter",
    "SpanTree",
    "Stepper",
    "TraceExplorer",
    "TraceView",
    "agents_table",
    "as_result",
    "combine_results",
    "compare_html",
    "explorer_page_html",
    "explorer_spans",
    "genai_messages_html",
    "message_html",
    "messages_diff_html",
    "messages_from_json",
    "messages_from_text",
    "messages_html",
    "messages_to_json",
    "messages_to_text",
    "normalize_spans",
    "phase_event_html",
    "run_diff_html",
    "run_result_html",
    "run_span_rows",
    "run_view_data",
    "span_detail_html",
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
