"""Budget caps in the dashboard: the estimate against the caps before a run, the live meter
against them during it, and the "stopped by the budget" notice after (issue 5, point 1).

Pure functions, no Streamlit. The figures come from the same PriceTable the engine meters
with (`ui.prices()` is passed both to the estimate and to `Runs.start`). Texts are plain;
pass them through `views.dollars` before Markdown.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from dashboard.estimate import Estimate
from research.core.config import ResearchConfig
from research.core.records import Report, Run, UsageTotals

BUDGET_PREFIX = "Stopped by the budget"


@dataclass(frozen=True)
class Meter:
    """One capped quantity: how much is used of how much."""

    label: str
    used: float
    cap: float
    text: str

    @property
    def fraction(self) -> float:
        return max(0.0, min(1.0, self.used / self.cap)) if self.cap else 0.0


def money_text(x: float) -> str:
    """A run's cost as a person reads it everywhere (Library, Run page, compare): dollars and
    cents, and "under $0.01" for less than a cent that is not nothing (issue 39: no
    four-decimal dollars)."""
    return "under $0.01" if 0 < x < 0.005 else f"${x:,.2f}"


def _money(x: float) -> str:
    """$1.00, $0.05, $0.019: cents, or up to four decimals for small amounts."""
    text = f"{x:,.4f}".rstrip("0")
    whole, _, cents = text.partition(".")
    return f"${whole}.{cents.ljust(2, '0')}"


def estimate_warnings(guess: Estimate, config: ResearchConfig, sources: int | None = None) -> list[str]:
    """Where the estimate goes past a cap: the run will stop early there."""
    out = []
    if config.max_cost_usd and guess.cost_usd > config.max_cost_usd:
        out.append(f"The estimated cost (~{_money(guess.cost_usd)}) is above your cost cap of "
                   f"{_money(config.max_cost_usd)}: research will stop when the cap is reached and "
                   "the report will cover only what was gathered by then.")
    tokens = guess.input_tokens + guess.output_tokens
    if config.max_tokens and tokens > config.max_tokens:
        out.append(f"The estimate (~{tokens:,} tokens) is above your token cap of "
                   f"{config.max_tokens:,}: research will stop early.")
    if config.max_sources and sources is not None and sources > config.max_sources:
        out.append(f"The plan may keep up to ~{sources} sources, more than your source cap of "
                   f"{config.max_sources}: research will stop when the cap is reached.")
    return out


def expected_sources(config: ResearchConfig) -> int:
    return config.subtopic_count * config.sources_per_subtopic


def cap_caption(config: ResearchConfig) -> str:
    """'Caps: $1.00 · 200,000 tokens' or 'No budget cap set.'"""
    parts = []
    if config.max_cost_usd:
        parts.append(f"cost {_money(config.max_cost_usd)}")
    if config.max_tokens:
        parts.append(f"{config.max_tokens:,} tokens")
    if config.max_sources:
        parts.append(f"{config.max_sources} sources")
    return ("Budget caps: " + " · ".join(parts)) if parts else "No budget cap set."


def meters(config: Mapping[str, Any], usage: UsageTotals, sources: int) -> list[Meter]:
    """The live meters for the caps a run has (cost, tokens, sources)."""
    out = []
    cap = float(config.get("max_cost_usd") or 0.0)
    if cap:
        cost = usage.cost_usd
        out.append(Meter("Cost", cost, cap, f"Cost so far {_money(cost)} of the {_money(cap)} cap"))
    tokens_cap = int(config.get("max_tokens") or 0)
    if tokens_cap:
        tokens = usage.tokens
        out.append(Meter("Tokens", tokens, tokens_cap,
                         f"Tokens so far {tokens:,} of the {tokens_cap:,} cap"))
    sources_cap = int(config.get("max_sources") or 0)
    if sources_cap:
        out.append(Meter("Sources", sources, sources_cap,
                         f"Sources so far {sources} of the {sources_cap} cap"))
    return out


def budget_stop(run: Run, report: Report | None = None) -> str | None:
    """The plain-words reason when a cap stopped research, else None."""
    reason = run.totals.stop_reason
    if reason.startswith("Research stopped because") and " cap " in reason:
        return f"{BUDGET_PREFIX}: {reason.removeprefix('Research stopped because').strip()}"
    for note in (report.meta.get("notes") if report else None) or []:
        if str(note).startswith(BUDGET_PREFIX):
            return str(note)
    return None
