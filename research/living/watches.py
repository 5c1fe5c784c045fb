"""Watched topics: a finished run updated daily, weekly or monthly, and its person told only
when something changed (issue 36, point 3).

The life of a watch, with the clock always the caller's (the job engine's tick passes its
scheduled time; a test passes its own):

1. `watch(store, run_id, ...)` records it; the first update is due one period later.
2. `look(runs, now)` (each tick of the engine's schedule, research/runs/engine.py) takes every
   due watch (`storage.watches.claim_due`: one process gets it), moves its next time on and
   starts an update of its newest version (research/living/update.py) on the watcher's own
   budget cap, queued under the watcher's name, so it runs on the team's workers like any of
   their runs. It also settles updates that ended while nothing was listening.
3. When the update run ends (`settle_run`, called where it executed, research/living/hooks.py):
   if it changed more than the watch's threshold (research/living/changes.py), it becomes the
   watched version and the person is told in one line with a link; otherwise it is deleted and
   nothing is sent. A failed update is deleted too, and the person is told it failed.
"""

from __future__ import annotations

import calendar
import logging
from collections.abc import Callable, Mapping
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING

from research.core.errors import ResearchError
from research.living import notify
from research.living.changes import changes
from research.living.settings import update_request
from storage import Store
from storage import watches as watchstore
from storage.watches import Watch

if TYPE_CHECKING:
    from research.runs.jobs import Runs

log = logging.getLogger(__name__)

# start_update(runs, run_id, *, person=..., cost_cap=...) -> the update run's id
Starter = Callable[..., str]
# how much a finished update changed: (score, how many claims) ((0, 0): nothing)
Measure = Callable[[Store, str], tuple[float, int]]
ENDED = ("completed", "failed", "cancelled")


def stamp(moment: datetime) -> str:
    """UTC ISO text in the store's one format (milliseconds, Z), so it compares as text."""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def next_time(every: str, after: datetime) -> datetime:
    """One period after `after`: a day, a week, or the same day of the next month (its last
    day when the next month is shorter)."""
    if every == "daily":
        return after + timedelta(days=1)
    if every == "weekly":
        return after + timedelta(days=7)
    if every == "monthly":
        year, month = (after.year + 1, 1) if after.month == 12 else (after.year, after.month + 1)
        day = min(after.day, calendar.monthrange(year, month)[1])
        return after.replace(year=year, month=month, day=day)
    raise ValueError(f"every must be one of {', '.join(watchstore.EVERY)}")


def watch(store: Store, run_id: str, *, every: str, now: datetime, person: str | None = None,
          cost_cap: float | None = None, threshold: float = 0.0) -> Watch:
    """Watch a finished run of `person`; ValueError in plain words when it cannot be (a
    ConfigError, also a ValueError, when it could not be updated: research/living/settings.py)."""
    run = store.get_run(run_id, person=person)
    if run is None:
        raise ValueError("There is no such run to watch.")
    if run.status != "completed":
        raise ValueError("Only a finished run can be watched.")
    if cost_cap is not None and cost_cap <= 0:
        raise ValueError("The budget for each update must be more than zero.")
    if threshold < 0:
        raise ValueError("The threshold cannot be negative.")
    update_request(store, run_id, person=person, cost_cap=cost_cap)  # ConfigError: it cannot be
    return watchstore.add_watch(store, run_id, person=run.person, every=every,
                                next_at=stamp(next_time(every, now)), cost_cap=cost_cap,
                                threshold=threshold)


def resume_watch(store: Store, watch_id: str, *, now: datetime, person: str | None = None) -> bool:
    """Let a paused watch run again; its next update is one period from `now`."""
    found = watchstore.get_watch(store, watch_id, person=person)
    if found is None:
        return False
    return watchstore.set_state(store, watch_id, "active", person=person,
                                next_at=stamp(next_time(found.every, now)))


def look(runs: Runs, now: datetime, env: Mapping[str, str], *, start: Starter | None = None,
         measure: Measure | None = None) -> list[str]:
    """One tick: settle updates that ended unseen, then start every due watch's update.
    Returns the ids of the update runs started. `runs` is the process's `research.runs.Runs`;
    `env` its settings (where the notification targets are)."""
    store: Store = runs.store
    at = stamp(now)
    for pending in watchstore.pending_watches(store):
        assert pending.pending_run_id is not None
        run = store.get_run(pending.pending_run_id)
        if run is None or (run.status in ENDED and not runs.is_alive(run.id)):
            settle_run(store, pending.pending_run_id, env, now=now, measure=measure)
    start = start or start_update
    started: list[str] = []
    for due in watchstore.due_watches(store, at):
        if not watchstore.claim_due(store, due.id, seen_next_at=due.next_at,
                                    next_at=stamp(next_time(due.every, now))):
            continue  # another process took it
        base = store.get_run(due.run_id)
        if base is None:
            watchstore.set_pending(store, due.id, None, checked_at=at, result=(
                "The watched report was deleted; stop this watch or watch another run."))
            continue
        try:
            run_id = start(runs, due.run_id, person=due.person, cost_cap=due.cost_cap)
        except (ResearchError, ValueError) as exc:
            watchstore.set_pending(store, due.id, None, checked_at=at,
                                   result=f"The update could not start: {exc}")
            continue
        watchstore.set_pending(store, due.id, run_id, checked_at=at,
                               result="An update is running.")
        started.append(run_id)
    return started


def settle_run(store: Store, run_id: str, env: Mapping[str, str], *, now: datetime | None = None,
               measure: Measure | None = None) -> bool:
    """If `run_id` is a watch's pending update that ended, keep and tell, or drop it quietly.
    True when it did (the ordinary end-of-run message is then not sent); an update that waits
    for its person's answer is told as any run is."""
    found = watchstore.watch_of_run(store, run_id)
    if found is None or found.pending_run_id != run_id:
        return False
    run = store.get_run(run_id)
    if run is not None and run.status not in ENDED:
        return False  # waiting for its person (told as any run is), or paused: settled at its end
    at = stamp(now or datetime.now(UTC))
    previous = store.get_run(found.run_id)
    since = (previous.finished_at or previous.created_at) if previous else found.created_at
    if run is None or run.status != "completed":
        failed = run is not None and run.status == "failed"
        result = ("The last update failed: " + (run.error or "no reason recorded")
                  if failed and run is not None else "The last update was stopped.")
        # The run goes first: once the watch says it is settled, the update is gone.
        if run is not None:
            store.delete_run(run_id)
        if watchstore.settle(store, found.id, pending_run_id=run_id, kept=False, result=result,
                             checked_at=at) and run is not None and failed:
            urls = notify.targets(env, found.person)
            if urls:
                notify.send(urls, f"The update of your watched topic failed: "
                            f"“{notify.one_line(run.question)}” "
                            f"{notify.run_link(env, found.run_id)}")
        return True
    score, how_many = (measure or how_much_changed)(store, run_id)
    if how_many == 0 or score <= found.threshold:
        store.delete_run(run_id)  # nothing is kept when nothing changed (before the watch says so)
        watchstore.settle(store, found.id, pending_run_id=run_id, kept=False, checked_at=at,
                          result=f"Nothing new on {at[:10]}.")
        return True
    if watchstore.settle(store, found.id, pending_run_id=run_id, kept=True, checked_at=at,
                         result=f"Changed on {at[:10]}: {how_many} claim(s)."):
        urls = notify.targets(env, found.person)
        if urls:
            notify.send(urls, notify.changed_message(run, since, how_many,
                                                     notify.run_link(env, run_id)))
    return True


def start_update(runs: Runs, run_id: str, *, person: str | None, cost_cap: float | None) -> str:
    """Start the update run of `run_id` (research/living/update.py), with the keys of the
    process that starts it (a worker's own, or the dashboard's embedded worker's)."""
    # Imported here: the door to runs (research/runs/jobs.py) loads this module through
    # research/living/hooks.py, and research/living/update.py loads the door.
    from research.living.update import start_update as start

    return start(runs, run_id, person=person, cost_cap=cost_cap)


def how_much_changed(store: Store, run_id: str) -> tuple[float, int]:
    """How much a finished update changed: its score (changed claims per earlier claim, the
    number a watch's threshold is compared with) and how many claims changed
    (research/living/changes.py)."""
    found = changes(store, run_id)
    return (found.score, found.count) if found is not None else (0.0, 0)
