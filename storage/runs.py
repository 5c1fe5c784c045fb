"""Runs: their lifecycle (status, timings, totals, warnings), ownership and control.

Whose run it is: `runs.person` (who started it, when the dashboard has sign-in; NULL
without). Every read a page or the CLI makes on a person's behalf passes `person=`: a string
keeps only that person's runs, so another person's run id reads as no run at all; None
(one person, no sign-in; the engine itself) keeps every run. The filter is in the query,
not in the page, so nothing of another person's run is ever loaded.
`owner` is another thing: the process that heartbeats a running run ("pid:N@host").
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable
from datetime import UTC, datetime, timedelta
from typing import Any

from sqlalchemy import (
    ColumnElement,
    Select,
    and_,
    bindparam,
    delete,
    func,
    insert,
    or_,
    select,
    text,
    update,
)

from storage import rows as mapped
from storage.base import StoreBase
from storage.dialects import contains_casefold, insertion_order
from storage.migrations import utc_now
from storage.run_records import Activity, JsonObject, Run, RunTotals
from storage.schema import RUN_TABLES, api_callbacks, runs, watches

# Said of a run whose process stopped without marking it (a full disk, a crash, a restart).
ABANDONED_MESSAGE = (
    "The process running this research stopped before it could mark it (for example the disk "
    "was full or the computer restarted). Everything stored so far is kept; Resume continues it."
)

RUN_STATUSES = frozenset(
    {"queued", "running", "paused", "waiting", "completed", "failed", "cancelled", "interrupted"}
)
TERMINAL_STATUSES = frozenset({"completed", "failed", "cancelled"})
CONTROL_ACTIONS = frozenset({"pause", "cancel", "wrap"})  # wrap: write up what was gathered

LATEST_ACTIVITY = text(
    "SELECT r.id AS run_id, r.status, r.control, r.error, r.heartbeat_at, r.updated_at,"
    " (SELECT count(*) FROM sources WHERE run_id = r.id) AS sources,"
    " (SELECT count(*) FROM events WHERE run_id = r.id) AS events,"
    " (SELECT coalesce(max(id), 0) FROM events WHERE run_id = r.id) AS last_event_id,"
    " (SELECT count(*) FROM steps WHERE run_id = r.id AND status = 'done') AS steps_done,"
    " (SELECT count(*) FROM steps WHERE run_id = r.id) AS steps_total"
    " FROM runs r WHERE r.id = :run_id"
)


# Built once: constructing a statement and its cache key costs more than running it.
GET_RUN = select(runs).where(runs.c.id == bindparam("run_id"))
_GET_OWN_RUN = GET_RUN.where(runs.c.person == bindparam("person"))
_HEARTBEAT = (update(runs).where(runs.c.id == bindparam("b_run"))
              .values(owner=bindparam("b_owner"), heartbeat_at=bindparam("b_beat")))
_GET_CONTROL = select(runs.c.control).where(runs.c.id == bindparam("run_id"))


def ts(moment: datetime) -> str:
    return moment.astimezone(UTC).isoformat(timespec="milliseconds").replace("+00:00", "Z")


def seconds_between(start: str | None, end: str | None) -> float | None:
    if not start or not end:
        return None
    return round((datetime.fromisoformat(end) - datetime.fromisoformat(start)).total_seconds(), 3)


class RunsStore(StoreBase):
    """The `runs` table."""

    def create_run(
        self, question: str, config: JsonObject, *, engine: str = "pipeline",
        parent_run_id: str | None = None, person: str | None = None,
    ) -> str:
        """Store a new queued run; `person` (None: nobody signed in) is whose it is."""
        run_id = uuid.uuid4().hex[:12]
        now = utc_now()
        with self.transaction() as tx:
            tx.execute(insert(runs).values(
                id=run_id, question=self.clean_content(question), config=self._scrub(dict(config)),
                engine=engine, parent_run_id=parent_run_id, person=person or None,
                status="queued", totals={},
                created_at=now, updated_at=now))
        return run_id

    def get_run(self, run_id: str, *, person: str | None = None) -> Run | None:
        """The run, or None when there is none, or (`person` given) it is someone else's."""
        if person is None:
            row = self.query_one(GET_RUN, {"run_id": run_id})
        else:
            row = self.query_one(_GET_OWN_RUN, {"run_id": run_id, "person": person})
        return mapped.run(row) if row else None

    def _run_filter(self, search: str | None, status: str | None,
                    person: str | None = None) -> list[ColumnElement[bool]]:
        clauses: list[ColumnElement[bool]] = []
        if person is not None:
            clauses.append(runs.c.person == person)
        if search:
            clauses.append(contains_casefold(self.dialect, runs.c.question, search))
        if status:
            clauses.append(runs.c.status == status)
        return clauses

    def list_runs(
        self, *, search: str | None = None, status: str | None = None, limit: int = 100,
        offset: int = 0, person: str | None = None,
    ) -> list[Run]:
        """Newest first; `search` is a case-insensitive substring of the question; with
        `person`, only that person's runs."""
        query: Select[Any] = select(runs).where(*self._run_filter(search, status, person)).order_by(
            runs.c.created_at.desc(), insertion_order(self.dialect).desc(),
        ).limit(int(limit)).offset(int(offset))
        return [mapped.run(row) for row in self.query(query)]

    def count_runs(self, search: str | None = None, *, status: str | None = None,
                   person: str | None = None) -> int:
        query = select(func.count()).select_from(runs).where(
            *self._run_filter(search, status, person))
        return int(self.query_value(query) or 0)

    def delete_run(self, run_id: str) -> None:
        """Remove the run and every row that belongs to it, in one transaction."""
        with self.transaction() as tx:
            # A deleted run ends its API callback and the watch of its topic too (a watch
            # follows the newest version of a report: deleting that version stops it).
            for table in (*RUN_TABLES, api_callbacks, watches):
                tx.execute(delete(table).where(table.c.run_id == run_id))
            tx.execute(update(runs).where(runs.c.parent_run_id == run_id)
                       .values(parent_run_id=None))
            tx.execute(delete(runs).where(runs.c.id == run_id))

    def set_run_status(self, run_id: str, status: str, *, error: str | None = None) -> None:
        """Record a status change.

        First `running` sets started_at. A terminal status sets finished_at, duration_s and
        clears any pending control action. Going back to `running` (resume) clears
        finished_at, duration_s and a previous error. `error`, when given, is stored.
        """
        if status not in RUN_STATUSES:
            raise ValueError(f"unknown run status {status!r}")
        now = utc_now()
        with self.transaction() as tx:
            row = tx.execute(select(runs.c.started_at, runs.c.error)
                             .where(runs.c.id == run_id)).first()
            if row is None:
                raise KeyError(f"no run {run_id!r}")
            started_at, old_error = row
            new_error = self._redact(error)
            if new_error is None and status != "running":
                new_error = old_error
            values: dict[str, object] = {"status": status, "error": new_error, "updated_at": now}
            if status == "running":
                values["started_at"] = started_at or now
            if status not in ("paused", "interrupted", "queued"):
                # Not finished ones keep whatever finished_at/duration the row had (normally none).
                values |= {"finished_at": None, "duration_s": None}
            if status in TERMINAL_STATUSES:
                values |= {"finished_at": now, "control": None,
                           "duration_s": seconds_between(started_at, now) if started_at else 0.0}
            tx.execute(update(runs).where(runs.c.id == run_id).values(**values))

    def set_run_warnings(self, run_id: str, warnings: Iterable[str]) -> None:
        """Replace the run's warnings (plain sentences shown beside its status)."""
        with self.transaction() as tx:
            tx.execute(update(runs).where(runs.c.id == run_id).values(
                warnings=self._scrub([str(w) for w in warnings]), updated_at=utc_now()))

    def update_totals(self, run_id: str, **values: Any) -> RunTotals:
        """Merge `values` (`RunTotals` fields: a JSON column, written a key at a time) into the
        run's totals; returns the merged totals."""
        return self._change_totals(run_id, values, add=False)

    def increment_totals(self, run_id: str, **deltas: float) -> RunTotals:
        """Add `deltas` to numeric totals (missing ones start at 0); returns the new totals."""
        return self._change_totals(run_id, deltas, add=True)

    def _change_totals(self, run_id: str, values: JsonObject, *, add: bool) -> RunTotals:
        with self.transaction() as tx:
            # FOR UPDATE: on PostgreSQL two writers adding at once must not both read the old
            # totals (SQLite's BEGIN IMMEDIATE already serialises them; it ignores the clause).
            row = tx.execute(select(runs.c.totals).where(runs.c.id == run_id)
                             .with_for_update()).first()
            if row is None:
                raise KeyError(f"no run {run_id!r}")
            totals = dict(row[0] or {})  # the stored JSON object, merged key by key
            for key, value in values.items():
                totals[key] = (totals.get(key) or 0) + value if add else value
            tx.execute(update(runs).where(runs.c.id == run_id).values(
                totals=self._scrub(totals), updated_at=utc_now()))
        return mapped.run_totals(totals)

    def heartbeat(self, run_id: str, owner: str) -> None:
        self._database.write_one(_HEARTBEAT, {"b_run": run_id, "b_owner": owner,
                                              "b_beat": utc_now()})

    def mark_interrupted(
        self, *, stale_after_s: float = 30.0, dead_owners: Iterable[str] = (),
        reason: str = ABANDONED_MESSAGE, spare: Iterable[str] = (),
    ) -> list[str]:
        """Runs left running/paused by a process that stopped heartbeating become
        `interrupted`, so the UI can offer to resume them; so do runs whose owner is known
        to be dead (`dead_owners`), without waiting for the heartbeat to go stale. A run
        without an error of its own gets `reason`, so the Run page and --resume say why.
        Runs in `spare` are left alone (the job engine holds them). Returns their ids."""
        cutoff = ts(datetime.now(UTC) - timedelta(seconds=stale_after_s))
        dead = list(dead_owners)
        stale = or_(runs.c.heartbeat_at.is_(None), runs.c.heartbeat_at < cutoff,
                    *([runs.c.owner.in_(dead)] if dead else []))
        kept = list(spare)
        with self.transaction() as tx:
            ids = [row[0] for row in tx.execute(
                select(runs.c.id).where(and_(runs.c.status.in_(("running", "paused")), stale))
                .order_by(runs.c.created_at).with_for_update()) if row[0] not in kept]
            if ids:
                tx.execute(update(runs).where(runs.c.id.in_(ids))
                           .values(status="interrupted", updated_at=utc_now(),
                                   error=func.coalesce(runs.c.error, reason)))
        return ids

    def active_owners(self) -> set[str]:
        """Owners ("pid:N@host") of runs currently marked running or paused."""
        query = select(runs.c.owner).distinct().where(
            runs.c.status.in_(("running", "paused")), runs.c.owner.is_not(None))
        return {row["owner"] for row in self.query(query)}

    def set_control(self, run_id: str, action: str | None) -> None:
        """Ask the engine running `run_id` to "pause", "cancel" or "wrap" (stop researching and
        write the report from what was gathered); None clears the request."""
        if action is not None and action not in CONTROL_ACTIONS:
            raise ValueError(f"unknown control action {action!r}")
        with self.transaction() as tx:
            tx.execute(update(runs).where(runs.c.id == run_id)
                       .values(control=action, updated_at=utc_now()))

    def get_control(self, run_id: str) -> str | None:
        row = self.query_one(_GET_CONTROL, {"run_id": run_id})  # each checkpoint asks
        return row["control"] if row else None

    def latest_activity(self, run_id: str) -> Activity | None:
        """Cheap poll for a live dashboard: one indexed query. None if no such run."""
        return mapped.activity(self.query_one(LATEST_ACTIVITY, {"run_id": run_id}))
