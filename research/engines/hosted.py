"""Hand a run to a hosted deep-research service and bring its answer home.

One step per engine (key "engine:<name>"): start a background job (or re-attach to the one
a previous attempt started), poll it every `hosted_poll_interval_s` with
`control.checkpoint()` between polls, then normalise what came back:

- every cited URL becomes a stored source of the run (subtopic and provider = the engine,
  relevance 1.0). Its text is the page itself, fetched with the run's `Fetcher` (same
  safety rules as the pipeline); when the page cannot be read, the passages the engine
  attributed to it. Sources are de-duplicated by canonical URL across engines and the
  built-in pipeline (the store's UNIQUE rule; ids are `source_id(canonical)` as in the
  pipeline, so a page both found has one id).
- the report's citations (links or cited spans) become [n] markers with a numbering
  {n: source_id}; the service's own markers ("[3]", "[cite: 3]") are removed because they
  would point at the wrong numbers.
- the report is stored in `engine_reports`, the sources with the step, usage in `usage`.

The remote job id is stored the moment the job exists, so a resumed run polls the same job
instead of paying for a new one. Cancelling the run cancels the remote job; hitting the
run's time limit leaves it running, so resuming picks up its result. A job that failed or
was cancelled is started afresh on resume.
"""

from __future__ import annotations

import re
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field, replace
from functools import partial
from typing import Any, TypeVar

from research.core.config import Credentials, ResearchConfig
from research.core.context import RunContext
from research.core.errors import (
    ConfigError,
    FetchError,
    ProviderError,
    ResearchError,
    RunCancelled,
    RunStop,
)
from research.core.events import Retrying, SourceFound, StepCompleted, StepFailed, StepStarted
from research.core.executor import submit_limited
from research.core.prompts import clean_untrusted, date_line
from research.core.records import EngineReport, JsonObject, Query, Source
from research.core.retry import RetryPolicy, call_with_retries
from research.engines.base import RUNNING, Citation, HostedClient, RemoteJob
from research.export.document import CITATION_RE, map_prose
from research.llm.messages import Usage
from research.llm.pricing import PriceTable
from research.phases.gather.research import source_id
from research.report.checks import word_count
from research.report.citations import normalise
from research.untrusted.credibility import assess
from research.untrusted.fetch import FetchedPage
from research.untrusted.urls import canonical_url, domain_of
from storage.migrations import utc_now

T = TypeVar("T")

HOSTED_ENGINES = ("openai-deep-research", "gemini-deep-research")
LABELS = {"openai-deep-research": "OpenAI deep research", "gemini-deep-research": "Gemini Deep Research"}
FETCH_THREADS = 6
WAIT_SLICE_S = 0.25

PROMPT = """Research the question below thoroughly on the web and write a cited research report.
{date_line}

<question>{question}</question>

Write the report in {language}, in Markdown, at most {max_words} words: a title; an executive
summary that answers the question first; key findings by theme; where sources disagree and
why; open questions and gaps; and how confident the answer is. Cite the web page behind
every factual claim inline. Prefer recent sources and say when a figure is old. Where the
evidence is thin, say "insufficient data" instead of guessing. Do not ask clarifying
questions: state the assumptions you make."""


def model_of(engine: str, config: ResearchConfig) -> str:
    if engine == "openai-deep-research":
        return config.openai_deep_research_model
    if engine == "gemini-deep-research":
        return config.gemini_deep_research_agent
    raise ConfigError(f"Unknown hosted engine {engine!r}; choose one of {', '.join(HOSTED_ENGINES)}.")


def build_client(engine: str, config: ResearchConfig, credentials: Credentials) -> HostedClient:
    model = model_of(engine, config)
    if engine == "openai-deep-research":
        from research.engines.openai_deep import OpenAIDeepResearch

        return OpenAIDeepResearch(model, config, credentials)
    from research.engines.gemini_deep import GeminiDeepResearch

    return GeminiDeepResearch(model, config, credentials)


def run_hosted(ctx: RunContext, engine: str, *, credentials: Credentials | None = None) -> JsonObject:
    """Run (or re-attach to, or skip when done) the hosted engine's step for this run.

    Returns {"engine", "status", "sources" (distinct sources the report cites), "words",
    "remote_id"}. Raises ResearchError (ProviderError when the service failed, RunCancelled,
    BudgetExceeded) after recording the step as failed. `credentials` default to
    `ctx.credentials` when the context carries them.
    """
    key = f"engine:{engine}"
    model = model_of(engine, ctx.config)
    done = ctx.stored_result(key)
    if done is not None:
        return done
    label = f"{LABELS[engine]} ({model})"
    creds = credentials or getattr(ctx, "credentials", None)
    ctx.control.checkpoint()
    previous = _reattachable(ctx.store.get_engine_report(ctx.run_id, engine))
    ctx.store.start_step(ctx.run_id, key, kind="engine", label=label)
    ctx.emit(StepStarted(
        ctx.run_id, f"{label}: re-attaching to job {previous}" if previous else f"{label}: starting",
        step=key, kind="engine", label=label, engine=engine, remote_id=previous,
    ))
    started = time.monotonic()
    run = _HostedRun(ctx, engine, key, label)
    try:
        if creds is None:
            raise ConfigError(f"{label} needs API credentials (pass credentials= to run_hosted).")
        run.client = build_client(engine, ctx.config, creds)
        job = run.attach(previous) if previous else None
        job = job or run.start()
        job = run.poll(job)
        result = run.deliver(job)
    except RunCancelled as exc:
        run.cancel_remote()
        _fail(ctx, key, label, str(exc))
        raise
    except (ResearchError, RunStop) as exc:  # a stop (time limit) is recorded on the step too
        _fail(ctx, key, label, str(exc))
        raise
    ctx.emit(StepCompleted(
        ctx.run_id, f"{label}: {result['sources']} sources cited, {result['words']} words", step=key,
        kind="engine", label=label, duration_s=round(time.monotonic() - started, 2),
        sources=int(result["sources"]), new_sources=run.inserted, remote_id=job.id,
    ))
    return result


def _reattachable(row: EngineReport | None) -> str | None:
    if row and row.remote_id and row.status in (*RUNNING, "completed"):
        return str(row.remote_id)
    return None


def _fail(ctx: RunContext, key: str, label: str, message: str) -> None:
    ctx.store.fail_step(ctx.run_id, key, ctx.safe(message))
    ctx.emit(StepFailed(ctx.run_id, f"{label} failed: {ctx.safe(message)}", step=key,
                        kind="engine", label=label, error=ctx.safe(message)))


@dataclass
class _HostedRun:
    ctx: RunContext
    engine: str
    key: str
    label: str
    client: HostedClient | None = None
    job_id: str | None = None
    polls: int = 0
    inserted: int = 0
    status: str = ""
    _policy: RetryPolicy = field(init=False)

    def __post_init__(self) -> None:
        self._policy = RetryPolicy(attempts=self.ctx.config.max_retries + 1)

    @property
    def api(self) -> HostedClient:
        assert self.client is not None, "build the client first"
        return self.client

    # --- remote calls -------------------------------------------------------------------

    def _call(self, fn: Callable[[], T]) -> T:
        ctx = self.ctx

        def on_retry(attempt: int, exc: BaseException, delay: float) -> None:
            ctx.emit(Retrying(ctx.run_id, ctx.safe(f"{exc} Retrying in {delay:.1f} s."), step=self.key,
                              attempt=attempt, delay_s=round(delay, 2)))

        return call_with_retries(fn, policy=self._policy, deadline=ctx.control.deadline,
                                 on_retry=on_retry, cancel=ctx.control.cancelled)

    def _record(self, job: RemoteJob, **meta: Any) -> None:
        if job.id != self.job_id or job.status != self.status or meta:
            self.job_id, self.status = job.id, job.status
            self.ctx.store.save_engine_job(
                self.ctx.run_id, self.engine, remote_id=job.id, status=job.status,
                error=self.ctx.safe(job.error) if job.error else None,
                meta={"polls": self.polls, "updated_status_at": utc_now(), **meta},
            )

    def start(self) -> RemoteJob:
        cfg = self.ctx.config
        prompt = PROMPT.format(
            date_line=date_line(self.ctx.today), question=self.ctx.question,
            language=cfg.report_language, max_words=cfg.words_limit(),
        )
        job = self._call(lambda: self.api.create(prompt))
        self._record(job, engine=self.engine, label=self.label, model=self.api.model,
                     started_at=utc_now())
        return job

    def attach(self, remote_id: str) -> RemoteJob | None:
        """The job a previous attempt started; None when the service no longer knows it."""
        self.job_id = remote_id
        row = self.ctx.store.get_engine_report(self.ctx.run_id, self.engine)
        self.polls = row.polls if row else 0
        self.status = row.status if row else ""
        try:
            job = self._call(lambda: self.api.retrieve(remote_id))
        except ProviderError as exc:
            if exc.status == 404:
                return None
            raise
        self.polls += 1
        self._record(job, reattached_at=utc_now())
        return job

    def poll(self, job: RemoteJob) -> RemoteJob:
        interval = max(0.0, float(self.ctx.config.hosted_poll_interval_s))
        while job.status in RUNNING:
            self._wait(interval)
            job = self._call(partial(self.api.retrieve, job.id))
            self.polls += 1
            self._record(job)
        return job

    def _wait(self, seconds: float) -> None:
        """Sleep between polls, checking for pause, cancel and the run's time limit."""
        control = self.ctx.control
        end = time.monotonic() + seconds
        while True:
            control.checkpoint()
            left = end - time.monotonic()
            if left <= 0:
                return
            control.cancelled.wait(min(left, WAIT_SLICE_S))

    def cancel_remote(self) -> None:
        """Best effort: one quick attempt; the run is cancelled whatever the service says."""
        if self.client is None or self.job_id is None or self.status not in RUNNING:
            return
        try:
            job = self.api.cancel(self.job_id)
        except ResearchError as exc:
            self.ctx.store.save_engine_job(self.ctx.run_id, self.engine, remote_id=self.job_id,
                                           status="cancelled", error=self.ctx.safe(str(exc)))
            return
        self._record(job, cancelled_at=utc_now())
        if job.status != "cancelled":  # the service finished first: the run is cancelled anyway
            self._record(RemoteJob(id=job.id, status="cancelled"))

    # --- the result ---------------------------------------------------------------------

    def deliver(self, job: RemoteJob) -> JsonObject:
        ctx = self.ctx
        if job.status == "failed":
            raise ProviderError(f"{self.label} failed: {job.error or 'the service gave no reason'}.",
                                provider=self.api.provider)
        if job.status == "cancelled":
            raise ProviderError(f"{self.label}: the job was cancelled on the service's side.",
                                provider=self.api.provider)
        if not job.text.strip():
            reason = f" ({job.error})" if job.error else ""
            raise ProviderError(f"{self.label} returned no report{reason}.", provider=self.api.provider)
        cited = [c for c in job.citations if c.url.startswith(("http://", "https://"))]
        if not cited:
            raise ProviderError(
                f"{self.label} returned a report that cites no web pages, so it was not used "
                "(reports are never made from model memory alone).", provider=self.api.provider)

        pages = self._fetch({c.url for c in cited})
        canonical = {url: canonical_url(page.final_url if isinstance(page, FetchedPage) else url)
                     for url, page in pages.items()}
        number: dict[str, int] = {}
        for c in sorted(cited, key=lambda c: (c.start, c.end)):
            number.setdefault(canonical[c.url], len(number) + 1)
        markdown = rewrite_citations(job.text, cited, lambda url: number[canonical[url]])
        passages = cited_passages(job.text, cited)

        sources: dict[str, Source] = {}
        quoted: dict[str, list[str]] = {}  # what the report quotes of each: its text if unread
        for c in cited:
            canon = canonical[c.url]
            if canon not in sources:
                sources[canon] = self._source(c, canon, pages[c.url], passages)
            quoted.setdefault(canon, []).extend(passages.get(c.url) or [])
        sources = {canon: src if src.text else replace(
            src, text=clean_untrusted("\n\n".join(dict.fromkeys(quoted[canon]))))
            for canon, src in sources.items()}
        known = {s.canonical_url: s.id for s in ctx.store.get_sources(ctx.run_id, with_text=False)}
        numbering = {n: known.get(canon, source_id(canon)) for canon, n in number.items()}
        # What the service wrote beside its annotations (links, footnotes, its own list) -> [n].
        markdown = normalise(markdown, numbering,
                             {numbering[n]: sources[canon] for canon, n in number.items()}).text
        words = word_count(markdown)
        fetched = sum(1 for p in pages.values() if isinstance(p, FetchedPage))
        # The run's own price table (defaults + the user's file), so caps and estimates agree.
        prices = ctx.meter.prices if ctx.meter is not None else PriceTable()
        cost = prices.cost(self.api.model, job.input_tokens, job.output_tokens)
        ctx.store.save_engine_report(ctx.run_id, self.engine, markdown, numbering=numbering, meta={
            "engine": self.engine, "label": self.label, "model": self.api.model,
            "remote_id": job.id, "remote_status": job.status, "polls": self.polls,
            "words": words, "cited_sources": len(number), "queries": len(job.queries),
            "pages_read": fetched, "pages_unread": len(pages) - fetched,
            "input_tokens": job.input_tokens, "output_tokens": job.output_tokens,
            "cost_usd": round(cost, 6), "finished_at": utc_now(), "note": job.error,
        })
        result = {"engine": self.engine, "status": "completed", "sources": len(number),
                  "words": words, "remote_id": job.id}
        queries = [Query(self.engine, q, self.engine) for q in job.queries]
        inserted = ctx.store.complete_research_step(
            ctx.run_id, self.key, sources=list(sources.values()), queries=queries, result=result)
        self.inserted = len(inserted)
        if ctx.meter is not None:  # records to the store and counts toward the budget caps
            ctx.meter.record("engine", self.api.provider, self.api.model,
                             Usage(job.input_tokens, job.output_tokens))
        else:
            ctx.store.add_usage(ctx.run_id, "engine", self.api.provider, self.api.model,
                                job.input_tokens, job.output_tokens, cost)
        for sid in inserted:
            src = next(s for s in sources.values() if s.id == sid)
            ctx.emit(SourceFound(ctx.run_id, f"Source: {src.title[:120]}", step=self.key,
                                 source_id=sid, url=src.url, title=src.title, relevance=1.0,
                                 subtopic_id=self.engine))
        return result

    def _fetch(self, urls: Iterable[str]) -> dict[str, FetchedPage | str]:
        """Each cited page, or the reason it could not be read. Stops early on cancel."""
        ctx = self.ctx

        def fetch(url: str) -> FetchedPage | str:
            if ctx.control.cancelled.is_set():
                return "the run was cancelled"
            try:
                return ctx.fetcher.fetch(url)
            except FetchError as exc:
                return str(exc)

        ordered = sorted(urls)
        futures = submit_limited(ctx.executor.tasks, [partial(fetch, url) for url in ordered],
                                 FETCH_THREADS)
        results = {url: future.result() for url, future in zip(ordered, futures, strict=True)}
        ctx.control.checkpoint()
        return results

    def _source(self, c: Citation, canon: str, page: FetchedPage | str,
                passages: dict[str, list[str]]) -> Source:
        read = isinstance(page, FetchedPage) and bool(page.text.strip())
        cited_text = passages.get(c.url) or []
        reason = f"Cited by {self.label}"
        if not read:
            why = page if isinstance(page, str) else "the page had no readable text"
            reason += f"; the page could not be read ({why}), so its text is what the report cites"
        url = page.final_url if isinstance(page, FetchedPage) else c.url
        title = c.title.strip() or (page.title if isinstance(page, FetchedPage) else None) or domain_of(url) or url
        fetched = page if isinstance(page, FetchedPage) else None
        author = fetched.author if fetched else None
        credibility = assess(url, self.engine, published=fetched.published if fetched else None,
                             author=author)
        return Source(
            id=source_id(canon), url=url, canonical_url=canon, title=title[:300],
            snippet=clean_untrusted(cited_text[0] if cited_text else "")[:500],
            text=clean_untrusted(page.text) if read and isinstance(page, FetchedPage) else "",
            published=page.published if isinstance(page, FetchedPage) else None,
            relevance=1.0, relevance_reason=reason, subtopic_id=self.engine,
            provider=self.engine, query="", round=1, source_kind=credibility.kind,
            signals=tuple(credibility.signals), author=author,
        )


# --- citations ------------------------------------------------------------------------------

_OWN_MARKER = re.compile(r"[ \t]*\[cite:\s*[\d,;\s\-]+\]", re.IGNORECASE)
_PLACEHOLDER = re.compile(r"[ \t]*\x00([\d,]+)\x00")
_MD_LINK = re.compile(r"\[([^\]]*)\]\([^)]*\)")
_SENTENCE_END = re.compile(r"(?:[.!?](?=\s)|\n)")
_TRAILING = " \t\n"
_PUNCT = ".,;:!?"


def rewrite_citations(text: str, citations: Iterable[Citation], number: Callable[[str], int]) -> str:
    """The report with each citation as [n]; the service's own citation markers removed.

    A citation whose span is the link itself (OpenAI: "([title](url))") is replaced by the
    marker; one whose span is the claim (Gemini: the cited sentence) gets the marker at its
    end, before the closing punctuation. Spans out of range go to the end of the text.
    """
    replace: list[list[Any]] = []   # [start, end, numbers]
    insert: list[tuple[int, int]] = []  # (position, number)
    for c in citations:
        n = number(c.url)
        if not 0 <= c.start <= c.end <= len(text):
            insert.append((len(text), n))
            continue
        span = text[c.start:c.end]
        if c.url in span or _MD_LINK.fullmatch(span.strip()):
            start, end = c.start, c.end
            if start > 0 and end < len(text) and text[start - 1] == "(" and text[end] == ")":
                start, end = start - 1, end + 1
            replace.append([start, end, [n]])
            continue
        pos = c.end
        while pos > c.start and text[pos - 1] in _TRAILING:
            pos -= 1
        if pos > c.start and text[pos - 1] in _PUNCT:
            pos -= 1
        insert.append((pos, n))
    # Overlapping replacements merge; an insertion inside a replaced span joins it.
    merged: list[list[Any]] = []
    for start, end, nums in sorted(replace, key=lambda r: (r[0], r[1])):
        if merged and start < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
            merged[-1][2] += nums
        else:
            merged.append([start, end, list(nums)])
    edits: dict[tuple[int, int], list[int]] = {(s, e): nums for s, e, nums in merged}
    for pos, n in insert:
        inside = next(((s, e) for s, e, _ in merged if s < pos < e), None)
        edits.setdefault(inside or (pos, pos), []).append(n)
    out = text
    for (start, end), nums in sorted(edits.items(), reverse=True):
        marker = "\x00" + ",".join(str(n) for n in sorted(set(nums))) + "\x00"
        out = out[:start] + marker + out[end:]

    def strip_own(chunk: str) -> str:
        return _OWN_MARKER.sub("", CITATION_RE.sub("", chunk))

    out = map_prose(out, strip_own)

    def numbers(match: re.Match[str]) -> str:
        return " " + "".join(f"[{n}]" for n in match.group(1).split(","))

    out = _PLACEHOLDER.sub(numbers, out)
    return re.sub(r"(^|\n) (\[\d)", r"\1\2", out)


def cited_passages(text: str, citations: Iterable[Citation]) -> dict[str, list[str]]:
    """For each cited URL, the sentences the report attributes to it (plain text)."""
    out: dict[str, list[str]] = {}
    for c in citations:
        if not 0 <= c.start <= c.end <= len(text):
            continue
        span = text[c.start:c.end]
        if c.url in span or _MD_LINK.fullmatch(span.strip()) or len(span.strip()) < 20:
            before = text[:c.start]
            ends = list(_SENTENCE_END.finditer(before.rstrip(" (\t")))
            start = ends[-1].end() if ends else 0
            span = before[start:]
        passage = " ".join(_MD_LINK.sub(r"\1", span).replace("#", " ").split()).strip(" -*(")
        if passage:
            out.setdefault(c.url, []).append(passage[:600])
    return out
