"""Typed progress events: the one channel from the engine to the store, CLI and UI.

Each event is a frozen dataclass with a `type` (the names SPEC uses in the event log),
a human-readable `message`, and optional structured `data`. Subscribers receive them
through a plain callback; the engine never knows who listens.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import UTC, datetime
from typing import Any, ClassVar


def utc_now() -> str:
    """UTC ISO-8601 timestamp with a trailing Z, as stored in the event log."""
    return datetime.now(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


@dataclass(frozen=True)
class Event:
    type: ClassVar[str] = "event"
    run_id: str
    message: str = ""
    step: str | None = None
    data: Mapping[str, Any] = field(default_factory=dict)
    ts: str = field(default_factory=utc_now)

    def to_dict(self) -> dict[str, Any]:
        return {"type": self.type, "run_id": self.run_id, "ts": self.ts, "step": self.step,
                "message": self.message, "data": dict(self.data)}


@dataclass(frozen=True)
class Initiated(Event):
    type: ClassVar[str] = "initiated"


@dataclass(frozen=True)
class PlanCreated(Event):
    type: ClassVar[str] = "plan_created"


@dataclass(frozen=True)
class StepStarted(Event):
    type: ClassVar[str] = "step_started"


@dataclass(frozen=True)
class StepCompleted(Event):
    type: ClassVar[str] = "step_completed"


@dataclass(frozen=True)
class StepFailed(Event):
    type: ClassVar[str] = "step_failed"


@dataclass(frozen=True)
class SourceFound(Event):
    type: ClassVar[str] = "source_found"


@dataclass(frozen=True)
class SourceSkipped(Event):
    """A page refused or failed (unsafe address, timeout, wrong type...)."""
    type: ClassVar[str] = "source_skipped"


@dataclass(frozen=True)
class SearchFailed(Event):
    type: ClassVar[str] = "search_failed"


@dataclass(frozen=True)
class Retrying(Event):
    type: ClassVar[str] = "retrying"


@dataclass(frozen=True)
class RoundCompleted(Event):
    """A research round was assessed: coverage, follow-up triage, and whether to go on."""
    type: ClassVar[str] = "round_completed"


@dataclass(frozen=True)
class DraftStarted(Event):
    type: ClassVar[str] = "draft_started"


@dataclass(frozen=True)
class DraftCompleted(Event):
    type: ClassVar[str] = "draft_completed"


@dataclass(frozen=True)
class ReviewCycle(Event):
    type: ClassVar[str] = "review_cycle"


@dataclass(frozen=True)
class Completed(Event):
    type: ClassVar[str] = "completed"


@dataclass(frozen=True)
class Error(Event):
    type: ClassVar[str] = "error"


@dataclass(frozen=True)
class Warning(Event):  # noqa: A001 - an event name, not the builtin
    type: ClassVar[str] = "warning"


@dataclass(frozen=True)
class Cancelled(Event):
    type: ClassVar[str] = "cancelled"


@dataclass(frozen=True)
class Paused(Event):
    type: ClassVar[str] = "paused"


@dataclass(frozen=True)
class Waiting(Event):
    """The run waits for the person: clarifying answers or a plan review."""
    type: ClassVar[str] = "waiting"


@dataclass(frozen=True)
class Resumed(Event):
    type: ClassVar[str] = "resumed"


EVENT_TYPES: dict[str, type[Event]] = {
    cls.type: cls
    for cls in (Initiated, PlanCreated, StepStarted, StepCompleted, StepFailed, SourceFound,
                SourceSkipped, SearchFailed, Retrying, RoundCompleted, DraftStarted, DraftCompleted, ReviewCycle,
                Completed, Error, Warning, Cancelled, Paused, Waiting, Resumed)
}

EventSink = Callable[[Event], None]


def fan_out(*sinks: EventSink) -> EventSink:
    """One sink that forwards to several; a failing subscriber never stops the run."""

    def emit(event: Event) -> None:
        for sink in sinks:
            try:
                sink(event)
            except Exception:  # noqa: BLE001 - a broken listener must not break research
                pass

    return emit
