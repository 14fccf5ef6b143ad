"""The `Model` protocol and what a model is asked: messages, tool definitions, settings."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Protocol, runtime_checkable
from urllib.parse import urlsplit

from pydantic import Field, SkipValidation
from typing_extensions import TypedDict  # pydantic reads only this one on Python 3.11

from workbench._record import Record
from workbench.conversation import Messages
from workbench.errors import ModelError
from workbench.messages import ModelResponse
from workbench.tools import ToolDefinition

__all__ = ["Model", "ModelError", "ModelRequest", "ModelSettings", "server_of"]


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
    thinking_budget: int
    """Anthropic: think first, up to this many tokens (``thinking.budget_tokens``)."""
    reasoning_effort: str
    """The Responses API: how hard a reasoning model thinks (``reasoning.effort``: ``minimal``,
    ``low``, ``medium``, ``high``), with a summary of its reasoning asked for."""
    extra_body: dict[str, Any]
    """Merged into the request's JSON last: a server's own parameters that no setting names
    (llama.cpp's ``top_k``, a ``seed`` or ``stop`` on a wire that has none)."""


class ModelRequest(Record):
    """One request to a model."""

    messages: Messages
    tools: tuple[ToolDefinition, ...] = ()
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


def server_of(model: object) -> tuple[str | None, int | None]:
    """The host and port a model is served from (``server.address``/``server.port``).

    Read from its ``base_url`` when it has one; only the host and port, so credentials written
    into a URL never reach telemetry or a store. ``(None, None)`` for offline models.

    >>> class Remote:
    ...     base_url = "https://user:secret@api.example.com/v1"
    >>> server_of(Remote())
    ('api.example.com', 443)
    """
    url = getattr(model, "base_url", None)
    if not isinstance(url, str) or not url:
        return None, None
    try:
        parts = urlsplit(url)
        port = parts.port
    except ValueError:
        return None, None
    if port is None and parts.scheme in ("http", "https"):
        port = 443 if parts.scheme == "https" else 80
    return parts.hostname, port
