"""The records of a run's bookkeeping, as the Store returns them: the run itself (question,
status, settings, totals), its steps, its model usage, the live panel's activity counts and its
event log.

Frozen and typed like the rest of `storage/records.py`, which re-exports them (so does
`research/core/records.py`); built from rows in `storage/rows.py` only.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

# A JSON object as stored (a run's settings or totals, an event's data, a raw event-log row):
# whoever wrote it owns its keys and older runs stored fewer of them, so it stays a mapping
# here; `research.core.config.ResearchConfig` validates a run's settings at its edge.
JsonObject = Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class GoalCheck:
    """Whether the person's "done when" was met, judged after a research round."""

    met: bool
    round: int | None = None
    why: str = ""


@dataclass(frozen=True, slots=True)
class RunTotals:
    """What a run added up: written by the phases as they go (rounds, why research stopped,
    the goal's verdict) and by the pipeline at the end of each session (the counts and cost).
    None: not counted yet (a run that never finished a session)."""

    sources: int | None = None
    queries: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    calls: int | None = None
    rounds: int | None = None
    stop_reason: str = ""  # why research stopped early ("" when it did not)
    goal: GoalCheck | None = None  # the last judgement of the goal (`phases/goal.py`)


@dataclass(frozen=True, slots=True)
class Run:
    """One research run: what was asked, with which settings, and how far it got."""

    id: str
    question: str
    status: str  # one of storage.RUN_STATUSES
    config: JsonObject = field(default_factory=dict)  # the ResearchConfig's fields, as stored
    engine: str = "pipeline"
    parent_run_id: str | None = None  # the run a follow-up ("dig deeper") came from
    person: str | None = None  # who started it (sign-in); None without sign-in
    error: str | None = None
    warnings: tuple[str, ...] = ()  # why a completed run's report is weaker than promised
    totals: RunTotals = field(default_factory=RunTotals)
    created_at: str = ""
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    owner: str | None = None  # the process heartbeating it ("pid:N@host")
    heartbeat_at: str | None = None
    control: str | None = None  # a pending "pause" or "cancel"
    updated_at: str | None = None

    @property
    def preset(self) -> str:
        """The preset it was started from ("" for runs stored without one)."""
        return str(self.config.get("preset") or "")


@dataclass(frozen=True, slots=True)
class Step:
    """One step of a run (a phase, a subtopic's research, a round's triage): the crash-safe
    record of what is done, which a resumed run skips. The `steps` table's columns."""

    id: int
    run_id: str
    key: str  # unique in the run: "plan", "research:<subtopic>", "triage:<round>", ...
    kind: str = ""  # the phase that ran it ("research", "triage", "steer", ...)
    label: str = ""
    subtopic_id: str | None = None
    status: str = "running"  # running, retrying, done, failed
    attempts: int = 0
    started_at: str | None = None
    finished_at: str | None = None
    duration_s: float | None = None
    # What the step produced, as its phase stored it (empty until it finishes, or when it
    # stored nothing). A JSON column: each phase owns its step's keys (a triage's coverage
    # and decisions, a steer's proposals and answer, ...) and older runs stored fewer of
    # them, so it stays a mapping and each phase reads its own keys.
    result: JsonObject = field(default_factory=dict)
    source_count: int = 0
    error: str | None = None


@dataclass(frozen=True, slots=True)
class UsageTotals:
    """A run's model usage added up over every role and model."""

    tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True, slots=True)
class ModelUsage:
    """One role's use of one model in a run."""

    role: str
    provider: str
    model: str
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0
    calls: int = 0


@dataclass(frozen=True, slots=True)
class Activity:
    """The live panel's cheap poll of a run: its state and how much it has gathered."""

    run_id: str
    status: str
    control: str | None = None
    error: str | None = None
    heartbeat_at: str | None = None
    updated_at: str | None = None
    sources: int = 0
    events: int = 0
    last_event_id: int = 0
    steps_done: int = 0
    steps_total: int = 0


@dataclass(frozen=True, slots=True)
class EventRow:
    """One entry of a run's event log as stored; `research.core.events.from_row` makes it the
    typed event again."""

    id: int
    run_id: str
    ts: str
    type: str
    step: str | None = None
    message: str = ""
    data: JsonObject = field(default_factory=dict)  # the event's fields, as stored
