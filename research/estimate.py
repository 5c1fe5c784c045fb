"""A forecast of what a run will do and cost, shown before Start (New research, the CLI, the
MCP tools' descriptions).

The figures follow the pipeline's own structure, unit by unit (research/estimate_calls.py:
per research unit, per page read and kept, per scoring batch and findings group, per round's
new subtopics and lookups, per review and revision, per verification batch), under what the
models and the web typically decide (`Behaviour`); the range beside them is the same structure
under the least and the most they decide ("about 5-12 min, $0.10-0.56").

Tolerance: measured on the stand-in (`python -m bench.estimates`), with the run's own
behaviour put in, the estimate's model calls, searches and pages are within 30% of what the run
did at every preset, and its tokens and cost within 40% (ESTIMATE_TOLERANCE); a real model's
hidden reasoning tokens (billed as output) are not in the stand-in and not in the estimate.

`pace` then says how long the run takes under what the account is known to allow (issue 31:
tokens or requests a minute, requests a day, a local server's answers at once and speed), and
which of those sets the pace. It is pure: the limits come in (`known_limits`, the one place
that asks the process's pacers for them); with none known it says nothing about limits.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from research import voice
from research.core.config import Credentials, ResearchConfig
from research.estimate_calls import (
    ESTIMATE_TOLERANCE,
    LEAST,
    MOST,
    TYPICAL,
    Behaviour,
    Estimate,
    ModelLoad,
    figures,
)
from research.llm import pacing
from research.llm.limits import Account, AccountBooks, AccountLimits, key_hash
from research.llm.pricing import PriceTable

__all__ = ["ESTIMATE_TOLERANCE", "LEAST", "MOST", "TYPICAL", "Behaviour", "Estimate", "ModelLoad",
           "Pace", "account_of", "account_pace", "cost_range", "describe_duration", "estimate",
           "estimate_line", "known_limits", "pace", "paced", "spoken_duration", "time_range"]


def estimate(config: ResearchConfig, prices: PriceTable | None = None,
             behaviour: Behaviour = TYPICAL) -> Estimate:
    """The run's figures under `behaviour`, with the range under LEAST and MOST (when
    `behaviour` is TYPICAL)."""
    prices = prices or PriceTable()
    guess = figures(config, prices, behaviour)
    if behaviour is not TYPICAL:
        return guess
    low, high = (figures(config, prices, b) for b in (LEAST, MOST))
    return replace(guess, calls_range=(min(low.model_calls, guess.model_calls),
                                       max(high.model_calls, guess.model_calls)),
                   cost_range=(min(low.cost_usd, guess.cost_usd), max(high.cost_usd, guess.cost_usd)),
                   seconds_range=(min(low.seconds, guess.seconds), max(high.seconds, guess.seconds)))


def spoken_duration(seconds: float) -> str:
    """'45 seconds', '11 minutes', '1 hour 20 minutes'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 90:
        return f"{seconds} second{'s' if seconds != 1 else ''}"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} minutes"
    hours, rest = divmod(minutes, 60)
    text = f"{hours} hour{'s' if hours != 1 else ''}"
    return f"{text} {rest} minute{'s' if rest != 1 else ''}" if rest else text


def describe_duration(seconds: float) -> str:
    """'45 s', '12 min', '1 h 20 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 90:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"


def span(low: str, high: str) -> str:
    """'2–4 min' from '2 min' and '4 min'; one figure when both ends say the same."""
    if low == high:
        return low
    head, _, unit = low.partition(" ")
    if unit and high.endswith(" " + unit) and " " not in high[:-len(unit) - 1]:
        return f"{head}–{high}"
    return f"{low}–{high}"


def time_range(guess: Estimate, paced_by: Pace | None = None) -> str:
    """'6–14 min' (the paced time alone when the account's limits set it)."""
    if paced_by is not None and paced_by.slowed:
        return describe_duration(paced_by.seconds)
    low, high = guess.seconds_range
    if not high:
        return describe_duration(guess.seconds)
    return span(describe_duration(low), describe_duration(high))


def cost_range(guess: Estimate) -> str:
    """'~$0.10–0.59' (or one figure, '~$0.42' or 'under $0.01', when the range is not worked
    out or is one cent wide)."""
    low, high = guess.cost_range
    if not high or f"{low:.2f}" == f"{high:.2f}":
        return voice.money(guess.cost_usd, about=True)
    return f"~${low:.2f}–{high:.2f}"


# --- the time under the account's limits (issue 31) ------------------------------------------

@dataclass(frozen=True)
class Pace:
    """The run's time under the account's known limits, and what sets it."""
    seconds: float
    limit: str      # what sets the pace, in plain words ("" when no known limit slows the run)
    text: str       # one sentence for the page and the terminal

    @property
    def slowed(self) -> bool:
        return bool(self.limit)


def account_of(config: ResearchConfig, credentials: Credentials | None, provider: str,
               model: str) -> Account:
    """The account a model's calls are counted against (a hash of its key, never the key)."""
    base_url = getattr(config, f"{provider}_base_url", None) or ""
    key = credentials.get(provider) if credentials is not None else None
    return Account(provider, base_url, key_hash(key), model)


def known_limits(account: Account, books: AccountBooks | None = None
                 ) -> AccountLimits | None:
    """What is known of an account's limits before a run starts: this process's pacer's
    (research.llm.pacing: the provider's headers and refusals, a local server's settings), else
    what an earlier run or another process wrote in the store's books; None when nothing is
    known: the estimate then says nothing about limits."""
    found = pacing.known_limits(account, books)
    return found if found.known else None


def account_pace(guess: Estimate, config: ResearchConfig, credentials: Credentials | None,
                 books: AccountBooks | None = None) -> Pace | None:
    """`pace` under the known limits of the accounts this configuration's roles use: what the
    New research page and the CLI show beside the estimate (`books`: the store, so limits
    learned by an earlier run, in this process or not, count too)."""
    return pace(guess, lambda load: known_limits(
        account_of(config, credentials, load.provider, load.model), books))


def estimate_line(guess: Estimate, paced_by: Pace | None) -> str:
    """The estimate in one line for the terminal: time and cost (with their range), calls and
    tokens, and the account's pace when it is known."""
    seconds = paced_by.seconds if paced_by is not None else guess.seconds
    low, high = guess.calls_range
    calls = (f"{guess.model_calls:,} model calls ({low:,}\u2013{high:,}, as the models decide)"
             if high else f"{guess.model_calls:,} model calls")
    times, costs = time_range(guess, paced_by), cost_range(guess)
    line = (f"Estimate: about {spoken_duration(seconds)}"
            + (f" ({times})" if "\u2013" in times else "")
            + f" and {voice.money(guess.cost_usd, about=True)}"
            + (f" ({costs.removeprefix('~')})" if "\u2013" in costs else "")
            + f": {calls} and {guess.searches:,} searches; rough figures from typical sizes.")
    return f"{line} {paced_by.text}" if paced_by is not None else line


def pace(guess: Estimate, limits_of: Callable[[ModelLoad], AccountLimits | None]) -> Pace | None:
    """The slowest of the run's models under their accounts' limits, or None when no limit is
    known for any of them."""
    found = [p for p in (paced(load, guess.seconds, limits_of(load)) for load in guess.loads)
             if p is not None]
    if not found:
        return None
    slowed = [p for p in found if p.slowed]
    return max(slowed, key=lambda p: p.seconds) if slowed else found[0]


def paced(load: ModelLoad, unpaced_s: float, limits: AccountLimits | None) -> Pace | None:
    """The run's time when `load` is sent within `limits` (pure). Each known limit sets a floor:
    tokens / tokens a minute, calls / requests a minute, or, on a local server, the answers'
    tokens written `parallel` at a time at its speed; the run takes the longest of those and
    its time without limits. A daily request limit the run would spend is said instead.
    None when nothing is known of the account."""
    if limits is None or not limits.known:
        return None
    tokens = load.input_tokens + load.output_tokens
    daily = limits.requests_per_day
    if daily and load.calls > daily:
        return Pace(unpaced_s, "requests a day",
                    f"This run makes about {load.calls:,} model calls, more than your account's "
                    f"limit of {daily:,} requests a day for {load.model}: it would stop when "
                    "that is spent (resume it the next day).")
    floors: list[tuple[float, str]] = []
    if limits.tokens_per_minute:
        floors.append((60 * tokens / limits.tokens_per_minute,
                       f"your account's limit of {limits.tokens_per_minute:,} tokens a minute"))
    if limits.requests_per_minute:
        floors.append((60 * load.calls / limits.requests_per_minute,
                       f"your account's limit of {limits.requests_per_minute:,} requests a minute"))
    if limits.tokens_per_second:
        at_once = max(1, limits.parallel or 1)
        answers = ("one answer at a time" if at_once == 1 else f"{at_once} answers at a time")
        floors.append((load.output_tokens / (limits.tokens_per_second * at_once),
                       f"your model server's pace of {answers} at "
                       f"{limits.tokens_per_second:g} tokens a second"))
    if not floors:
        return None
    floor, why = max(floors)
    if floor <= unpaced_s:
        return Pace(unpaced_s, "", f"Your account's known limits for {load.model} should not "
                    "slow this run.")
    return Pace(floor, why, f"About {spoken_duration(floor)} with {why} ({load.model}).")
