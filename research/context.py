"""What every phase receives: the run's identity, settings, team and services."""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import date
from typing import Any

from research.agents import Agent
from research.config import ResearchConfig
from research.control import RunControl
from research.errors import ResearchError, redact
from research.events import EventSink, StepCompleted, StepFailed, StepStarted
from research.fetch import Fetcher
from research.search.base import SearchProvider
from storage import Store


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

    def step_deadline(self) -> float:
        """monotonic() time by which the current step must end (STEP_TIMEOUT_MS)."""
        return min(time.monotonic() + self.config.step_timeout_ms / 1000, self.control.deadline)

    def safe(self, text: str) -> str:
        return redact(text, self.secrets)

    def stored_result(self, key: str) -> dict[str, Any] | None:
        """The stored result of a finished step, or None if it must (re)run."""
        step = self.store.get_step(self.run_id, key)
        if step and step["status"] == "done":
            return step.get("result") or {}
        return None

    def run_step(
        self, key: str, kind: str, label: str, fn: Callable[[], dict[str, Any]],
        *, source_count: int = 0,
    ) -> dict[str, Any]:
        """Run one step, or return its stored result if it already finished (resume)."""
        done = self.stored_result(key)
        if done is not None:
            return done
        self.control.checkpoint()
        self.store.start_step(self.run_id, key, kind=kind, label=label)
        self.emit(StepStarted(self.run_id, label, step=key))
        started = time.monotonic()
        try:
            result = fn()
        except ResearchError as exc:
            self.store.fail_step(self.run_id, key, self.safe(str(exc)))
            self.emit(StepFailed(self.run_id, f"{label} failed: {self.safe(str(exc))}", step=key))
            raise
        self.store.finish_step(self.run_id, key, result=result, source_count=source_count)
        self.emit(StepCompleted(
            self.run_id, f"{label} done", step=key,
            data={"duration_s": round(time.monotonic() - started, 2)},
        ))
        return result
