"""A rough forecast of what a run will do and cost, shown before Start.

It mirrors the pipeline's shape (research/phases): per subtopic, two query-writing calls,
every query on every search provider, twice as many pages fetched as sources kept, relevance
scoring in small batches, the findings of the kept sources a few at a time with one call for
the gaps beside them; then the lead's calls (pre-flight, clarify, plan, one triage a round),
the draft section by section, a review and the revision of about half the sections per
review cycle, and the verification of the report's claims (two passes and the critic). Token sizes per call type are typical values, not
measurements, so the figures are "about" and "at most" rather than promises.

`pace` then says how long the run takes under what the account is known to allow (issue 31:
tokens or requests a minute, requests a day, a local server's answers at once and speed), and
which of those sets the pace. It is pure: the limits come in (`known_limits`, the one place
that asks the process's pacers for them); with none known it says nothing about limits.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass

from research import voice
from research.core.config import Credentials, ResearchConfig
from research.llm import pacing
from research.llm.limits import Account, AccountBooks, AccountLimits, key_hash
from research.llm.pricing import PriceTable
from research.phases.gather.findings import (
    FINDINGS_CONTEXT_CHARS,
    FINDINGS_GROUP,
    MIN_SHARE_CHARS,
    OPEN_QUESTIONS_CHARS,
)
from research.phases.gather.scoring import SCORE_BATCH, SCORE_CHARS
from research.phases.verify.claims import PASSAGE_CHARS
from research.phases.verify.judge import BATCH_CLAIMS, CRITIC_BATCH_MIN
from research.phases.writing.writer import is_english

TOKENS_PER_WORD = 1.4

# (input tokens, output tokens) per call type, before scaling with the settings.
QUERY_CALL = (1_200, 250)
META_TOKENS = 50  # a page's title, date and delimiters around its text
SCORE_CALL = (SCORE_BATCH * (SCORE_CHARS // 4 + META_TOKENS) + 450, SCORE_BATCH * 50)
FINDINGS_PROMPT_TOKENS = 550  # a findings call's instructions, question and subtopic
GAPS_CALL_PER_SOURCE = OPEN_QUESTIONS_CHARS // 4 + META_TOKENS  # a passage of each kept source
# Verification: about one factual statement per WORDS_PER_CLAIM words of the report, each
# judged by two passes with the excerpts of its sources; the critic challenges a share.
WORDS_PER_CLAIM = 15
CLAIM_TOKENS = 60 + int(1.5 * PASSAGE_CHARS / 4)  # a claim and its sources' excerpts
VERIFY_CALL = (BATCH_CLAIMS * CLAIM_TOKENS + 450, BATCH_CLAIMS * 100)
CRITIC_SHARE = 0.3
CRITIC_CALL = (CRITIC_BATCH_MIN * (CLAIM_TOKENS + 60) + 400, CRITIC_BATCH_MIN * 40)
PLAN_CALL = (900, 900)
CLARIFY_CALL = (500, 150)
TRIAGE_CALL = (3_000, 600)  # coverage of every subtopic and the round's follow-up questions
TRANSLATE_CALL = (1_500, 1_500)
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
class ModelLoad:
    """What the run asks of one provider's model: the unit its limits are counted in."""
    provider: str
    model: str
    roles: tuple[str, ...]
    calls: int
    input_tokens: int
    output_tokens: int


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
    loads: tuple[ModelLoad, ...] = ()
    role_calls: tuple[tuple[str, int], ...] = ()  # (role, model calls), in pipeline order

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

    shape = config.shape()  # a brief is short and has no section per subtopic
    report_tokens = int(config.words_limit() * TOKENS_PER_WORD)
    findings_calls = math.ceil(config.sources_per_subtopic / FINDINGS_GROUP)
    # The unit's page text is shared out among its kept sources (research.phases.gather.findings).
    share = max(MIN_SHARE_CHARS, FINDINGS_CONTEXT_CHARS // config.sources_per_subtopic)
    findings_call = (FINDINGS_GROUP * (share // 4 + META_TOKENS) + FINDINGS_PROMPT_TOKENS,
                     FINDINGS_GROUP * 150)
    gaps_call = (config.sources_per_subtopic * GAPS_CALL_PER_SOURCE + 900, 300)
    draft_call = (int(subtopics * 1_800) + 2_500, report_tokens)
    review_call = (report_tokens + REVIEW_PROMPT, REVIEW_OUTPUT)

    claims = config.words_limit() / WORDS_PER_CLAIM
    verify_calls = math.ceil(claims / BATCH_CLAIMS)
    critic_calls = math.ceil(claims * CRITIC_SHARE / CRITIC_BATCH_MIN)

    # The draft is written section by section (research.phases.writing.write_sections): one
    # call per subtopic, four sections across them, then the frame (title and summary); a
    # revision rewrites the sections the review named, about half of them.
    section_calls = (subtopics if shape.subtopics else 0) + len(shape.parts) + 1
    section_call = (draft_call[0] // 3 + 1_500, max(400, report_tokens // int(section_calls)))
    # The lead assesses each round's follow-ups (a single round asks it nothing), and a
    # report in another language has the engine's own words translated.
    triage_calls = config.rounds_limit() if config.rounds_limit() > 1 else 0
    translate_calls = 0 if is_english(config.report_language) else 2

    calls: list[tuple[str, float, tuple[int, int]]] = [
        ("lead", 1, PREFLIGHT_CALL),
        ("lead", 1, CLARIFY_CALL),
        ("lead", 1, PLAN_CALL),
        ("lead", triage_calls, TRIAGE_CALL),
        ("lead", translate_calls, TRANSLATE_CALL),
        ("worker", subtopics * query_calls, QUERY_CALL),
        ("worker", subtopics * score_calls, SCORE_CALL),
        ("worker", subtopics * findings_calls, findings_call),
        ("worker", subtopics, gaps_call),
        ("writer", section_calls, section_call),
        ("reviewer", config.review_cycles, review_call),
        ("writer", config.review_cycles * math.ceil(section_calls / 2), section_call),
        ("verifier", verify_calls, VERIFY_CALL),
        ("auditor", verify_calls, VERIFY_CALL),
        ("critic", critic_calls, CRITIC_CALL),
        # "Done when ...": the lead judges the exit case once after each round.
        ("lead", config.rounds_limit() if config.done_when.strip() else 0, GOAL_CALL),
    ]
    model_calls = 0.0
    tokens_in = tokens_out = 0.0
    cost = 0.0
    unpriced: set[str] = set()
    roles: dict[tuple[str, str], list[str]] = {}      # (provider, model) -> its roles
    per_role: dict[str, float] = {}
    amounts: dict[tuple[str, str], list[float]] = {}  # -> calls, input, output tokens
    for role, count, (inp, out) in calls:
        chosen = config.role(role)
        model = chosen.model
        if prices.lookup(model) is None:
            unpriced.add(model)
        model_calls += count
        per_role[role] = per_role.get(role, 0.0) + count
        tokens_in += count * inp
        tokens_out += count * out
        cost += count * prices.cost(model, inp, out)
        if count:
            key = (chosen.provider, model)
            if role not in roles.setdefault(key, []):
                roles[key].append(role)
            sums = amounts.setdefault(key, [0.0, 0.0, 0.0])
            sums[0] += count
            sums[1] += count * inp
            sums[2] += count * out

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
        + 2 * MODEL_CALL_S  # verification: the passes, then the critic
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
        loads=tuple(ModelLoad(provider, model, tuple(roles[(provider, model)]), round(n),
                              round(inp), round(out))
                    for (provider, model), (n, inp, out) in amounts.items()),
        role_calls=tuple((role, round(n)) for role, n in per_role.items()),
    )


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
    """The estimate in one line for the terminal: time, cost, calls and tokens, and the
    account's pace when it is known."""
    seconds = paced_by.seconds if paced_by is not None else guess.seconds
    line = (f"Estimate: about {spoken_duration(seconds)}, {voice.money(guess.cost_usd, about=True)} "
            f"({guess.model_calls:,} model calls and {guess.searches:,} searches; rough figures "
            "from typical sizes).")
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
