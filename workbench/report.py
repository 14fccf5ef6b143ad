"""A run or a loaded trace as one standalone HTML file: steps, explorer, time, tokens, messages.

The summary, the step table (and what each agent took, for a run tree), the trace explorer,
time and tokens per step, and each step's messages. Everything is in the file (the explorer's
script and its data, the charts as plain HTML bars), so it opens anywhere with no network, and
stays small: no plotting library is inlined. The content is built by the notebook builders
(`workbench.notebook`), so the report shows what the notebook views show. Needs the
``notebook`` extra (pandas).

A `Trace` (`load_trace`: a file or a backend, ours or another framework's) has no step records:
its report is built from its spans alone (the step table of ``steps_df()``, the messages its
model calls captured), so a trace from Jaeger or Phoenix opens the same way without a store.
"""

from __future__ import annotations

from collections.abc import Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import TraceLoadError
from workbench.telemetry.trace import Trace, conversation_chats

if TYPE_CHECKING:
    import pandas as pd

    from workbench.agent import AgentRun, RunResult
    from workbench.messages import Message
    from workbench.notebook.data import Spans, SpanSource

__all__ = ["report_html", "trace_summary", "write_report"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1200px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table.wb-summary td { padding: 2px 12px 2px 0; vertical-align: top; }
table.dataframe { border-collapse: collapse; font-size: 12px; }
table.dataframe td, table.dataframe th { border: 1px solid #e0e0e0; padding: 2px 6px; }
section.wb-step-section { border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px 12px;
                          margin: 12px 0; }
nav a { margin-right: 8px; }
div.wb-table { overflow-x: auto; max-width: 100%; }
"""


def report_html(
    source: RunResult | AgentRun | Sequence[RunResult] | Trace,
    *,
    telemetry: SpanSource | None = None,
    spans: Spans | None = None,
    title: str | None = None,
) -> str:
    """The report as an HTML string (see the module docstring).

    ``telemetry`` and ``spans`` give a run's spans; a `Trace` is its own spans.
    """
    if isinstance(source, Trace):
        if telemetry is not None or spans is not None:
            raise TypeError("a trace is its own spans: telemetry= and spans= are for runs")
        return _trace_report_html(source, title or f"Trace {source.trace_id}")
    from workbench.notebook.bars import timing_bars_html, tokens_bars_html
    from workbench.notebook.data import as_result, run_view_data
    from workbench.notebook.explorer_data import RunRecords
    from workbench.notebook.explorer_view import ExplorerView, explorer_page_html
    from workbench.notebook.html import step_html
    from workbench.notebook.tables import step_labels

    result = as_result(source)
    data = run_view_data(result, telemetry=telemetry, spans=spans)
    tree_steps = RunRecords(result.steps, result.children).tree_steps()  # sub-runs' too
    if spans is not None:
        explorer = ExplorerView.from_source(spans, steps=tree_steps)
    else:
        explorer = ExplorerView.from_source(result, telemetry=telemetry, steps=tree_steps)
    rebuilt = " (spans rebuilt from the step records)" if data.synthesized else ""
    charts = (
        f'<h2 id="explorer">Trace explorer{rebuilt}</h2>{explorer_page_html(explorer)}'
        f'<h2 id="timing">Time per step</h2>{timing_bars_html(data.steps)}'
        f'<h2 id="tokens">Tokens per step</h2>{tokens_bars_html(data.steps)}'
    )
    steps = "".join(
        f'<section class="wb-step-section" id="step-{i}">{step_html(step, data.steps)}</section>'
        for i, step in enumerate(data.steps)
    )
    labels = step_labels(data.steps)
    nav = " · ".join(f'<a href="#step-{i}">{escape(label)}</a>' for i, label in enumerate(labels))
    table = _table_html(data.table)
    if data.agents is not None:  # a run tree: what each agent took
        table += f'<h2 id="agents">Per agent</h2>{_table_html(data.agents)}'
    return _page(
        title or f"Run {result.run_id}",
        _summary(result),
        f'<h2 id="steps">Steps</h2>{table}{charts}'
        f'<h2 id="messages">Messages, step by step</h2><nav>steps: {nav}</nav>{steps}',
    )


def _page(title: str, summary: str, body: str) -> str:
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{summary}{body}</body></html>"
    )


def _trace_report_html(trace: Trace, title: str) -> str:
    """A loaded trace's report: its spans' step table, explorer, time, tokens and messages."""
    from workbench.notebook.bars import timing_bars_html, tokens_bars_html
    from workbench.notebook.explorer_view import ExplorerView, explorer_page_html

    table = trace.steps_df()
    shown = table.drop(columns=["trace_id", "snapshot_id"]).dropna(axis=1, how="all")
    body = (  # the columns another framework's trace has no values for are left out
        f'<h2 id="steps">Steps</h2>{_table_html(shown)}'
        f'<h2 id="explorer">Trace explorer</h2>'
        f"{explorer_page_html(ExplorerView.from_source(trace))}"
        f'<h2 id="timing">Time per step</h2>{timing_bars_html(table)}'
        f'<h2 id="tokens">Tokens per step</h2>{tokens_bars_html(table)}'
        f'<h2 id="messages">Messages, model call by model call</h2>{_trace_messages_html(trace)}'
    )
    return _page(title, _rows_html(trace_summary(trace)), body)


def trace_summary(trace: Trace) -> dict[str, str]:
    """What a loaded trace holds, in a few lines: ids, spans, model calls, time, tokens, errors."""
    from workbench.telemetry.names import AGENT_NAME, tokens_of

    spans = trace.spans
    chats = trace.chat_spans()
    tokens = [tokens_of(c.attributes) for c in chats]
    inputs, outputs = (sum(int(t[i] or 0) for t in tokens) for i in (0, 1))
    seconds = (max(s.end_ns for s in spans) - min(s.start_ns for s in spans)) / 1e9
    traces = dict.fromkeys(s.trace_id for s in spans)
    agents = dict.fromkeys(
        str(s.attributes[AGENT_NAME]) for s in spans if AGENT_NAME in s.attributes
    )
    errors = sum(s.status == "error" for s in spans)
    return {
        "traces" if len(traces) > 1 else "trace": ", ".join(list(traces)[:3])
        + (f" and {len(traces) - 3} more" if len(traces) > 3 else ""),
        "spans": f"{len(spans):,}" + (f", {errors} with an error" if errors else ""),
        "agents": ", ".join(agents) or "—",
        "model calls": str(len(chats)),
        "time": f"{seconds:.3f} s from the first span's start to the last one's end",
        "tokens": f"{inputs:,} in / {outputs:,} out",
    }


def _trace_messages_html(trace: Trace) -> str:
    """Each model call's messages: the first call's in full, then what each call added."""
    from workbench.notebook.html import messages_html
    from workbench.telemetry.names import STEP_INDEX
    from workbench.telemetry.recover import messages_of_chat

    try:
        chats = conversation_chats(trace)
    except TraceLoadError as exc:  # the model calls of unrelated runs: no one conversation
        return f"<p>{escape(str(exc))}</p>"
    conversations = [messages_of_chat(chat.attributes) for chat in chats]
    if not any(conversations):
        return (
            "<p>The trace has no message content: it was recorded without it (a workbench "
            "run keeps it with <code>Telemetry(capture_content=True)</code>).</p>"
        )
    sections: list[str] = []
    before: tuple[Message, ...] = ()
    for number, (chat, messages) in enumerate(zip(chats, conversations, strict=True), start=1):
        new = messages[len(before) :] if messages[: len(before)] == before else messages
        before = messages
        step = chat.attributes.get(STEP_INDEX)
        label = f"model call {number}" + (f" (step {step})" if step is not None else "")
        sections.append(
            f'<section class="wb-step-section"><b>{escape(label)}</b> · {escape(chat.name)}'
            f"{messages_html(new, empty='no messages captured')}</section>"
        )
    return "".join(sections)


def _table_html(frame: pd.DataFrame) -> str:
    """A table that scrolls in its own box; its text escaped (``to_html`` escapes by default)."""
    html = frame.to_html(index=False, float_format=lambda v: f"{v:.3f}", na_rep="")
    return f'<div class="wb-table">{html}</div>'


def _summary(result: RunResult) -> str:
    from workbench.notebook.tables import steps_text

    state = result.state
    usage = result.usage
    cost = "unknown" if usage.cost is None else f"${usage.cost:.6f}"
    rows = {
        "agent": state.agent_name,
        "run": state.run_id,
        "status": state.status.value,
        "stop reason": state.stop_reason.value if state.stop_reason else "—",
        "steps": steps_text(result.steps),
        "tokens": f"{usage.input_tokens:,} in / {usage.output_tokens:,} out ({cost})",
        "output": result.output or "—",
    }
    if state.rerun_of is not None:
        rows["re-run of"] = f"{state.rerun_of.run_id} from step {state.rerun_of.step}"
    error = None
    if state.error is not None:  # a replay divergence shows its recorded / sent lines as a diff
        from workbench.notebook.html import error_html

        error = error_html(state.error)
    return _rows_html(rows, error)


def _rows_html(rows: dict[str, str], error: str | None = None) -> str:
    """The summary's rows (text, escaped here), and an error row already in HTML."""
    cells = "".join(f"<tr><td><b>{k}</b></td><td>{escape(v)}</td></tr>" for k, v in rows.items())
    if error is not None:
        cells += f"<tr><td><b>error</b></td><td>{error}</td></tr>"
    return f'<table class="wb-summary">{cells}</table>'


def write_report(
    source: RunResult | AgentRun | Sequence[RunResult] | Trace,
    path: str | Path,
    *,
    telemetry: SpanSource | None = None,
    spans: Spans | None = None,
    title: str | None = None,
) -> Path:
    """Write the report to ``path`` (folders are made); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    html = report_html(source, telemetry=telemetry, spans=spans, title=title)
    target.write_text(html, encoding="utf-8")
    return target
