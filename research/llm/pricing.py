"""Estimated cost of model calls, from a price table the user can extend.

Prices are US dollars per million tokens (input, output). Extend or override them with a
JSON file `{"model-name": [input_price, output_price], ...}` passed to `PriceTable.load`
(the CLI and dashboard read `DEEP_RESEARCH_PRICES`, default `data/prices.json`). A model
missing from the table matches the longest known prefix (dated snapshots such as
`gpt-5-mini-2026-01-01`); an unknown model costs 0 and is reported as unpriced.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path

from research.core.errors import ConfigError

# USD per 1M tokens: (input, output). Public list prices; estimates only.
DEFAULT_PRICES: dict[str, tuple[float, float]] = {
    "gpt-5": (1.25, 10.0),
    "gpt-5-mini": (0.25, 2.0),
    "gpt-5-nano": (0.05, 0.40),
    "gpt-4.1": (2.0, 8.0),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-4o": (2.5, 10.0),
    "gpt-4o-mini": (0.15, 0.60),
    "o3": (2.0, 8.0),
    "o3-deep-research": (10.0, 40.0),
    "o4-mini-deep-research": (2.0, 8.0),
    "deep-research-pro-preview": (2.0, 12.0),
    "o4-mini": (1.10, 4.40),
    "gemini-2.5-pro": (1.25, 10.0),
    "gemini-2.5-flash": (0.30, 2.50),
    "gemini-2.5-flash-lite": (0.10, 0.40),
    "gemini-3-pro-preview": (2.0, 12.0),
    # Anthropic, base input and output (https://platform.claude.com/docs/en/about-claude/pricing
    # and each model's overview page, November 2026). Claude Haiku 5.5's price is for prompts
    # up to 100,000 tokens; a longer prompt costs more than estimated here.
    "claude-fable-5-1": (10.0, 50.0),
    "claude-opus-5-5": (4.0, 20.0),
    "claude-opus-5": (5.0, 25.0),
    "claude-sonnet-5-5": (2.0, 10.0),
    "claude-sonnet-5": (2.0, 10.0),
    "claude-haiku-5-5": (0.10, 0.50),
    "claude-opus-4-8": (5.0, 25.0),
    "claude-opus-4-6": (5.0, 25.0),
    "claude-opus-4-5": (5.0, 25.0),
    "claude-sonnet-4-6": (3.0, 15.0),
    "claude-haiku-4-5": (1.0, 5.0),
}


class PriceTable:
    def __init__(self, prices: Mapping[str, tuple[float, float]] | None = None) -> None:
        self.prices: dict[str, tuple[float, float]] = dict(DEFAULT_PRICES)
        if prices:
            self.prices.update(prices)

    @classmethod
    def load(cls, path: str | Path | None) -> PriceTable:
        """Defaults extended by a JSON file; a missing file means defaults only."""
        if path is None or not Path(path).is_file():
            return cls()
        try:
            raw = json.loads(Path(path).read_text(encoding="utf-8"))
            extra = {str(k): (float(v[0]), float(v[1])) for k, v in raw.items()}
        except (OSError, ValueError, TypeError, IndexError, AttributeError) as exc:
            raise ConfigError(
                f"The price table {path} is not valid JSON of the form "
                f'{{"model": [input_usd_per_million, output_usd_per_million]}} ({exc}).'
            ) from None
        return cls(extra)

    def lookup(self, model: str) -> tuple[float, float] | None:
        if model in self.prices:
            return self.prices[model]
        name = model.split("/")[-1]
        best = max((k for k in self.prices if name.startswith(k)), key=len, default=None)
        return self.prices[best] if best else None

    def cost(self, model: str, input_tokens: int, output_tokens: int) -> float:
        price = self.lookup(model)
        if price is None:
            return 0.0
        return (input_tokens * price[0] + output_tokens * price[1]) / 1_000_000
