"""Watched topics: a finished run that is updated on a schedule for its owner (issue 36;
`research.living.watches` decides, this module only keeps).

Why it looks like this:
- a watch belongs to a person (`person`, the same identity as `runs.person`; NULL: an install
  without sign-in), and every function that a page calls takes `person` so one person never
  sees, pauses or stops another's watch;
- `next_at` is UTC ISO text, as every timestamp here, so "due" is one indexed comparison and
  the clock is the caller's (a test passes its own "now");
- taking a due watch is one conditional UPDATE (`claim_due`: its `next_at` still the one read
  and no update pending), so of several workers looking at once exactly one starts its update;
  settling it (`settle`) is conditional on the pending run in the same way;
- the watched run has no foreign key: deleting a run of the watch leaves the watch, which then
  says in plain words that its report is gone;
- notification targets are secrets and never come here (dashboard/notify_settings.py).

Functions take a `storage.Store` and use its connections, like `storage.tokens`.
"""

from __future__ import annotations

import uuid
from dataclasses import dataclass

from sqlalchemy import ColumnElement, delete, insert, select, update

from storage.migrations import utc_now
from storage.rows import Row
from storage.schema import watches
from storage.store import Store

_W = watches.c
EVERY = ("daily", "weekly", "monthly")
STATES = ("active", "paused")
MAX_RESULT = 300


@dataclass(frozen=True, slots=True)
class Watch:
    """A watched topic as stored."""

    id: str
    run_id: str
    first_run_id: str
    person: str | None
    every: str
    cost_cap: float | None
    threshold: float
    state: str
    next_at: str
    pending_run_id: str | None = None
    last_checked_at: str | None = None
    last_result: str = ""
    updates_kept: int = 0
    created_at: str = ""


def _watch(row: Row) -> Watch:
    return Watch(id=row["id"], run_id=row["run_id"], first_run_id=row["first_run_id"],
                 person=row["person"] or None, every=row["every"],
                 cost_cap=None if row["cost_cap"] is None else float(row["cost_cap"]),
                 threshold=float(row["threshold"] or 0), state=row["state"],
                 next_at=row["next_at"], pending_run_id=row["pending_run_id"] or None,
                 last_checked_at=row["last_checked_at"], last_result=row["last_result"] or "",
                 updates_kept=int(row["updates_kept"] or 0), created_at=row["created_at"])


def _mine(person: str | None) -> list[ColumnElement[bool]]:
    return [] if person is None else [_W.person == person]


def add_watch(store: Store, run_id: str, *, person: str | None, every: str, next_at: str,
              cost_cap: float | None = None, threshold: float = 0.0) -> Watch:
    """Watch `run_id` for `person`; the first update is due at `next_at`."""
    if every not in EVERY:
        raise ValueError(f"every must be one of {', '.join(EVERY)}")
    watch_id = "w_" + uuid.uuid4().hex[:12]
    now = utc_now()
    with store.transaction() as tx:
        tx.execute(insert(watches).values(
            id=watch_id, run_id=run_id, first_run_id=run_id, person=person or None,
            every=every, cost_cap=cost_cap, threshold=threshold, state="active",
            next_at=next_at, created_at=now, updated_at=now))
    found = get_watch(store, watch_id)
    assert found is not None
    return found


def get_watch(store: Store, watch_id: str, *, person: str | None = None) -> Watch | None:
    """The watch (of `person`, when given), or None."""
    row = store.query_one(select(watches).where(_W.id == watch_id, *_mine(person)))
    return _watch(row) if row else None


def list_watches(store: Store, *, person: str | None = None) -> list[Watch]:
    """Watches, soonest due first; with `person`, only theirs (None: every watch)."""
    query = select(watches).where(*_mine(person)).order_by(_W.next_at, _W.id)
    return [_watch(row) for row in store.query(query)]


def watch_of_run(store: Store, run_id: str) -> Watch | None:
    """The watch whose newest version, or whose pending update, is `run_id`."""
    row = store.query_one(select(watches).where(
        (_W.run_id == run_id) | (_W.pending_run_id == run_id)).limit(1))
    return _watch(row) if row else None


def due_watches(store: Store, now: str) -> list[Watch]:
    """Active watches due at `now` (UTC ISO text) with no update pending."""
    query = select(watches).where(_W.state == "active", _W.next_at <= now,
                                  _W.pending_run_id.is_(None)).order_by(_W.next_at, _W.id)
    return [_watch(row) for row in store.query(query)]


def pending_watches(store: Store) -> list[Watch]:
    """Watches with an update started and not settled yet."""
    query = select(watches).where(_W.pending_run_id.is_not(None)).order_by(_W.next_at)
    return [_watch(row) for row in store.query(query)]


def claim_due(store: Store, watch_id: str, *, seen_next_at: str, next_at: str) -> bool:
    """Take a due watch and move its next time on: True for the one caller that gets it."""
    with store.transaction() as tx:
        won = tx.execute(update(watches).where(
            _W.id == watch_id, _W.state == "active", _W.next_at == seen_next_at,
            _W.pending_run_id.is_(None)).values(next_at=next_at, updated_at=utc_now())
            .returning(_W.id)).first()
    return won is not None


def set_pending(store: Store, watch_id: str, run_id: str | None, *, result: str = "",
                checked_at: str | None = None) -> None:
    """Record the update just started (or, with None, that none could start, and why)."""
    values: dict[str, object] = {"pending_run_id": run_id, "updated_at": utc_now()}
    if result:
        values["last_result"] = store.redacted(result[:MAX_RESULT])
    if checked_at:
        values["last_checked_at"] = checked_at
    with store.transaction() as tx:
        tx.execute(update(watches).where(_W.id == watch_id).values(**values))


def settle(store: Store, watch_id: str, *, pending_run_id: str, kept: bool, result: str,
           checked_at: str) -> bool:
    """End the pending update: with `kept`, it becomes the watched version. True for the one
    caller that settles it (several processes may finish looking at once)."""
    values: dict[str, object] = {
        "pending_run_id": None, "last_checked_at": checked_at, "updated_at": utc_now(),
        "last_result": store.redacted(result[:MAX_RESULT])}
    if kept:
        values["run_id"] = pending_run_id
        values["updates_kept"] = _W.updates_kept + 1
    with store.transaction() as tx:
        won = tx.execute(update(watches).where(
            _W.id == watch_id, _W.pending_run_id == pending_run_id).values(**values)
            .returning(_W.id)).first()
    return won is not None


def set_state(store: Store, watch_id: str, state: str, *, person: str | None = None,
              next_at: str | None = None) -> bool:
    """Pause or resume a watch (of `person`, when given). False: no such watch of theirs."""
    if state not in STATES:
        raise ValueError(f"state must be one of {', '.join(STATES)}")
    values: dict[str, object] = {"state": state, "updated_at": utc_now()}
    if next_at is not None:
        values["next_at"] = next_at
    with store.transaction() as tx:
        done = tx.execute(update(watches).where(_W.id == watch_id, *_mine(person))
                          .values(**values).returning(_W.id)).first()
    return done is not None


def remove_watch(store: Store, watch_id: str, *, person: str | None = None) -> bool:
    """Stop a watch for good (of `person`, when given); its runs stay in the Library."""
    with store.transaction() as tx:
        gone = tx.execute(delete(watches).where(_W.id == watch_id, *_mine(person))
                          .returning(_W.id)).first()
    return gone is not None
