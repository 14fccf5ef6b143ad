"""A run or a trace as one standalone HTML file: summary, steps, explorer, time, tokens, messages.

The summary, the step table (and what each agent took, for a run tree), the trace explorer,
time and tokens per step, and each step's messages. Everything is in the file (the explorer's
script and its data, the charts as plain HTML bars), so it opens anywhere with no network, and
stays small: no plotting library is inlined. The content is built by the notebook builders
(`workbench.notebook`) from the one `Trace` the door (`workbench.trace_of`) makes of the source,
so the report shows what the notebook views show, for a run (live or stored, with or without
telemetry) and for a loaded trace (a file or a backend, ours or another framework's) alike. A
step's messages come from its record when the trace came from a run, else from the content its
model call captured. Needs the ``notebook`` extra (pandas).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from html import escape
from pathlib import Path
from typing import TYPE_CHECKING

from workbench.errors import TraceLoadError
from workbench.models.prices import dollars
from workbench.telemetry import names as n
from workbench.telemetry.derive import number, tool_status
from workbench.telemetry.trace import Trace
from workbench.traces import TraceSource, trace_of

if TYPE_CHECKING:
    from workbench.messages import Message
    from workbench.notebook.explorer_page import ExplorerPage
    from workbench.telemetry.core import Telemetry
    from workbench.telemetry.spandata import SpanData

__all__ = ["report_html", "trace_summary", "trace_top", "write_report"]

_STYLE = """
body { font-family: system-ui, -apple-system, "Segoe UI", sans-serif; margin: 24px auto;
       max-width: 1200px; color: #222; padding: 0 16px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ddd; }
table.wb-summary td { padding: 2px 12px 2px 0; vertical-align: top; }
section.wb-step-section { border: 1px solid #e0e0e0; border-radius: 6px; padding: 8px 12px;
                          margin: 12px 0; box-sizing: border-box; }
section.wb-step-section[data-pieces] { min-height: var(--wb-section-px); }  /* till drawn */
section.wb-step-section.wb-failed { border-left: 4px solid #c62828; }  /* html.FAILED_COLOUR */
section.wb-step-section:target { box-shadow: 0 0 0 3px #90caf9; }  /* where a link went */
section.wb-step-section > .wb-step-agent { float: right; font-weight: 600; color: #555; }
nav a { margin-right: 8px; white-space: nowrap; } nav a.wb-failed { color: #c62828; }
"""


def report_html(
    source: TraceSource, *, telemetry: Telemetry | None = None, title: str | None = None
) -> str:
    """The report as an HTML string (see the module docstring).

    ``source`` is anything `workbench.trace_of` reads; ``telemetry`` gives a run's recorded
    spans.
    """
    from workbench.notebook.bars import timing_bars_html, tokens_bars_html
    from workbench.notebook.drawn_tables import failed_rows, table_html
    from workbench.notebook.explorer_page import ExplorerPage
    from workbench.notebook.explorer_view import ExplorerView
    from workbench.notebook.tables import for_people

    trace = trace_of(source, telemetry=telemetry)
    explorer = ExplorerPage(ExplorerView(trace))
    failed = failed_rows(trace)
    nav, sections = _steps_html(trace, explorer, failed)
    steps = table_html(for_people(trace.steps_df()), "wb-steps", links=bool(nav), marked=failed)
    body = f'<h2 id="steps">Steps</h2>{steps}'
    agents = trace.agents()
    if len(agents) > 1:  # a run tree: what each agent took
        body += f'<h2 id="agents">Per agent</h2>{table_html(for_people(agents), "wb-agents")}'
    body += (
        f'<h2 id="explorer">Trace explorer</h2>{explorer.html()}'
        f'<h2 id="timing">Time per step</h2>{timing_bars_html(trace)}'
        f'<h2 id="tokens">Tokens per step</h2>{tokens_bars_html(trace)}'
        f'<h2 id="messages">Messages, step by step</h2>{_DRAWN_NEAR}{_nav_html(nav)}{sections}'
    )
    return _page(title or _title(trace), _summary_html(trace), body)


def _page(title: str, summary: str, body: str) -> str:
    from workbench.notebook.drawn_tables import TABLE_STYLE
    from workbench.notebook.explorer_view import page_script

    tables = page_script("report_tables.js")  # draws `table_html`'s
    return (
        f'<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f"<title>{escape(title)}</title><style>{_STYLE}{TABLE_STYLE}</style></head><body>"
        f"<h1>{escape(title)}</h1>{summary}{body}<script>(() => {{{tables}}})();</script>"
        "</body></html>"
    )


_DRAWN_NEAR = (
    '<p class="wb-drawn-near" hidden>A long run\'s messages are drawn as you come near them: '
    "your browser's find (Ctrl-F) sees only those drawn, the explorer's search every step.</p>"
)
"""Shown by the page when it draws the step sections on demand (``explorer_static.js``)."""

NAV_OPEN = 100
"""The most step links the messages' navigation shows open (more are folded, one click away)."""


def _nav_html(links: Sequence[str]) -> str:
    """The links to the steps' sections: open for a few, folded under a summary for many.

    A link per step of a 1,667-step trace is a page of numbers above the first message. The
    links stand apart by their gaps: a label has a dot of its own ("3 · digger").
    """
    if not links:
        return ""
    joined = " ".join(links)
    if len(links) <= NAV_OPEN:
        return f"<nav>steps: {joined}</nav>"
    return (
        f"<nav><details><summary>{len(links):,} steps: go to one</summary>{joined}</details></nav>"
    )


def _title(trace: Trace) -> str:
    roots = trace.top_runs()
    if roots:
        return f"Run {roots[0].attributes[n.RUN_ID]}"
    return f"Trace {trace.trace_id}"


def trace_top(trace: Trace) -> str:
    """What every view of a trace says first: its summary line, then each error, traceback open.

    The line is red when anything went wrong, or when the run's process ended while it ran
    (`Trace.interrupted`, said under it: the run will not end).
    """
    from workbench.notebook.html import errors_html, summary_html

    errors, gone = trace.errors(), trace.interrupted
    top = summary_html(trace.summary(), failed=bool(errors) or bool(gone))
    why = f"<div>This run will not end: {escape(gone)}.</div>" if gone else ""
    return top + why + errors_html(errors)


def trace_summary(trace: Trace) -> dict[str, str]:
    """What a trace holds, in a few lines: the run, its status, steps, time, tokens, errors."""
    from workbench.notebook.tables import trace_heading

    spans = trace.spans
    rows: dict[str, str] = {}
    traces = list(dict.fromkeys(s.trace_id for s in spans))
    rows["traces" if len(traces) > 1 else "trace"] = ", ".join(traces[:3]) + (
        f" and {len(traces) - 3} more" if len(traces) > 3 else ""
    )
    roots = trace.top_runs()
    if roots:
        last = roots[-1].attributes
        rows["run"] = str(last[n.RUN_ID])
        rows["status"] = trace.status()
        rows["stop reason"] = str(last.get(n.RUN_STOP_REASON, "—"))
        if n.RERUN_OF in last:
            rows["re-run of"] = f"{last[n.RERUN_OF]} from step {last.get(n.RERUN_STEP)}"
    agents = list(dict.fromkeys(a for a in trace.agent_at if a))
    rows["agents" if len(agents) > 1 else "agent"] = ", ".join(agents) or "—"
    rows["steps"] = trace_heading(trace)
    failed = [s for s in spans if s.is_error]  # retries and denials too: what the explorer marks
    errors = trace.errors()
    erred = {e.span_id for e in errors}
    rows["spans"] = f"{len(spans):,}" + (
        f", {len(failed):,} marked failed{_not_errors(failed, erred)}" if failed else ""
    )
    if errors:
        shown = "; ".join(e.line for e in errors[:3])
        rows["errors"] = shown + (f"; and {len(errors) - 3} more" if len(errors) > 3 else "")
    rows["model calls"] = f"{len(trace.model_calls()):,}"
    seconds = (trace.tree.end_ns - trace.tree.start_ns) / 1e9
    rows["time"] = f"{seconds:.3f} s from the first span's start to the last one's end" + (
        ", waiting on you left out" if trace.waits else ""
    )
    rows["tokens"] = _tokens(trace)
    output = _output(trace)
    if output is not None:
        rows["output"] = output
    return rows


_NOT_ERRORS = {"retry": ("retry", "retries"), "denied": ("denial", "denials")}
"""Failed calls that are no error (`tool_status`): sent back to the model to fix, refused."""


def _not_errors(failed: Sequence[SpanData], erred: set[str | None]) -> str:
    """Which of the failed spans are retries or denials, which no list of errors has.

    "1 marked failed" above an empty list of errors, beside a step table that calls the call a
    retry, "not an error", left a reader looking for the failure. A call denied because its
    guard raised is an error (``erred``: the spans of `Trace.errors`), not counted here.
    """
    kinds = [tool_status(s) for s in failed if s.category == "tool" and s.span_id not in erred]
    counts = {words: kinds.count(kind) for kind, words in _NOT_ERRORS.items()}
    said = [f"{count:,} {words[count != 1]}" for words, count in counts.items() if count]
    if not said:
        return ""
    return f" ({', '.join(said)}: {'not an error' if sum(counts.values()) == 1 else 'not errors'})"


def _tokens(trace: Trace) -> str:
    """Tokens of every model call, and their cost when every step's is known.

    A tracer that records no token counts (OpenLLMetry's of the OpenAI Agents SDK, on Chat
    Completions) leaves them unknown, not zero.
    """
    inputs = outputs = 0
    counted = False
    for call in trace.model_calls():
        tokens = [number(v) for v in n.tokens_of(call.attributes)]
        counted = counted or any(t is not None and t == t for t in tokens)
        inputs += int(tokens[0] or 0) if tokens[0] == tokens[0] else 0  # NaN: not a number
        outputs += int(tokens[1] or 0) if tokens[1] == tokens[1] else 0
    if trace.model_calls() and not counted:  # "0 in / 0 out" read as counted, and none
        return "not recorded by the tracer"
    costs = [head.cost for head in trace.step_heads()]
    known = [float(c) for c in costs if c is not None and c == c]
    total = sum(known) if known and len(known) == len(costs) else 0.0
    cost = f" ({dollars(total)})" if total else ""  # unknown, or nothing charged: no fake $0
    return f"{inputs:,} in / {outputs:,} out{cost}"


def _output(trace: Trace) -> str | None:
    """The top run's last answer: from its records when the trace has them."""
    roots = trace.top_runs()
    if not roots or not trace.steps:
        return None
    run_id = roots[0].attributes[n.RUN_ID]
    for step in reversed(trace.steps):
        if step.run_id == run_id and step.response is not None:
            return step.response.text_content or "—"
    return "—"


def _summary_html(trace: Trace) -> str:
    """What went wrong first (the summary line, each error with its traceback), then the rows.

    The rows are text, escaped here; the top run's error is drawn as an error under them (a
    replay's divergence as a diff of what was recorded and what was sent).
    """
    from workbench.notebook.html import error_html
    from workbench.state import ErrorInfo

    top = trace_top(trace)
    cells = "".join(
        f"<tr><td><b>{escape(k)}</b></td><td>{escape(v)}</td></tr>"
        for k, v in trace_summary(trace).items()
        if k != "errors"  # the list above says them, with their tracebacks
    )
    roots = trace.top_runs()
    raised = [e for e in roots[-1].events if e.name == n.EVENT_EXCEPTION] if roots else []
    if raised:  # a replay divergence shows its recorded / sent lines as a diff
        event = raised[-1].attributes
        error = ErrorInfo(
            type=str(event.get(n.EXCEPTION_TYPE, "error")),
            message=str(event.get(n.EXCEPTION_MESSAGE, "")),
        )
        cells += f"<tr><td><b>error</b></td><td>{error_html(error)}</td></tr>"
    return f'{top}<table class="wb-summary">{cells}</table>'


def _steps_html(
    trace: Trace, page: ExplorerPage, failed: Sequence[int] = ()
) -> tuple[list[str], str]:
    """The steps' navigation links and one section per step, with its messages.

    A step's record draws it when the trace came from a run; otherwise its model call's
    captured content does: the first call's messages in full, then what each call added. A
    trace recorded without content has no sections, only a line that says so. A section's
    messages are the boxes the explorer's details hold (the step's span, the model call's
    conversation), so the page stores them once and fills the section when it loads. The
    section of a step in ``failed`` (row numbers) is marked as failed.
    """
    records = page.records
    rows = trace.step_rows()
    found = [records.get(row["run_id"], row["execution_id"], row["step"]) for row in rows]
    # the captured content is read (and drawn) only for steps no record draws
    content = _model_content(trace) if any(r is None for r in found) else {}
    if rows and not trace.steps and not content:
        return [], (
            "<p>The trace has no message content: it was recorded without it (a workbench run "
            "keeps it with <code>Telemetry(capture_content=True)</code>).</p>"
        )
    links, sections = [], []
    marked = set(failed)
    several = len({row["agent"] for row in rows}) > 1
    for i, (row, record) in enumerate(zip(rows, found, strict=True)):
        body: Sequence[str]
        if record is not None:
            body = records.pieces(record)  # its step span's detail holds them
        else:
            body = content.get(row["model_span_id"], ["<p>no model call in this step</p>"])
        label = escape(str(row["label"]))
        kind = ' class="wb-failed"' if i in marked else ""
        links.append(f'<a href="#step-{i}"{kind}>{label}</a>')
        kind = "wb-step-section wb-failed" if i in marked else "wb-step-section"
        sections.append(
            f'<section class="{kind}" id="step-{i}"{page.pieces(body)}>'
            f"{_section_heading(label, row['agent'], several, drawn=record is not None)}"
            "</section>"
        )
    return links, "".join(sections)


def _section_heading(label: str, agent: str | None, several: bool, *, drawn: bool) -> str:
    """What a step's section says above its pieces: its label, or its agent if a record draws it.

    A record's drawing says "Step 3 · 1.21 ms · ..." first: the label above it read "step 3 ·
    digger" then "Step 3 · ...". Its agent stands at the right, in a run of several agents.
    ``label`` is escaped already.
    """
    if not drawn:
        return f"<b>step {label}</b>"
    return f'<span class="wb-step-agent">{escape(agent or "")}</span>' if several else ""


def _model_content(trace: Trace) -> Mapping[str, Sequence[str]]:
    """Each model call's captured messages by span id: what it added to its agent's last call.

    As HTML pieces: the call's name, then the boxes of the messages it added, the same boxes
    its detail in the explorer draws when they are the conventions' JSON (a box for each
    message read back); content of another shape is drawn here.
    """
    from workbench.notebook.explorer_html import content_boxes
    from workbench.notebook.html import message_html, messages_html
    from workbench.telemetry.recover import messages_of_chat

    out: dict[str, Sequence[str]] = {}
    before: dict[str, tuple[Message, ...]] = {}
    agent_of = dict(zip((s.span_id for s in trace.tree.in_order()), trace.agent_at, strict=True))
    for call in trace.model_calls():
        try:
            messages = messages_of_chat(call.attributes)
        except TraceLoadError as exc:  # content a tracer wrote in a shape that is not messages
            out[call.span_id] = [f"<p class='wb-problem'>{escape(str(exc))}</p>"]
            continue
        if not messages:
            continue
        agent = agent_of.get(call.span_id, "")
        new = added(before.get(agent, ()), messages)
        before[agent] = messages
        boxes = content_boxes(call.attributes)
        if len(boxes) != len(messages):  # not a box a message (flattened content): drawn here
            boxes = [message_html(m) for m in messages]
        shown = boxes[len(boxes) - len(new) :] or [messages_html((), empty="no new messages")]
        out[call.span_id] = [f" · {escape(call.name)}", *shown]
    return out


def added(earlier: Sequence[Message], messages: Sequence[Message]) -> Sequence[Message]:
    """What a model call was sent that its agent's previous call (sent ``earlier``) was not.

    The messages after the first place the previous call's last message comes in
    ``messages``: a conversation that grows adds at its end, and one a history processor
    keeps to its last few (a window, perhaps after the prompt) still has the previous call's
    last message where the new ones begin. All of them when it has not (the history was
    rewritten); a message sent twice alike may show more than was added, never less.

    >>> from workbench.messages import Message
    >>> a, b, c, d, e = (Message.user(t) for t in "abcde")
    >>> [m.text for m in added([a, b], [a, b, c])]
    ['c']
    >>> [m.text for m in added([a, b, c, d], [a, c, d, e])]  # the prompt, then a window
    ['e']
    """
    if earlier:
        last = earlier[-1]
        for at, message in enumerate(messages):
            if message == last:
                return messages[at + 1 :]
    return messages


def write_report(
    source: TraceSource,
    path: str | Path,
    *,
    telemetry: Telemetry | None = None,
    title: str | None = None,
) -> Path:
    """Write the report to ``path`` (folders are made); returns the path."""
    target = Path(path)
    target.parent.mkdir(parents=True, exist_ok=True)
    html = report_html(source, telemetry=telemetry, title=title)
    target.write_text(html, encoding="utf-8")
    return target
