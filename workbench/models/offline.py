"""Offline models: deterministic, free, and recording every request they get."""

from __future__ import annotations

import inspect
from collections.abc import Awaitable, Callable, Iterable, Sequence
from typing import TypeAlias

from workbench.errors import ScriptExhausted
from workbench.history import approx_tokens
from workbench.messages import Message, ModelResponse, Usage
from workbench.models.base import ModelRequest

__all__ = ["FunctionModel", "OfflineModel", "ScriptExhausted", "ScriptedModel"]


class OfflineModel:
    """What the offline models share: a name of their own and ``workbench`` as the provider."""

    _name: str

    @property
    def name(self) -> str:
        """The model's name."""
        return self._name

    @property
    def provider(self) -> str:
        """Always ``workbench``: no provider is called."""
        return "workbench"


class ScriptedModel(OfflineModel):
    """Answers with the given responses, in order; a plain string is a text response.

    A response without usage gets an estimate (about four characters a token), so token budgets
    and charts have something to show offline.

    Every request is kept in `calls`; `assert_complete()` checks every response was used.
    """

    __test__ = False

    def __init__(self, responses: Iterable[ModelResponse | str], *, name: str = "scripted") -> None:
        self.responses = [ModelResponse.text(r) if isinstance(r, str) else r for r in responses]
        self.calls: list[ModelRequest] = []
        self._name = name

    async def request(self, request: ModelRequest) -> ModelResponse:
        """The next scripted response."""
        index = len(self.calls)
        self.calls.append(request)
        if index >= len(self.responses):
            raise ScriptExhausted(
                f"ScriptedModel {self._name!r} has {len(self.responses)} responses and was asked "
                f"for response {index + 1}"
            )
        return _completed(self.responses[index], request, self._name)

    def assert_complete(self) -> None:
        """Raise AssertionError unless every scripted response was used."""
        used, total = len(self.calls), len(self.responses)
        assert used == total, f"ScriptedModel used {used} of its {total} responses"


ResponseFunction: TypeAlias = Callable[
    [Sequence[Message], ModelRequest], ModelResponse | str | Awaitable[ModelResponse | str]
]


class FunctionModel(OfflineModel):
    """Answers with ``fn(messages, request)``, sync or async; a string is a text response.

    ``request`` carries the tool definitions and settings. Every request is kept in `calls`.
    Usage is whatever the function's response says (no estimate: the function is in charge).
    """

    __test__ = False

    def __init__(self, fn: ResponseFunction, *, name: str = "function") -> None:
        self.fn = fn
        self.calls: list[ModelRequest] = []
        self._name = name

    async def request(self, request: ModelRequest) -> ModelResponse:
        """Whatever the function answers."""
        self.calls.append(request)
        answer = self.fn(request.messages, request)
        if inspect.isawaitable(answer):
            answer = await answer
        if isinstance(answer, str):
            answer = ModelResponse.text(answer)
        return answer.model_copy(update={"model_name": answer.model_name or self._name})


def _completed(response: ModelResponse, request: ModelRequest, name: str) -> ModelResponse:
    """The response with its model name, and estimated usage when none was given."""
    update: dict[str, object] = {"model_name": response.model_name or name}
    if response.usage.total_tokens == 0:
        update["usage"] = Usage(
            input_tokens=sum(approx_tokens(m) for m in request.messages),
            output_tokens=approx_tokens(response.to_message()),
            requests=1,
        )
    return response.model_copy(update=update)
