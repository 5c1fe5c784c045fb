"""One refresh of the Run page's live panel, read in one go.

Why: the panel refreshes every 2 s while the run works (app_pages/run.py), from every page looking at
it. Read one query at a time, a refresh is five round trips to the database; on a team's
busy PostgreSQL server each round trip waits for the server process and then for the
dashboard's to be scheduled again, and those waits (not the queries, each well under a
millisecond) were most of a refresh's time. So on PostgreSQL the five queries are one
statement (`storage.dialects.rows_as_json`: each query's rows come back as one JSON column);
on SQLite, in-process, they simply run in turn on the thread's connection. Each part has the
shape its single-query method returns.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from sqlalchemy import Select, TextClause, select

from storage import rows as mapped
from storage.base import StoreBase
from storage.dialects import rows_as_json
from storage.log import LAST_EVENTS, USAGE_TOTALS
from storage.rows import Row
from storage.run_records import Activity, EventRow, Run, Step, UsageTotals
from storage.runs import GET_RUN, LATEST_ACTIVITY
from storage.steps import GET_STEPS

# The parts, by name; each takes the parameters `run_id` (and `limit`, the events).
_PARTS: dict[str, Select[Any] | TextClause] = {
    "run": GET_RUN, "steps": GET_STEPS, "activity": LATEST_ACTIVITY, "usage": USAGE_TOTALS,
    "events": LAST_EVENTS}
# PostgreSQL: all of them in one statement (built once, as every hot statement here).
_IN_ONE = select(*(rows_as_json(query).label(name) for name, query in _PARTS.items()))


@dataclass(frozen=True)
class LiveView:
    """What the live panel shows of one run, as `get_run`, `get_steps`, `latest_activity`,
    `usage_totals` and `last_events` return it."""

    run: Run | None
    steps: list[Step]
    activity: Activity | None  # None: no such run
    usage: UsageTotals
    events: list[EventRow]  # the last ones asked for, oldest first


class LiveStore(StoreBase):
    """The live panel's read."""

    def live_view(self, run_id: str, *, events: int) -> LiveView:
        """The run, its steps, activity counts, usage totals and last `events` events."""
        params = {"run_id": run_id, "limit": int(events)}
        found = self._parts(params)
        run, activity, usage = found["run"], found["activity"], found["usage"]
        return LiveView(run=mapped.run(run[0]) if run else None,
                        steps=[mapped.step(row) for row in found["steps"]],
                        activity=mapped.activity(activity[0] if activity else None),
                        usage=mapped.usage_totals(usage[0] if usage else None),
                        events=[mapped.event(row) for row in found["events"]])

    def _parts(self, params: dict[str, Any]) -> dict[str, list[Row]]:
        """Each part's rows: steps and events in id order, oldest first."""
        if self.dialect != "postgresql":
            found = {name: self.query(query, params) for name, query in _PARTS.items()}
            found["events"].reverse()  # read newest first
            return found
        row = self.query_one(_IN_ONE, params) or {}
        found = {name: list(row.get(name) or []) for name in _PARTS}
        # JSON arrays carry no order of their own: each is put back in the query's.
        found["steps"].sort(key=lambda step: step["id"])
        for step in found["steps"]:  # as the column's type gives it (JSON: 2.0 reads 2)
            if step["duration_s"] is not None:
                step["duration_s"] = float(step["duration_s"])
        found["events"].sort(key=lambda event: event["id"])
        return found
