"""Message content in the GenAI conventions' JSON shape, built incrementally.

``gen_ai.input.messages`` of a chat span is the whole conversation the model was sent, so a naive
encoder re-serializes (and re-redacts) the full history at every step: quadratic in the run. Here
each message is encoded once, when it is first seen, and kept as a JSON fragment; a request's
attribute is the cached fragments joined. Encoding and redaction cost grows with each step's new
messages, not with the history.

A message's JSON is written from the shapes below, its strings quoted by the JSON encoder's own
string quoting; only tool arguments (any JSON value) go through the JSON encoder, whose C
implementation costs about ten times as much as the formatting for these small objects. The
arguments of the last response's tool calls are encoded once, for the chat span and the tool span.

Shapes (semantic conventions, ``gen_ai.*.messages``)::

    {"role": "user", "parts": [{"type": "text", "content": "..."}]}
    {"role": "assistant", "parts": [{"type": "tool_call", "id": "c1", "name": "add",
                                     "arguments": {"a": 1}}], "finish_reason": "tool_call"}
    {"role": "tool", "parts": [{"type": "tool_call_response", "id": "c1", "response": "3"}]}
    {"role": "assistant", "parts": [{"type": "reasoning", "content": "...", "signature": "..",
                                     "provider": "anthropic"}, ...]}
"""

from __future__ import annotations

import json
import json.encoder
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

from workbench.messages import (
    FinishReason,
    JsonValue,
    Message,
    ModelResponse,
    Part,
    RetryPrompt,
    TextPart,
    ThinkingPart,
    ToolCall,
    ToolResult,
)
from workbench.redact import Redactor
from workbench.telemetry import names as n

if TYPE_CHECKING:
    from opentelemetry.sdk.trace import ReadableSpan

__all__ = ["ContentEncoder", "ContentStore", "expand", "joined"]


def _json_encoder() -> Callable[[Any], str]:
    """``json.dumps(value, ensure_ascii=False, default=str)``, its encoder made once.

    ``json.dumps`` makes a new encoder, and in it a new C encoder, at every call: for the small
    messages encoded here that is half the cost. The C encoder made once does the same work (the
    values are JSON from frozen messages, so no circular-reference check is needed).
    """
    make = getattr(json.encoder, "c_make_encoder", None)
    if make is None:  # pragma: no cover - CPython always has the accelerator
        return json.JSONEncoder(ensure_ascii=False, default=str).encode
    iterencode = make(
        None, str, json.encoder.encode_basestring, None, ": ", ", ", False, False, True
    )
    return lambda value: "".join(iterencode(value, 0))


_encode = _json_encoder()
_quote: Callable[[str], str] = json.encoder.encode_basestring
"""A JSON string literal, as ``_encode`` writes it."""

_FINISH = {
    FinishReason.STOP: "stop",
    FinishReason.LENGTH: "length",
    FinishReason.TOOL_CALLS: "tool_call",
    FinishReason.CONTENT_FILTER: "content_filter",
    FinishReason.ERROR: "error",
    FinishReason.UNKNOWN: "unknown",  # not a reason the conventions list: said as it is
}


class ContentEncoder:
    """Encodes messages, responses and tool payloads as redacted GenAI JSON strings."""

    def __init__(self, redactor: Redactor) -> None:
        self._redactor = redactor
        self._fragments: dict[int, tuple[Message, str]] = {}
        self._sent: tuple[Message, ...] = ()
        self._log: list[str] = []
        """The input messages sent so far, each encoded once, in order."""
        self._answer: tuple[tuple[Part, ...], str] | None = None
        """The last response's parts and its message, encoded: it is the next request's news."""
        self._calls: dict[int, tuple[dict[str, JsonValue], str]] = {}
        """The last response's tool call arguments (by identity), encoded: the tool spans' too."""

    def request(self, messages: Sequence[Message]) -> str:
        """``gen_ai.input.messages`` for one model request.

        System messages stay in place with the ``system`` role: the workbench's models send
        them as Chat Completions does, inside the conversation, and the conventions keep such
        messages in ``gen_ai.input.messages`` (``gen_ai.system_instructions`` is for
        instructions sent apart from it; the agent span carries the system prompt there).
        """
        log, count = self.request_log(messages)
        return joined(log, count)

    def request_log(self, messages: Sequence[Message]) -> tuple[list[str], int]:
        """The request's messages as ``(log, count)``, the first ``count`` encoded ones of ``log``.

        ``log`` only grows while the requests extend each other (the loop only appends), so a
        span can keep a reference to it instead of its own copy of the history. Only the new
        messages are encoded.
        """
        messages = tuple(messages)
        known = len(self._sent)
        if not known or messages[:known] != self._sent:
            known, self._log = 0, []  # a new list: spans referring to the old one keep it
        self._log.extend(self._fragment(message) for message in messages[known:])
        self._sent, self._answer = messages, None
        if len(self._fragments) > 2 * len(messages) + 16:
            self._forget_except(messages)
        return self._log, len(messages)

    def instructions(self, messages: Sequence[Message]) -> str | None:
        """``gen_ai.system_instructions``: the system messages' text parts, or None."""
        parts = [
            {"type": "text", "content": self._redactor.text(p.text)}
            for m in messages
            if m.role == "system"
            for p in m.parts
            if isinstance(p, TextPart)
        ]
        return _encode(parts) if parts else None

    def response(self, response: ModelResponse) -> str:
        """``gen_ai.output.messages`` for one model response.

        The message is encoded once: the next request carries it as an input message (the loop
        appends the response's parts as they are), and `request` takes this encoding for it.
        """
        self._calls = {}
        fragment = self._message("assistant", response.parts)
        self._answer = (response.parts, fragment)
        finish = _FINISH[response.finish_reason]
        return f'[{fragment[:-1]}, "finish_reason": "{finish}"}}]'

    def arguments(self, arguments: dict[str, JsonValue]) -> str:
        """``gen_ai.tool.call.arguments``."""
        cached = self._calls.get(id(arguments))
        if cached is not None and cached[0] is arguments:
            return cached[1]
        return _encode(self._redactor.value(arguments))

    def result(self, content: str) -> str:
        """``gen_ai.tool.call.result`` (the text the model got back)."""
        return self._redactor.text(content)

    def _fragment(self, message: Message) -> str:
        cached = self._fragments.get(id(message))
        if cached is not None and cached[0] is message:
            return cached[1]
        answer = self._answer
        if answer is not None and message.role == "assistant" and message.parts == answer[0]:
            encoded = answer[1]
        else:
            encoded = self._message(message.role, message.parts)
        self._fragments[id(message)] = (message, encoded)
        return encoded

    def _message(self, role: str, parts: Sequence[Part]) -> str:
        encoded = ", ".join([self._part(p) for p in parts])
        return f'{{"role": {_quote(role)}, "parts": [{encoded}]}}'

    def _part(self, part: Part) -> str:
        """One part in the conventions' shape; only what carries content is redacted."""
        text = self._redactor.text
        match part:
            case TextPart():
                return f'{{"type": "text", "content": {_quote(text(part.text))}}}'
            case ThinkingPart():
                return _reasoning(part, text)
            case ToolCall():
                if part.invalid_arguments is None:
                    arguments = _encode(self._redactor.value(part.arguments))
                    self._calls[id(part.arguments)] = (part.arguments, arguments)
                else:
                    arguments = _quote(text(part.invalid_arguments))
                return (
                    f'{{"type": "tool_call", "id": {_quote(part.call_id)}, '
                    f'"name": {_quote(part.name)}, "arguments": {arguments}}}'
                )
            case ToolResult(call_id=str(call_id)) | RetryPrompt(call_id=str(call_id)):
                return (
                    f'{{"type": "tool_call_response", "id": {_quote(call_id)}, '
                    f'"response": {_quote(text(part.content))}}}'
                )
            case RetryPrompt():
                return f'{{"type": "text", "content": {_quote(text(part.content))}}}'
        raise TypeError(f"unknown message part {type(part).__name__}")  # pragma: no cover

    def _forget_except(self, messages: Sequence[Message]) -> None:
        """Drop cached fragments of messages no longer sent (history processors made new ones)."""
        keep = {id(m) for m in messages}
        self._fragments = {k: v for k, v in self._fragments.items() if k in keep}


def _reasoning(part: ThinkingPart, text: Callable[[str], str]) -> str:
    """A thinking part as the conventions' ``reasoning`` part.

    What a provider needs back (its signature or encrypted content, its item id, which provider)
    rides along as extra keys, which the conventions allow, so a re-run from the trace can send
    the reasoning back as the provider gave it.
    """
    extra = "".join(
        f", {_quote(key)}: {_quote(text(value))}"
        for key, value in (
            ("signature", part.signature),
            ("provider", part.provider),
            ("id", part.id),
        )
        if value is not None
    )
    redacted = ', "redacted": true' if part.redacted else ""
    return f'{{"type": "reasoning", "content": {_quote(text(part.text))}{extra}{redacted}}}'


def joined(log: Sequence[str], count: int) -> str:
    """The JSON list of the first ``count`` encoded messages of ``log``."""
    return "[" + ",".join(log[:count]) + "]"


class ContentStore:
    """Conversations encoded once; a chat span keeps ``"{log}:{count}"``, not the history.

    ``gen_ai.input.messages`` is the whole conversation at every model call: held as a string on
    every span, a run's content grows with the square of its length. The store keeps each
    conversation's encoded messages once, and `expand` builds the attribute when a span is read
    or exported, so what leaves is the same text.
    """

    def __init__(self) -> None:
        self._logs: dict[int, list[str]] = {}

    def ref(self, log: list[str], count: int) -> str:
        """A reference to the first ``count`` messages of ``log`` (kept alive from here on)."""
        self._logs.setdefault(id(log), log)
        return f"{id(log)}:{count}"

    def expand(self, ref: str) -> str | None:
        """The ``gen_ai.input.messages`` text a reference stands for (None if unknown)."""
        key, _, count = ref.partition(":")
        log = self._logs.get(int(key)) if key.isdigit() else None
        return None if log is None or not count.isdigit() else joined(log, int(count))

    def clear(self) -> None:
        """Forget every conversation (the spans that refer to them are gone too)."""
        self._logs.clear()


def expand(span: ReadableSpan, store: ContentStore) -> ReadableSpan:
    """The span as it leaves: a content reference replaced by ``gen_ai.input.messages``."""
    attributes = span.attributes or {}
    ref = attributes.get(n.INPUT_MESSAGES_REF)
    if not isinstance(ref, str):
        return span
    from opentelemetry.sdk.trace import ReadableSpan

    text = store.expand(ref)
    full = {
        (n.INPUT_MESSAGES if k == n.INPUT_MESSAGES_REF else k): (
            text if k == n.INPUT_MESSAGES_REF else v
        )
        for k, v in attributes.items()
        if k != n.INPUT_MESSAGES_REF or text is not None
    }
    return ReadableSpan(
        name=span.name,
        context=span.context,
        parent=span.parent,
        resource=span.resource,
        attributes=full,
        events=span.events,
        links=span.links,
        kind=span.kind,
        status=span.status,
        start_time=span.start_time,
        end_time=span.end_time,
        instrumentation_scope=span.instrumentation_scope,
    )
