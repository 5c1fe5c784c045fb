"""The one liveness record of a run, and the rule that reads it.

Whatever executes a run (a worker, a dashboard's embedded worker, `python -m research` in a
terminal) writes the run's heartbeat while it works: its owner ("pid:N@host") and the time,
on the run's row (`RunControl`, research/runs/control.py). Nothing else writes it.

"Is it alive?" has one answer, `Runs.is_alive` (research/runs/jobs.py): the job engine holds
it (queued, or executing), or else this record says it works (`beating`). A run marked
running or paused that is neither is abandoned: `put_right` marks it interrupted, with the
reason, so Resume is offered. The engine's runs are spared: the engine, not a heartbeat,
knows whether they are queued or will be recovered.

The workers' own beats (research/runs/worker.py) say which worker process lives, not which
run: they only decide when a dead worker's runs go back to the queue, after which the engine
answers for them again.
"""

from __future__ import annotations

import os
import socket
from collections.abc import Iterable
from datetime import UTC, datetime

from research.core.records import Run
from storage import Store

STALE_AFTER_S = 120.0  # a heartbeat older than this: its process no longer works on the run
WORKING = ("running", "paused")


def this_process() -> str:
    """The owner this process writes in the heartbeats of the runs it executes."""
    return f"pid:{os.getpid()}@{socket.gethostname()}"


def owner_is_dead(owner: str) -> bool:
    """True when `owner` ("pid:N@host", as `this_process` writes it) names a process of this
    host that no longer runs; other hosts' owners are left to the heartbeat's age."""
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


def beating(run: Run | None, *, stale_after_s: float = STALE_AFTER_S,
            now: datetime | None = None) -> bool:
    """True when the run's record says a live process works on it: marked running or
    paused, a heartbeat younger than `stale_after_s`, and an owner not known to be dead."""
    if run is None or run.status not in WORKING or not run.heartbeat_at:
        return False
    if run.owner and owner_is_dead(run.owner):
        return False
    beat = datetime.fromisoformat(run.heartbeat_at.replace("Z", "+00:00"))
    return ((now or datetime.now(UTC)) - beat).total_seconds() < stale_after_s


def put_right(store: Store, *, stale_after_s: float = STALE_AFTER_S,
              spare: Iterable[str] = (), dead_only: bool = False) -> list[str]:
    """Mark interrupted every run left running or paused that no live process works on (its
    owner is dead, or its heartbeat older than `stale_after_s`), except the runs in `spare`
    (the engine's); returns their ids. The CLI calls it at every start, the dashboard every
    little while (`Runs.sweep`). With `dead_only`, nothing is marked (nor written) unless
    some owner is known to be dead (the CLI's start: its own process may be the one that
    is about to beat)."""
    dead = [owner for owner in store.active_owners() if owner_is_dead(owner)]
    if dead_only and not dead:
        return []
    return store.mark_interrupted(stale_after_s=stale_after_s, dead_owners=dead, spare=spare)
