"""Pause, resume, cancel and the run's total time limit, checked between units of work.

Control requests are stored in the database (`runs.control`), so a dashboard in one
process can pause or cancel a run executing in another. Workers call `checkpoint()`
between units of work (a search, a page, a model call); it raises RunCancelled or
BudgetExceeded (stops, not errors: see `research.core.errors`), or blocks while the run is
paused. A background thread also watches for a cancel, so waits (retry back-offs) end at once,
and writes the run's heartbeat: the one liveness record (research/runs/liveness.py).
"""

from __future__ import annotations

import threading
import time

from research.core.errors import BudgetExceeded, RunCancelled
from research.core.events import Error, EventSink, Paused, Resumed
from research.runs.liveness import this_process
from storage import Store

POLL_S = 0.5      # how often a checkpoint reads the run's control (pause, cancel, wrap up)
WATCH_S = 0.5     # how often the heartbeat thread looks for a cancel (see `_beat`)
HEARTBEAT_S = 5.0


class RunControl:
    def __init__(self, store: Store, run_id: str, emit: EventSink, *, total_timeout_s: float):
        self.store = store
        self.run_id = run_id
        self.emit = emit
        self.cancelled = threading.Event()
        self.deadline = time.monotonic() + total_timeout_s
        self.total_timeout_s = total_timeout_s
        self.owner = this_process()
        self._lock = threading.Lock()
        self._last_poll = 0.0
        self._action: str | None = None
        self._stopped = threading.Event()
        self.store.heartbeat(run_id, self.owner)
        # Beat from a thread of its own: a single long model call must not make a live run
        # look abandoned to a dashboard that marks stale runs as interrupted.
        self._beater = threading.Thread(target=self._beat, name=f"heartbeat:{run_id}", daemon=True)
        self._beater.start()

    def _beat(self) -> None:
        """Heartbeat, and watch for a cancel: a call waiting out a retry back-off (which
        waits on `cancelled`) must hear a cancel at once, not when the back-off ends."""
        last_beat = time.monotonic()
        while not self._stopped.wait(WATCH_S):
            try:
                if self.store.get_control(self.run_id) == "cancel":
                    self.cancelled.set()
                if time.monotonic() - last_beat >= HEARTBEAT_S:
                    last_beat = time.monotonic()
                    self.store.heartbeat(self.run_id, self.owner)
            except Exception:  # noqa: BLE001 - a missed beat is retried next time
                pass
        self.store.close()

    def stop(self) -> None:
        self._stopped.set()

    def _poll(self) -> str | None:
        now = time.monotonic()
        if now - self._last_poll >= POLL_S:
            self._last_poll = now
            self._action = self.store.get_control(self.run_id)
        return self._action

    def wrap_up_asked(self) -> bool:
        """True once the person asked to stop researching and write the report from what
        was gathered (the "wrap" control, `Runs.wrap_up`)."""
        with self._lock:
            return self._poll() == "wrap"

    def remaining(self) -> float:
        return self.deadline - time.monotonic()

    def checkpoint(self) -> None:
        with self._lock:
            action = self._poll()
            if action == "pause":
                self._wait_while_paused()
                action = self._action
            if action == "cancel" or self.cancelled.is_set():
                self.cancelled.set()
                raise RunCancelled("The run was cancelled.")
            if self.remaining() <= 0:
                minutes = self.total_timeout_s / 60
                raise BudgetExceeded(
                    f"The run reached its total time limit of {minutes:.0f} min "
                    "(TOTAL_TIMEOUT_MS). Everything gathered so far is saved; "
                    "you can resume it."
                )

    def _wait_while_paused(self) -> None:
        self.store.set_run_status(self.run_id, "paused")
        self.emit(Paused(self.run_id, "Paused. Press Resume to continue."))
        paused_at = time.monotonic()
        while True:
            time.sleep(POLL_S)
            self._last_poll = 0.0
            action = self._poll()
            if action != "pause":
                break
        # Time spent paused does not count against the run's time limit.
        self.deadline += time.monotonic() - paused_at
        if action != "cancel":
            self.store.set_run_status(self.run_id, "running")
            self.emit(Resumed(self.run_id, "Resumed."))


def pause(store: Store, run_id: str) -> None:
    """Ask the process executing the run to pause at its next checkpoint."""
    store.set_control(run_id, "pause")


def unpause(store: Store, run_id: str) -> None:
    """Let a paused run continue (the executing process picks this up within a second)."""
    store.set_control(run_id, None)


def wrap_up(store: Store, run_id: str) -> None:
    """Ask the process executing the run to stop researching at its next checkpoint and write
    the report from what was gathered (a paused run continues to do so)."""
    store.set_control(run_id, "wrap")


def cancel(store: Store, run_id: str) -> None:
    """Ask the process executing the run to stop at its next checkpoint (a run still in the
    queue is marked cancelled when a worker takes it)."""
    store.set_control(run_id, "cancel")


def record_failure(store: Store, run_id: str, message: str, emit: EventSink | None = None) -> None:
    """The one place a run's failure is recorded: on the run (status "failed" and its error,
    in plain words) and as an Error event (through `emit`, which also tells the person
    watching, or straight to the store). Nothing else keeps it: every process reads it back
    from the run (`Runs.status`, `Runs.crash`)."""
    store.set_run_status(run_id, "failed", error=message)
    (emit or store.log_event)(Error(run_id, message))
