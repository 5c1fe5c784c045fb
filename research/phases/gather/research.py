"""Research: workers search, read, score and summarise their subtopic, in parallel.

At most MAX_PARALLEL_WORKERS subtopics run at once (by default every planned one); inside a
worker the searches run concurrently, and the pages a wave of searches found are read and
scored as they arrive (`reading.py`) while the worker writes its next wave. A worker's sources, findings, queries and skipped
pages are written in one transaction when it finishes, so a crash loses at most the
subtopics in flight and a resume never duplicates a source. A subtopic that fails
three times is marked failed and the run goes on.
"""

from __future__ import annotations

import hashlib
import logging
import math
import threading
import time
from collections.abc import Iterable
from concurrent.futures import as_completed
from dataclasses import replace
from functools import partial

from research.core.agents import Agent, Role
from research.core.config import DOCUMENTS
from research.core.context import RunContext
from research.core.errors import (
    BudgetExceeded,
    BudgetStop,
    ProviderError,
    ResearchError,
    RunCancelled,
    contained,
)
from research.core.events import SourceFound, StepCompleted, StepFailed, StepStarted
from research.core.executor import submit_limited
from research.core.prompts import clean_untrusted
from research.core.records import (
    FailedSubtopic,
    ResearchResult,
    SkippedPage,
    Source,
    Subtopic,
)
from research.phases.gather import findings, learnings, scoring, searching
from research.phases.gather.reading import Reading
from research.phases.gather.searching import Candidate, Outcome
from research.phases.start.plan import PlanResult
from research.search.in_hand import text_in_hand
from research.untrusted.credibility import assess
from research.untrusted.fetch import FetchedPage
from research.untrusted.urls import canonical_url

log = logging.getLogger(__name__)

MAX_ATTEMPTS = 3
BUDGET_UNSCORED = "not scored: the budget stopped research before this page could be scored"


class UrlRegistry:
    """Canonical URLs claimed by any worker of the run: de-duplication across workers."""

    def __init__(self, initial: set[str]) -> None:
        self._claimed = set(initial)
        self._lock = threading.Lock()

    def claim(self, canonical: str) -> bool:
        with self._lock:
            if canonical in self._claimed:
                return False
            self._claimed.add(canonical)
            return True

    def release(self, urls: list[str]) -> None:
        with self._lock:
            self._claimed.difference_update(urls)


def source_id(canonical: str) -> str:
    return "s_" + hashlib.sha1(canonical.encode()).hexdigest()[:10]


# A unit of research: (step key, label, subtopic).
Unit = tuple[str, str, Subtopic]


def run(ctx: RunContext, plan: PlanResult) -> ResearchResult:
    """Research every planned subtopic not yet done (the first round); return what the run
    has gathered, with the subtopics that did not finish."""
    run_units(ctx, units(plan.subtopics))
    return gathered(ctx)


def gathered(ctx: RunContext) -> ResearchResult:
    """What the run has gathered so far, read from the store: the same on a first run and on
    a resume, where the research steps that finished earlier are not run again."""
    plan = tuple(ctx.store.get_plan(ctx.run_id) or ())
    return ResearchResult(
        subtopics=plan, failed=unfinished(ctx, plan),
        sources=tuple(ctx.store.get_sources(ctx.run_id, with_text=False)),
        findings=tuple(ctx.store.get_findings(ctx.run_id)),
    )


def units(plan: Iterable[Subtopic]) -> list[Unit]:
    """Research units for these subtopics; inherited subtopics were researched by the
    parent run."""
    return [(f"research:{s.id}", f"Researching: {s.title}", s) for s in plan if not s.inherited]


def unfinished(ctx: RunContext, plan: Iterable[Subtopic]) -> tuple[FailedSubtopic, ...]:
    """The planned subtopics whose research did not finish, each with its error."""
    steps = {s.key: s for s in ctx.store.get_steps(ctx.run_id)}
    missing = ((sub, steps.get(f"research:{sub.id}")) for sub in plan if not sub.inherited)
    return tuple(FailedSubtopic(sub, (step.error if step else None) or "not researched")
                 for sub, step in missing if step is None or step.status != "done")


def run_units(ctx: RunContext, units: list[Unit]) -> None:
    """Run research units (step key, label, subtopic) not yet done, in parallel.

    A follow-up lookup is a unit too: a small subtopic whose sources and findings attach
    to the subtopic it came from. Stops early (without error) when a budget cap is hit.
    """
    registry = UrlRegistry(ctx.store.canonical_urls(ctx.run_id))
    todo = [u for u in units if ctx.stored_result(u[0]) is None]
    if not todo or ctx.budget_reason():
        return
    workers = [(unit, ctx.lead.delegate(Role.WORKER)) for unit in todo]
    futures = submit_limited(
        ctx.executor.units,
        [partial(_with_retries, ctx, w, *unit, registry) for unit, w in workers],
        ctx.config.max_parallel_workers,
    )
    stop: BaseException | None = None
    for future in as_completed(futures):
        try:
            future.result()
        except BudgetStop:
            pass  # research ends; what was gathered is written up
        except RunCancelled as exc:
            ctx.control.cancelled.set()  # stop the other workers at their next unit
            stop = stop or exc
        except BudgetExceeded as exc:
            stop = stop or exc
    if stop is not None:
        raise stop


def _with_retries(
    ctx: RunContext, worker: Agent, key: str, label: str, sub: Subtopic,
    registry: UrlRegistry,
) -> None:
    for attempt in range(1, MAX_ATTEMPTS + 1):
        ctx.checkpoint()
        ctx.store.start_step(ctx.run_id, key, kind=key.split(":")[0], label=label,
                             subtopic_id=sub.id)
        ctx.emit(StepStarted(ctx.run_id, label, step=key, kind=key.split(":")[0], label=label,
                             attempt=attempt))
        started = time.monotonic()
        outcome = Outcome()
        try:
            _research(ctx, worker, sub, registry, outcome, deadline=ctx.step_deadline())
            result: dict[str, object] = {
                "sources": len(outcome.sources), "queries": len(outcome.queries),
                "skipped": len(outcome.skipped), "findings": len(outcome.findings),
            }
            inserted = _store(ctx, key, outcome, result)
        except BudgetStop as exc:
            _keep_on_budget_stop(ctx, key, sub, outcome, exc)
            raise
        except (RunCancelled, BudgetExceeded) as exc:
            registry.release(outcome.claimed)
            ctx.store.fail_step(ctx.run_id, key, ctx.safe(str(exc)), final=False)
            raise
        except Exception as exc:  # noqa: BLE001 - a failed subtopic must not end the run
            registry.release(outcome.claimed)
            if not contained(exc):  # the test suite's switch: a bug fails the test
                raise
            reason = ctx.safe(str(exc) if isinstance(exc, ResearchError) else
                              "a problem in the program itself (the details are in the log)")
            if not isinstance(exc, ResearchError):
                log.exception("worker for %s failed", sub.title)
            final = attempt == MAX_ATTEMPTS
            ctx.store.fail_step(ctx.run_id, key, reason, final=final)
            tail = "giving up on this subtopic" if final else f"trying again ({attempt + 1}/{MAX_ATTEMPTS})"
            ctx.emit(StepFailed(ctx.run_id, f"{label} failed: {reason}; {tail}", step=key,
                                kind=key.split(":")[0], label=label, error=reason,
                                attempt=attempt, final=final))
            continue
        by_id = {s.id: s for s in outcome.sources}
        for sid in inserted:
            src = by_id[sid]
            ctx.emit(SourceFound(
                ctx.run_id, f"Source: {src.title[:120]}", step=key, source_id=sid,
                url=src.url, title=src.title, relevance=src.relevance, subtopic_id=sub.id,
            ))
        ctx.emit(StepCompleted(
            ctx.run_id, f"{label}: {len(inserted)} sources kept", step=key,
            kind=key.split(":")[0], label=label, duration_s=round(time.monotonic() - started, 2),
            sources=len(inserted),
        ))
        return


def _store(ctx: RunContext, key: str, out: Outcome, result: dict[str, object]) -> list[str]:
    """Everything the unit produced, in one transaction; the ids of the sources inserted."""
    return ctx.store.complete_research_step(
        ctx.run_id, key, sources=out.sources, findings=out.findings, queries=out.queries,
        skipped=out.skipped, result=result,
    )


def _keep_on_budget_stop(
    ctx: RunContext, key: str, sub: Subtopic, out: Outcome, exc: BudgetStop,
) -> None:
    """A budget stop keeps what this unit already gathered: the pages scored as relevant and
    the pages read but not yet scored (marked so in their relevance reason) are stored as
    sources, the unit is marked done (partly, with the reason), so nothing is lost."""
    reason = ctx.safe(str(exc))
    result: dict[str, object] = {"sources": len(out.sources), "queries": len(out.queries),
                                 "skipped": len(out.skipped), "findings": len(out.findings),
                                 "stopped_by_budget": reason}
    inserted = _store(ctx, key, out, result)
    ctx.emit(StepCompleted(ctx.run_id, f"{reason} {len(inserted)} sources of this subtopic "
                           "were kept.", step=key, kind=key.split(":")[0], sources=len(inserted)))


def _research(
    ctx: RunContext, worker: Agent, sub: Subtopic, registry: UrlRegistry,
    out: Outcome, *, deadline: float,
) -> None:
    reading = Reading(ctx, worker, sub, out, deadline, _source_record)
    searching_stop: BudgetStop | None = None
    try:
        try:
            _search_and_read(ctx, worker, sub, registry, out, reading, deadline)
        except BudgetStop as exc:  # the pages already under way are read and kept
            searching_stop = exc
        read, scores, stop = reading.finish()
    except BaseException:
        reading.abandon()
        raise
    stop = stop or searching_stop
    # Read but not scored: skipped, or kept and marked as such when the budget stopped it.
    unscored = BUDGET_UNSCORED if stop else scoring.NOT_SCORED
    scored = [replace(s, relevance=scores[s.id].relevance, relevance_reason=scores[s.id].reason)
              if s.id in scores else replace(s, relevance=0.0, relevance_reason=unscored)
              for s in read]
    cap = sub.max_sources or ctx.config.sources_per_subtopic
    _sort_kept(ctx, sub, scored, set(scores), cap, out, keep_unscored=stop is not None)
    if stop is not None:
        raise stop
    if out.sources:
        out.findings = findings.collect(ctx, worker, sub, out.sources, deadline)


def _search_and_read(
    ctx: RunContext, worker: Agent, sub: Subtopic, registry: UrlRegistry, out: Outcome,
    reading: Reading, deadline: float,
) -> None:
    """The searches of one unit, each wave's pages read as soon as the wave has found them.

    The candidates are the same as if every search had finished first: the other side's
    best three, then the first wave's results, the second wave's, the other side's rest, cut
    at twice SOURCES_PER_SUBTOPIC. Those ahead of the second wave are known once the first
    wave is in, so they are read while the worker writes its second wave of queries."""
    cfg = ctx.config
    total = sub.searches or cfg.searches_per_subtopic
    limit = 2 * (sub.max_sources or cfg.sources_per_subtopic)
    first = math.ceil(total / 2)
    pool = ctx.executor.tasks  # searches, fetches and scoring batches: tasks, never units
    known = learnings.prior(ctx, sub)  # earlier rounds: learnings and queries run
    # The other side's search needs nothing the waves find: it runs beside them.
    opposing = (searching.other_side(ctx, sub, known.queries, pool, deadline)
                if cfg.search_other_side and not sub.lookup else [])
    running = [query for query, _, _ in opposing[:1]]
    wave = searching.search_wave(ctx, worker, sub, first, [], [], out, pool, deadline,
                                 known, running)
    other = searching.collect(ctx, sub, opposing, out) if opposing else []
    found = len(other) + len(wave)
    ahead = _select(other[:3] + wave, registry, out, limit=limit)
    reading.add(ahead)
    later: list[Candidate] = []
    if total > first:
        titles = [r.result.title for r in wave][:15]
        asked = [q.query for q in out.queries]
        later = searching.search_wave(ctx, worker, sub, total - first, titles, asked, out, pool,
                                      deadline, known, running)
        found += len(later)
    if not found:
        errors = {q.error for q in out.queries if q.error}
        if errors:
            raise ProviderError("every search failed: " + "; ".join(sorted(errors))[:300])
    reading.add(_select(later + other[3:], registry, out, limit=limit - len(ahead)))


def _sort_kept(
    ctx: RunContext, sub: Subtopic, read: list[Source], scored: set[str], cap: int,
    out: Outcome, *, keep_unscored: bool = False,
) -> None:
    """Keep the most relevant sources above the threshold (at most `cap`); skip the rest.
    With `keep_unscored` (a budget stop) pages the budget left unscored are kept too."""
    threshold = ctx.config.source_relevance_threshold
    kept: list[Source] = []
    # As relevant as a web page, a passage of the person's own documents goes first: they
    # chose to have their documents read.
    for src in sorted(read, key=lambda s: (-s.relevance, s.provider != DOCUMENTS, s.id)):
        unscored = src.id not in scored
        if unscored and not keep_unscored:
            out.skipped.append(SkippedPage(sub.id, src.url, scoring.NOT_SCORED))
        elif src.relevance < threshold and not (keep_unscored and unscored):
            out.skipped.append(SkippedPage(sub.id, src.url,
                                           f"relevance {src.relevance:.2f} below {threshold}"))
        elif len(kept) >= cap:
            out.skipped.append(SkippedPage(sub.id, src.url, "over the SOURCES_PER_SUBTOPIC limit"))
        else:
            kept.append(src)
    out.sources = kept


def _select(
    results: list[Candidate], registry: UrlRegistry, out: Outcome, *, limit: int
) -> list[Candidate]:
    chosen: list[Candidate] = []
    seen: set[str] = set()
    for cand in results:
        if len(chosen) >= limit:
            break
        url = cand.result.url.strip()
        if text_in_hand(cand.result) and not url.lower().startswith(("http://", "https://")):
            canonical = url  # a passage of the person's documents, an MCP tool's answer
        elif not url.lower().startswith(("http://", "https://")):
            continue
        else:
            try:
                canonical = canonical_url(url)
            except ValueError:
                continue
        if canonical in seen:
            continue
        seen.add(canonical)
        if not registry.claim(canonical):
            continue
        out.claimed.append(canonical)
        cand.canonical = canonical
        chosen.append(cand)
    return chosen


def _source_record(sub: Subtopic, cand: Candidate, page: FetchedPage) -> Source:
    text = page.text
    snippet = (cand.result.snippet or text[:300]).strip()
    published = page.published or cand.result.published or None
    credibility = assess(cand.result.url, cand.result.provider, published=published,
                         author=page.author)
    return Source(
        id=source_id(cand.canonical), url=cand.result.url, canonical_url=cand.canonical,
        title=clean_untrusted(page.title or cand.result.title or cand.result.url).strip()[:300],
        snippet=clean_untrusted(snippet)[:500], text=clean_untrusted(text), published=published,
        source_kind=credibility.kind, signals=tuple(credibility.signals), author=page.author,
        subtopic_id=sub.id, provider=cand.result.provider, query=cand.query, round=sub.round,
    )
