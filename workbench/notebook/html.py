"""HTML for messages, steps, diffs and errors (the Stepper, the report, the re-run panel).

Every function returns a self-contained HTML fragment (inline styles, no scripts), so the same
output works in an ipywidgets ``HTML``, a notebook cell and the standalone report. All text from
the run is escaped.
"""

from __future__ import annotations

import difflib
import json
from collections.abc import Callable, Sequence
from html import escape

from workbench.messages import (
    Message,
    Part,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from workbench.records import RunError, StepRecord, ToolOutcome
from workbench.runfilter import INTERRUPTED
from workbench.session_state import boundary_number, summary_span
from workbench.state import ErrorInfo, ExecutionStatus, PendingCall
from workbench.tracebacks import Lines, library_runs
from workbench.waits import SHORTEST, Wait, time_worked, waited_text

__all__ = [
    "DIFF_COLOURS",
    "FAILED_COLOUR",
    "ROLE_COLOURS",
    "RUN_STATUS_COLOURS",
    "calls_html",
    "error_html",
    "errors_html",
    "message_html",
    "message_lines",
    "messages_diff_html",
    "messages_html",
    "outcomes_html",
    "pending_html",
    "status_badge",
    "step_html",
    "summary_html",
    "thinking_html",
    "traceback_html",
]

ROLE_COLOURS: dict[str, tuple[str, str]] = {
    "system": ("#f1f2f6", "#747d8c"),
    "user": ("#e3f2fd", "#1e88e5"),
    "assistant": ("#e8f5e9", "#43a047"),
    "tool": ("#fff3e0", "#fb8c00"),
}
"""Background and border colour of each role's messages."""

FAILED_COLOUR = "#c62828"
"""What failed is drawn in this red everywhere: badges, failed spans, error lines."""

RUN_STATUS_COLOURS = {
    "completed": "#2e7d32",
    "failed": FAILED_COLOUR,
    "aborted": "#757575",
    "paused": "#6a1b9a",
    INTERRUPTED: "#e65100",
}
"""A run's status badge, by its status (a running run's is blue), in every view of a run."""
DIFF_COLOURS = {"changed": FAILED_COLOUR, "only_a": "#e17055", "only_b": "#0984e3"}
"""A step's badge in a comparison of two runs, by what the diff says of it."""

_STATUS_COLOURS = {
    "ok": "#2e7d32",
    "error": FAILED_COLOUR,
    "retry": "#f9a825",
    "denied": FAILED_COLOUR,
    "pending": "#6a1b9a",
    "dropped": "#757575",
}
_PRE = (
    "margin:2px 0;white-space:pre-wrap;word-break:break-word;max-height:16em;overflow:auto;"
    "font-family:ui-monospace,monospace;font-size:12px"
)
_TRACEBACK = (  # not wrapped: the carets under a line point at the part that failed
    # contain:inline-size: its longest line scrolls in the box and does not widen what holds it
    # (a notebook's output was as wide as the line, the error above it cut at the window's edge)
    "margin:2px 0;white-space:pre;overflow:auto;max-height:24em;font-size:11px;"
    "contain:inline-size;"
    "font-family:ui-monospace,monospace;background:#fff5f5;padding:4px 6px;"
    f"border-left:3px solid {FAILED_COLOUR}"
)
_BOX = (
    "border-left:4px solid {border};background:{bg};padding:4px 8px;margin:4px 0;border-radius:3px"
)

_DIVIDER = (
    "display:flex;align-items:center;gap:8px;margin:10px 0 4px;color:#5e35b1;font-size:11px;"
    "font-weight:600;text-transform:uppercase;border-top:2px dashed #b39ddb;padding-top:2px"
)


def _json(value: object) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True)


def _badge(text: str, colour: str) -> str:
    return (
        f'<span style="background:{colour};color:white;border-radius:3px;padding:0 5px;'
        f'font-size:11px;margin-right:4px">{escape(text)}</span>'
    )


def status_badge(status: str) -> str:
    """A run's status as a badge in its colour (`RUN_STATUS_COLOURS`)."""
    return _badge(status, RUN_STATUS_COLOURS.get(status, "#1565c0"))


def _part_html(part: Part) -> str:
    if isinstance(part, TextPart):
        return f'<pre style="{_PRE}">{escape(part.text)}</pre>'
    if isinstance(part, ThinkingPart):
        return thinking_html(part)
    if isinstance(part, ToolCall):
        args = (
            part.invalid_arguments if part.invalid_arguments is not None else _json(part.arguments)
        )
        bad = _badge("invalid JSON", "#c62828") if part.invalid_arguments is not None else ""
        return (
            f'<div class="wb-tool-call">{_badge("call", "#43a047")}{bad}<b>{escape(part.name)}</b>'
            f'<code style="font-size:11px;color:#666"> {escape(part.call_id)}</code>'
            f'<pre style="{_PRE}">{escape(args)}</pre></div>'
        )
    if isinstance(part, ToolResult):
        badge = _badge("error", "#c62828") if part.is_error else _badge("result", "#fb8c00")
        return (
            f'<div class="wb-tool-result">{badge}<b>{escape(part.name)}</b>'
            f'<code style="font-size:11px;color:#666"> {escape(part.call_id)}</code>'
            f'<pre style="{_PRE}">{escape(part.content)}</pre></div>'
        )
    about = f" <b>{escape(part.name)}</b>" if part.name else ""
    return (
        f'<div class="wb-retry">{_badge("retry", "#f9a825")}{about}'
        f'<pre style="{_PRE}">{escape(part.content)}</pre></div>'
    )


def thinking_html(part: ThinkingPart) -> str:
    """The model's reasoning, folded: a line that says what it is, the text when opened.

    Folded by default because reasoning is often longer than the answer it leads to and the
    answer is what a reader looks for first; a native ``<details>`` opens it in a notebook, the
    explorer and the report alike, with no script.
    """
    about = [part.provider] if part.provider else []
    if part.signature is not None:
        kept = f"{len(part.signature):,} characters" if part.redacted else "signature kept"
        about.append(kept)
    note = f" ({', '.join(about)})" if about else ""
    if part.redacted:
        summary = f"redacted thinking{note}"
        body = "Encrypted by the provider; it is sent back as it came and cannot be read."
    else:
        summary = f"thinking · {len(part.text):,} characters{note}"
        body = part.text
    return (
        f'<details class="wb-thinking" style="margin:2px 0;color:#555">'
        f'<summary style="cursor:pointer;font-size:11px;font-style:italic">{escape(summary)}'
        f'</summary><pre style="{_PRE};color:#555">{escape(body)}</pre></details>'
    )


def message_html(message: Message) -> str:
    """One message as a role-coloured box: text, tool calls with arguments, results, retries.

    A session's boundary marker is drawn as a divider between executions, and its summary of
    executions that left the conversation as a box that says which ones it stands for.
    """
    number = boundary_number(message)
    if number is not None:
        return (
            f'<div class="wb-boundary" title="{escape(message.text)}" style="{_DIVIDER}">'
            f"execution {number}</div>"
        )
    span = summary_span(message)
    if span is not None:
        body = message.text.split("\n", 1)[1]
        return (
            f'<div class="wb-msg wb-summary" style="{_BOX.format(bg="#f3e5f5", border="#8e24aa")}">'
            f"{_badge(f'summary of executions {span[0]} to {span[1]}', '#8e24aa')}"
            f'<pre style="{_PRE}">{escape(body)}</pre></div>'
        )
    bg, border = ROLE_COLOURS.get(message.role, ("#ffffff", "#999999"))
    is_retry = any(isinstance(p, RetryPrompt) for p in message.parts)
    if is_retry:
        bg, border = "#fffde7", "#f9a825"
    where = f" · step {message.step}" if message.step is not None else ""
    parts = "".join(_part_html(p) for p in message.parts)
    return (
        f'<div class="wb-msg wb-role-{message.role}" style="{_BOX.format(bg=bg, border=border)}">'
        f'<div style="font-size:11px;color:{border};font-weight:600">{message.role}{where}</div>'
        f"{parts}</div>"
    )


def _took(outcome: ToolOutcome, waits: Sequence[Wait]) -> str:
    """A call's time worked, and beside it how long of its wall-clock time it waited on you.

    The views' drawing inside it (sub-runs stepped into from a cell) is left out of its time
    and said apart, once it is long enough to read.
    """
    worked = time_worked(outcome.started_at, outcome.duration, waits)
    on_you = [w for w in waits if w.kind == "person"]
    waited = outcome.duration - time_worked(outcome.started_at, outcome.duration, on_you)
    drawn = outcome.duration - worked - waited
    said = [
        f"+{waited_text(s)} {what}"
        for s, what in ((waited, "waiting on you"), (drawn, "drawing the views"))
        if s >= SHORTEST
    ]
    text = f"{worked * 1e3:.2f} ms"
    for line in said:
        text += f'<br><span style="color:#888;font-size:11px">{line}</span>'
    return text


def messages_html(messages: Sequence[Message], *, empty: str = "no messages") -> str:
    """Messages in order, each by `message_html`."""
    if not messages:
        return f'<div style="color:#888;font-style:italic">{escape(empty)}</div>'
    return "".join(message_html(m) for m in messages)


def question_html(messages: Sequence[Message], *, empty: str = "no messages") -> str:
    """Messages with those before the last user message folded under one line that counts them.

    A run given a history (worked examples, an earlier conversation) starts its first step with
    all of it. The person stepping it looks for the question and what the step does with it,
    which would otherwise come after a screenful of history (or a coding agent's system prompt
    of many pages); one click opens the rest, and the line says what it holds.
    """
    asked = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), 0)
    if asked == 0:
        return messages_html(messages, empty=empty)
    prompts = sum(m.role == "system" for m in messages[:asked])
    held = []
    if prompts:
        held.append("the system prompt" if prompts == 1 else f"{prompts} system prompts")
    if others := asked - prompts:
        held.append(f"{others} earlier message{'' if others == 1 else 's'}")
    earlier = " and ".join(held)
    return (
        f'<details class="wb-earlier" style="margin:2px 0">'
        f'<summary style="cursor:pointer;font-size:11px;color:#555">{earlier}</summary>'
        f"{messages_html(messages[:asked])}</details>{messages_html(messages[asked:])}"
    )


def outcomes_html(
    outcomes: Sequence[ToolOutcome], *, tracebacks: bool = True, waits: Sequence[Wait] = ()
) -> str:
    """A table of the step's tool calls: tool, arguments, status, what the model got, duration.

    A call answered from a recording (``tools="replay"``) says so beside its status: it did not run.
    A failed call's traceback follows its row (``tracebacks=False``: a view that shows it
    already, the explorer's detail of the call). Its time is the time it worked: ``waits`` are
    the step's on the person (`StepRecord.waits`), said below it when a call waited on them.
    """
    if not outcomes:
        return ""
    rows = "".join(
        f"<tr><td><b>{escape(o.name)}</b></td>"
        f'<td><code style="font-size:11px">{escape(_json(o.arguments))}</code></td>'
        f"<td>{_badge(o.status, _STATUS_COLOURS.get(o.status, '#555'))}"
        f"{_badge('replayed', '#6a1b9a') if o.replayed else ''}</td>"
        f'<td><pre style="{_PRE}">{escape(o.content)}</pre></td>'
        f"<td style='text-align:right;white-space:nowrap'>{_took(o, waits)}</td></tr>"
        # the traceback under its call, the table's whole width: it needs the room
        + (
            f'<tr><td colspan="5">{traceback_html(o.traceback)}</td></tr>'
            if o.traceback and tracebacks
            else ""
        )
        for o in outcomes
    )
    return (
        '<table class="wb-outcomes" style="border-collapse:collapse;font-size:12px;width:100%">'
        "<tr style='text-align:left'><th>tool</th><th>arguments</th><th>status</th>"
        f"<th>result</th><th>time</th></tr>{rows}</table>"
    )


def calls_html(calls: Sequence[ToolCall]) -> str:
    """The tool calls the next TOOLS phase will run (they can still be edited or dropped)."""
    if not calls:
        return ""
    items = "".join(
        f"<li><b>{escape(c.name)}</b> <code>{escape(_json(c.arguments))}</code> "
        f'<code style="color:#666;font-size:11px">{escape(c.call_id)}</code></li>'
        for c in calls
    )
    return (
        '<div class="wb-next-calls"><b>The next phase runs these calls</b> '
        "(<code>run.edit_call</code> / <code>run.drop_call</code> can change them first):"
        f"<ul>{items}</ul></div>"
    )


def message_lines(message: Message) -> list[str]:
    """A message as plain text lines, one per part: the unit of the step diffs."""
    lines = []
    for part in message.parts:
        if isinstance(part, TextPart):
            lines.append(f"[{message.role}] {part.text}")
        elif isinstance(part, ThinkingPart):
            what = "redacted thinking" if part.redacted else f"thinking: {part.text}"
            lines.append(f"[{message.role}] {what}{_signed(part)}")
        elif isinstance(part, ToolCall):
            args = part.invalid_arguments or _json(part.arguments)
            lines.append(f"[{message.role}] call {part.name}({args}) #{part.call_id}")
        elif isinstance(part, ToolResult):
            flag = " (error)" if part.is_error else ""
            lines.append(f"[{message.role}] result{flag} #{part.call_id}: {part.content}")
        else:
            lines.append(f"[{message.role}] retry {part.name}: {part.content}")
    return lines


def _signed(part: ThinkingPart) -> str:
    """The signature's end, so a diff line shows a signature that changed under the same text."""
    return "" if part.signature is None else f" [signature …{part.signature[-12:]}]"


def messages_diff_html(
    before: Sequence[Message], after: Sequence[Message], *, context: int = 1
) -> str:
    """What changed between two message lists, line by line.

    Added lines are green, removed ones red; long unchanged stretches are folded to a count.
    A step's input is usually the previous one's and then some: the messages both lists start
    with are counted, not compared line by line (one is kept as the context of what follows),
    so a run's diffs take time in proportion to what changed, not to the conversation.
    """
    shared = 0
    for a, b in zip(before, after, strict=False):
        if a is not b and a != b:
            break
        shared += 1
    skipped = max(shared - 1, 0)
    old = [line for m in before[skipped:] for line in message_lines(m)]
    new = [line for m in after[skipped:] for line in message_lines(m)]
    matcher = difflib.SequenceMatcher(a=old, b=new, autojunk=False)
    # Counted before grouping: get_grouped_opcodes trims the matcher's own list of opcodes.
    unchanged = sum(len(m.parts) for m in before[:skipped])  # a line per part (`message_lines`)
    unchanged += sum(i2 - i1 for tag, i1, i2, _, _ in matcher.get_opcodes() if tag == "equal")
    out: list[str] = []
    for group in matcher.get_grouped_opcodes(context):
        for tag, i1, i2, j1, j2 in group:
            if tag == "equal":
                out.extend(_diff_line(" ", line, "#666", "transparent") for line in old[i1:i2])
                continue
            out.extend(_diff_line("-", line, "#b71c1c", "#ffebee") for line in old[i1:i2])
            out.extend(_diff_line("+", line, "#1b5e20", "#e8f5e9") for line in new[j1:j2])
    if not out:
        return '<div class="wb-diff" style="color:#888;font-style:italic">no change</div>'
    lines = f"{unchanged} unchanged line{'' if unchanged == 1 else 's'}"  # none: nothing to say
    note = f'<div style="color:#888;font-size:11px">{lines}</div>' if unchanged else ""
    return f'<div class="wb-diff">{note}{"".join(out)}</div>'


def _diff_line(sign: str, text: str, colour: str, bg: str) -> str:
    """A line of a diff, its sign in an element of its own.

    So the text is the same string whether the line was added, kept or removed: a page of
    every step's diff stores it once.
    """
    if len(text) > 400:
        text = text[:400] + f"… ({len(text):,} characters)"
    return (
        f'<div style="font-family:ui-monospace,monospace;font-size:12px;white-space:pre-wrap;'
        f'color:{colour};background:{bg}"><span>{sign}</span> {escape(text)}</div>'
    )


def error_html(error: ErrorInfo) -> str:
    """A run's error; the ``-`` recorded / ``+`` sent lines of a replay divergence as a diff."""
    head, *rest = error.message.split("\n")
    lines = []
    for line in rest:
        sign, text = line[:1], line[2:]
        if sign == "-":
            lines.append(_diff_line("-", text, "#b71c1c", "#ffebee"))
        elif sign == "+":
            lines.append(_diff_line("+", text, "#1b5e20", "#e8f5e9"))
        else:
            lines.append(_diff_line(" ", line, "#666", "transparent"))
    trace = traceback_html(error.traceback) if error.traceback else ""
    return (
        f'<div class="wb-error" style="color:{FAILED_COLOUR}">{escape(error.type)}: {escape(head)}'
        f"{''.join(lines)}{trace}</div>"
    )


def traceback_html(text: str, *, open_: bool = False) -> str:
    """A traceback, escaped, folded under a "traceback" line; each frame's file line in bold.

    A ``<details>`` element: it opens and closes without a script (the report, offline). Runs of
    library frames are folded in it too (`library_runs`), so the frames of the person's code
    and the exception show in the box without scrolling past a framework's sixty frames.
    """
    pieces = library_runs(text)  # a fold is a block: no line break after it
    body = "".join(
        _lines_html(p) + ("\n" if not p.frames and p is not pieces[-1] else "") for p in pieces
    )
    return (
        f'<details class="wb-traceback"{" open" if open_ else ""}>'
        f'<summary style="cursor:pointer;color:{FAILED_COLOUR};font-size:11px">traceback</summary>'
        f'<pre style="{_TRACEBACK}">{body}</pre></details>'
    )


def _lines_html(piece: Lines) -> str:
    lines = "\n".join(
        f"<b>{escape(line)}</b>" if line.lstrip().startswith('File "') else escape(line)
        for line in piece.lines
    )
    if not piece.frames:
        return lines
    where = escape(", ".join(piece.packages))
    return (
        f'<details class="wb-frames"><summary style="cursor:pointer;color:#757575">'
        f"  … {piece.frames} frames in {where}</summary>{lines}</details>"
    )


def summary_html(summary: str, failed: bool) -> str:
    """The line every view starts with ("completed, 1 tool error: step 3, ..."), red on errors."""
    colour = FAILED_COLOUR if failed else "#2e7d32"
    style = f"color:{colour};font-weight:600"
    return f'<div class="wb-summary-line" style="{style}">{escape(summary)}</div>'


def errors_html(errors: Sequence[RunError], *, open_first: bool = True, limit: int = 10) -> str:
    """What went wrong, in order: kind, where, what, and the traceback (the first one open).

    The first ``limit`` of them, and how many more there are: a run whose tool failed at every
    one of 300 steps should not bury the rest of the view.
    """
    if not errors:
        return ""
    more = len(errors) - limit
    errors = errors[:limit]
    items = "".join(
        f'<li class="wb-error-item" style="margin:2px 0">{_badge(e.kind, FAILED_COLOUR)}'
        f"<b>{escape(e.where)}</b>: "
        f'<span style="color:{FAILED_COLOUR}">{escape(f"{e.type}: " if e.type else "")}'
        f"{escape(e.message)}</span>"
        f"{traceback_html(e.traceback, open_=open_first and i == 0) if e.traceback else ''}</li>"
        for i, e in enumerate(errors)
    )
    if more > 0:
        items += f'<li style="color:#555">and {more} more</li>'
    # line-height: a widget's HTML has a line as high as a button (28 px): a wrapped error read as
    # two errors
    style = "margin:2px 0;padding-left:18px;line-height:1.4"
    return f'<ul class="wb-errors" style="{style}">{items}</ul>'


def _previous_model_step(step: StepRecord, steps: Sequence[StepRecord]) -> StepRecord | None:
    """The last record of ``step``'s run before it that made a model call (None if none).

    ``steps`` may be a run tree's: a sub-agent's step between two of its caller's is not what
    the caller's model saw before.
    """
    previous = None
    for candidate in steps:
        if candidate is step:
            return previous
        if candidate.messages_in and candidate.run_id == step.run_id:
            previous = candidate
    return None


def step_html(step: StepRecord, steps: Sequence[StepRecord] = ()) -> str:
    """One step: header, what it added, its tool calls, hooks, and a diff of the model's input.

    The diff is against the previous record of its run that made a model call (found in
    ``steps``, the run's records in order), so it shows exactly what changed in what the model
    saw. A page of every step finds those in one pass (`explorer_html.StepRecords`).
    """
    return "".join(step_pieces(step, steps))


def step_pieces(
    step: StepRecord,
    steps: Sequence[StepRecord] = (),
    *,
    previous: StepRecord | None = None,
    draw: Callable[[Message], str] = message_html,
) -> list[str]:
    """`step_html` in pieces, each message the step added a piece (``draw`` draws it).

    ``previous``: the record the diff is against when the caller has found it, else it is
    found in ``steps``.

    A page of every step stores each distinct piece once: the messages a step added are the
    ones its run's next model call is sent, whose boxes that call's detail holds already.
    """
    t = step.timing
    # A step the run went on from says nothing of the run's status: "running" read as if the
    # step had not ended. The step that ended the run says how and why it ended.
    status = "" if step.status is ExecutionStatus.RUNNING else f"{step.status.value} · "
    stop = f"stop: {step.stop_reason.value} · " if step.stop_reason is not None else ""
    tries = f"{step.tries} model tries · " if step.tries > 1 else ""  # a client asked again
    head = (
        f'<div class="wb-step-head" style="font-weight:600">Step {step.index} · '
        f"{status}{stop}{t.total * 1e3:.2f} ms · {tries}"
        f"{step.usage.input_tokens} in / {step.usage.output_tokens} out tokens</div>"
    )
    sections = [head, "<h4 style='margin:6px 0 2px'>What this step added</h4>"]
    added = [draw(m) for m in step.new_messages]
    sections += added or [messages_html((), empty="nothing (the run stopped)")]
    if step.tool_outcomes:
        sections += [
            "<h4 style='margin:6px 0 2px'>Tool calls</h4>",
            outcomes_html(step.tool_outcomes, waits=step.waits),
        ]
    sections.append(_tools_html(step))
    sections.append(_hooks_html(step))
    sections.append(_breakpoint_errors_html(step))
    if step.messages_in:
        if previous is None:
            previous = _previous_model_step(step, steps)
        title = (
            f"What the model saw, against step {previous.index}"
            if previous is not None
            else "What the model saw"
        )
        diff = messages_diff_html(previous.messages_in if previous else (), step.messages_in)
        sections += [f"<h4 style='margin:6px 0 2px'>{title}</h4>", diff]
    else:
        sections.append(
            "<div style='color:#888'>No model call in this part of the step (it resumed after "
            "a pause).</div>"
        )
    return ['<div class="wb-step">', *sections, "</div>"]


def _tools_html(step: StepRecord) -> str:
    """Which tools the model was offered in the step, and which a toolset hid, with why."""
    if not step.tools_hidden:
        return ""
    offered = ", ".join(escape(name) for name in step.tools_offered) or "none"
    hidden = "".join(f"<li>{escape(name)}: {escape(why)}</li>" for name, why in step.tools_hidden)
    return (
        f"<div style='margin:6px 0 2px'><b>Tools offered:</b> {offered}</div>"
        f"<div><b>Hidden this step:</b><ul style='margin:0'>{hidden}</ul></div>"
    )


def _hooks_html(step: StepRecord) -> str:
    items = [
        f"<li>{escape(h.event)} · {escape(h.hook)} · {h.duration * 1e3:.2f} ms"
        f"{traceback_html(h.traceback) if h.traceback else ''}</li>"
        for h in step.timing.per_hook
    ]
    items += [f"<li>{_badge('hook', '#00897b')}{escape(m)}</li>" for m in step.hook_messages]
    items += [
        f"<li style='color:{FAILED_COLOUR}'>{_badge('hook error', FAILED_COLOUR)}{escape(e)}</li>"
        for e in step.hook_errors
    ]
    if not items:
        return ""
    return f"<h4 style='margin:6px 0 2px'>Hooks</h4><ul class='wb-hooks'>{''.join(items)}</ul>"


def _breakpoint_errors_html(step: StepRecord) -> str:
    """Breakpoint predicates that raised during the step (each stopped the run there)."""
    items = "".join(
        f"<li style='color:{FAILED_COLOUR}'>{_badge('breakpoint error', FAILED_COLOUR)}"
        f"the predicate raised {escape(e.type)}: {escape(e.message)}"
        f"{traceback_html(e.traceback) if e.traceback else ''}</li>"
        for e in step.breakpoint_errors
    )
    return f"<h4 style='margin:6px 0 2px'>Breakpoints</h4><ul>{items}</ul>" if items else ""


def pending_html(pending: Sequence[PendingCall]) -> str:
    """The calls a paused run waits on: tool, arguments and why."""
    if not pending:
        return ""
    items = "".join(
        f"<li>{_badge(p.kind, '#6a1b9a')}<b>{escape(p.tool)}</b> "
        f"<code>{escape(_json(p.arguments))}</code> · {escape(p.reason)}</li>"
        for p in pending
    )
    return f'<ul class="wb-pending">{items}</ul>'
