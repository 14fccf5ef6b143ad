"""History processors: shape the messages sent to the model, without changing the run's history.

A processor is any callable ``(messages) -> messages``; they run in order in PREPARE (`shaped`,
in a worker thread: the user's code never runs on the loop). The shipped ones never separate a
tool result from the call it answers and always keep system messages.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from workbench.messages import Message, RetryPrompt, TextPart, ThinkingPart, ToolCall, ToolResult

__all__ = ["HistoryProcessor", "KeepLast", "TokenWindow", "approx_tokens", "shaped"]

HistoryProcessor = Callable[[Sequence[Message]], Sequence[Message]]


def shaped(
    processors: Sequence[HistoryProcessor], messages: Sequence[Message]
) -> Sequence[Message]:
    """``messages`` through each processor in turn: what the model is sent."""
    for process in processors:
        messages = process(messages)
    return messages


def approx_tokens(message: Message) -> int:
    """A cheap token estimate (about four characters a token), good enough to bound a window."""
    size = 0
    for part in message.parts:
        match part:
            case ToolCall():
                size += len(part.name) + len(repr(part.arguments))
            case TextPart():
                size += len(part.text)
            case ThinkingPart():  # sent back too: what it carries counts against the window
                size += len(part.text) + len(part.signature or "")
            case ToolResult() | RetryPrompt():
                size += len(part.content)
    return size // 4 + 4


def _leading_system(messages: Sequence[Message]) -> int:
    count = 0
    while count < len(messages) and messages[count].role == "system":
        count += 1
    return count


def _safe_start(messages: Sequence[Message], start: int, floor: int) -> int:
    """Move ``start`` back so the kept part does not begin with orphaned tool results."""
    while start > floor and messages[start].role == "tool":
        start -= 1
    return start


class KeepLast:
    """Keep the system messages and the last ``n`` other messages."""

    def __init__(self, n: int) -> None:
        if n < 1:
            raise ValueError(f"KeepLast needs n >= 1, got {n}")
        self.n = n

    def __call__(self, messages: Sequence[Message]) -> Sequence[Message]:
        """The kept messages."""
        head = _leading_system(messages)
        if len(messages) - head <= self.n:
            return messages
        start = _safe_start(messages, len(messages) - self.n, head)
        return [*messages[:head], *messages[start:]]


class TokenWindow:
    """Keep the system messages and as many of the newest messages as fit in ``max_tokens``.

    It walks back from the newest message only as far as the window reaches, so its cost follows
    the window, not the length of the run.
    """

    def __init__(self, max_tokens: int, count: Callable[[Message], int] = approx_tokens) -> None:
        self.max_tokens = max_tokens
        self.count = count

    def __call__(self, messages: Sequence[Message]) -> Sequence[Message]:
        """The kept messages."""
        head = _leading_system(messages)
        budget = self.max_tokens - sum(self.count(m) for m in messages[:head])
        start = len(messages)
        while start > head:
            cost = self.count(messages[start - 1])
            if cost > budget:
                break
            budget -= cost
            start -= 1
        if start == len(messages) and start > head:
            start -= 1  # always send at least the newest message
        start = _safe_start(messages, start, head)
        return [*messages[:head], *messages[start:]] if start > head else messages
