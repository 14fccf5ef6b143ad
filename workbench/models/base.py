"""The `Model` protocol and what a model is asked: messages, tool definitions, settings."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any, Protocol, runtime_checkable

from pydantic import Field, SkipValidation
from typing_extensions import TypedDict  # pydantic reads only this one on Python 3.11

from workbench._record import Record
from workbench.errors import ModelError
from workbench.messages import Message, ModelResponse
from workbench.tools import ToolDefinition

__all__ = ["Model", "ModelError", "ModelRequest", "ModelSettings"]


class ModelSettings(TypedDict, total=False):
    """Per-request settings; models ignore what they do not support."""

    temperature: float
    top_p: float
    seed: int
    max_tokens: int
    stop: list[str]
    stream: bool
    tool_choice: str | dict[str, Any]
    timeout: float


class ModelRequest(Record):
    """One request to a model."""

    messages: Sequence[Message]
    tools: Sequence[ToolDefinition] = ()
    settings: SkipValidation[ModelSettings] = Field(default_factory=lambda: ModelSettings())
    """The caller's settings, passed to the model as they were given (ints stay ints)."""
    on_text_delta: Callable[[str], None] | None = Field(default=None, exclude=True, repr=False)
    """Called with each piece of text as it streams in (streaming models only)."""


@runtime_checkable
class Model(Protocol):
    """Anything that answers a `ModelRequest` with a `ModelResponse`."""

    @property
    def name(self) -> str:
        """The model's name, as reported in telemetry (``gen_ai.request.model``)."""
        ...

    @property
    def provider(self) -> str:
        """The provider, as reported in telemetry (``gen_ai.provider.name``)."""
        ...

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Answer one request."""
        ...
