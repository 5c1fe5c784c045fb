"""Reading: a research unit's pages fetched, extracted and scored as they arrive.

The pages the first wave of searches found are read while the worker writes its second wave
of queries, and a batch of pages goes to relevance scoring as soon as it is read, instead of
after the slowest page of the unit: a slow page holds up only its own batch, and on a real
provider the scoring of the first pages overlaps the second wave's model call and searches.

Fetches and scoring batches are tasks of the run's executor (a task waits only on calls):
a finished fetch hands its page to the next scoring batch from its own thread, and the unit's
thread only waits at the end (`finish`). Skipped pages are recorded in the order the
candidates were chosen, so a run's record does not depend on which page answered first. A
unit that fails before `finish` calls `abandon`: what it left under way scores nothing more.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from concurrent.futures import Future
from datetime import date, timedelta
from functools import partial

from research.core.agents import Agent
from research.core.context import RunContext
from research.core.errors import BudgetStop, FetchError, ProviderTimeout
from research.core.events import SourceSkipped
from research.core.records import SkippedPage, Source, Subtopic
from research.phases.gather import scoring
from research.phases.gather.searching import WORKER_ROLE, Candidate, Outcome
from research.search.in_hand import page_of, text_in_hand
from research.untrusted.fetch import FetchedPage

MIN_TEXT_CHARS = 200

# What became of one chosen candidate: its source record, or why it was skipped.
Read = Source | str


class Reading:
    """The pages of one research unit, read and scored as they arrive (module docstring)."""

    def __init__(self, ctx: RunContext, worker: Agent, sub: Subtopic, out: Outcome,
                 deadline: float, record: Callable[[Subtopic, Candidate, FetchedPage], Source],
                 ) -> None:
        self._ctx, self._worker, self._sub, self._out = ctx, worker, sub, out
        self._deadline = deadline
        self._record = record
        self._lock = threading.Lock()
        # A future counts as done before its callbacks have run: `finish` waits for these.
        self._settled = threading.Condition(self._lock)
        self._chosen: list[Candidate] = []
        self._fetches: list[Future[FetchedPage]] = []
        self._read: dict[int, Read] = {}
        self._fatal: BaseException | None = None  # cancellation, the time limit, a crash
        self._stop: BudgetStop | None = None  # a cap reached: pages not yet read are not read
        self._batch: list[Source] = []
        self._scoring: list[Future[dict[str, scoring.SourceScore]]] = []
        self._open = 0  # fetches started and not yet settled
        self._abandoned = False
        max_age = ctx.config.source_max_age_days
        self._oldest = ctx.today - timedelta(days=max_age) if max_age else None

    def add(self, candidates: list[Candidate]) -> None:
        """Start reading these candidates (chosen and claimed by the unit). They are counted
        at once (`finish` waits for them); their fetches are started by a task, because
        starting a few dozen pool threads takes the unit's thread a good part of a second
        when the run is busy, and the unit's next model call should not wait for that."""
        with self._lock:
            first = len(self._chosen)
            self._chosen.extend(candidates)
            self._open += len(candidates)
        try:
            starting = self._ctx.executor.tasks.submit(self._start, first, candidates)
        except BaseException:  # the run's executor is closed: nothing more is read
            with self._lock:
                del self._chosen[first:]
                self._open -= len(candidates)
            raise
        starting.add_done_callback(partial(self._never_started, first, len(candidates)))

    def _never_started(self, first: int, count: int, starting: Future[None]) -> None:
        """The executor closed before `_start` ran (its task was cancelled): these candidates
        are settled unread, so `finish` does not wait for them."""
        if starting.cancelled():
            with self._settled:
                for index in range(first, first + count):
                    self._settle(index, None, RuntimeError("the run's executor is closed"))

    def _start(self, first: int, candidates: list[Candidate]) -> None:
        """Submit each candidate's fetch (a task); once the unit is abandoned or the run's
        executor closes, the rest are settled unread (a closed executor fails the unit, as
        it would have in `add`)."""
        pool = self._ctx.executor.tasks
        for n, cand in enumerate(candidates):
            try:
                if self._abandoned:
                    raise RuntimeError("the research unit stopped")
                future = pool.submit(self._fetch, cand)
            except BaseException as exc:  # noqa: BLE001 - settled here: `finish` reports it
                with self._settled:
                    fatal = None if self._abandoned else exc
                    for index in range(first + n, first + len(candidates)):
                        self._settle(index, None, fatal)
                return
            with self._lock:
                self._fetches.append(future)
            future.add_done_callback(partial(self._arrived, first + n, cand))

    def finish(self) -> tuple[list[Source], dict[str, scoring.SourceScore], BudgetStop | None]:
        """Wait for every page and score; the sources read (in the order chosen), the scores
        by source id, and the budget stop that cut scoring short, if one did. Pages skipped
        are added to the unit's outcome, in the order chosen."""
        with self._settled:
            self._settled.wait_for(lambda: self._open == 0)
            self._submit_batch()
            if self._fatal is not None:
                raise self._fatal
        scores: dict[str, scoring.SourceScore] = {}
        stop = self._stop
        for future in list(self._scoring):
            try:
                scores.update(future.result())
            except BudgetStop as exc:
                stop = stop or exc
        read = [self._read[i] for i in range(len(self._chosen))]
        sources = [r for r in read if isinstance(r, Source)]
        for cand, r in zip(self._chosen, read, strict=True):
            if isinstance(r, str):
                self._out.skipped.append(SkippedPage(self._sub.id, cand.result.url, r))
        missing = len(sources) - len(scores)
        if missing and stop is None:
            scoring.note_scores_short(self._ctx, self._sub, len(scores), len(sources))
        return sources, scores, stop

    def abandon(self) -> None:
        """The unit failed: pages still under way are not scored."""
        with self._lock:
            self._abandoned = True
            self._batch = []
            fetches = list(self._fetches)
        for future in fetches:
            future.cancel()

    def _fetch(self, cand: Candidate) -> FetchedPage:
        self._ctx.checkpoint()
        if time.monotonic() >= self._ctx.until(self._deadline):  # held model calls give time back
            raise ProviderTimeout("the step ran out of time (STEP_TIMEOUT_MS)")
        if text_in_hand(cand.result):  # its text is in hand: nothing to fetch
            return page_of(cand.result)
        return self._ctx.fetcher.fetch(cand.result.url)

    def _arrived(self, index: int, cand: Candidate, future: Future[FetchedPage]) -> None:
        """A fetch settled (on its own thread): keep the page or the reason it was skipped,
        and send a full batch (or the last pages under way) to scoring."""
        read: Read | None = None
        fatal: BaseException | None = None
        try:
            read = self._classify(cand, future.result())
        except (FetchError, ProviderTimeout) as exc:
            read = self._ctx.safe(str(exc))
        except BudgetStop as exc:  # what was read before the cap is kept (see `finish`)
            self._stop = self._stop or exc
            read = "not read: " + self._ctx.safe(str(exc))
        except BaseException as exc:  # noqa: BLE001 - cancelled, over time, a crash: the unit's
            fatal = exc
        try:
            if isinstance(read, str):
                self._ctx.emit(SourceSkipped(
                    self._ctx.run_id, f"Skipped {cand.result.url[:120]}: {read}",
                    step=f"research:{self._sub.id}", url=cand.result.url, reason=read,
                    subtopic_id=self._sub.id))
        except BaseException as exc:  # noqa: BLE001 - the store failed: the unit's error
            fatal = fatal or exc
        finally:
            with self._settled:
                self._settle(index, read, fatal)

    def _settle(self, index: int, read: Read | None, fatal: BaseException | None) -> None:
        """Record one candidate's outcome (under the lock); send a full batch, or the last
        pages under way, to scoring; wake `finish` once every fetch has settled."""
        self._open -= 1
        if fatal is not None:
            self._fatal = self._fatal or fatal
            read = "not read: the research step stopped"
        self._read[index] = read or "not read"
        if isinstance(read, Source):
            self._batch.append(read)
        if len(self._batch) >= scoring.SCORE_BATCH or self._open == 0:
            self._submit_batch()
        if self._open == 0:
            self._settled.notify_all()

    def _classify(self, cand: Candidate, page: FetchedPage) -> Read:
        published = page.published or cand.result.published
        short = MIN_TEXT_CHARS if not text_in_hand(cand.result) else 1
        if len(page.text.strip()) < short:
            return "no readable text on the page"
        if self._oldest and (day := _date(published)) is not None and day < self._oldest:
            return f"older than {self._ctx.config.source_max_age_days} days (published {published})"
        return self._record(self._sub, cand, page)

    def _submit_batch(self) -> None:
        """Score the pages waiting (called under the lock). A closed executor (the run is
        ending) refuses the batch: the pages stay unscored, as pages the run stopped before."""
        batch, self._batch = self._batch, []
        if not batch or self._abandoned or self._fatal is not None:
            return
        try:
            self._scoring.append(self._ctx.executor.tasks.submit(
                scoring.score_batch, self._ctx, self._worker, WORKER_ROLE, self._sub, batch,
                self._deadline))
        except RuntimeError as exc:  # the run's executor is closed
            self._fatal = self._fatal or exc


def _date(value: str | None) -> date | None:
    if not value:
        return None
    try:
        return date.fromisoformat(value[:10])
    except ValueError:
        return None
