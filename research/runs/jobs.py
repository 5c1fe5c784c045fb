"""`Runs`: a run's whole life on the job engine, for one process and one store.

Start, resume, pause, unpause, cancel, wait, status (with the queue place), and the sweep of
abandoned runs. The dashboard holds one per process (dashboard/ui.py), the CLI makes one
for `--detach`, `--wait` and external workers, a worker's loop is research/runs/worker.py.

Runs execute as durable workflows (research/runs/engine.py; why DBOS: docs/design/jobs.md),
which talk only to the store, so closing a browser tab or the CLI stops nothing. A restart
after a crash picks the interrupted runs up again by itself: the engine recovers what this
machine left unfinished, and the pipeline skips every step the store already holds.

By default this process executes the runs it queues (the embedded worker). With
`DEEP_RESEARCH_WORKERS=external`, or `watch_only`, it only enqueues, watches and controls:
`python -m research worker` processes execute, with their own keys. Every run belongs to a
person (`runs.person`, dashboard/auth.py), its fair-share person on the queue.

"Is it alive?" has one answer, `is_alive`: the engine holds the run, or its one liveness
record says a process works on it (research/runs/liveness.py).
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

from research.core.config import DEFAULT_PERSON, Credentials, ResearchConfig, WorkerSettings
from research.core.errors import ConfigError
from research.core.progress import percent
from research.core.records import Run
from research.core.settings import effective_env, prices_path
from research.llm.pricing import PriceTable
from research.pipeline import create_run, execute
from research.runs import control, engine, liveness
from research.runs.status import QueuePlace, RunStatus, current_step, status_of
from storage import TERMINAL_STATUSES, Store
from storage.db_value import postgres_url

log = logging.getLogger(__name__)

Executor = Callable[..., Any]
Say = Callable[[str], None]
WATCH_S = 0.5  # how often `watch` and `wait` look at a queued or executing run


class Runs:
    """The door to runs on the job engine. Thread-safe; one per process and store (the
    engine is one per process: a second `Runs` on another store takes it over)."""

    def __init__(
        self,
        db_path: str | Path,
        *,
        executor: Executor = execute,
        credentials: Callable[[], Credentials] | None = None,
        prices: Callable[[], PriceTable | None] | None = None,
        env: Callable[[], dict[str, str]] = effective_env,
        workers: WorkerSettings | None = None,
        watch_only: bool = False,
        stale_after_s: float = liveness.STALE_AFTER_S,
        sweep_every_s: float = 30.0,
        store: Store | None = None,
    ) -> None:
        # A SQLite file, or the team's postgresql:// URL (kept as text: a Path folds its "//").
        self.db_path: str | Path = postgres_url(db_path) or Path(db_path)
        self.stale_after_s = stale_after_s
        self.sweep_every_s = sweep_every_s
        self._env = env
        self._last_sweep = 0.0
        # The process's store for this database, if it has one (the dashboard's): schema in
        # place before a recovered run reads it.
        self._owns_store = store is None
        self.store = store or Store(self.db_path)
        self.workers = workers or WorkerSettings.from_env(env())
        self.external = watch_only or self.workers.mode == "external"
        owner = liveness.this_process()
        engine.launch(engine.Worker(self.db_path, executor, credentials or self._own_credentials,
                                    prices or self._own_prices),
                      listen=not self.external, concurrency=self.workers.concurrency,
                      executor_id=f"watcher-{owner}" if self.external else engine.EXECUTOR_ID,
                      jobs_url=self.workers.jobs_url)
        # A watcher leaves the sweep to the dashboards (and the CLI to its own start-up rule).
        self.interrupted_at_start = [] if watch_only else self.sweep(force=True)

    # -- starting and controlling ---------------------------------------------------------

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None = None, parent_run_id: str | None = None,
              person: str | None = None) -> str:
        """Store a new run of `person` (None: nobody signed in) and queue it; returns its id
        at once.

        With `parent_run_id` the run builds on that earlier run of the same person: it starts
        with the parent's sources (research/phases/start/inherit.py). Raises ConfigError (plain
        words) for an invalid question or an unknown parent; nothing is stored then.
        """
        store = self._keyed_store(credentials)
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
        """Queue a stored run that nothing works on (new, interrupted, failed, cancelled,
        waiting for answers just given) to go on where it stopped. With `person`, only that
        person's run: another's reads as no run at all."""
        run = self._run(run_id, person)
        if self.is_alive(run_id):
            raise ConfigError("This run is already running in the background.")
        if run.status == "completed":
            raise ConfigError("This run has already completed; there is nothing to resume.")
        self.store.set_control(run_id, None)
        self._enqueue(run_id, credentials, prices, run.person or DEFAULT_PERSON)

    def pause(self, run_id: str, *, person: str | None = None) -> None:
        """Pause a running run at its next checkpoint (wherever it executes)."""
        run = self._run(run_id, person)
        if status_of(run, self.is_alive(run_id)) != "running":
            raise ConfigError("Only a running run can be paused.")
        control.pause(self.store, run_id)

    def unpause(self, run_id: str, *, person: str | None = None) -> None:
        """Let a paused run (or one about to pause) continue."""
        run = self._run(run_id, person)
        if run.status != "paused" and run.control != "pause":
            raise ConfigError("This run is not paused.")
        control.unpause(self.store, run_id)

    def wrap_up(self, run_id: str, *, person: str | None = None) -> None:
        """Stop researching and write the report from what was gathered so far: research ends
        at its next checkpoint (what is under way is kept), then the report is written and
        verified as usual, without further review cycles."""
        run = self._run(run_id, person)
        if status_of(run, self.is_alive(run_id)) not in ("running", "paused"):
            raise ConfigError("Only a running or paused run can be written up early.")
        control.wrap_up(self.store, run_id)

    def cancel(self, run_id: str, *, person: str | None = None) -> None:
        """Stop the run at its next checkpoint, or, when nothing works on it (interrupted,
        waiting for answers), record it as cancelled at once."""
        run = self._run(run_id, person)
        if run.status in TERMINAL_STATUSES:
            raise ConfigError(f"This run has already {run.status}; there is nothing to cancel.")
        if self.is_alive(run_id):
            control.cancel(self.store, run_id)
        else:
            self.store.set_run_status(run_id, "cancelled")

    # -- watching -------------------------------------------------------------------------

    def is_alive(self, run_id: str) -> bool:
        """True while the engine holds the run (queued or executing), or the run's liveness
        record says a live process works on it (`python -m research` in a terminal)."""
        return engine.is_active(run_id) or liveness.beating(
            self.store.get_run(run_id), stale_after_s=self.stale_after_s)

    def alive(self) -> list[str]:
        """The runs the engine holds (queued or executing)."""
        return sorted(engine.active_runs())

    def queue_place(self, run_id: str) -> QueuePlace | None:
        """Where the run waits in the queue, or None when it is not queued."""
        return engine.queue_place(run_id)

    def executions(self, run_id: str) -> list[tuple[str, str]]:
        """(engine status, executor id) of each time the run was queued, oldest first: which
        process executed it (a worker's id names its host and pid)."""
        return engine.executions(run_id)

    def crash(self, run_id: str) -> str | None:
        """Why the run failed, as recorded on the run (the one place a failure is kept)."""
        run = self.store.get_run(run_id)
        return run.error if run is not None and run.status == "failed" else None

    def status(self, run_id: str, *, person: str | None = None) -> RunStatus:
        """The run as a person needs to see it now; ConfigError when there is no such run
        (of `person`)."""
        run = self._run(run_id, person)
        alive = self.is_alive(run_id)
        steps = self.store.get_steps(run_id)
        return RunStatus(
            run_id=run.id, status=status_of(run, alive), alive=alive,
            queue=self.queue_place(run_id) if alive else None, step=current_step(steps),
            progress=percent(run, steps), totals=run.totals, warnings=run.warnings,
            error=run.error, control=run.control, person=run.person)

    def wait(self, run_id: str, timeout: float | None = None) -> bool:
        """Block until nothing works on the run any more. True if that happened before
        `timeout` seconds (None: no limit)."""
        deadline = None if timeout is None else time.monotonic() + timeout
        while self.is_alive(run_id):
            if deadline is not None and time.monotonic() >= deadline:
                return False
            time.sleep(0.1)
        return True

    def watch(self, run_id: str, say: Say, *, quiet: bool = False,
              person: str | None = None) -> Run:
        """Wait for the run (of `person`; None: anyone's), saying its queue place and its
        events as they come (the CLI's `--wait`); returns the stored run."""
        run = self._run(run_id, person)
        last_event = max((e.id for e in self.store.get_events(run_id)), default=0)
        shown: QueuePlace | None = None
        while self.is_alive(run_id):
            place = self.queue_place(run_id)
            if place is not None and place != shown and not quiet:
                say(f"Run {run_id} is queued: {place.describe()}")
            shown = place
            for event in self.store.get_events(run_id, after_id=last_event):
                last_event = event.id
                if not quiet and event.type != "source_found":
                    say(f"[worker] {event.message or event.type}")
            time.sleep(WATCH_S)
        return self.store.get_run(run_id) or run

    def sweep(self, *, force: bool = False) -> list[str]:
        """Mark the runs nothing works on any more as interrupted (throttled); the engine's
        runs are spared. Returns their ids."""
        now = time.monotonic()
        if not force and now - self._last_sweep < self.sweep_every_s:
            return []
        self._last_sweep = now
        try:
            return liveness.put_right(self.store, stale_after_s=self.stale_after_s,
                                      spare=engine.active_runs())
        except Exception:  # noqa: BLE001 - a failed sweep must not break a page
            log.exception("could not sweep stale runs")
            return []

    def close(self) -> None:
        """Stop this process's engine (its queue polling ends) and close the store it opened."""
        engine.stop()
        if self._owns_store:
            self.store.close()

    # -- internals ------------------------------------------------------------------------

    def _run(self, run_id: str, person: str | None) -> Run:
        run = self.store.get_run(run_id, person=person)
        if run is None:
            raise ConfigError(f"There is no run with id {run_id!r}.")
        return run

    def _enqueue(self, run_id: str, credentials: Credentials, prices: PriceTable | None,
                 person: str) -> None:
        """Queue the run; keys stay in this process's memory for its own worker, and are
        not even kept when other processes execute (they use their own settings)."""
        engine.enqueue(run_id, None if self.external else credentials,
                       None if self.external else prices, person=person)

    def _keyed_store(self, credentials: Credentials) -> Store:
        return Store(self.db_path, secrets=credentials.secrets())

    def _own_credentials(self) -> Credentials:
        """This process's own keys (secrets file, then environment), for a run recovered
        after a restart or queued by another process: keys never travel with the job."""
        return Credentials.from_env(self._env())

    def _own_prices(self) -> PriceTable | None:
        try:
            return PriceTable.load(prices_path(self._env()))
        except ConfigError:  # a broken prices file: the run uses the built-in prices
            return None
