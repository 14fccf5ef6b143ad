"""Messages, their typed parts, token usage and model responses.

Everything here is frozen data. A conversation is a tuple of `Message`; a message is a role and a
tuple of parts, each part a small model with a ``kind`` tag so that one discriminated union
(de)serializes all of them. Messages also record where they came from (run, execution and step),
which is what lets the workbench answer "which step produced this?" long after the run ended.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from enum import StrEnum
from typing import Annotated, Any, Literal

from pydantic import AfterValidator, Field
from pydantic_core import PydanticSerializationError

from workbench._json import VALUE_DEPTH, bounded, loads
from workbench._record import Record
from workbench.ids import Id
from workbench.redact import unicode_value

__all__ = [
    "FinishReason",
    "JsonValue",
    "Message",
    "ModelResponse",
    "Part",
    "ResponsePart",
    "RetryPrompt",
    "Role",
    "TextPart",
    "ThinkingPart",
    "ToolCall",
    "ToolDefinition",
    "ToolResult",
    "Usage",
    "answered_only",
    "new_call_id",
    "with_unique_call_ids",
]

JsonValue = Annotated[Any, AfterValidator(bounded)]
"""A value that came from, or goes to, JSON; a record holding one checks it nests at most
`workbench._json.VALUE_DEPTH` levels, so the record can always be stored and written back."""

Role = Literal["system", "user", "assistant", "tool"]


def new_call_id() -> str:
    """A fresh tool call id, in the ``call_<hex>`` shape most providers use."""
    return f"call_{uuid.uuid4().hex[:24]}"


class TextPart(Record):
    """Plain text from the system, the user or the model."""

    kind: Literal["text"] = "text"
    text: str


class ThinkingPart(Record):
    """What the model reasoned before it answered: its own part, never glued onto the text.

    Providers that reason across turns need their reasoning back, byte for byte: Anthropic's
    thinking blocks carry a ``signature`` over the text, and a redacted thinking block only its
    encrypted ``data``; the OpenAI Responses API's reasoning items carry ``encrypted_content``
    and an ``id``. ``signature`` holds whichever opaque value the provider named in ``provider``
    gave (a redacted block's data, with ``redacted`` set and no text), and a client sends it back
    only to that provider: another one could not read it and would refuse the request. ``text``
    is what a person reads (a redacted block has none; a summary when the provider only sums its
    reasoning up).
    """

    kind: Literal["thinking"] = "thinking"
    text: str = ""
    signature: str | None = None
    """The provider's opaque signature or encrypted content, sent back unchanged; None if none."""
    provider: str | None = None
    """Whose reasoning this is (``anthropic``, ``openai``): the only wire it is sent back to."""
    id: str | None = None
    """The provider's id of the reasoning item (the Responses API's ``rs_...``), when it has one."""
    redacted: bool = False
    """Anthropic's ``redacted_thinking``: encrypted by the provider, no text to read."""


class ToolCall(Record):
    """The model asks for a tool to be run.

    ``arguments`` is always a dict. When the model sent arguments that are not a JSON object,
    ``arguments`` is empty and ``invalid_arguments`` keeps the raw text, so the loop can tell the
    model exactly what was wrong instead of guessing.
    """

    kind: Literal["tool_call"] = "tool_call"
    name: str
    arguments: dict[str, JsonValue] = Field(default_factory=dict)
    call_id: str = Field(default_factory=new_call_id)
    invalid_arguments: str | None = None

    @classmethod
    def parse(
        cls, name: str, arguments: str | dict[str, JsonValue], call_id: str | None
    ) -> ToolCall:
        """Build a call from arguments given as a dict or as the model's raw JSON text."""
        call_id = call_id or new_call_id()
        if isinstance(arguments, dict):
            return cls(name=name, arguments=arguments, call_id=call_id)
        try:
            parsed = loads(arguments, VALUE_DEPTH) if arguments.strip() else {}
        except ValueError:  # broken, or nested deeper than a value we keep may be
            return cls(name=name, call_id=call_id, invalid_arguments=arguments)
        if not isinstance(parsed, dict):
            return cls(name=name, call_id=call_id, invalid_arguments=arguments)
        return cls(name=name, arguments=parsed, call_id=call_id)


class ToolResult(Record):
    """What a tool call produced, as the text the model will read."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str = ""
    content: str
    is_error: bool = False


class RetryPrompt(Record):
    """Tells the model what was wrong with its last answer so it can try again.

    With a ``call_id`` it answers that tool call (bad arguments, unknown tool, ``ToolRetry``);
    without one it is about the response as a whole (for example an empty response).
    """

    kind: Literal["retry_prompt"] = "retry_prompt"
    content: str
    call_id: str | None = None
    name: str = ""


Part = Annotated[
    TextPart | ThinkingPart | ToolCall | ToolResult | RetryPrompt, Field(discriminator="kind")
]
ResponsePart = TextPart | ThinkingPart | ToolCall
"""What a model's answer is made of: text, its reasoning, tool calls.

A plain union, not one discriminated by ``kind``: a part given as a dict without ``kind`` is text,
as it always was (`TextPart` comes first and wins the tie with a thinking part's ``text``).
"""


class ToolDefinition(Record):
    """What the model is told about a tool."""

    name: str
    description: str
    parameters: dict[str, JsonValue]


class Message(Record):
    """One message of a conversation, with where it came from."""

    role: Role
    parts: tuple[Part, ...]
    run_id: Id | None = None
    execution_id: Id | None = None
    step: int | None = None

    @classmethod
    def system(cls, text: str) -> Message:
        """A system message."""
        return cls(role="system", parts=(TextPart(text=text),))

    @classmethod
    def user(cls, text: str) -> Message:
        """A user message."""
        return cls(role="user", parts=(TextPart(text=text),))

    @classmethod
    def assistant(cls, text: str) -> Message:
        """An assistant message with plain text."""
        return cls(role="assistant", parts=(TextPart(text=text),))

    @classmethod
    def assistant_tool_call(
        cls, name: str, arguments: dict[str, JsonValue], *, call_id: str | None = None
    ) -> Message:
        """An assistant message that calls one tool."""
        call = ToolCall(name=name, arguments=arguments, call_id=call_id or new_call_id())
        return cls(role="assistant", parts=(call,))

    @classmethod
    def tool_result(cls, call_id: str, content: str, *, name: str = "") -> Message:
        """The result of the tool call ``call_id``."""
        return cls(role="tool", parts=(ToolResult(call_id=call_id, name=name, content=content),))

    @property
    def text(self) -> str:
        """The text parts joined, or an empty string."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def tool_calls(self) -> tuple[ToolCall, ...]:
        """The tool calls in this message."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    def stamped(self, run_id: str, execution_id: str, step: int) -> Message:
        """A copy marked as produced by the given run, execution and step."""
        return self.model_copy(
            update={"run_id": run_id, "execution_id": execution_id, "step": step}
        )


class Usage(Record):
    """Tokens used (and what they cost, when the price is known)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost: float | None = 0.0
    """US dollars; ``None`` means unknown (no price for the model), which is not free."""
    cache_read_tokens: int = 0
    """Of the input tokens, those served from the provider's prompt cache."""
    cache_write_tokens: int = 0
    """Of the input tokens, those written to the provider's prompt cache (Anthropic's)."""
    reasoning_tokens: int = 0
    """Of the output tokens, those the model spent reasoning (not in its answer)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __sub__(self, other: Usage) -> Usage:
        """What was used since ``other`` (an earlier reading of the same counter)."""
        cost = None if self.cost is None or other.cost is None else self.cost - other.cost
        return Usage(
            input_tokens=self.input_tokens - other.input_tokens,
            output_tokens=self.output_tokens - other.output_tokens,
            requests=self.requests - other.requests,
            cost=cost,
            cache_read_tokens=self.cache_read_tokens - other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens - other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens - other.reasoning_tokens,
        )

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return Usage(
            input_tokens=self.input_tokens + other.input_tokens,
            output_tokens=self.output_tokens + other.output_tokens,
            requests=self.requests + other.requests,
            cost=cost,
            cache_read_tokens=self.cache_read_tokens + other.cache_read_tokens,
            cache_write_tokens=self.cache_write_tokens + other.cache_write_tokens,
            reasoning_tokens=self.reasoning_tokens + other.reasoning_tokens,
        )


class FinishReason(StrEnum):
    """Why the model stopped generating."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    UNKNOWN = "unknown"


class ModelResponse(Record):
    """One answer of a model: text and/or tool calls, with usage and provenance."""

    parts: tuple[ResponsePart, ...]
    usage: Usage = Field(default_factory=lambda: Usage(requests=1))
    finish_reason: FinishReason = FinishReason.STOP
    model_name: str = ""
    response_id: str | None = None
    time_to_first_token: float | None = None
    """Seconds from request to the first streamed token; ``None`` when not streaming."""

    def writable(self) -> ModelResponse:
        """The response with text every file can hold (`unicode_text`): itself if it has it.

        A model's JSON can carry half a character (a lone surrogate escape): the run, its store,
        its spans and every view would refuse the response. What it says is kept as text.
        """
        try:
            self.model_dump_json()
        except PydanticSerializationError:
            return ModelResponse.model_validate(unicode_value(self.model_dump()))
        return self

    @classmethod
    def text(cls, text: str, *, usage: Usage | None = None) -> ModelResponse:
        """A response that answers with text."""
        return cls(parts=(TextPart(text=text),), usage=usage or Usage(requests=1))

    @classmethod
    def tool_call(
        cls,
        name: str,
        arguments: str | dict[str, JsonValue],
        *,
        call_id: str | None = None,
        usage: Usage | None = None,
    ) -> ModelResponse:
        """A response that calls one tool; ``arguments`` may be raw JSON text (even broken)."""
        return cls._calling((ToolCall.parse(name, arguments, call_id),), usage)

    @classmethod
    def tool_calls(
        cls,
        calls: list[tuple[str, str | dict[str, JsonValue]]],
        *,
        call_ids: list[str | None] | None = None,
        usage: Usage | None = None,
    ) -> ModelResponse:
        """A response that calls several tools at once."""
        ids = call_ids or [None] * len(calls)
        parts = tuple(ToolCall.parse(n, a, i) for (n, a), i in zip(calls, ids, strict=True))
        return cls._calling(parts, usage)

    @classmethod
    def _calling(cls, calls: tuple[ToolCall, ...], usage: Usage | None) -> ModelResponse:
        return cls(
            parts=calls, usage=usage or Usage(requests=1), finish_reason=FinishReason.TOOL_CALLS
        )

    @property
    def text_content(self) -> str:
        """The text parts joined."""
        return "".join(p.text for p in self.parts if isinstance(p, TextPart))

    @property
    def calls(self) -> tuple[ToolCall, ...]:
        """The tool calls of this response."""
        return tuple(p for p in self.parts if isinstance(p, ToolCall))

    def to_message(self) -> Message:
        """The assistant message this response becomes in the conversation."""
        return Message(role="assistant", parts=self.parts)


def with_unique_call_ids(parts: tuple[ResponsePart, ...]) -> tuple[ResponsePart, ...]:
    """The parts with every tool call id made unique, so each call keeps its own result.

    Some servers send the same id for several calls of one response; answering both under one id
    would give both the same result. A repeated id gets a suffix (``call_1``, ``call_1-2``).
    """
    seen: set[str] = set()
    unique: list[ResponsePart] = []
    for part in parts:
        if isinstance(part, ToolCall):
            call_id, n = part.call_id, 1
            while call_id in seen:
                n += 1
                call_id = f"{part.call_id}-{n}"
            seen.add(call_id)
            if call_id != part.call_id:
                part = part.model_copy(update={"call_id": call_id})
        unique.append(part)
    return tuple(unique)


def answered_only(messages: Iterable[Message]) -> tuple[Message, ...]:
    """The messages without the tool calls that have no result, and without messages left empty.

    A provider refuses a conversation holding a call nobody answered: a conversation taken from a
    run that ended, paused or was cut mid-step (a sub-agent's shared context, a session's next
    execution, a fork) goes on without them. The run's own record keeps them.
    """
    messages = tuple(messages)
    answered = {
        part.call_id
        for message in messages
        for part in message.parts
        if isinstance(part, ToolResult | RetryPrompt)
    }
    kept = []
    for message in messages:
        parts = tuple(
            p for p in message.parts if not isinstance(p, ToolCall) or p.call_id in answered
        )
        if parts == message.parts:
            kept.append(message)
        elif parts:
            kept.append(message.model_copy(update={"parts": parts}))
    return tuple(kept)
