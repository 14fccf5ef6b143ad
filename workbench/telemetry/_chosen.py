"""Spans under ids chosen before they are made: a run's trace id known from its start.

The SDK's tracer asks its id generator for a root span's trace id and span id. For one span at a
time (a run span), `chosen_ids` puts a generator in front that answers with the chosen ids once,
then hands over to the tracer's own. Only our tracer's generator is swapped (each
``get_tracer`` call makes its own tracer), never the provider's.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

__all__ = ["chosen_ids"]


@contextlib.contextmanager
def chosen_ids(tracer: Any, ids: tuple[str, str]) -> Iterator[None]:
    """While it lasts, the SDK tracer's next root span gets the chosen trace and span id."""
    generator = getattr(tracer, "id_generator", None)
    if generator is None:  # not the SDK's tracer: its own ids
        yield
        return
    trace_id, span_id = ids
    chosen = _Chosen(generator, int(trace_id, 16), int(span_id, 16))
    tracer.id_generator = chosen
    try:
        yield
    finally:
        tracer.id_generator = generator


class _Chosen:
    """An id generator that hands out the chosen ids once, then asks the one it replaces."""

    def __init__(self, inner: Any, trace_id: int, span_id: int | None) -> None:
        self._inner, self._trace_id, self._span_id = inner, trace_id, span_id

    def generate_trace_id(self) -> int:
        chosen, self._trace_id = self._trace_id, 0
        return chosen or int(self._inner.generate_trace_id())

    def generate_span_id(self) -> int:
        chosen, self._span_id = self._span_id, None
        return chosen or int(self._inner.generate_span_id())

    def is_trace_id_random(self) -> bool:
        """As random as the ids it replaces (a chosen id was once made by such a generator)."""
        return bool(getattr(self._inner, "is_trace_id_random", lambda: False)())
