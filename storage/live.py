"""One refresh of the Run page's live panel, read in one go.

Why: the panel refreshes every 2 s while the run works (app_pages/run.py), from every page looking at
it. Read one query at a time, a refresh is five round trips to the database; on a team's
busy PostgreSQL server each round trip waits for the server process and then for the
dashboard's to be scheduled again, and those waits (not the queries, each well under a
millisecond) were most of a refresh's time. Here the five queries go in one round trip
(`Database.fast_batch`, psycopg's pipeline mode); on SQLite, in-process, they simply run in
turn on the thread's connection. Each part has the shape its single-query method returns.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage import rows as mapped
from storage.base import StoreBase
from storage.log import LAST_EVENTS, USAGE_TOTALS
from storage.run_records import Activity, EventRow, Run, Step, UsageTotals
from storage.runs import GET_RUN, LATEST_ACTIVITY
from storage.steps import GET_STEPS


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
        found = self._database.fast_batch([
            (GET_RUN, {"run_id": run_id}),
            (GET_STEPS, {"run_id": run_id}),
            (LATEST_ACTIVITY, {"run_id": run_id}),
            (USAGE_TOTALS, {"run_id": run_id}),
            (LAST_EVENTS, {"run_id": run_id, "limit": int(events)}),
        ])
        run, steps, activity, usage, last = found
        return LiveView(run=mapped.run(run[0]) if run else None,
                        steps=[mapped.step(row) for row in steps],
                        activity=mapped.activity(activity[0] if activity else None),
                        usage=mapped.usage_totals(usage[0] if usage else None),
                        events=[mapped.event(row) for row in last[::-1]])
