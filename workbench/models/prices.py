"""What model calls cost: a price table per model, in US dollars per million tokens.

A model that is not in the table has an *unknown* price, and its `Usage.cost` is ``None``, never
``0.0``: a budget (`MaxCost`) must not believe an unpriced model is free. Local models that really
are free are priced explicitly, e.g.
``OpenAIModel("gemma", price=ModelPrice(input_per_million=0, output_per_million=0))``.

Prices change; the table is a convenience, not an invoice. Override it per model with the
``price=`` argument of `OpenAIModel`, or for the whole process by editing `PRICES`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from workbench._record import Record

__all__ = ["PRICES", "ModelPrice", "cost_of", "price_for"]


class ModelPrice(Record):
    """US dollars per million input (prompt) and output (completion) tokens."""

    input_per_million: float
    output_per_million: float

    def cost(self, input_tokens: int, output_tokens: int) -> float:
        """Return the price of that many tokens, in US dollars."""
        return (
            input_tokens * self.input_per_million + output_tokens * self.output_per_million
        ) / 1_000_000


PRICES: dict[str, ModelPrice] = {
    # OpenAI list prices (standard tier), per million tokens.
    "gpt-5": ModelPrice(input_per_million=1.25, output_per_million=10.00),
    "gpt-5-mini": ModelPrice(input_per_million=0.25, output_per_million=2.00),
    "gpt-5-nano": ModelPrice(input_per_million=0.05, output_per_million=0.40),
    "gpt-4.1": ModelPrice(input_per_million=2.00, output_per_million=8.00),
    "gpt-4.1-mini": ModelPrice(input_per_million=0.40, output_per_million=1.60),
    "gpt-4.1-nano": ModelPrice(input_per_million=0.10, output_per_million=0.40),
    "gpt-4o": ModelPrice(input_per_million=2.50, output_per_million=10.00),
    "gpt-4o-mini": ModelPrice(input_per_million=0.15, output_per_million=0.60),
    "o3": ModelPrice(input_per_million=2.00, output_per_million=8.00),
    "o4-mini": ModelPrice(input_per_million=1.10, output_per_million=4.40),
    "gpt-4-turbo": ModelPrice(input_per_million=10.00, output_per_million=30.00),
    "gpt-3.5-turbo": ModelPrice(input_per_million=0.50, output_per_million=1.50),
}
"""The process-wide price table; edit it to add or correct a model."""

_DATED = re.compile(r"-\d{4}-\d{2}-\d{2}$")


def price_for(model: str, table: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """Return the price of ``model``, or ``None`` when it is unknown.

    A dated snapshot (``gpt-4o-2024-08-06``) costs what its family (``gpt-4o``) costs. Nothing else
    is guessed: ``gpt-4o-audio-preview`` is not ``gpt-4o``.
    """
    table = PRICES if table is None else table
    if model in table:
        return table[model]
    return table.get(_DATED.sub("", model))


def cost_of(price: ModelPrice | None, input_tokens: int, output_tokens: int) -> float | None:
    """Return the cost of a call, or ``None`` when the price is unknown."""
    return None if price is None else price.cost(input_tokens, output_tokens)
