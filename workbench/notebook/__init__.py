"""The notebook workbench: the Stepper, trace views, explorer, re-run panel, runs browser, builders.

Needs the ``notebook`` extra (ipywidgets, anywidget, plotly, pandas). The builders are plain
functions of a `Trace` (`workbench.trace_of` makes one of any run or trace) or of step records,
returning DataFrames, plotly figures or HTML, usable without widgets: in scripts, tests and
`workbench.report`.
"""

from workbench.notebook.edit import (
    MessageFormatError,
    messages_from_json,
    messages_from_text,
    messages_to_json,
    messages_to_text,
)
from workbench.notebook.explorer import TraceExplorer
from workbench.notebook.explorer_data import SpanFilter
from workbench.notebook.explorer_html import genai_messages_html, span_detail_html
from workbench.notebook.explorer_page import explorer_page_html
from workbench.notebook.explorer_view import ExplorerView
from workbench.notebook.history import StepperHistory
from workbench.notebook.html import (
    message_html,
    messages_diff_html,
    messages_html,
    step_html,
)
from workbench.notebook.reprs import phase_event_html, run_diff_html, run_result_html
from workbench.notebook.rerun_panel import RerunPanel
from workbench.notebook.runs_browser import RunsBrowser
from workbench.notebook.runs_view import RunsView, compare_html
from workbench.notebook.spans import waterfall_figure
from workbench.notebook.status_line import status_html
from workbench.notebook.stepper import Stepper
from workbench.notebook.tables import agents_table, timing_breakdown, timing_figure, tokens_figure
from workbench.notebook.trace_view import TraceView, trace_figures
from workbench.traces import combine_results

__all__ = [
    "ExplorerView",
    "MessageFormatError",
    "RerunPanel",
    "RunsBrowser",
    "RunsView",
    "SpanFilter",
    "Stepper",
    "StepperHistory",
    "TraceExplorer",
    "TraceView",
    "agents_table",
    "combine_results",
    "compare_html",
    "explorer_page_html",
    "genai_messages_html",
    "message_html",
    "messages_diff_html",
    "messages_from_json",
    "messages_from_text",
    "messages_html",
    "messages_to_json",
    "messages_to_text",
    "phase_event_html",
    "run_diff_html",
    "run_result_html",
    "span_detail_html",
    "status_html",
    "step_html",
    "timing_breakdown",
    "timing_figure",
    "tokens_figure",
    "trace_figures",
    "waterfall_figure",
]
