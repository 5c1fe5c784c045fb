"""What a run calls, unit by unit: the structure behind research.estimate.

It follows the pipeline (research/phases):

- pre-flight (one tiny call per distinct model), clarify, the plan;
- each research unit (a planned subtopic, a later round's new subtopic, a quick lookup): one
  query call per wave of searches (two waves when it searches more than once), every query
  (and the other side's) on every search service, at most twice its source cap of pages read,
  relevance scoring in batches of SCORE_BATCH, the findings of its kept sources in groups of
  FINDINGS_GROUP and one call for the gaps;
- the rounds: one triage call per round (none for a single round), the lead's new subtopics
  and quick lookups, a goal check per round when "Done when" is set;
- the draft section by section (one call per subtopic, the shape's parts, the frame), each
  review and the revision of the sections it names, and verification: two passes over the
  claims in batches whose size follows the run's requests in flight (judge.batch_size), the
  critic over the challenged ones, one rewrite call per check; with review cycles, each draft
  a review reads is checked while it reads it, so a revision's changed statements are checked
  again, in small batches;
- the exports' words translated for a report in another language.

What the models and the web decide (how many pages have readable text and are relevant, how
long a page is, how many follow-ups the lead pursues, when the reviewer approves, how long the
report is and how many statements it makes, how often an answer must be asked for again) is
a `Behaviour`: TYPICAL gives the figures, and LEAST and MOST the ends of the range shown beside
them. Token sizes follow each prompt's parts (its instructions, the page text it carries, the
answer it asks for).
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, replace

from research.core.config import ACADEMIC_PROVIDERS, DOCUMENTS, ROLES, ResearchConfig, is_mcp
from research.core.executor import model_requests
from research.llm.pricing import PriceTable
from research.phases.decide.rounds import LOOKUP_SOURCES, MAX_QUESTIONS
from research.phases.gather.findings import (
    FINDINGS_CONTEXT_CHARS,
    FINDINGS_GROUP,
    MIN_SHARE_CHARS,
    OPEN_QUESTIONS_CHARS,
)
from research.phases.gather.scoring import SCORE_BATCH, SCORE_CHARS
from research.phases.verify.claims import MAX_SOURCES_PER_CLAIM, PASSAGE_CHARS
from research.phases.verify.judge import BATCH_CLAIMS, CRITIC_BATCH_MIN
from research.phases.writing.writer import is_english
from research.search.pacing import INTERVALS

# How close the estimate is to what runs do, given the run's behaviour (bench/estimates.py and
# tests/test_estimates_presets.py check it): a share of the actual figure either way.
ESTIMATE_TOLERANCE = {"model_calls": 0.3, "searches": 0.3, "pages_fetched": 0.3,
                      "input_tokens": 0.4, "output_tokens": 0.4, "cost_usd": 0.4}

TOKENS_PER_WORD = 1.4
CITED_PER_CLAIM = 1.3   # sources a statement cites, on average
SHARED_EXCERPTS = 0.5   # of a batch's passages, the share not already sent for another claim
QUALIFIED_SHARE = 0.03  # statements the writer rewrites as qualified
CHARS_PER_TOKEN = 4
META_TOKENS = 30  # a page's title, date and delimiters around its text


@dataclass(frozen=True)
class Behaviour:
    """What the models and the web decide that changes how much a run does: the estimate's
    assumptions. TYPICAL gives its figures; LEAST and MOST the ends of its range."""
    results_share: float = 1.0    # of the pages a unit may read (2 x its source cap), the share its searches find
    read_share: float = 0.8       # pages fetched whose text is readable (the rest are skipped)
    relevant_share: float = 0.6   # pages read scored relevant enough to keep (up to the cap)
    page_chars: int = 6_000       # readable text of a page
    findings_per_source: float = 2.5  # findings a worker draws from each kept source
    follow_ups: float = 3         # follow-up questions a research unit names
    lookups: float = 3            # quick lookups the lead starts per round it triages
    new_subtopics: float = 0.5    # new subtopics a round adds, as a share of those allowed
    lookup_searches: float = 2    # searches of a quick lookup (1-3, the lead says)
    approved_at: int | None = 2   # the review cycle the reviewer approves at (None: never)
    revised_share: float = 0.5    # share of the report's parts a revision rewrites
    changed_share: float = 0.6    # of a rewritten part's statements, the share that are new
    report_fill: float = 0.9      # words written, as a share of the report's length cap
    words_per_claim: float = 18   # words of report per statement verification checks
    challenged_share: float = 0.3  # claims the critic challenges (key findings, summary, contested)
    # Calls asked again: an unreadable answer repaired once (research.llm.repair), fewer items
    # than asked asked for once more, a part over its length shortened.
    asked_again: float = 0.05


TYPICAL = Behaviour()
LEAST = Behaviour(results_share=0.8, read_share=0.7, relevant_share=0.4, page_chars=3_000,
                  findings_per_source=1.5, follow_ups=1, lookups=0, new_subtopics=0,
                  approved_at=1, revised_share=0.3, changed_share=0.3, report_fill=0.7,
                  words_per_claim=25, challenged_share=0.2, asked_again=0.0)
MOST = Behaviour(results_share=1.0, read_share=0.95, relevant_share=0.8, page_chars=12_000,
                 findings_per_source=4, follow_ups=5, lookups=6, new_subtopics=1.0,
                 approved_at=None, revised_share=0.8, changed_share=0.9, report_fill=1.1,
                 words_per_claim=14, challenged_share=0.4, asked_again=0.2)

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
    task_calls: tuple[tuple[str, int], ...] = ()  # (answer's schema title or "writer", calls)
    # The range under LEAST and MOST behaviour (`estimate` fills it; (0, 0) when not worked out).
    calls_range: tuple[int, int] = (0, 0)
    cost_range: tuple[float, float] = (0.0, 0.0)
    seconds_range: tuple[float, float] = (0.0, 0.0)
    pages_read: int = 0    # pages (or passages in hand) whose text is read and scored
    sources_kept: int = 0

    @property
    def minutes(self) -> float:
        return self.seconds / 60


# (role, task, calls, input tokens, output tokens) of one kind of call.
Calls = tuple[str, str, float, float, float]


@dataclass(frozen=True)
class Unit:
    """A research unit as the pipeline runs it (research.phases.gather.research)."""
    searches: int        # queries written
    cap: int             # sources kept at most
    other_side: bool     # one more search, for the other side
    lookup: bool = False  # a quick lookup: attaches to its subtopic, names no follow-ups


def units_by_round(config: ResearchConfig, b: Behaviour) -> list[tuple[list[Unit], int]]:
    """Each round's research units and whether the lead triages after it (1) or not (0): the
    planned subtopics first; after each round (of several), the lead's new subtopics and quick
    lookups, which run together (research.phases.decide.rounds). Only a round's new subtopics
    name follow-ups to triage (a lookup ends its branch); research stops after a triage that
    adds no subtopic, and the last round adds none."""
    sources = config.sources_per_subtopic
    searches = config.searches_per_subtopic
    subtopics = [Unit(searches, sources, config.search_other_side)] * config.subtopic_count
    lookups: list[Unit] = []
    limit = config.rounds_limit()
    rounds: list[tuple[list[Unit], int]] = []
    for round_no in range(1, limit + 1):
        questions = min(MAX_QUESTIONS, math.floor(len(subtopics) * b.follow_ups + 0.5))
        triaged = int(limit > 1 and questions > 0)
        rounds.append((subtopics + lookups, triaged))
        if not triaged:
            break
        answered = min(questions, math.floor(b.lookups + 0.5))
        if config.schedule == "breadth_depth":  # breadth and searches halve at each level
            allowed = max(1, math.ceil(config.breadth / 2 ** (round_no - 1)))
            searches = max(1, math.ceil(config.searches_per_subtopic / 2 ** round_no))
        else:
            allowed = max(1, config.subtopic_count // 2)
        added = (0 if round_no == limit
                 else min(questions - answered, math.floor(allowed * b.new_subtopics + 0.5)))
        lookup = Unit(max(1, min(3, round(b.lookup_searches))), LOOKUP_SOURCES, False, True)
        subtopics = [Unit(searches, sources, config.search_other_side)] * added
        lookups = [lookup] * answered
        if not added:
            if lookups:
                rounds.append((lookups, 0))
            break
    return rounds


def figures(config: ResearchConfig, prices: PriceTable, b: Behaviour) -> Estimate:
    """The run's searches, pages, calls, tokens, cost and time under behaviour `b` (without the
    range: research.estimate.estimate adds it)."""
    providers = config.active_search_providers()
    paced = [p for p in providers if p in INTERVALS] if config.search_pace else []
    # Pages of the web are fetched; passages of documents and MCP answers come with their text.
    fetched = {p for p in providers if p != DOCUMENTS and not is_mcp(p)}
    rounds = units_by_round(config, b)
    units = [u for round_units, _ in rounds for u in round_units]
    per_query = max(3, math.ceil(config.sources_per_subtopic * 2 / max(1, config.searches_per_subtopic)))

    calls: list[Calls] = []
    searches = float(len(providers))  # pre-flight's one search per service
    paced_searches = 0.0
    pages = 0.0
    kept_total = read_total = 0.0
    for unit, n in Counter(units).items():  # a round's units are alike: each kind once
        queries = unit.searches + int(unit.other_side)
        searches += n * queries * len(providers)
        paced_searches += n * queries * len(paced)
        # A unit reads at most twice its cap of pages, of what its searches found.
        found = {p: queries * (min(per_query, 3) if p in ACADEMIC_PROVIDERS else per_query)
                 for p in providers}
        chosen = min(2 * unit.cap, sum(found.values())) * b.results_share
        # A person's library gives a few passages a query: the web's pages fill the rest.
        pages += n * min(chosen, sum(found[p] for p in fetched) * b.results_share)
        read = chosen * b.read_share
        read_total += n * read
        kept = min(unit.cap, read * b.relevant_share)
        kept_total += n * kept
        calls += [(role, task, n * count, inp, out) for role, task, count, inp, out in
                  [("worker", "SearchQueries", 2 if unit.searches > 1 else 1, 400, 100),
                   *_unit_calls(config, b, read, kept)]]
    lead_calls = _lead_calls(config, b, rounds, kept_total)
    writing, report_tokens = _writing_calls(config, b, rounds, kept_total)
    calls = lead_calls + calls + writing + _verify_calls(config, b, report_tokens, kept_total)
    seconds = _seconds(config, rounds, report_tokens)
    # arXiv and Semantic Scholar answer one search every few seconds for the whole process: a
    # unit does not wait for them, and withdraws what had no turn (research.search.pacing).
    if paced_searches:
        research_s = seconds * 0.6
        allowed = sum(research_s / (INTERVALS[p] * config.search_pace) for p in paced)
        searches -= max(0.0, paced_searches - allowed)
    calls = [(role, task, count * (1 + b.asked_again), inp, out)
             for role, task, count, inp, out in calls]
    return replace(_totals(config, prices, calls, searches=searches, pages=pages, seconds=seconds),
                   pages_read=round(read_total), sources_kept=round(kept_total))


def _unit_calls(config: ResearchConfig, b: Behaviour, read: float, kept: float) -> list[Calls]:
    """A unit's scoring, findings and gaps calls (research.phases.gather: scoring, findings)."""
    page_tokens = b.page_chars / CHARS_PER_TOKEN
    score_in = SCORE_BATCH * (min(SCORE_CHARS / CHARS_PER_TOKEN, page_tokens) + META_TOKENS) + 250
    out: list[Calls] = [("worker", "RelevanceScores", math.ceil(read / SCORE_BATCH), score_in,
                         SCORE_BATCH * 35)]
    if kept < 1:
        return out
    share = max(MIN_SHARE_CHARS, FINDINGS_CONTEXT_CHARS // max(1, round(kept))) / CHARS_PER_TOKEN
    group = min(FINDINGS_GROUP, kept)
    out += [("worker", "SubtopicFindings", math.ceil(kept / FINDINGS_GROUP),
             group * (min(share, page_tokens) + META_TOKENS) + 300,
             group * b.findings_per_source * 50),
            ("worker", "OpenQuestions", 1,
             kept * (OPEN_QUESTIONS_CHARS / CHARS_PER_TOKEN + 15) + 300, 200)]
    return out


def _lead_calls(config: ResearchConfig, b: Behaviour, rounds: list[tuple[list[Unit], int]],
                kept: float) -> list[Calls]:
    """Pre-flight's check of each distinct model, clarify, the plan, a triage per round
    triaged, a goal check per round when "Done when" is set."""
    models = {(config.role(r).provider, config.role(r).model) for r in ROLES}
    planned = config.subtopic_count
    triages = sum(t for _, t in rounds)
    # The coverage of every subtopic (its findings and gaps) and the round's questions.
    triage_in = 700 + planned * 250 + MAX_QUESTIONS * 30
    return [("lead", "Ping", len(models), 15, 5),
            ("lead", "ClarifyingQuestions", 1, 200, 60),
            ("lead", "ResearchPlan", 1, 300, 120 * planned),
            ("lead", "RoundAssessment", triages, triage_in, 40 * planned + 40 * MAX_QUESTIONS),
            # "Done when": checked once a round, before its triage (not after the lookups).
            ("lead", "GoalCheck", sum(1 for units, _ in rounds if not all(u.lookup for u in units))
             if config.done_when.strip() else 0,
             600 + kept * 60, 150)]


def _writing_calls(config: ResearchConfig, b: Behaviour, rounds: list[tuple[list[Unit], int]],
                   kept: float) -> tuple[list[Calls], float]:
    """The draft section by section and the frame, the reviews and revisions, and the exports'
    words translated; with the report's tokens as written."""
    shape = config.shape()
    subtopics = sum(1 for round_units, _ in rounds for u in round_units if not u.lookup)
    report_tokens = config.words_limit() * b.report_fill * TOKENS_PER_WORD
    parts = (subtopics if shape.subtopics else 0) + len(shape.parts)
    sources = kept
    findings_in = min(kept / max(1, subtopics), max(8, 300 // max(1, subtopics))) * 70
    section_in = 700 + findings_in * 1.5
    section_out = report_tokens / (parts + 1)
    frame_in = 700 + section_out + sources * 25
    reviews = config.review_cycles if b.approved_at is None else min(config.review_cycles,
                                                                      b.approved_at)
    revisions = reviews - int(b.approved_at is not None and b.approved_at <= config.review_cycles)
    revised = math.ceil((parts + 1) * b.revised_share)
    calls: list[Calls] = [
        ("writer", "writer", parts, section_in, section_out),
        ("writer", "writer", 1, frame_in, section_out),
        ("reviewer", "ReviewResult", reviews, report_tokens + sources * 12 + 700, 500),
        ("writer", "writer", revisions * revised, section_in + section_out + 200, section_out),
    ]
    if not is_english(config.report_language):
        calls += [("lead", "ReportLabels", 1, 800, 600), ("lead", "Translations", 1, 1_000, 1_000)]
    return calls, report_tokens


def _verify_calls(config: ResearchConfig, b: Behaviour, report_tokens: float,
                  sources: float) -> list[Calls]:
    """Verification (research.phases.verify): each check judges its claims in two passes (at
    most BATCH_CLAIMS a call, fewer when the run's requests in flight can carry them all at
    once), the critic challenges a share in batches of at least CRITIC_BATCH_MIN, and the writer
    rewrites the qualified ones in one call. Without review one check covers the report; with
    review cycles the first draft is checked while it is reviewed and each revision's changed
    claims are checked again."""
    claims = report_tokens / TOKENS_PER_WORD / b.words_per_claim
    reviews = config.review_cycles if b.approved_at is None else min(config.review_cycles,
                                                                      b.approved_at)
    revisions = reviews - int(b.approved_at is not None and b.approved_at <= config.review_cycles)
    checks = [claims] + [claims * b.revised_share * b.changed_share] * revisions
    slots = model_requests(config)
    # Each claim comes with the passage of each source it cites nearest to it; claims citing the
    # same source share a batch and its passages are sent once (judge.merged_excerpts).
    excerpt = min(PASSAGE_CHARS, b.page_chars / 2) / CHARS_PER_TOKEN
    cited = min(MAX_SOURCES_PER_CLAIM, CITED_PER_CLAIM)

    def batch_in(claims: int, extra: int) -> float:  # a batch's claims and its sources' passages
        passages = min(claims * cited * SHARED_EXCERPTS, max(1.0, sources))
        return claims * (35 + extra) + passages * excerpt

    out: list[Calls] = []
    for n in checks:
        if n < 1:
            continue
        batch = max(1, min(BATCH_CLAIMS, math.ceil(n / max(1, slots // 2))))
        passes = math.ceil(n / batch)
        challenged = n * b.challenged_share
        critic_batch = max(CRITIC_BATCH_MIN, min(BATCH_CLAIMS, math.ceil(challenged / slots)))
        qualified = n * QUALIFIED_SHARE
        out += [("verifier", "ClaimVerdicts", passes, batch_in(batch, 0) + 200, batch * 70),
                ("auditor", "AuditVerdicts", passes, batch_in(batch, 0) + 200, batch * 70),
                ("critic", "CriticVerdicts", math.ceil(challenged / critic_batch),
                 batch_in(critic_batch, 80) + 250, critic_batch * 40),
                ("writer", "ClaimRewrites", 1, 250 + qualified * 60, 20 + qualified * 40)]
    return out


def _seconds(config: ResearchConfig, rounds: list[tuple[list[Unit], int]],
             report_tokens: float) -> float:
    """The run's time: rounds of units at MAX_PARALLEL_WORKERS at once, a unit's two waves of
    query call, searches and pages, then scoring and findings; the writing (sections at once),
    each review and revision, and verification."""
    def per_unit(unit: Unit) -> float:  # its waves, its pages four at a time, its scoring
        pages = 2 * unit.cap
        return ((2 if unit.searches > 1 else 1) * (MODEL_CALL_S + SEARCH_S)
                + FETCH_S * math.ceil(pages / 4)
                + math.ceil(pages / SCORE_BATCH) / 4 * MODEL_CALL_S + MODEL_CALL_S * 2)

    research = sum(math.ceil(len(units) / max(1, config.max_parallel_workers))
                   * max((per_unit(u) for u in units), default=0.0)
                   + MODEL_CALL_S * triaged for units, triaged in rounds)
    shape = config.shape()
    parts = (config.subtopic_count if shape.subtopics else 0) + len(shape.parts) + 1
    writing = MODEL_CALL_S + report_tokens / parts / OUTPUT_TOKENS_PER_S
    seconds = (3 * MODEL_CALL_S + research + 2 * writing
               + config.review_cycles * (MODEL_CALL_S * 2 + writing) + 3 * MODEL_CALL_S)
    return min(seconds, config.total_timeout_ms / 1000)


def _totals(config: ResearchConfig, prices: PriceTable, calls: list[Calls], *, searches: float,
            pages: float, seconds: float) -> Estimate:
    """Calls, tokens and cost added up, per role, task and model."""
    model_calls = tokens_in = tokens_out = cost = 0.0
    unpriced: set[str] = set()
    roles: dict[tuple[str, str], list[str]] = {}      # (provider, model) -> its roles
    per_role: dict[str, float] = {}
    per_task: dict[str, float] = {}
    amounts: dict[tuple[str, str], list[float]] = {}  # -> calls, input, output tokens
    for role, task, count, inp, out in calls:
        chosen = config.role(role)
        model = chosen.model
        if prices.lookup(model) is None:
            unpriced.add(model)
        model_calls += count
        per_role[role] = per_role.get(role, 0.0) + count
        per_task[task] = per_task.get(task, 0.0) + count
        tokens_in += count * inp
        tokens_out += count * out
        cost += count * prices.cost(model, round(inp), round(out))
        if count:
            key = (chosen.provider, model)
            if role not in roles.setdefault(key, []):
                roles[key].append(role)
            sums = amounts.setdefault(key, [0.0, 0.0, 0.0])
            sums[0] += count
            sums[1] += count * inp
            sums[2] += count * out
    return Estimate(
        searches=round(searches),
        pages_fetched=round(pages),
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
        task_calls=tuple((task, round(n)) for task, n in per_task.items()),
    )
