"""The job manager: research runs in background threads that outlive the browser tab.

One instance per process and database (the page layer caches it with `st.cache_resource`).
Each run gets a daemon thread with its own `Store` (SQLite connections are per thread), and
the thread only talks to the store, never to Streamlit, so closing the tab does not stop it.

Crash recovery: a run whose process died stays "running" in the database. On start-up (and
at most every `sweep_every_s` afterwards) the manager marks runs whose heartbeat went stale as
"interrupted", so the Run page can offer Resume. A live run heartbeats from the engine's own
thread (research/control.py); the manager also beats for its live runs before each sweep, so
a sweep can never mark a run of this process as dead.
"""

from __future__ import annotations

import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

from research.config import Credentials, ResearchConfig
from research.errors import ConfigError, redact
from research.events import Error
from research.llm.pricing import PriceTable
from research.pipeline import create_run, execute
from storage import Store

log = logging.getLogger(__name__)

Executor = Callable[..., Any]

RESUMABLE = frozenset({"interrupted", "failed", "cancelled", "paused", "queued"})
ACTIVE = frozenset({"queued", "running", "paused"})


class JobManager:
    """Starts, resumes and tracks research runs in daemon threads. Thread-safe."""

    def __init__(
        self,
        db_path: str | Path,
        *,
        stale_after_s: float = 120.0,
        sweep_every_s: float = 30.0,
        executor: Executor = execute,
    ) -> None:
        self.db_path = Path(db_path)
        self.stale_after_s = stale_after_s
        self.sweep_every_s = sweep_every_s
        self._execute = executor
        self.owner = f"pid:{os.getpid()}@{socket.gethostname()}"
        self._lock = threading.Lock()
        self._threads: dict[str, threading.Thread] = {}
        self._crashes: dict[str, str] = {}
        self._last_sweep = 0.0
        self.interrupted_at_start = self.sweep(force=True)

    # -- public API ----------------------------------------------------------------------

    def start(self, question: str, config: ResearchConfig, credentials: Credentials, *,
              prices: PriceTable | None = None, parent_run_id: str | None = None) -> str:
        """Store a new run and execute it in the background; returns its id at once.

        With `parent_run_id` the run builds on that earlier run: it starts with the parent's
        sources (research/phases/inherit.py). Raises ConfigError (plain words) for an invalid
        question or an unknown parent; nothing is stored then.
        """
        store = self._store(credentials)
        try:
            if parent_run_id and store.get_run(parent_run_id) is None:
                raise ConfigError("The earlier run to build on no longer exists.")
            run_id = create_run(store, question, config, parent_run_id=parent_run_id or None)
            store.heartbeat(run_id, self.owner)  # so a sweep never mistakes it for dead
        finally:
            store.close()
        self._launch(run_id, credentials, prices)
        return run_id

    def resume(self, run_id: str, credentials: Credentials, *,
               prices: PriceTable | None = None) -> None:
        """Continue an interrupted, failed, cancelled or stuck run where it stopped."""
        if self.is_alive(run_id):
            raise ConfigError("This run is already running in the background.")
        store = self._store(credentials)
        try:
            run = store.get_run(run_id)
            if run is None:
                raise ConfigError(f"There is no run with id {run_id}.")
            if run["status"] == "completed":
                raise ConfigError("This run has already completed; there is nothing to resume.")
            store.set_control(run_id, None)
            store.heartbeat(run_id, self.owner)
        finally:
            store.close()
        self._launch(run_id, credentials, prices)

    def is_alive(self, run_id: str) -> bool:
        with self._lock:
            thread = self._threads.get(run_id)
        return thread is not None and thread.is_alive()

    def alive(self) -> list[str]:
        with self._lock:
            return [rid for rid, t in self._threads.items() if t.is_alive()]

    def crash(self, run_id: str) -> str | None:
        """The message of an unexpected error that stopped the run's thread, if any."""
        with self._lock:
            return self._crashes.get(run_id)

    def wait(self, run_id: str, timeout: float | None = None) -> bool:
        """Block until the run's thread ends (for tests and the CLI). True if it ended."""
        with self._lock:
            thread = self._threads.get(run_id)
        if thread is None:
            return True
        thread.join(timeout)
        return not thread.is_alive()

    def sweep(self, *, force: bool = False) -> list[str]:
        """Mark runs left running by a dead process as interrupted (throttled)."""
        now = time.monotonic()
        if not force and now - self._last_sweep < self.sweep_every_s:
            return []
        self._last_sweep = now
        store = Store(self.db_path)
        try:
            self._heartbeat_all(store)
            dead = [o for o in store.active_owners() if owner_is_dead(o)]
            return store.mark_interrupted(stale_after_s=self.stale_after_s, dead_owners=dead)
        except Exception:  # noqa: BLE001 - a failed sweep must not break a page
            log.exception("could not sweep stale runs")
            return []
        finally:
            store.close()

    # -- internals -----------------------------------------------------------------------

    def _store(self, credentials: Credentials | None = None) -> Store:
        return Store(self.db_path, secrets=credentials.secrets() if credentials else ())

    def _launch(self, run_id: str, credentials: Credentials, prices: PriceTable | None) -> None:
        thread = threading.Thread(
            target=self._run, args=(run_id, credentials, prices), name=f"research:{run_id}",
            daemon=True,
        )
        with self._lock:
            self._crashes.pop(run_id, None)
            self._threads[run_id] = thread
        thread.start()

    def _run(self, run_id: str, credentials: Credentials, prices: PriceTable | None) -> None:
        store = self._store(credentials)
        try:
            self._execute(run_id, store=store, credentials=credentials, prices=prices)
        except Exception as exc:  # noqa: BLE001 - the run must end in a stored, readable state
            log.exception("run %s stopped unexpectedly", run_id)
            message = redact(
                f"The run stopped unexpectedly ({exc.__class__.__name__}: {exc}).",
                credentials.secrets(),
            )
            with self._lock:
                self._crashes[run_id] = message
            try:
                run = store.get_run(run_id)
                if run is not None and run["status"] not in ("completed", "failed", "cancelled"):
                    store.set_run_status(run_id, "failed", error=message)
                    store.append_event(Error(run_id, message))
            except Exception:  # noqa: BLE001 - the database itself may be the problem
                log.exception("could not record the failure of run %s", run_id)
        finally:
            store.close()

    def _heartbeat_all(self, store: Store) -> None:
        for run_id in self.alive():
            store.heartbeat(run_id, self.owner)


def owner_is_dead(owner: str) -> bool:
    """True when `owner` ("pid:N@host") names a process of this host that no longer runs.
    Other hosts' owners are left to the heartbeat rule."""
    pid_part, _, host = owner.removeprefix("pid:").partition("@")
    if host != socket.gethostname() or not pid_part.isdigit():
        return False
    try:
        os.kill(int(pid_part), 0)
    except ProcessLookupError:
        return True
    except PermissionError:
        return False
    return False


def status_of(run: Mapping[str, Any] | None, alive: bool) -> str:
    """The status to show: a queued run nobody is executing is effectively interrupted, and a
    run that a thread of this process is executing is running, even in the moment before
    the thread has stored that (just resumed, answers just given)."""
    if run is None:
        return "missing"
    status = str(run.get("status") or "")
    if status == "queued" and not alive:
        return "interrupted"
    if alive and status in ("waiting", "interrupted", "failed", "cancelled"):
        return "running"
    return status
