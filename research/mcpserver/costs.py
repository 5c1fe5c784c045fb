"""What a research call costs at each preset, in words a calling agent can weigh.

The figures are the estimate the New research page and the CLI show before Start
(research/estimate.py), under this server's settings, prices and the account's known pace, so
they move with the models and keys configured here; nothing is written down twice.
"""

from __future__ import annotations

from research import voice
from research.core.config import Credentials, build_config
from research.core.constants import PRESETS
from research.core.errors import ConfigError
from research.estimate import account_pace, estimate, spoken_duration
from research.llm.limits import AccountBooks
from research.llm.pricing import PriceTable


def preset_costs(env: dict[str, str], credentials: Credentials, prices: PriceTable | None,
                 books: AccountBooks | None = None) -> str:
    """One line per preset: 'quick: about 4 minutes, ~$0.03 (120 model calls)'."""
    lines = []
    for name in PRESETS:
        try:
            config = build_config(env=env, preset=name)
        except ConfigError as exc:  # a bad setting here: the start will say so too
            lines.append(f"- {name}: no estimate ({exc})")
            continue
        guess = estimate(config, prices)
        paced = account_pace(guess, config, credentials, books)
        seconds = paced.seconds if paced is not None else guess.seconds
        lines.append(f"- {name}: about {spoken_duration(seconds)}, "
                     f"{voice.money(guess.cost_usd, about=True)} "
                     f"({guess.model_calls:,} model calls, {guess.searches:,} searches)")
    return "\n".join(lines)
