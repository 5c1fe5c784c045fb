"""What every phase receives: the run's identity, settings, team and services."""

from __future__ import annotations

import logging
import threading
import time
import traceback
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date

from research import voice
from research.core.agents import Agent
from research.core.config import Credentials, ResearchConfig
from research.core.errors import BudgetStop, ResearchError, RunStop, contained, is_unexpected, redact
from research.core.events import EventSink, StepCompleted, StepFailed, StepStarted, Warning
from research.core.executor import RunExecutor
from research.core.records import JsonObject, UsageTotals
from research.llm.budget import UsageMeter
from research.llm.waits import RunWaits
from research.runs.control import RunControl
from research.search.base import SearchProvider
from research.untrusted.fetch import Fetcher
from storage import Store


class ServiceHealth:
    """Calls that failed because a service was down or unreachable (after retries), counted
    per service, so a run that gathered nothing can name the real cause instead of blaming
    the question."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._failures: Counter[str] = Counter()

    def record(self, service: str) -> None:
        with self._lock:
            self._failures[service] += 1

    def down(self) -> list[tuple[str, int]]:
        """(service, failed calls), most failures first."""
        with self._lock:
            return self._failures.most_common()


log = logging.getLogger(__name__)
UNEXPECTED_SHORT = "a problem in the program itself"
# Why research stopped when the person pressed "Write the report now" (Runs.wrap_up).
WRAP_UP_REASON = "you asked to write the report from what was gathered"
WRAP_UP_NOTE = ("Research was ended early at your request: the report covers only what was "
                "gathered until then.")


class Losses:
    """The pieces a run lost to an error while the rest went on (`RunContext.lose`), as plain
    sentences for the completed run's warnings, counted when the same piece was lost again."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._lost: Counter[str] = Counter()

    def add(self, what: str) -> None:
        with self._lock:
            self._lost[what] += 1

    def sentences(self) -> list[str]:
        with self._lock:
            items = list(self._lost.items())
        return [f"{what[:1].upper()}{what[1:]}" + (f" ({n} times)." if n > 1 else ".")
                for what, n in items]


@dataclass
class RunContext:
    run_id: str
    question: str
    config: ResearchConfig
    store: Store
    emit: EventSink
    control: RunControl
    lead: Agent
    search: list[SearchProvider]
    fetcher: Fetcher
    today: date
    secrets: list[str] = field(default_factory=list)
    meter: UsageMeter | None = None
    credentials: Credentials | None = None
    usage_before: UsageTotals = field(default_factory=UsageTotals)  # earlier sessions of this run
    health: ServiceHealth = field(default_factory=ServiceHealth)
    losses: Losses = field(default_factory=Losses)
    # How long the run's model calls waited their turn at an account or a local server's
    # gate: a step's time limit does not count it, in any part of the step (`until`).
    waits: RunWaits = field(default_factory=RunWaits)
    # The run's threads (research.core.executor): the pipeline passes the one it closes at the end;
    # a context built without one (a test driving a phase) gets its own.
    executor: RunExecutor = None  # type: ignore[assignment]  # set in __post_init__
    _budget_checked: float = 0.0
    _budget: str | None = None
    _brief: str | None = None

    def __post_init__(self) -> None:
        if self.executor is None:
            self.executor = RunExecutor(self.config, name=f"run-{self.run_id[:6]}")

    @property
    def brief(self) -> str:
        """The question plus the person's answers to clarifying questions, if any."""
        if self._brief is None:
            self._brief = self._make_brief()
        return self._brief

    def unclarified_brief(self) -> str:
        """The brief as it is without answers to clarifying questions (the plan asked ahead)."""
        return self._make_brief(clarified=False)

    def _make_brief(self, clarified: bool = True) -> str:
        done = (self.stored_result("clarify") or {}) if clarified else {}
        pairs = [(q, a) for q, a in zip(done.get("questions") or [], done.get("answers") or [],
                                        strict=False) if a and a.strip()]
        brief = self.question
        if pairs:
            lines = "\n".join(f"- {q} {a.strip()}" for q, a in pairs)
            brief += f"\n\nThe person clarified:\n{lines}"
        # The goal reaches every role through the brief: the writer and reviewer shape the
        # report to the desired output; the planner knows when research is done.
        if self.config.want.strip():
            brief += f"\n\nThe person wants this output: {' '.join(self.config.want.split())}"
        if self.config.done_when.strip():
            brief += f"\nResearch is done when: {' '.join(self.config.done_when.split())}"
        return brief

    def budget_reason(self) -> str | None:
        """Why research must stop for a cost, token or source cap, or because the person asked
        to write the report from what was gathered (None: carry on)."""
        if self.wrapping_up():
            return WRAP_UP_REASON
        cfg = self.config
        if not (cfg.max_cost_usd or cfg.max_tokens or cfg.max_sources):
            return None
        now = time.monotonic()
        if self._budget is None and now - self._budget_checked >= 0.5:
            self._budget_checked = now
            cost, tokens = self._spent()
            if cfg.max_cost_usd and cost >= cfg.max_cost_usd:
                self._budget = (f"the cost cap of {voice.money(cfg.max_cost_usd)} was reached "
                                f"({voice.money(cost)} spent)")
            elif cfg.max_tokens and tokens >= cfg.max_tokens:
                self._budget = f"the token cap of {cfg.max_tokens:,} was reached ({tokens:,} used)"
            elif cfg.max_sources and self.store.count_sources(self.run_id) >= cfg.max_sources:
                self._budget = f"the source cap of {cfg.max_sources} was reached"
        return self._budget

    def wrapping_up(self) -> bool:
        """The person asked to stop researching and write up what was gathered: research stops
        like at a cap, but the report is still written section by section and verified."""
        return self.control.wrap_up_asked()

    def _spent(self) -> tuple[float, int]:
        cost, tokens = self.usage_before.cost_usd, self.usage_before.tokens
        if self.meter is not None:
            cost += self.meter.total_cost()
            tokens += self.meter.total_tokens()
        return cost, tokens

    def guard_model_calls(self) -> None:
        """Check the cost and token caps before every research model call, from that call's
        estimate (`UsageMeter.reserve`), not only between units: a call that would take the
        run past a cap is not made. The write-up after a stop is not guarded, so the total
        is the cap plus the estimates' error plus one draft call."""
        if self.meter is not None and (self.config.max_tokens or self.config.max_cost_usd):
            self.meter.guard = self._refuse_over_budget

    def release_model_calls(self) -> None:
        """Research is over: the write-up runs unguarded (see `guard_model_calls`)."""
        if self.meter is not None:
            self.meter.guard = None

    def _refuse_over_budget(self, role: str, tokens_after: int, cost_after: float) -> None:
        """The meter's guard (called under its lock: must not call the meter)."""
        cfg = self.config
        tokens = tokens_after + self.usage_before.tokens
        cost = cost_after + self.usage_before.cost_usd
        reason = self._budget  # once stopped, no further research call is made
        if reason:
            pass
        elif cfg.max_tokens and tokens > cfg.max_tokens:
            reason = (f"the token cap of {cfg.max_tokens:,} was reached (the next model call "
                      f"would have taken the run to about {tokens:,} tokens)")
        elif cfg.max_cost_usd and cost > cfg.max_cost_usd:
            reason = (f"the cost cap of {voice.money(cfg.max_cost_usd)} was reached (the next "
                      f"model call would have taken the run to about {voice.money(cost)})")
        if reason:
            if self._budget is None:
                self._budget = reason
            raise BudgetStop(f"Research stopped because {self._budget}.")

    def checkpoint(self) -> None:
        """Between units of research: pause, cancel, time limit, and the budget caps."""
        self.control.checkpoint()
        reason = self.budget_reason()
        if reason:
            raise BudgetStop(f"Research stopped because {reason}.")

    def step_deadline(self) -> float:
        """monotonic() time by which the current step must end (STEP_TIMEOUT_MS), before the
        run's waits for its model accounts push it back: every check of it goes through
        `until`, as the step's model calls do (RoleLLM), so the held time counts from here."""
        deadline = min(time.monotonic() + self.config.step_timeout_ms / 1000,
                       self.control.deadline)
        self.waits.shifted(deadline)  # the step begins: the time held from now on is its own
        return deadline

    def until(self, deadline: float) -> float:
        """A step's deadline as it stands now: later by the time the run's model calls were
        held back (an account's rate limit, a local server's gate) since the step began, so
        a search or page read after held model calls fails only for the step's own slowness,
        never for waiting its turn; never past the run's total time limit."""
        later = self.waits.shifted(deadline)
        return min(deadline if later is None else later, self.control.deadline)

    def safe(self, text: str) -> str:
        return redact(text, self.secrets)

    def lose(self, what: str, exc: BaseException, *, step: str | None = None) -> None:
        """One piece of the run is lost to `exc` and the rest goes on: `what` says in plain
        words what was lost ("a section could not be shortened and is longer than asked").
        The run completes with that warning. Raised again instead: a stop (cancel, the time
        limit), and an unexpected error while the test suite's switch is on
        (errors.raise_unexpected). The traceback goes to the debug log and the warning
        event's data, never into a message a person reads."""
        if not contained(exc):
            raise exc
        unexpected = is_unexpected(exc)
        said = f"{what[:1].upper()}{what[1:]}"
        said += (f", because of {UNEXPECTED_SHORT}." if unexpected
                 else f": {self.safe(str(exc))[:300]}")
        log.warning("run %s: %s", self.run_id, said)
        log.debug("run %s: %s", self.run_id, what, exc_info=exc)
        detail = "".join(traceback.format_exception(exc)) if unexpected else str(exc)
        self.losses.add(what)
        self.emit(Warning(self.run_id, said, step=step, detail=self.safe(detail)[-4000:]))

    def stored_result(self, key: str) -> JsonObject | None:
        """The stored result of a finished step, or None if it must (re)run."""
        step = self.store.get_step(self.run_id, key)
        if step and step.status == "done":
            return step.result
        return None

    def run_step(
        self, key: str, kind: str, label: str, fn: Callable[[], JsonObject],
        *, source_count: int = 0, still_good: Callable[[JsonObject], bool] | None = None,
    ) -> JsonObject:
        """Run one step, or return its stored result if it already finished (resume) and
        `still_good` (when given) says that result still fits what the run has now."""
        done = self.stored_result(key)
        if done is not None and (still_good is None or still_good(done)):
            return done
        self.control.checkpoint()
        self.store.start_step(self.run_id, key, kind=kind, label=label)
        self.emit(StepStarted(self.run_id, label, step=key, kind=kind, label=label))
        started = time.monotonic()
        try:
            result = fn()
        except ResearchError as exc:
            self.store.fail_step(self.run_id, key, self.safe(str(exc)))
            self.emit(StepFailed(self.run_id, f"{label} failed: {self.safe(str(exc))}", step=key,
                                 kind=kind, label=label, error=self.safe(str(exc))))
            raise
        except RunStop as exc:  # a stop, not a failure: no StepFailed; resume redoes the step
            self.store.fail_step(self.run_id, key, self.safe(str(exc)))
            raise
        self.store.finish_step(self.run_id, key, result=result, source_count=source_count)
        self.emit(StepCompleted(
            self.run_id, f"{label} done", step=key, kind=kind, label=label,
            duration_s=round(time.monotonic() - started, 2),
        ))
        return result
