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

from research.config import build_config
from research.context import RunContext
from research.control import RunControl
from research.errors import StepTimeLimit
from research.events import fan_out
from research.fetch import Fetcher, FetchLimits
from research.llm.waits import RunWaits
from research.phases import searching
from research.pipeline import create_run
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
