"""One refresh of the Run page's live panel, read in one go.

Why: the panel refreshes every 2 s while the run works (app_pages/run.py), from every page
looking at it. Read one query at a time, a refresh was five round trips to the database; on a
team's busy PostgreSQL server each round trip waits for the server process and then for the
dashboard's to be scheduled again, and those waits (not the queries, each well under a
millisecond) were most of a refresh's time. So a refresh is one statement on both databases:
the run, its activity counts and its usage totals are one row (`_HEAD`), and the steps and
the last events are two JSON columns of it (`storage.dialects.rows_as_json`), all from one
snapshot. Each part has the shape its single-query method returns.

The last events are most of a refresh's work (200 rows, each with its JSON data), and nearly
all of them are the ones the last refresh read: a run's events are only ever appended, and
commit in id order (`storage.dialects.insert_event`). So the Store keeps the tail each run
showed (`EventTails`: the last few runs, a tail each) and reads only the events after it.
When the run's event count says the tail cannot simply be extended (events went missing),
the refresh reads the whole tail again.
"""

from __future__ import annotations

import threading
from collections import OrderedDict
from dataclasses import dataclass
from functools import cache, cached_property
from typing import Any

from sqlalchemy import Column, ScalarSelect, Select, Table, bindparam, func, select

from storage import rows as mapped
from storage.base import StoreBase
from storage.dialects import rows_as_json
from storage.rows import Row
from storage.run_records import Activity, EventRow, Run, Step, UsageTotals
from storage.schema import events, runs, sources, steps, usage
from storage.steps import GET_STEPS

TAILS_KEPT = 16  # runs whose last events a Store keeps: as many live panels as a team has open


def _of_run(table: Table, value: Any, *where: Any) -> ScalarSelect[Any]:
    """`value` computed over the rows of `table` that belong to the run of the outer query."""
    return select(value).where(table.c.run_id == runs.c.id, *where).scalar_subquery()


def _total(column: Column[Any], zero: float = 0) -> ScalarSelect[Any]:
    return _of_run(usage, func.coalesce(func.sum(column), zero))


# Built once, as every hot statement here: the run, its activity counts (as
# `latest_activity`) and its usage totals (as `usage_totals`), in one row.
_HEAD = select(
    runs, runs.c.id.label("run_id"),
    _of_run(sources, func.count()).label("sources"),
    _of_run(events, func.count()).label("events"),
    _of_run(events, func.coalesce(func.max(events.c.id), 0)).label("last_event_id"),
    _of_run(steps, func.count(), steps.c.status == "done").label("steps_done"),
    _of_run(steps, func.count()).label("steps_total"),
    _total(usage.c.input_tokens).label("input_tokens"),
    _total(usage.c.output_tokens).label("output_tokens"),
    _total(usage.c.cost_usd, 0.0).label("cost_usd"),
    _total(usage.c.calls).label("calls"),
).where(runs.c.id == bindparam("run_id"))
# The run's newest events after `after`, newest first: a backward scan of idx_events_run.
_TAIL = (select(events).where(events.c.run_id == bindparam("run_id"),
                              events.c.id > bindparam("after"))
         .order_by(events.c.id.desc()).limit(bindparam("limit")))


@cache
def _live(dialect: str) -> Select[Any]:
    """The head with the steps and the tail's events as JSON columns: one statement, one
    snapshot (so the events match the counts), built once per dialect."""
    return _HEAD.add_columns(rows_as_json(dialect, GET_STEPS).label("steps"),
                             rows_as_json(dialect, _TAIL).label("tail"))


@dataclass(frozen=True)
class LiveView:
    """What the live panel shows of one run, as `get_run`, `get_steps`, `latest_activity`,
    `usage_totals` and `last_events` return it."""

    run: Run | None
    steps: list[Step]
    activity: Activity | None  # None: no such run
    usage: UsageTotals
    events: list[EventRow]  # the last ones asked for, oldest first


@dataclass(frozen=True)
class Tail:
    """A run's last events as a refresh read them: the run had `count` events, the newest
    `last_id`; `events` are the newest of them, oldest first."""

    last_id: int
    count: int
    events: tuple[EventRow, ...]

    def extended(self, newer: list[EventRow], last_id: int, count: int, limit: int,
                 ) -> Tail | None:
        """This tail with `newer` (the run's newest `limit` events after it, oldest first,
        the newest `last_id`, of `count` in all), or None when the count says events went
        missing or came in out of order."""
        if last_id < self.last_id or len(newer) < limit and self.count + len(newer) != count:
            return None
        shown = (self.events + tuple(newer))[-limit:]
        if shown and shown[-1].id != last_id:
            return None
        return Tail(last_id, count, shown)


class EventTails:
    """The tails the last `size` (run, events shown) pairs showed; safe between threads."""

    def __init__(self, size: int = TAILS_KEPT) -> None:
        self.size = size
        self._tails: OrderedDict[tuple[str, int], Tail] = OrderedDict()
        self._lock = threading.Lock()

    def get(self, run_id: str, limit: int) -> Tail | None:
        with self._lock:
            return self._tails.get((run_id, limit))

    def put(self, run_id: str, limit: int, tail: Tail) -> None:
        with self._lock:
            self._tails[run_id, limit] = tail
            self._tails.move_to_end((run_id, limit))
            while len(self._tails) > self.size:
                self._tails.popitem(last=False)

    def forget(self, run_id: str) -> None:
        with self._lock:
            for key in [key for key in self._tails if key[0] == run_id]:
                del self._tails[key]


class LiveStore(StoreBase):
    """The live panel's read."""

    @cached_property
    def _event_tails(self) -> EventTails:
        return EventTails()

    def live_view(self, run_id: str, *, events: int) -> LiveView:
        """The run, its steps, activity counts, usage totals and last `events` events."""
        limit = int(events)
        # Inside a write, reads see rows that may yet be rolled back: no tail is kept.
        tails = self._event_tails if self._database.current() is None else EventTails(0)
        known = tails.get(run_id, limit)
        head, tail = self._read(run_id, limit, known)
        if head is not None and tail is None:  # the known tail cannot be extended: read anew
            head, tail = self._read(run_id, limit, None)
        if head is None or tail is None:
            tails.forget(run_id)
            return LiveView(run=None, steps=[], activity=None, usage=mapped.usage_totals(None),
                            events=[])
        tails.put(run_id, limit, tail)
        return LiveView(run=mapped.run(head), steps=_steps(head["steps"]),
                        activity=mapped.activity(head), usage=mapped.usage_totals(head),
                        events=list(tail.events))

    def _read(self, run_id: str, limit: int, known: Tail | None,
              ) -> tuple[Row | None, Tail | None]:
        """The head row (None: no such run) and the events' tail: `known` extended by the
        events after it (None: it cannot be), or, without one, the last `limit` events."""
        after = known.last_id if known is not None else 0
        head = self.query_one(_live(self.dialect), {"run_id": run_id, "after": after,
                                                    "limit": limit})
        if head is None:
            return None, None
        last_id, count = int(head["last_event_id"] or 0), int(head["events"] or 0)
        newer = [mapped.event(row) for row in _in_order(head["tail"])]
        if known is None:
            return head, Tail(last_id, count, tuple(newer))
        return head, known.extended(newer, last_id, count, limit)


def _in_order(rows: list[Row] | None) -> list[Row]:
    """A JSON array of rows (which has no order of its own) in id order."""
    return sorted(rows or [], key=lambda row: row["id"])


def _steps(rows: list[Row] | None) -> list[Step]:
    in_order = _in_order(rows)
    for step in in_order:  # as the column's type gives it (PostgreSQL's JSON: 2.0 reads 2)
        if step["duration_s"] is not None:
            step["duration_s"] = float(step["duration_s"])
    return [mapped.step(row) for row in in_order]
