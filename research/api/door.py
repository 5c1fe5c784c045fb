"""The API's one door to a run's life: start, resume, pause, unpause, write up now, cancel,
wait, status.

It wraps `research.runs.Runs`, the one door to a run's life, for the API server's process.
Every method takes the caller's person: another person's run reads as no run at all.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

from research.core.config import Credentials, ResearchConfig
from research.core.records import Run
from research.llm.pricing import PriceTable
from research.runs import ACTIVE, QueuePlace, Runs, status_of
from storage import Store

__all__ = ["ACTIVE", "QueuePlace", "RunDoor"]


class RunDoor:
    """A run's life for the API server's process (its embedded worker, or external ones)."""

    def __init__(self, db_path: str | Path, store: Store, *,
                 credentials: Callable[[], Credentials]) -> None:
        self._jobs = Runs(db_path, credentials=credentials, store=store)  # the server's store

    @property
    def job_manager(self) -> Runs:
        """The process's one job manager, for the MCP server mounted beside the API (its own
        door takes it: research.mcpserver.door)."""
        return self._jobs

    @property
    def executes_here(self) -> bool:
        """False when external workers execute runs (they check their own keys)."""
        return not self._jobs.external

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None = None, parent_run_id: str | None = None,
              person: str | None = None) -> str:
        """Store and queue a new run of `person`; its id at once (fair share applies)."""
        return self._jobs.start(question, config, credentials, prices=prices,
                                parent_run_id=parent_run_id, person=person)

    def resume(self, run_id: str, credentials: Credentials, *, prices: PriceTable | None = None,
               person: str | None = None) -> None:
        """Continue a run nobody executes (interrupted, failed, waiting, cancelled)."""
        self._jobs.resume(run_id, credentials, prices=prices, person=person)

    def pause(self, run_id: str, *, person: str | None = None) -> None:
        self._jobs.pause(run_id, person=person)

    def unpause(self, run_id: str, *, person: str | None = None) -> None:
        self._jobs.unpause(run_id, person=person)

    def wrap_up(self, run_id: str, *, person: str | None = None) -> None:
        """Stop researching and write the report from what was gathered so far."""
        self._jobs.wrap_up(run_id, person=person)

    def cancel(self, run_id: str, *, person: str | None = None) -> None:
        """Ask the run to stop; a run nobody executes is marked cancelled at once."""
        self._jobs.cancel(run_id, person=person)

    def status(self, run: Run) -> str:
        """The status to show (a queued run nobody executes is interrupted, and so on)."""
        return status_of(run, self.is_alive(run.id))

    def queue_place(self, run_id: str) -> QueuePlace | None:
        return self._jobs.queue_place(run_id)

    def is_alive(self, run_id: str) -> bool:
        return self._jobs.is_alive(run_id)

    def wait(self, run_id: str, timeout: float | None = None) -> bool:
        return self._jobs.wait(run_id, timeout)

    def sweep(self) -> None:
        self._jobs.sweep()

