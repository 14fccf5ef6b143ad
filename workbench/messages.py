"""Messages, their typed parts, token usage and model responses.

Everything here is frozen data. A conversation is a tuple of `Message`; a message is a role and a
tuple of parts, each part a small model with a ``kind`` tag so that one discriminated union
(de)serializes all of them. Messages also record where they came from (run, execution and step),
which is what lets the workbench answer "which step produced this?" long after the run ended.
"""

from __future__ import annotations

import json
import uuid
from enum import StrEnum
from typing import Annotated, Any, Literal, Self, TypeVar

from pydantic import BaseModel, ConfigDict, Field

__all__ = [
    "FinishReason",
    "JsonValue",
    "Message",
    "ModelResponse",
    "Part",
    "RetryPrompt",
    "Role",
    "TextPart",
    "ToolCall",
    "ToolResult",
    "Usage",
    "new_call_id",
]

JsonValue = Any
"""A value that came from, or goes to, JSON."""

Role = Literal["system", "user", "assistant", "tool"]


# A pydantic model keeps its fields in ``__dict__`` and its bookkeeping in three slots of
# `BaseModel`. `unvalidated` sets the four through their descriptors; pydantic's own
# ``model_construct`` uses ``object.__setattr__``, which first looks each name up on the type and
# costs twice as much.
_set_dict = BaseModel.__dict__["__dict__"].__set__
_set_fields_set = BaseModel.__dict__["__pydantic_fields_set__"].__set__
_set_extra = BaseModel.__dict__["__pydantic_extra__"].__set__
_set_private = BaseModel.__dict__["__pydantic_private__"].__set__
_new = object.__new__  # what ``cls.__new__`` is for every model here, without the class lookup
_ALL_FIELDS: dict[type[BaseModel], set[str]] = {}
"""Every field's name, by class: the ``__pydantic_fields_set__`` that the instances `unvalidated`
makes share (frozen instances never change theirs; pydantic's own copies copy it first)."""


class _Frozen(BaseModel):
    """Frozen data, changed by copying with `_replace`.

    `_replace` is ``model_copy(update=...)`` without what these models do not have (private and
    extra fields): a third cheaper, which counts on the loop's path, where states are copied
    several times a step. Every copy of the workbench's own data goes through it.
    """

    model_config = ConfigDict(frozen=True, extra="forbid")

    @classmethod
    def __pydantic_init_subclass__(cls, **kwargs: Any) -> None:
        super().__pydantic_init_subclass__(**kwargs)
        _ALL_FIELDS[cls] = set(cls.model_fields)

    def _replace(self, changes: dict[str, Any]) -> Self:
        """A copy with ``changes`` (already valid values), as ``model_copy(update=changes)``."""
        data = self.__dict__.copy()
        data.update(changes)
        fields_set = self.__pydantic_fields_set__  # shared while unchanged: frozen, never mutated
        if not changes.keys() <= fields_set:
            fields_set = fields_set | changes.keys()
        return unvalidated(type(self), data, fields_set)


_F = TypeVar("_F", bound=_Frozen)


def unvalidated(cls: type[_F], data: dict[str, Any], fields_set: set[str] | None = None) -> _F:
    """An instance of ``cls`` from the value of every field, taken as valid: nothing is validated.

    Only for the loop's own data on its per-step path (copies, the messages it stamps, tool
    results, usage sums, the step's snapshot), whose values are already-validated objects and
    typed arguments: validating them again cost about a tenth of a step. ``data`` names every
    field; ``fields_set`` is pydantic's record of the fields given (all of them by default).

    A function, not a classmethod: on Python 3.11 reading any attribute of a model class goes
    through pydantic's metaclass ``__getattr__`` hook, ~100 ns a time, several times a step.
    """
    made = _new(cls)
    _set_dict(made, data)
    _set_fields_set(made, _ALL_FIELDS[cls] if fields_set is None else fields_set)
    _set_extra(made, None)
    _set_private(made, None)
    return made


def new_call_id() -> str:
    """A fresh tool call id, in the ``call_<hex>`` shape most providers use."""
    return f"call_{uuid.uuid4().hex[:24]}"


class TextPart(_Frozen):
    """Plain text from the system, the user or the model."""

    kind: Literal["text"] = "text"
    text: str


class ToolCall(_Frozen):
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
            parsed = json.loads(arguments) if arguments.strip() else {}
        except json.JSONDecodeError:
            return cls(name=name, call_id=call_id, invalid_arguments=arguments)
        if not isinstance(parsed, dict):
            return cls(name=name, call_id=call_id, invalid_arguments=arguments)
        return cls(name=name, arguments=parsed, call_id=call_id)


class ToolResult(_Frozen):
    """What a tool call produced, as the text the model will read."""

    kind: Literal["tool_result"] = "tool_result"
    call_id: str
    name: str = ""
    content: str
    is_error: bool = False


class RetryPrompt(_Frozen):
    """Tells the model what was wrong with its last answer so it can try again.

    With a ``call_id`` it answers that tool call (bad arguments, unknown tool, ``ToolRetry``);
    without one it is about the response as a whole (for example an empty response).
    """

    kind: Literal["retry_prompt"] = "retry_prompt"
    content: str
    call_id: str | None = None
    name: str = ""


Part = Annotated[TextPart | ToolCall | ToolResult | RetryPrompt, Field(discriminator="kind")]


class Message(_Frozen):
    """One message of a conversation, with where it came from."""

    role: Role
    parts: tuple[Part, ...]
    run_id: str | None = None
    execution_id: str | None = None
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
        return self._replace({"run_id": run_id, "execution_id": execution_id, "step": step})


class Usage(_Frozen):
    """Tokens used (and what they cost, when the price is known)."""

    input_tokens: int = 0
    output_tokens: int = 0
    requests: int = 0
    cost: float | None = 0.0
    """US dollars; ``None`` means unknown (no price for the model), which is not free."""
    cache_read_tokens: int = 0
    """Of the input tokens, those served from the provider's prompt cache."""
    reasoning_tokens: int = 0
    """Of the output tokens, those the model spent reasoning (not in its answer)."""

    @property
    def total_tokens(self) -> int:
        """Input plus output tokens."""
        return self.input_tokens + self.output_tokens

    def __add__(self, other: Usage) -> Usage:
        cost = None if self.cost is None or other.cost is None else self.cost + other.cost
        return unvalidated(
            Usage,
            {
                "input_tokens": self.input_tokens + other.input_tokens,
                "output_tokens": self.output_tokens + other.output_tokens,
                "requests": self.requests + other.requests,
                "cost": cost,
                "cache_read_tokens": self.cache_read_tokens + other.cache_read_tokens,
                "reasoning_tokens": self.reasoning_tokens + other.reasoning_tokens,
            },
        )


class FinishReason(StrEnum):
    """Why the model stopped generating."""

    STOP = "stop"
    LENGTH = "length"
    TOOL_CALLS = "tool_calls"
    CONTENT_FILTER = "content_filter"
    ERROR = "error"
    UNKNOWN = "unknown"


class ModelResponse(_Frozen):
    """One answer of a model: text and/or tool calls, with usage and provenance."""

    parts: tuple[ToolCall | TextPart, ...]
    """Tool calls first in the union: a `ToolCall` tried against `TextPart` first costs an ABC
    instance check in Python (~0.7 µs), and most of a run's responses call tools."""
    usage: Usage = Field(default_factory=lambda: Usage(requests=1))
    finish_reason: FinishReason = FinishReason.STOP
    model_name: str = ""
    response_id: str | None = None
    time_to_first_token: float | None = None
    """Seconds from request to the first streamed token; ``None`` when not streaming."""

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
