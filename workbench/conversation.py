"""`Messages`: a run's conversation as views of one append-only log.

A run replaces its frozen state at every change, and keeps the state each step started from in
that step's snapshot. With the conversation as a tuple, every new state copied it and every
snapshot held a copy of its own: a run held one history per step, its memory grew with the
square of its length (a 5,000-step run gained 90 kB a step at the end against 33 kB at step
1,000), and so did the garbage collector's walks over it.

So a conversation is a view: the first ``n`` messages of a log (a list that is only ever
appended to). Adding messages to a view that ends where its log ends appends to the log and
makes a longer view; every older view still sees its own ``n`` messages, so states and
snapshots stay frozen values, sharing one log between them. Adding to a view that no longer
ends there (a re-run from an old snapshot, a fork) copies its messages into a log of its own
first, once. A view is an immutable `Sequence` of messages, equal to any sequence holding the
same messages (a tuple included); as a record field it validates and serializes as a list of
messages, so JSON and the store are unchanged.
"""

from __future__ import annotations

import itertools
import operator
import threading
from collections.abc import Iterable, Iterator, Sequence
from typing import Any, overload

from pydantic import GetCoreSchemaHandler
from pydantic_core import core_schema

from workbench.messages import Message

__all__ = ["Messages", "appended"]


class _Log:
    """The list a run's views share; appended to under a lock (a run's views may be on threads)."""

    __slots__ = ("items", "lock")

    def __init__(self, items: list[Message]) -> None:
        self.items = items
        self.lock = threading.Lock()


class Messages(Sequence[Message]):
    """The first ``len(self)`` messages of a shared append-only log (see the module docstring)."""

    __slots__ = ("_count", "_log")

    def __init__(self, messages: Iterable[Message] = ()) -> None:
        items = list(messages)
        for message in items:
            if not isinstance(message, Message):
                raise TypeError(f"a conversation holds messages, not {type(message).__name__}")
        self._log = _Log(items)
        self._count = len(items)

    @classmethod
    def _view(cls, log: _Log, count: int) -> Messages:
        view = cls.__new__(cls)
        view._log, view._count = log, count
        return view

    def extended(self, messages: Sequence[Message]) -> Messages:
        """The conversation followed by ``messages``.

        The log is appended to, never copied, unless it already went on past this view: then
        this view's messages are copied into a log of their own, once.
        """
        log, count = self._log, self._count
        with log.lock:
            end = count + len(messages)
            if len(log.items) == count:
                log.items.extend(messages)
                return Messages._view(log, end)
            ahead = log.items[count:end]
            same = len(ahead) == len(messages) and all(map(operator.is_, ahead, messages))
            if same:  # the same messages were added already (a step taken again)
                return Messages._view(log, end)
            head = log.items[:count]
        return Messages((*head, *messages))

    def starts_with(self, prefix: Sequence[Message]) -> bool:
        """Whether the conversation begins with ``prefix``.

        At once when ``prefix`` is a shorter view of the same log (a state's and its
        snapshot's), else message by message.
        """
        if isinstance(prefix, Messages) and prefix._log is self._log:
            return prefix._count <= self._count
        count = len(prefix)
        if count > self._count:
            return False
        items = self._log.items
        return all(items[i] is m or items[i] == m for i, m in enumerate(prefix))

    # -- Sequence -------------------------------------------------------------------------------

    def __len__(self) -> int:
        return self._count

    @overload
    def __getitem__(self, index: int) -> Message: ...
    @overload
    def __getitem__(self, index: slice) -> Messages: ...
    def __getitem__(self, index: int | slice) -> Message | Messages:
        if isinstance(index, slice):
            start, stop, step = index.indices(self._count)
            if start == 0 and step == 1:  # a prefix: a shorter view of the same log
                return Messages._view(self._log, stop)
            if step == 1:  # a part from the middle: a log of its own
                return Messages(self._log.items[start:stop])
            return Messages(list(self)[index])
        if index < 0:
            index += self._count
        if not 0 <= index < self._count:
            raise IndexError("conversation index out of range")
        return self._log.items[index]

    def __iter__(self) -> Iterator[Message]:
        return itertools.islice(self._log.items, self._count)

    def __reversed__(self) -> Iterator[Message]:
        items = self._log.items
        return (items[i] for i in range(self._count - 1, -1, -1))

    def __eq__(self, other: object) -> bool:
        if isinstance(other, Messages) and other._log is self._log:
            return other._count == self._count
        if not isinstance(other, Sequence) or isinstance(other, str | bytes):
            return NotImplemented
        return len(other) == self._count and all(a == b for a, b in zip(self, other, strict=True))

    def __hash__(self) -> int:
        return hash(tuple(self))

    def __add__(self, other: Iterable[Message]) -> Messages:
        return self.extended(tuple(other))

    def __radd__(self, other: Iterable[Message]) -> Messages:
        return Messages((*other, *self))

    def __repr__(self) -> str:
        return f"Messages({list(self)!r})"

    def __reduce__(self) -> tuple[Any, ...]:  # copy, deepcopy and pickle: a log of its own
        return (Messages, (tuple(self),))

    # -- as a record field ----------------------------------------------------------------------

    @classmethod
    def __get_pydantic_core_schema__(
        cls, source: Any, handler: GetCoreSchemaHandler
    ) -> core_schema.CoreSchema:
        """Validated as a tuple of messages (a `Messages` is kept as it is), dumped as a list."""
        items = handler.generate_schema(tuple[Message, ...])

        def validate(value: Any, inner: core_schema.ValidatorFunctionWrapHandler) -> Messages:
            return value if isinstance(value, Messages) else Messages(inner(value))

        return core_schema.no_info_wrap_validator_function(
            validate,
            items,
            serialization=core_schema.plain_serializer_function_ser_schema(
                tuple, return_schema=items
            ),
        )


def appended(messages: Sequence[Message], *new: Message) -> Messages:
    """``messages`` followed by ``new``, sharing ``messages``' log when it is a `Messages`."""
    if isinstance(messages, Messages):
        return messages.extended(new)
    return Messages((*messages, *new))
