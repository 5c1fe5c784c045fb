"""The job manager: research runs as durable jobs that outlive the browser tab and the server.

One instance per process and database (the page layer caches it with `st.cache_resource`).
Runs execute as DBOS workflows on this process's embedded worker (research/durable.py; why
DBOS: docs/design/jobs.md), which talks only to the store, never to Streamlit, so closing the
tab does not stop a run. A restart after a crash picks interrupted runs up again by itself:
DBOS recovers the workflows this machine left unfinished, and the pipeline skips every step
the store already holds.

With `DEEP_RESEARCH_WORKERS=external` this process only enqueues, watches and controls runs:
`python -m research worker` processes execute them (research/workers.py), with their own keys.
Every run belongs to a person: the signed-in person who started it (`runs.person`, see
dashboard/auth.py), which is also its fair-share person on the queue (the partition key);
a run started without sign-in has no person in the store and queues as DEFAULT_PERSON.

Runs executed outside the engine (`python -m research` in a terminal) still heartbeat
(research/control.py); `sweep` marks theirs "interrupted" when their process died, so the Run
page can offer Resume. The engine's own runs are never swept: the manager beats for them first.
"""

from __future__ import annotations

import logging
import os
import socket
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from dashboard.settings_files import current_env
from research import durable
from research.control import owner_is_dead
from research.core.config import DEFAULT_PERSON, Credentials, ResearchConfig, WorkerSettings
from research.core.errors import ConfigError
from research.core.records import Run
from research.core.settings import prices_path
from research.llm.pricing import PriceTable
from research.pipeline import create_run, execute
from storage import Store
from storage.db_value import postgres_url

log = logging.getLogger(__name__)

Executor = Callable[..., Any]

RESUMABLE = frozenset({"interrupted", "failed", "cancelled", "paused", "queued"})
ACTIVE = frozenset({"queued", "running", "paused"})


class JobManager:
    """Starts, resumes and tracks research runs on the embedded durable worker. Thread-safe."""

    def __init__(
        self,
        db_path: str | Path,
        *,
        stale_after_s: float = 120.0,
        sweep_every_s: float = 30.0,
        executor: Executor = execute,
        credentials: Callable[[], Credentials] | None = None,
        workers: WorkerSettings | None = None,
    ) -> None:
        # A SQLite file, or the team's postgresql:// URL (kept as text: a Path folds its "//").
        self.db_path: str | Path = postgres_url(db_path) or Path(db_path)
        self.stale_after_s = stale_after_s
        self.sweep_every_s = sweep_every_s
        self.owner = f"pid:{os.getpid()}@{socket.gethostname()}"
        self._last_sweep = 0.0
        Store(self.db_path).close()  # the store's schema exists before a recovered run reads it
        self.workers = workers or WorkerSettings.from_env(current_env())
        self.external = self.workers.mode == "external"
        durable.launch(durable.Worker(self.db_path, executor, credentials or _settings_credentials,
                                      _settings_prices),
                       listen=not self.external, concurrency=self.workers.concurrency,
                       executor_id=f"watcher-{self.owner}" if self.external else durable.EXECUTOR_ID,
                       jobs_url=self.workers.jobs_url)
        self.interrupted_at_start = self.sweep(force=True)

    # -- public API ----------------------------------------------------------------------

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None = None, parent_run_id: str | None = None,
              person: str | None = None) -> str:
        """Store a new run of `person` (None: nobody signed in) and queue it for the worker;
        returns its id at once.

        With `parent_run_id` the run builds on that earlier run of the same person: it starts
        with the parent's sources (research/phases/start/inherit.py). Raises ConfigError (plain
        words) for an invalid question or an unknown parent; nothing is stored then.
        """
        store = self._store(credentials)
        try:
            if parent_run_id and store.get_run(parent_run_id, person=person) is None:
                raise ConfigError("The earlier run to build on no longer exists.")
            run_id = create_run(store, question, config, parent_run_id=parent_run_id or None,
                                person=person)
        finally:
            store.close()
        self._enqueue(run_id, credentials, prices, person or DEFAULT_PERSON)
        return run_id

    def resume(self, run_id: str, credentials: Credentials, *,
               prices: PriceTable | None = None, person: str | None = None) -> None:
        """Continue an interrupted, failed, cancelled or stuck run where it stopped. With
        `person`, only that person's run: another's reads as no run at all."""
        store = self._store(credentials)
        try:
            run = store.get_run(run_id, person=person)
            if run is None:
                raise ConfigError(f"There is no run with id {run_id}.")
            if self.is_alive(run_id):
                raise ConfigError("This run is already running in the background.")
            if run.status == "completed":
                raise ConfigError("This run has already completed; there is nothing to resume.")
            store.set_control(run_id, None)
            store.heartbeat(run_id, self.owner)
        finally:
            store.close()
        self._enqueue(run_id, credentials, prices, run.person or DEFAULT_PERSON)

    def queue_place(self, run_id: str) -> durable.QueuePlace | None:
        """Where the run waits in the queue, or None when it is not queued."""
        return durable.queue_place(run_id)

    def is_alive(self, run_id: str) -> bool:
        """True while the run is queued for or executing on the worker."""
        return durable.is_active(run_id)

    def alive(self) -> list[str]:
        return sorted(durable.active_runs())

    def crash(self, run_id: str) -> str | None:
        """The message of an unexpected error that stopped the run, if any."""
        return durable.crash(run_id)

    def wait(self, run_id: str, timeout: float | None = None) -> bool:
        """Block until the run's job ends (for tests and the CLI). True if it ended."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive(run_id):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def sweep(self, *, force: bool = False) -> list[str]:
        """Mark runs left running by a dead process outside the engine as interrupted
        (throttled)."""
        now = time.monotonic()
        if not force and now - self._last_sweep < self.sweep_every_s:
            return []
        self._last_sweep = now
        store = Store(self.db_path)
        try:
            for run_id in durable.active_runs():  # the engine's runs are never stale
                store.heartbeat(run_id, self.owner)
            dead = [o for o in store.active_owners() if owner_is_dead(o)]
            return store.mark_interrupted(stale_after_s=self.stale_after_s, dead_owners=dead)
        except Exception:  # noqa: BLE001 - a failed sweep must not break a page
            log.exception("could not sweep stale runs")
            return []
        finally:
            store.close()

    # -- internals -----------------------------------------------------------------------

    def _enqueue(self, run_id: str, credentials: Credentials, prices: PriceTable | None,
                 person: str) -> None:
        """Queue the run; keys stay in this process's memory for its own worker, and are
        not even kept when other processes execute (they use their own settings)."""
        durable.enqueue(run_id, None if self.external else credentials,
                        None if self.external else prices, person=person)

    def _store(self, credentials: Credentials | None = None) -> Store:
        return Store(self.db_path, secrets=credentials.secrets() if credentials else ())


def _settings_credentials() -> Credentials:
    """This worker's own keys (secrets file, then environment), for a run recovered after a
    restart: keys never travel with the job."""
    return Credentials.from_env(current_env())


def _settings_prices() -> PriceTable | None:
    try:
        return PriceTable.load(prices_path(current_env()))
    except ConfigError:  # a broken prices file: the run uses the built-in prices
        return None


def status_of(run: Run | None, alive: bool) -> str:
    """The status to show: a queued run nobody is executing is effectively interrupted, and a
    run that a thread of this process is executing is running, even in the moment before
    the thread has stored that (just resumed, answers just given)."""
    if run is None:
        return "missing"
    status = run.status
    if status == "queued" and not alive:
        return "interrupted"
    if alive and status in ("waiting", "interrupted", "failed", "cancelled"):
        return "running"
    return status
