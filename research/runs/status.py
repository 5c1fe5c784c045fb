"""What a run looks like from outside: its status word, whether it is alive, its queue place.

Plain values, no engine: the Run page, the CLI and anything else that watches a run read
them from `Runs.status` (research/runs/jobs.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from research.core.records import Run
from storage.run_records import RunTotals, Step

ACTIVE = frozenset({"queued", "running", "paused"})  # a run that is (or should be) working
RESUMABLE = frozenset({"interrupted", "failed", "cancelled", "paused", "queued"})


@dataclass(frozen=True)
class QueuePlace:
    """Where a queued run stands: `place` among its person's queued runs (1 = next of
    theirs to start) and how many runs of everyone are queued ahead of it."""

    place: int
    ahead: int

    def describe(self) -> str:
        """The place in plain words (the Run page, the CLI)."""
        mine = ("next of this person's runs to start" if self.place == 1
                else f"number {self.place} among this person's queued runs")
        others = "no other queued run" if self.ahead == 0 else \
            f"{self.ahead} queued run{'s' if self.ahead != 1 else ''} of everyone"
        return f"{mine} ({others} ahead of it)."


@dataclass(frozen=True)
class RunStatus:
    """One run as a person needs to see it now: the status word to show (`status_of`),
    whether anything works on it, its place in the queue, the step in progress, how far it
    got, its totals, and what went wrong or is weaker than promised."""

    run_id: str
    status: str  # the word to show: stored status, corrected by `alive` (status_of)
    alive: bool  # queued or executing on the job engine, or beating where it executes
    queue: QueuePlace | None  # None: not waiting in the queue
    step: str | None  # the label of the step in progress, if any
    progress: int  # 0-100 (research.core.progress.percent)
    totals: RunTotals
    warnings: tuple[str, ...]
    error: str | None  # why it failed or was interrupted (stored in one place: the run)
    control: str | None  # a pending "pause" or "cancel"
    person: str | None


def status_of(run: Run | None, alive: bool) -> str:
    """The status to show: a queued run nobody is executing is effectively interrupted, and a
    run that the engine holds is running, even in the moment before its executor has stored
    that (just resumed, answers just given)."""
    if run is None:
        return "missing"
    status = run.status
    if status == "queued" and not alive:
        return "interrupted"
    if alive and status in ("waiting", "interrupted", "failed", "cancelled"):
        return "running"
    return status


def current_step(steps: list[Step]) -> str | None:
    """The label (or key) of the latest step still in progress."""
    working = [s for s in steps if s.status in ("running", "retrying")]
    return (working[-1].label or working[-1].key) if working else None
