"""A step's time limit (STEP_TIMEOUT_MS) does not count the time the run waited its turn at a
model account or a local server's gate (issue 31, point 2), in any part of the step: the
searches and page reads that come after held model calls get the held time back as the model
calls do (research/llm/waits.py `RunWaits`, `RunContext.until`), so a step fails only for its
own slowness, never for waiting its turn.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from datetime import date
from pathlib import Path

import pytest

from research.control import RunControl
from research.core.config import build_config
from research.core.context import RunContext
from research.core.errors import StepTimeLimit
from research.core.events import fan_out
from research.llm.limits import Account, AccountLimits, RateReport
from research.llm.pacing import Pacer, Ticket
from research.llm.waits import RunWaits
from research.phases.gather import searching
from research.phases.gather.reading import Reading
from research.phases.gather.searching import Candidate, Outcome
from research.pipeline import create_run
from research.search.base import SearchResult
from research.search.documents import DOCUMENTS, SCHEME
from research.untrusted.fetch import Fetcher, FetchLimits
from storage import Store


class Clock:
    """The held time's clock, moved by hand: a model call held for minutes takes no minutes."""

    def __init__(self) -> None:
        self.now = 1000.0

    def __call__(self) -> float:
        return self.now


@pytest.fixture
def clock() -> Clock:
    return Clock()


@pytest.fixture
def ctx(tmp_path: Path, standin_env: dict[str, str], clock: Clock) -> Iterator[RunContext]:
    """A run's context as the pipeline builds one, with a one-second step time limit."""
    store = Store(tmp_path / "runs.db")
    config = build_config(env=standin_env, step_timeout_ms=1000, max_retries=0)
    run_id = create_run(store, "How is heat pump adoption changing in Europe?", config)
    control = RunControl(store, run_id, fan_out(store.log_event), total_timeout_s=600)
    fetcher = Fetcher(FetchLimits(timeout_s=3))
    context = RunContext(
        run_id=run_id, question="heat pumps", config=config, store=store, emit=store.log_event,
        control=control, lead=None,  # type: ignore[arg-type]  # no model call here
        search=[], fetcher=fetcher, today=date(2026, 11, 20), waits=RunWaits(clock=clock))
    try:
        yield context
    finally:
        control.stop()
        fetcher.close()
        context.executor.close()


def _held(ctx: RunContext, clock: Clock, seconds: float) -> None:
    """A model call of the run waits `seconds` for its account's turn."""
    with ctx.waits.holding():
        clock.now += seconds


def _past(deadline: float) -> None:
    """Real time runs past the step's own deadline, as it does while model calls are held."""
    time.sleep(max(0.0, deadline - time.monotonic()) + 0.05)


def test_a_search_after_held_model_calls_gets_the_held_time_back(ctx: RunContext,
                                                                 clock: Clock) -> None:
    deadline = ctx.step_deadline()
    _held(ctx, clock, 30)  # the step's query call waited half a minute for the account
    _past(deadline)
    sent: list[float] = []

    def search(limit: float) -> list[str]:
        sent.append(limit)
        return ["a result"]

    assert searching.call(ctx, search, deadline, "Tavily search") == ["a result"]
    assert sent and sent[0] > 0


def test_a_search_past_the_steps_own_time_still_fails(ctx: RunContext, clock: Clock) -> None:
    """Held time before the step began is not the step's: its deadline is not moved by it."""
    _held(ctx, clock, 30)
    deadline = ctx.step_deadline()
    _past(deadline)
    with pytest.raises(StepTimeLimit):
        searching.call(ctx, lambda limit: ["a result"], deadline, "Tavily search")


def test_the_held_time_never_takes_a_step_past_the_runs_total_time_limit(
    ctx: RunContext, clock: Clock
) -> None:
    deadline = ctx.step_deadline()
    _held(ctx, clock, 3600)
    assert ctx.until(deadline) == ctx.control.deadline
    assert ctx.until(deadline) > deadline



def test_a_page_read_after_held_model_calls_gets_the_held_time_back(ctx: RunContext,
                                                                    clock: Clock) -> None:
    """A page of the run's own documents (its text in hand, nothing fetched from the web)."""
    deadline = ctx.step_deadline()
    _held(ctx, clock, 30)
    _past(deadline)
    result = SearchResult(url=f"{SCHEME}report-1", title="Heat pumps in 2025", snippet="",
                          provider=DOCUMENTS, content="Heat pump sales rose. " * 40)
    reading = Reading(ctx, None, None, Outcome(), deadline, None)  # type: ignore[arg-type]
    page = reading._fetch(Candidate(result, result.url, "heat pumps"))
    assert page.text.startswith("Heat pump sales rose.")


# -- after a refusal, the next request goes when the provider said ----------------------------

GEMINI = Account("gemini", "", "abc123", "gemini-2.5-flash")


def _turn(result: Ticket | float) -> Ticket:
    assert isinstance(result, Ticket), f"expected a turn, got a wait of {result} s"
    return result


def test_a_refusal_on_the_requests_a_minute_holds_the_next_no_longer_than_it_said() -> None:
    """Gemini's free tier (10 a minute) refused one request and said "retry in 2s" (RetryInfo
    counts the wait for one request): the next goes in 2 s, not a whole request's refill (6 s)
    after the pause."""
    clock = Clock()
    p = Pacer(GEMINI, clock=clock, limits=AccountLimits(requests_per_minute=10))
    p.refused(_turn(p.try_acquire(100)), retry_after=2.0, limit="requests")
    assert p.try_acquire(100) == pytest.approx(2.0)
    clock.now += 2.0
    _turn(p.try_acquire(100))
    assert not isinstance(p.try_acquire(100), Ticket)  # then one every 6 s, as before


def test_the_first_refusal_that_teaches_the_limit_lets_no_burst_through() -> None:
    """The limit learned from the refusal (QuotaFailure's quotaValue) comes with a spent minute:
    after the pause one request goes, not ten."""
    clock = Clock()
    p = Pacer(GEMINI, clock=clock)
    flying = [_turn(p.try_acquire(100)) for _ in range(12)]
    p.refused(flying.pop(), retry_after=6.0, limit="requests",
              report=RateReport(limits=AccountLimits(requests_per_minute=10)))
    clock.now += 6.0
    _turn(p.try_acquire(100))
    assert not isinstance(p.try_acquire(100), Ticket)


def test_the_store_lets_the_next_request_go_when_the_refusal_said(tmp_path: Path) -> None:
    """Processes sharing the key through the store's books: the same, for every process."""
    clock = Clock()
    with Store(tmp_path / "books.db") as store:
        first, second = (Pacer(GEMINI, clock=clock, wall=clock) for _ in range(2))
        first.share(store)
        second.share(store)
        first.learn(AccountLimits(requests_per_minute=10))
        first.refused(_turn(first.try_acquire(100)), retry_after=2.0, limit="requests")
        assert second.try_acquire(100) == pytest.approx(2.0)
        clock.now += 2.0
        _turn(second.try_acquire(100))
