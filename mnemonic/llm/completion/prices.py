"""What a call probably cost: a small, editable table of USD per million tokens.

Estimates only, for the ``llm_usage`` totals: prices change, and the table is meant to be
edited (or overridden per model prefix from ``llm.prices`` in config.yaml). A model
matches the longest prefix in the table, after any ``provider/`` part litellm adds; a
model nobody priced (every local model) costs 0.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Price:
    input: float  # USD per million prompt tokens
    output: float  # USD per million completion tokens


DEFAULT_PRICES: dict[str, Price] = {
    # OpenAI
    "gpt-4o-mini": Price(0.15, 0.60),
    "gpt-4o": Price(2.50, 10.00),
    "gpt-4.1-nano": Price(0.10, 0.40),
    "gpt-4.1-mini": Price(0.40, 1.60),
    "gpt-4.1": Price(2.00, 8.00),
    "gpt-5-nano": Price(0.05, 0.40),
    "gpt-5-mini": Price(0.25, 2.00),
    "gpt-5": Price(1.25, 10.00),
    "o4-mini": Price(1.10, 4.40),
    # Anthropic
    "claude-3-5-haiku": Price(0.80, 4.00),
    "claude-haiku-4": Price(1.00, 5.00),
    "claude-3-7-sonnet": Price(3.00, 15.00),
    "claude-sonnet-4": Price(3.00, 15.00),
    "claude-opus-4": Price(15.00, 75.00),
    # Google
    "gemini-2.0-flash": Price(0.10, 0.40),
    "gemini-2.5-flash": Price(0.30, 2.50),
    "gemini-2.5-pro": Price(1.25, 10.00),
}


def price_table(overrides: Mapping[str, Price] | None = None) -> dict[str, Price]:
    """The defaults with ``overrides`` (from config) winning per prefix."""
    table = dict(DEFAULT_PRICES)
    table.update(overrides or {})
    return table


def price_for(model: str, table: Mapping[str, Price]) -> Price | None:
    """The entry with the longest prefix of ``model`` (case-insensitive), or None."""
    name = model.lower().rsplit("/", 1)[-1]
    best: tuple[int, Price] | None = None
    for prefix, price in table.items():
        key = prefix.lower()
        if name.startswith(key) and (best is None or len(key) > best[0]):
            best = (len(key), price)
    return best[1] if best else None


def estimate_cost(
    model: str, prompt_tokens: int, completion_tokens: int, table: Mapping[str, Price]
) -> float:
    price = price_for(model, table)
    if price is None:
        return 0.0
    cost = (prompt_tokens * price.input + completion_tokens * price.output) / 1_000_000
    return round(max(0.0, cost), 8)
