"""The MCP server's one way to a run's life: start it, ask whether it is still going, where it
waits in the queue. Every other module of this package reaches runs only through here, so
pointing the server at another job engine changes this file alone.

Today the door is the dashboard's `JobManager` (dashboard/jobs.py: runs as durable jobs on
this process's embedded worker, or queued for `python -m research worker` processes with
DEEP_RESEARCH_WORKERS=external). It imports no Streamlit. `research.runs.Runs` (issue 33,
point 1) takes the same arguments and has the same methods used here, so moving there is the
one import. A process that already has one (the API server) passes it in, `Runs(its_own)`,
rather than making a second: the job engine is one per process.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path

from dashboard.jobs import JobManager
from research.core.config import Credentials, ResearchConfig
from research.llm.pricing import PriceTable

_lock = threading.Lock()
_jobs: dict[str, JobManager] = {}


class Runs:
    """Runs of one store, started and watched through the process's one job manager."""

    def __init__(self, jobs: JobManager) -> None:
        self._jobs = jobs

    @classmethod
    def of_store(cls, db: str | Path, credentials: Callable[[], Credentials]) -> Runs:
        """The door over this process's job manager for `db`, made on first use (it launches
        the job engine; `credentials`: the keys for runs it recovers after a restart)."""
        key = str(db)
        with _lock:
            if key not in _jobs:
                _jobs[key] = JobManager(db, credentials=credentials)
            return cls(_jobs[key])

    @property
    def executed_here(self) -> bool:
        """True when this process's embedded worker executes the runs it starts (then it
        checks its own keys before a start); False with external workers."""
        return not self._jobs.external

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None, person: str | None) -> str:
        """Store and queue a new run of `person`; its id at once. ConfigError: bad question."""
        return self._jobs.start(question, config, credentials, prices=prices, person=person)

    def is_alive(self, run_id: str) -> bool:
        """True while the run is queued for or executing on a worker."""
        return self._jobs.is_alive(run_id)

    def queue_place(self, run_id: str) -> str:
        """Where the run waits in the queue, in plain words ("" when it is not queued)."""
        place = self._jobs.queue_place(run_id)
        return place.describe() if place is not None else ""

    def crash(self, run_id: str) -> str:
        """The plain message of an unexpected error that stopped the run, if any."""
        return self._jobs.crash(run_id) or ""


def forget() -> None:
    """Drop the job managers this process made (tests: the job engine was stopped)."""
    with _lock:
        _jobs.clear()
