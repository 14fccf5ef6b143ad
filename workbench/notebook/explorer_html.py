"""The trace explorer's detail pane: one span in full, its message content rendered as messages.

A span's content attributes (``gen_ai.input.messages``, ``gen_ai.output.messages``,
``gen_ai.system_instructions``, tool arguments and results) are JSON strings on the wire; here
they are parsed and drawn as role-coloured messages with tool calls and results, never cut and
never shown as escaped JSON. When the run's step records are at hand they are the better source
(they hold retry prompts as such, and content even when telemetry did not capture it), so a
step, model or tool span of a known step is drawn from its record.

A detail is built as pieces (`span_detail_pieces`) whose concatenation is the pane's HTML: the
span's own HTML, and HTML that other spans' details repeat (`Shared`): the message boxes of what
a model call was sent, which every later call of the conversation sends again, and the resource
table. The notebook asks for one detail at a time and joins them (`span_detail_html`); the
report's page stores each shared part once (`explorer_page_html`).

Everything from the trace is text: HTML-escaped, control characters (terminal escapes) replaced,
and no link is made from it.
"""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from html import escape
from typing import Any

from workbench._json import loads
from workbench.errors import TraceLoadError
from workbench.messages import Message, ThinkingPart
from workbench.notebook.explorer_data import open_words
from workbench.notebook.html import (
    FAILED_COLOUR,
    ROLE_COLOURS,
    _badge,
    message_html,
    messages_html,
    outcomes_html,
    step_pieces,
    thinking_html,
    traceback_html,
)
from workbench.records import StepRecord
from workbench.telemetry import names as n
from workbench.telemetry.recover import messages_of_chat
from workbench.telemetry.spandata import SpanData
from workbench.telemetry.trace import Trace

__all__ = [
    "CONTENT_ATTRIBUTES",
    "DetailPiece",
    "MessageBoxes",
    "Shared",
    "StepRecords",
    "Where",
    "content_boxes",
    "genai_message_boxes",
    "genai_messages_html",
    "joined_html",
    "safe_text",
    "span_detail_html",
    "span_detail_pieces",
]

CONTENT_ATTRIBUTES = (
    "gen_ai.system_instructions",
    "gen_ai.input.messages",
    "gen_ai.output.messages",
    "gen_ai.tool.call.arguments",
    "gen_ai.tool.call.result",
)
"""Attributes drawn as content above the attribute table (the table points to them)."""

_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
"""Control characters (terminal escapes) and lone UTF-16 surrogates (a string a tracer cut
inside a pair), which no UTF-8 page or Jupyter message can carry."""
_PRE = (
    "margin:2px 0;white-space:pre-wrap;word-break:break-word;"
    "font-family:ui-monospace,monospace;font-size:12px"
)
_BOX = "border-left:4px solid {b};background:{bg};padding:4px 8px;margin:4px 0;border-radius:3px"
_H = "<h4 style='margin:10px 0 2px'>{}</h4>"


@dataclass(frozen=True)
class Shared:
    """HTML that other spans' details repeat, in parts that a page of every detail stores once.

    A model call is sent the conversation so far, so its message boxes (a part each) are the
    previous call's and a few more; the resource table is the same on every span of a process.
    """

    parts: tuple[str, ...]


@dataclass(frozen=True)
class Where:
    """The line under a detail's heading: when the span started, how long it took, its ids.

    Every span has its own, made of values the page's rows already hold (start, duration, the
    span and its parent): a page of every detail draws it from those (``explorer_static.js``)
    rather than storing it again for each span.
    """

    start_ms: float
    duration_ms: float
    open: str
    """What the time is of a span that has not ended (`open_words`), "" for one that has."""
    span_id: str
    parent_id: str | None

    def html(self) -> str:
        """The line as HTML."""
        return (
            f"<span class='wbx-where'>start {self.start_ms:.3f} ms · {self.duration_ms:.3f} ms"
            f"{' ' + self.open if self.open else ''} · span <code>{safe_text(self.span_id)}</code>"
            f" · parent <code>{safe_text(self.parent_id or '—')}</code>"
        )


DetailPiece = str | Shared | Where
"""A piece of a detail pane: HTML, parts of it other details repeat, or its line of times and
ids (a page of every detail stores each distinct piece once, `explorer_page.explorer_page_html`)."""


def joined_html(pieces: Sequence[DetailPiece]) -> str:
    """The HTML of a detail's pieces, in order."""
    return "".join(
        p if isinstance(p, str) else p.html() if isinstance(p, Where) else "".join(p.parts)
        for p in pieces
    )


def safe_text(value: object) -> str:
    """Untrusted text for HTML: escaped, with control characters and lone surrogates shown as �."""
    text = value if isinstance(value, str) else str(value)
    return escape(_CONTROL.sub("\N{REPLACEMENT CHARACTER}", text))


def _pre(text: str) -> str:
    return f'<pre class="wb-content" style="{_PRE}">{safe_text(text)}</pre>'


def _pretty(value: object) -> str:
    """A JSON value as indented text; a string that holds JSON is parsed first."""
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError:  # not JSON (or too deep to show as such): the text as it is
            return str(value)
    return json.dumps(value, ensure_ascii=False, indent=2, sort_keys=True)


def _genai_part(part: Any, names: Mapping[str, str]) -> str:
    """One part of a message; ``names``: the tool of each call id (a result does not say it)."""
    if not isinstance(part, Mapping):
        return _pre(_pretty(part))
    kind = part.get("type")
    if kind == "text":
        return _pre(str(part.get("content", "")))
    if kind in ("reasoning", "thinking"):  # the conventions' name, and pydantic-ai's
        thought = ThinkingPart(
            text=_CONTROL.sub("\N{REPLACEMENT CHARACTER}", str(part.get("content", ""))),
            provider=str(part["provider"]) if part.get("provider") else None,
            signature=str(part["signature"]) if part.get("signature") else None,
            redacted=part.get("redacted") is True,
        )
        return thinking_html(thought)
    if kind == "tool_call":
        return (
            f'<div class="wb-tool-call">{_badge("call", "#43a047")}'
            f"<b>{safe_text(part.get('name', ''))}</b>"
            f'<code style="font-size:11px;color:#666"> {safe_text(part.get("id", ""))}</code>'
            f"{_pre(_pretty(part.get('arguments', {})))}</div>"
        )
    if kind == "tool_call_response":
        tool = names.get(str(part.get("id", "")), "")
        return (
            f'<div class="wb-tool-result">{_badge("result", "#fb8c00")}'
            f"{f'<b>{safe_text(tool)}</b>' if tool else ''}"
            f'<code style="font-size:11px;color:#666"> {safe_text(part.get("id", ""))}</code>'
            f"{_pre(_pretty(part.get('response', part.get('result', ''))))}</div>"
        )
    return f"{_badge(str(kind or 'part'), '#636e72')}{_pre(_pretty(dict(part)))}"


def genai_messages_html(value: object) -> str:
    """GenAI-convention messages (a JSON string or the parsed list) as message boxes.

    System instructions (a list of parts, no role) are drawn as one system message. A value that
    is not valid JSON is shown as it is, whole.
    """
    return "".join(genai_message_boxes(value))


def genai_message_boxes(value: object) -> list[str]:
    """The boxes of `genai_messages_html`, one per message."""
    if isinstance(value, str):
        try:
            value = loads(value)
        except ValueError:
            return [_pre(str(value))]
    if not isinstance(value, list):
        return [_pre(_pretty(value))]
    if value and all(isinstance(v, Mapping) and "role" not in v for v in value):
        value = [{"role": "system", "parts": value}]
    out = []
    names = {  # the tool of each call these messages make, named beside its result
        str(p.get("id")): str(p.get("name", ""))
        for m in value
        if isinstance(m, Mapping) and isinstance(m.get("parts"), list)
        for p in m["parts"]
        if isinstance(p, Mapping) and p.get("type") == "tool_call"
    }
    for message in value:
        if not isinstance(message, Mapping):
            out.append(_pre(_pretty(message)))
            continue
        role = str(message.get("role", "?"))
        bg, border = ROLE_COLOURS.get(role, ("#ffffff", "#999999"))
        parts = message.get("parts", [])
        listed = parts if isinstance(parts, list) else [parts]
        body = "".join(_genai_part(p, names) for p in listed)
        finish = message.get("finish_reason")
        tail = f" · {safe_text(finish)}" if finish else ""
        out.append(
            f'<div class="wb-msg wb-role-{safe_text(role)}" style="{_BOX.format(b=border, bg=bg)}">'
            f'<div style="font-size:11px;color:{border};font-weight:600">{safe_text(role)}{tail}'
            f"</div>{body}</div>"
        )
    return out


class StepRecords:
    """A trace's step records, found by their spans, each with the record its diff is against.

    Indexed once for a page of every detail: a walk of the records for each span (and for
    each step, its run's previous model call) made a long run's page take time with the square
    of its steps. The records may be a whole run tree's, whose runs all have a step 1.
    """

    def __init__(self, steps: Sequence[StepRecord]) -> None:
        self.steps = steps
        self._keyed: dict[tuple[str, str, int], StepRecord] = {}
        self._before: dict[int, StepRecord | None] = {}  # by id: ``steps`` holds the records
        last: dict[str, StepRecord] = {}  # each run's last record that made a model call
        for step in steps:
            self._keyed.setdefault((step.run_id, step.execution_id, step.index), step)
            self._before[id(step)] = last.get(step.run_id)
            if step.messages_in:
                last[step.run_id] = step

    def get(self, run: str, execution: str, index: int) -> StepRecord | None:
        """The record of a run's execution's step."""
        return self._keyed.get((run, execution, index))

    def of(self, span: SpanData) -> StepRecord | None:
        """The record of the span's step: same index, and same run and execution where it says."""
        index = span.attributes.get("workbench.step.index")
        if index is None or not self.steps:
            return None
        run = span.attributes.get("workbench.run.id")
        execution = span.attributes.get("workbench.execution.id")
        if run is not None and execution is not None:
            return self._keyed.get((run, execution, index))
        return next(  # a span that does not say its run or execution: the first that fits
            (
                step
                for step in self.steps
                if step.index == index
                and (run is None or step.run_id == run)
                and (execution is None or step.execution_id == execution)
            ),
            None,
        )

    def pieces(self, step: StepRecord, draw: Callable[[Message], str] = message_html) -> list[str]:
        """The step drawn whole (`step_pieces`), its diff against its run's previous model call."""
        return step_pieces(step, previous=self._before.get(id(step)), draw=draw)


class MessageBoxes:
    """`message_html` that draws each message object once.

    A run's model calls are sent the same message objects again (each step's input is the last
    one's and what came since), so the details of all its spans draw each message once rather
    than once per later call.
    """

    def __init__(self) -> None:
        self._drawn: dict[int, tuple[Message, str]] = {}  # holding the message keeps its id its own

    def __call__(self, message: Message) -> str:
        """The message's box."""
        drawn = self._drawn.get(id(message))
        if drawn is None:
            drawn = self._drawn[id(message)] = (message, message_html(message))
        return drawn[1]


def _sent(messages: Sequence[Message], draw: Callable[[Message], str]) -> DetailPiece:
    """Messages sent to a model as their boxes (the note that there were none, if none)."""
    if not messages:
        return messages_html(messages)
    return Shared(tuple(draw(m) for m in messages))


def _record_content(
    span: SpanData, records: StepRecords, draw: Callable[[Message], str]
) -> list[DetailPiece]:
    """The span's content from its step record, or none when there is none to draw from."""
    step = records.of(span)
    if step is None:
        return []
    category = span.category
    if category == "step":
        return list(records.pieces(step, draw))
    if category == "model":
        return [
            _H.format("Sent to the model"),
            _sent(step.messages_in, draw),
            _H.format("What the step added"),
            _sent(step.new_messages, draw),
        ]
    if category == "tool":
        call = span.attributes.get("gen_ai.tool.call.id")
        outcomes = [o for o in step.tool_outcomes if o.call_id == call]
        shown = outcomes_html(outcomes, tracebacks=False, waits=step.waits)  # traceback: on top
        return [_H.format("Tool call") + shown] if outcomes else []
    return []


_SENT_TITLES = {
    "gen_ai.system_instructions": "System instructions",
    "gen_ai.input.messages": "Input messages",
}


def content_boxes(attributes: Mapping[str, Any]) -> list[str]:
    """The message boxes a model call's detail draws of its content (the conventions' JSON).

    System instructions, input, then output, each box as the detail has it: a page that stores
    the details' pieces holds these already ([] when the span has no such content).
    """
    keys = [k for k in (*_SENT_TITLES, "gen_ai.output.messages") if k in attributes]
    return [box for key in keys for box in genai_message_boxes(attributes[key])]


def _tool_result(value: object) -> object:
    """What a tool answered, from OpenInference's ``output.value`` of a tool span.

    LangChain's tracer writes the whole tool message there, as JSON (its type, ids, status,
    and the content, the answer, inside); the Agents SDK's the answer itself.
    """
    try:
        found = loads(value) if isinstance(value, str) else None
    except ValueError:  # not JSON: the answer as it is
        return value
    data = found.get("data") if isinstance(found, dict) and found.get("type") == "tool" else None
    return data["content"] if isinstance(data, dict) and "content" in data else value


def _attribute_content(span: SpanData) -> list[DetailPiece]:
    """The span's captured content: the conventions' JSON, else messages read from another shape.

    OpenInference and OpenLLMetry (before it wrote the conventions' JSON) flatten a model call's
    messages into one attribute per field; those are read back (`messages_of_chat`) and drawn
    as messages too; a tool call's arguments and result are its input and output there. Content
    that cannot be read is said, with why.
    """
    attributes = span.attributes
    out: list[DetailPiece] = []
    for key, title in _SENT_TITLES.items():
        if key in attributes:
            out += [_H.format(title), Shared(tuple(genai_message_boxes(attributes[key])))]
    if "gen_ai.output.messages" in attributes:
        answer = genai_message_boxes(attributes["gen_ai.output.messages"])
        out += [_H.format("Output messages"), Shared(tuple(answer))]
    arguments = attributes.get(n.TOOL_CALL_ARGUMENTS)
    result = attributes.get(n.TOOL_CALL_RESULT)
    if span.category == "tool" and arguments is None and result is None:  # OpenInference's
        arguments = attributes.get(n.OI_INPUT_VALUE)
        result = _tool_result(attributes.get(n.OI_OUTPUT_VALUE))
    if arguments is not None:
        out.append(_H.format("Arguments") + _pre(_pretty(arguments)))
    if result is not None:
        out.append(_H.format("Result") + _pre(str(result)))
    if out or span.category != "model":
        return out
    try:
        messages = messages_of_chat(attributes)
    except TraceLoadError as exc:
        return [_H.format("Messages") + _pre(f"cannot be read: {exc}")]
    return (
        [_H.format("Messages (read from the span's attributes)"), messages_html(messages)]
        if messages
        else []
    )


def _table(rows: Mapping[str, Any], *, css: str) -> str:
    """A key/value table (an event's or a link's attributes)."""
    if not rows:
        return _NONE
    return f'<table class="wbx-kv {css}">{"".join(_row(k, v) for k, v in rows.items())}</table>'


def _row(key: str, value: object) -> str:
    """One attribute as a table row; the explorer's CSS (``.wbx-kv``) lays it out."""
    return f"<tr><td><code>{safe_text(key)}</code></td><td>{_value(key, value)}</td></tr>"


def _attribute_rows(attributes: Mapping[str, Any]) -> list[DetailPiece]:
    """The attributes table, each row a shared part.

    A run's spans repeat the same attributes (its run, execution, conversation, model): in a
    page of every span's detail each such row is stored once, not once per span.
    """
    if not attributes:
        return [_NONE]
    rows = Shared(tuple(_row(k, v) for k, v in attributes.items()))
    return ['<table class="wbx-kv wb-attributes">', rows, "</table>"]


def _value(key: str, value: object) -> str:
    if key in CONTENT_ATTRIBUTES:
        return "<i>shown as content above</i>"
    if isinstance(value, (list, tuple)):
        value = json.dumps(list(value), ensure_ascii=False)
    return f"<span>{safe_text(value)}</span>"


_NONE = "<div class='wbx-none'>none</div>"


def _status_badge(span: SpanData) -> str:
    """``failed`` (and why) or ``ok``; nothing for a span that set no status, most of them.

    Why, in a line, when the span's exception is said below with its traceback: OpenInference's
    LangChain tracer puts the exception's repr and its whole traceback in the status message,
    which ran on beside the name as one paragraph of frames.
    """
    if span.is_error:
        message = span.status_message or ""
        if any(e.name == n.EVENT_EXCEPTION for e in span.events):
            message = message.split(_TRACEBACK, 1)[0].strip().split("\n", 1)[0]
        why = f" {safe_text(message)}" if message else ""
        return _badge("failed", FAILED_COLOUR) + why
    return _badge("ok", "#2e7d32") if span.status == "ok" else ""


_TRACEBACK = "Traceback (most recent call last):"


def _failure_pieces(span: SpanData) -> list[DetailPiece]:
    """What went wrong in a failed span, first: the exception and its traceback, open."""
    if not span.is_error:
        return []
    raised = next((e.attributes for e in span.events if e.name == n.EVENT_EXCEPTION), None)
    if raised is None:
        return []  # a handled failure: its status message says it in the head
    what = f"{raised.get(n.EXCEPTION_TYPE, 'error')}: {raised.get(n.EXCEPTION_MESSAGE, '')}"
    trace = raised.get(n.EXCEPTION_STACKTRACE)
    return [
        _H.format("What went wrong")
        + f'<div class="wb-failure" style="color:{FAILED_COLOUR}">{safe_text(what)}</div>'
        + (traceback_html(str(trace), open_=True) if trace else "")
    ]


def span_detail_html(trace: Trace, span: SpanData) -> str:
    """Everything about one span: header, content as messages, attributes, events, links.

    The content comes from the span's step record when the trace has it, else from the span's
    content attributes: one of them, never both, the same messages twice would be noise.
    """
    return joined_html(span_detail_pieces(trace, span))


def span_detail_pieces(
    trace: Trace,
    span: SpanData,
    draw: Callable[[Message], str] = message_html,
    records: StepRecords | None = None,
) -> list[DetailPiece]:
    """The pieces of `span_detail_html`, what other details repeat apart (see `Shared`).

    ``draw`` draws a message sent to the model: a `MessageBoxes` when building many details;
    ``records``: the trace's `StepRecords`, indexed once when building many.
    """
    origin = trace.tree.start_ns
    status = _status_badge(span)
    open_ = open_words(trace, span)
    if open_ == "cut off":  # will never end: the process that ran it ended while it ran
        status += _badge("cut off", FAILED_COLOUR) + f" <i>{safe_text(trace.interrupted)}</i>"
    elif open_:  # a stopped run's span still open: its end is when the trace was taken
        status += _badge("in progress", "#e67e22")
    title = (  # the same for many spans (every `execute_tool add` that went well): shared
        f'<div class="wb-detail-head"><b>{safe_text(span.name)}</b> '
        f"{_badge(span.category, '#6c5ce7')}{status}<br>"
    )
    where = Where(
        start_ms=(span.start_ns - origin) / 1e6,
        duration_ms=span.duration_ns / 1e6,
        open=open_,
        span_id=span.span_id,
        parent_id=span.parent_id,
    )
    kind_and_scope = (
        f"{' · ' + safe_text(span.kind) if span.kind else ''}"
        f"{' · scope ' + safe_text(span.scope) if span.scope else ''}</span></div>"
    )
    records = StepRecords(trace.steps) if records is None else records
    content = _record_content(span, records, draw) or _attribute_content(span)
    content = [*_failure_pieces(span), *content]
    events = "".join(
        f"<li><b>{safe_text(e.name)}</b> at {(e.time_ns - origin) / 1e6:.3f} ms"
        f"{_table(e.attributes, css='wb-event-attributes') if e.attributes else ''}</li>"
        for e in span.events
    )
    links = "".join(
        f"<li>trace <code>{safe_text(k.trace_id)}</code> span <code>{safe_text(k.span_id)}</code>"
        f"{_table(k.attributes, css='wb-link-attributes') if k.attributes else ''}</li>"
        for k in span.links
    )
    sections = (
        _H.format(f"Events ({len(span.events)})"),
        f"<ul class='wb-events'>{events}</ul>" if events else _NONE,
        _H.format(f"Links ({len(span.links)})"),
        f"<ul class='wb-links'>{links}</ul>" if links else _NONE,
    )
    pieces: list[DetailPiece] = [
        '<div class="wb-span-detail">',
        Shared((title,)),
        where,
        kind_and_scope,
        *content,
        _H.format(f"Attributes ({len(span.attributes)})"),
        *_attribute_rows(span.attributes),
        Shared(sections) if not (events or links) else "".join(sections),  # mostly "none"
    ]
    if span.resource:
        pieces.append(Shared((_H.format("Resource") + _table(span.resource, css="wb-resource"),)))
    return [*pieces, "</div>"]
