"""What model calls cost: a price table per model, in US dollars per million tokens.

A model that is not in the table has an *unknown* price, and its `Usage.cost` is ``None``, never
``0.0``: a budget (`MaxCost`) must not believe an unpriced model is free. Local models that really
are free are priced explicitly, e.g.
``OpenAIModel("gemma", price=ModelPrice(input_per_million=0, output_per_million=0))``.

Prices change; the table is a convenience, not an invoice. Override it per model with the
``price=`` argument of every model client, or for the whole process by editing `PRICES`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

from workbench._record import Record
from workbench.messages import Usage

__all__ = ["PRICES", "ModelPrice", "cost_of", "dollars", "price_for"]


class ModelPrice(Record):
    """US dollars per million input (prompt) and output (completion) tokens.

    Cached input is priced apart when the provider does: ``cache_read_per_million`` for input
    served from its prompt cache, ``cache_write_per_million`` for input written to it
    (Anthropic's five-minute cache; its one-hour writes cost more and are not told apart here).
    Unset, they cost what other input costs.
    """

    input_per_million: float
    output_per_million: float
    cache_read_per_million: float | None = None
    cache_write_per_million: float | None = None

    def cost(
        self,
        input_tokens: int,
        output_tokens: int,
        *,
        cache_read_tokens: int = 0,
        cache_write_tokens: int = 0,
    ) -> float:
        """Return the price of that many tokens, in US dollars.

        ``input_tokens`` counts every input token, the cached ones included (as the GenAI
        conventions and `Usage` count them).
        """
        read = (
            self.input_per_million
            if self.cache_read_per_million is None
            else (self.cache_read_per_million)
        )
        write = (
            self.input_per_million
            if self.cache_write_per_million is None
            else (self.cache_write_per_million)
        )
        plain = max(0, input_tokens - cache_read_tokens - cache_write_tokens)
        total = (
            plain * self.input_per_million
            + cache_read_tokens * read
            + cache_write_tokens * write
            + output_tokens * self.output_per_million
        )
        return total / 1_000_000


def _openai(
    input_per_million: float, output_per_million: float, cache_read_per_million: float
) -> ModelPrice:
    return ModelPrice(
        input_per_million=input_per_million,
        output_per_million=output_per_million,
        cache_read_per_million=cache_read_per_million,
    )


def _anthropic(input_per_million: float, output_per_million: float) -> ModelPrice:
    """Anthropic prices cache reads at a tenth of input and five-minute writes at 1.25 times."""
    return ModelPrice(
        input_per_million=input_per_million,
        output_per_million=output_per_million,
        cache_read_per_million=input_per_million / 10,
        cache_write_per_million=input_per_million * 1.25,
    )


PRICES: dict[str, ModelPrice] = {
    # OpenAI list prices (standard tier), per million tokens: input, output, cached input.
    "gpt-5": _openai(1.25, 10.00, 0.125),
    "gpt-5-mini": _openai(0.25, 2.00, 0.025),
    "gpt-5-nano": _openai(0.05, 0.40, 0.005),
    "gpt-4.1": _openai(2.00, 8.00, 0.50),
    "gpt-4.1-mini": _openai(0.40, 1.60, 0.10),
    "gpt-4.1-nano": _openai(0.10, 0.40, 0.025),
    "gpt-4o": _openai(2.50, 10.00, 1.25),
    "gpt-4o-mini": _openai(0.15, 0.60, 0.075),
    "o3": _openai(2.00, 8.00, 0.50),
    "o4-mini": _openai(1.10, 4.40, 0.275),
    "gpt-4-turbo": ModelPrice(input_per_million=10.00, output_per_million=30.00),
    "gpt-3.5-turbo": ModelPrice(input_per_million=0.50, output_per_million=1.50),
    # Anthropic list prices, per million tokens: input, output (cache prices follow from input).
    "claude-opus-4-5": _anthropic(5.00, 25.00),
    "claude-opus-4-1": _anthropic(15.00, 75.00),
    "claude-opus-4": _anthropic(15.00, 75.00),
    "claude-sonnet-4-5": _anthropic(3.00, 15.00),
    "claude-sonnet-4": _anthropic(3.00, 15.00),
    "claude-3-7-sonnet": _anthropic(3.00, 15.00),
    "claude-haiku-4-5": _anthropic(1.00, 5.00),
    "claude-3-5-haiku": _anthropic(0.80, 4.00),
    "claude-3-haiku": _anthropic(0.25, 1.25),
}
"""The process-wide price table; edit it to add or correct a model."""

_DATED = re.compile(r"-(?:\d{4}-\d{2}-\d{2}|\d{8}|latest)$")
"""A snapshot's date, OpenAI's (``-2024-08-06``) or Anthropic's (``-20250929``), or ``-latest``."""


def price_for(model: str, table: Mapping[str, ModelPrice] | None = None) -> ModelPrice | None:
    """Return the price of ``model``, or ``None`` when it is unknown.

    A dated snapshot (``gpt-4o-2024-08-06``, ``claude-sonnet-4-5-20250929``) or a ``-latest``
    alias costs what its family costs. Nothing else is guessed: ``gpt-4o-audio-preview`` is not
    ``gpt-4o``.
    """
    table = PRICES if table is None else table
    if model in table:
        return table[model]
    return table.get(_DATED.sub("", model))


def cost_of(price: ModelPrice | None, usage: Usage) -> float | None:
    """Return the cost of a call's usage, or ``None`` when the price is unknown."""
    if price is None:
        return None
    return price.cost(
        usage.input_tokens,
        usage.output_tokens,
        cache_read_tokens=usage.cache_read_tokens,
        cache_write_tokens=usage.cache_write_tokens,
    )


def dollars(cost: float) -> str:
    """A cost as every view says it: two significant digits, without an exponent.

    An eval's runs cost fractions of a cent, so a fixed number of decimals says either too
    little (``$0.00`` for a cheap call) or too much (``$0.000000``, which reads as a price
    known to be zero). From a dollar up, cents.

    >>> dollars(0.000123456), dollars(0.5), dollars(0.999), dollars(1234.5), dollars(0)
    ('$0.00012', '$0.5', '$1', '$1,234.50', '$0')
    """
    if cost >= 1:
        return f"${cost:,.2f}"
    return "$" + f"{float(f'{cost:.2g}'):.12f}".rstrip("0").rstrip(".")
