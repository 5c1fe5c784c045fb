"""Ask, part 4: the model calls of one question, made the way a run makes them.

An answer's calls go through the one model seam (`RoleLLM`: retries, deadlines, the account's
pacing and limits, usage), each role's model as the run's config names it. Their usage is
added to the run's own (`add_usage`, role "ask ..."), so the run's cost in the Library counts
it; when the run has a cost or token cap, each call's estimate is checked against what the run
has spent before it is sent (`RunContext.guard_model_calls`), and a call that would pass the
cap is not made. A finished run is not running: no heartbeat, no pause; only a time limit.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime

from research.core.agents import Role, Workflow
from research.core.config import Credentials, ResearchConfig
from research.core.context import RunContext
from research.core.errors import BudgetExceeded, RunCancelled
from research.core.events import Event
from research.core.executor import RunExecutor
from research.core.records import Run
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.base import LLM, RoleLLM
from research.llm.budget import UsageMeter
from research.llm.pricing import PriceTable
from research.llm.waits import RunWaits
from research.runs.control import RunControl
from research.untrusted.fetch import Fetcher, FetchLimits
from storage import Store

LLMFactory = Callable[[str, str, ResearchConfig, Credentials], LLM]
ROLE_PREFIX = "ask "  # the usage rows of answers: "ask writer", "ask verifier", "ask critic"


class AnswerControl(RunControl):
    """A question's control: its own time limit and cancel, no heartbeat (the run is finished
    and must stay so) and no pause."""

    def __init__(self, store: Store, run_id: str, *, timeout_s: float) -> None:  # noqa: D107
        # (no RunControl.__init__: it would beat the finished run's heartbeat)
        self.store = store
        self.run_id = run_id
        self.emit = _ignore
        self.cancelled = threading.Event()
        self.deadline = time.monotonic() + timeout_s
        self.total_timeout_s = timeout_s

    def checkpoint(self) -> None:
        if self.cancelled.is_set():
            raise RunCancelled("The question was cancelled.")
        if time.monotonic() > self.deadline:
            raise BudgetExceeded("The answer took too long and was stopped.")

    def stop(self) -> None:
        self.cancelled.set()


def _ignore(event: Event) -> None:
    """A question's progress is not the run's log."""


@contextmanager
def answer_context(store: Store, run: Run, credentials: Credentials, *,
                   prices: PriceTable | None = None, llm_factory: LLMFactory = build_llm,
                   today: date | None = None) -> Iterator[RunContext]:
    """A context for one question's model calls on a finished `run` (closed afterwards)."""
    config = ResearchConfig(**run.config)
    control = AnswerControl(store, run.id, timeout_s=config.step_timeout_ms / 1000)
    meter = UsageMeter(prices, on_record=lambda role, prov, model, i, o, cost: store.add_usage(
        run.id, role, prov, model, i, o, cost))
    executor = RunExecutor(config, name=f"ask-{run.id[:6]}")
    waits = RunWaits(cancel=control.cancelled, until=lambda: control.deadline, books=store)

    def make_llm(role: Role) -> RoleLLM:
        spec = config.role(role.value)
        return RoleLLM(
            llm_factory(spec.provider, spec.model, config, credentials), ROLE_PREFIX + role.value,
            meter, policy=RetryPolicy(attempts=config.max_retries + 1),
            call_timeout=config.request_timeout_s, cancel=control.cancelled,
            calls=lambda: executor.calls, slots=executor.model_slots, waits=waits)

    fetcher = Fetcher(FetchLimits(timeout_s=config.fetch_timeout_s))  # never used: nothing is fetched
    try:
        with Workflow(run.id, make_llm) as workflow:
            ctx = RunContext(
                executor=executor, run_id=run.id, question=run.question, config=config,
                store=store, emit=_ignore, control=control, lead=workflow.lead(), search=[],
                fetcher=fetcher, today=today or datetime.now(UTC).date(),
                secrets=credentials.secrets(), meter=meter,
                usage_before=store.usage_totals(run.id), credentials=credentials, waits=waits)
            ctx.guard_model_calls()
            yield ctx
    finally:
        control.stop()
        executor.close()
        fetcher.close()
