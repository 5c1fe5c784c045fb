"""A rough forecast of what a run will do and cost, shown before Start.

It mirrors the pipeline's shape (research/phases): per subtopic, two query-writing calls,
every query on every search provider, twice as many pages fetched as sources kept, relevance
scoring in small batches, the findings of the kept sources a few at a time with one call for
the gaps beside them; then one plan call, one draft, and up to two calls
(review + revision) per review cycle. Token sizes per call type are typical values, not
measurements, so the figures are "about" and "at most" rather than promises.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from research.config import ResearchConfig
from research.llm.pricing import PriceTable
from research.phases.findings import FINDINGS_GROUP
from research.phases.scoring import SCORE_BATCH

TOKENS_PER_WORD = 1.4

# (input tokens, output tokens) per call type, before scaling with the settings.
QUERY_CALL = (1_200, 250)
SCORE_CALL = (SCORE_BATCH * 900 + 600, SCORE_BATCH * 50)
FINDINGS_CALL = (FINDINGS_GROUP * 1_000 + 900, FINDINGS_GROUP * 150)  # one group of sources
GAPS_CALL_PER_SOURCE = 250  # the opening of each kept source
PLAN_CALL = (900, 900)
GOAL_CALL = (6_000, 150)  # findings so far in, met or not and why out
PREFLIGHT_CALL = (60, 10)
REVIEW_PROMPT = 1_500
REVIEW_OUTPUT = 1_200

# Seconds: typical latencies of one call of each kind.
MODEL_CALL_S = 8.0
SEARCH_S = 2.5
FETCH_S = 3.0
OUTPUT_TOKENS_PER_S = 60.0


@dataclass(frozen=True)
class Estimate:
    searches: int
    pages_fetched: int
    model_calls: int
    input_tokens: int
    output_tokens: int
    cost_usd: float
    seconds: float
    unpriced_models: tuple[str, ...]

    @property
    def minutes(self) -> float:
        return self.seconds / 60


def estimate(config: ResearchConfig, prices: PriceTable | None = None) -> Estimate:
    prices = prices or PriceTable()
    providers = max(1, len(config.active_search_providers()))
    # Later rounds research follow-up questions: count them as half the subtopics again.
    subtopics = config.subtopic_count * (1 + 0.5 * (config.rounds_limit() - 1))
    # SEARCH_OTHER_SIDE adds one search for the other side of each subtopic.
    searches_each = (config.searches_per_subtopic + int(config.search_other_side)) * providers
    candidates = config.sources_per_subtopic * 2
    score_calls = math.ceil(candidates / SCORE_BATCH)
    query_calls = 2 if config.searches_per_subtopic > 1 else 1

    report_tokens = int(config.report_max_words * TOKENS_PER_WORD)
    findings_calls = math.ceil(config.sources_per_subtopic / FINDINGS_GROUP)
    gaps_call = (config.sources_per_subtopic * GAPS_CALL_PER_SOURCE + 900, 300)
    draft_call = (int(subtopics * 1_800) + 2_500, report_tokens)
    review_call = (report_tokens + REVIEW_PROMPT, REVIEW_OUTPUT)
    revise_call = (report_tokens + REVIEW_OUTPUT + draft_call[0] // 2, report_tokens)

    calls: list[tuple[str, float, tuple[int, int]]] = [
        ("lead", 1, PREFLIGHT_CALL),
        ("lead", 1, PLAN_CALL),
        ("worker", subtopics * query_calls, QUERY_CALL),
        ("worker", subtopics * score_calls, SCORE_CALL),
        ("worker", subtopics * findings_calls, FINDINGS_CALL),
        ("worker", subtopics, gaps_call),
        ("writer", 1, draft_call),
        ("reviewer", config.review_cycles, review_call),
        ("writer", config.review_cycles, revise_call),
        # "Done when ...": the lead judges the exit case once after each round.
        ("lead", config.rounds_limit() if config.done_when.strip() else 0, GOAL_CALL),
    ]
    model_calls = 0.0
    tokens_in = tokens_out = 0.0
    cost = 0.0
    unpriced: set[str] = set()
    for role, count, (inp, out) in calls:
        model = config.role(role).model
        if prices.lookup(model) is None:
            unpriced.add(model)
        model_calls += count
        tokens_in += count * inp
        tokens_out += count * out
        cost += count * prices.cost(model, inp, out)

    waves = math.ceil(subtopics / max(1, config.max_parallel_workers))
    per_subtopic_s = (
        query_calls * (MODEL_CALL_S + SEARCH_S)
        + FETCH_S * math.ceil(candidates / 4)  # four pages at a time
        + score_calls / 4 * MODEL_CALL_S + MODEL_CALL_S * 2
    )
    writing_s = MODEL_CALL_S + report_tokens / OUTPUT_TOKENS_PER_S
    seconds = (
        2 * MODEL_CALL_S + waves * per_subtopic_s + writing_s
        + config.review_cycles * (MODEL_CALL_S * 2 + writing_s)
    )
    seconds = min(seconds, config.total_timeout_ms / 1000)
    return Estimate(
        searches=round(subtopics * searches_each + providers),
        pages_fetched=round(subtopics * candidates),
        model_calls=round(model_calls),
        input_tokens=round(tokens_in),
        output_tokens=round(tokens_out),
        cost_usd=round(cost, 4),
        seconds=round(seconds),
        unpriced_models=tuple(sorted(unpriced)),
    )


def describe_duration(seconds: float) -> str:
    """'45 s', '12 min', '1 h 20 min'."""
    seconds = max(0, int(round(seconds)))
    if seconds < 90:
        return f"{seconds} s"
    minutes = round(seconds / 60)
    if minutes < 60:
        return f"{minutes} min"
    return f"{minutes // 60} h {minutes % 60} min"
