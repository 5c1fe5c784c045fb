"""The run's event log and its model usage (tokens, cost, calls per role and model)."""

from __future__ import annotations

from datetime import UTC, datetime
from functools import cache
from typing import TYPE_CHECKING, Any

from sqlalchemy import Insert, bindparam, func, select

from storage import rows as mapped
from storage.base import StoreBase
from storage.dialects import insert_event, insert_for
from storage.migrations import utc_now
from storage.run_records import EventRow, JsonObject, ModelUsage, UsageTotals
from storage.runs import ts
from storage.schema import events, usage

if TYPE_CHECKING:
    from research.core.events import Event


def normal_ts(value: Any) -> str:
    """Event timestamps in the one stored format (UTC, milliseconds, Z), so they sort as text."""
    if isinstance(value, datetime):
        return ts(value if value.tzinfo else value.replace(tzinfo=UTC))
    if isinstance(value, str) and value:
        try:
            moment = datetime.fromisoformat(value)
        except ValueError:
            return value
        return ts(moment if moment.tzinfo else moment.replace(tzinfo=UTC))
    return utc_now()


# Built once: constructing a statement and its cache key costs more than running it.
_EVENTS_AFTER = (select(events)
                 .where(events.c.run_id == bindparam("run_id"), events.c.id > bindparam("after"))
                 .order_by(events.c.id))
_EVENTS_AFTER_LIMITED = _EVENTS_AFTER.limit(bindparam("limit"))
# The run's newest events, newest first: a backward scan of idx_events_run (run_id, id).
LAST_EVENTS = (select(events).where(events.c.run_id == bindparam("run_id"))
               .order_by(events.c.id.desc()).limit(bindparam("limit")))
USAGE_TOTALS = select(
    func.coalesce(func.sum(usage.c.input_tokens), 0).label("input_tokens"),
    func.coalesce(func.sum(usage.c.output_tokens), 0).label("output_tokens"),
    func.coalesce(func.sum(usage.c.cost_usd), 0.0).label("cost_usd"),
    func.coalesce(func.sum(usage.c.calls), 0).label("calls"),
).where(usage.c.run_id == bindparam("run_id"))


@cache
def _add_usage(dialect: str) -> Insert:
    statement = insert_for(dialect, usage)
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=["run_id", "role", "provider", "model"],
        set_={"input_tokens": usage.c.input_tokens + statement.excluded.input_tokens,
              "output_tokens": usage.c.output_tokens + statement.excluded.output_tokens,
              "cost_usd": usage.c.cost_usd + statement.excluded.cost_usd,
              "calls": usage.c.calls + 1, "updated_at": statement.excluded.updated_at})


class LogStore(StoreBase):
    """The `usage` and `events` tables."""

    def add_usage(self, run_id: str, role: str, provider: str, model: str,
                  input_tokens: int, output_tokens: int, cost_usd: float) -> None:
        """Add one call's usage to the (run, role, provider, model) row."""
        row = {"run_id": run_id, "role": role, "provider": provider, "model": model,
               "input_tokens": int(input_tokens), "output_tokens": int(output_tokens),
               "cost_usd": float(cost_usd), "calls": 1, "updated_at": utc_now()}
        self._database.write_one(_add_usage(self.dialect), row)

    def get_usage(self, run_id: str) -> list[ModelUsage]:
        return [mapped.model_usage(row) for row in self._rows(
            select(usage).where(usage.c.run_id == run_id)
            .order_by(usage.c.role, usage.c.provider, usage.c.model))]

    def usage_totals(self, run_id: str) -> UsageTotals:
        """tokens, cost_usd, calls (plus input_tokens, output_tokens) for the run."""
        return mapped.usage_totals(self._row(USAGE_TOTALS, {"run_id": run_id}))

    def last_events(self, run_id: str, n: int) -> list[EventRow]:
        """The run's last `n` events, oldest first (the live panel's activity log)."""
        return [mapped.event(row) for row in
                self._fast_rows(LAST_EVENTS, {"run_id": run_id, "limit": int(n)})[::-1]]

    def append_event(self, event: Event | JsonObject) -> int:
        """Append to the run's event log; returns the event id (ascending per database)."""
        to_dict = getattr(event, "to_dict", None)
        record = to_dict() if callable(to_dict) else dict(event)  # type: ignore[arg-type]
        row = {"run_id": record["run_id"], "ts": normal_ts(record.get("ts")),
               "type": record["type"], "step": record.get("step"),
               "message": self._redact(record.get("message") or ""),
               "data": self._scrub(dict(record.get("data") or {}))}
        # Cleaned first: the write lock is held for the SQL alone.
        return int(self._database.write_one(insert_event(self.dialect), row).scalar())

    def log_event(self, event: Event) -> None:
        """`append_event` shaped as a `research.core.events.EventSink` (returns None), for
        `fan_out(store.log_event, ...)`."""
        self.append_event(event)

    def get_events(self, run_id: str, *, after_id: int = 0,
                   limit: int | None = None) -> list[EventRow]:
        params = {"run_id": run_id, "after": int(after_id)}
        if limit is None:
            return [mapped.event(row) for row in self._fast_rows(_EVENTS_AFTER, params)]
        return [mapped.event(row) for row in
                self._fast_rows(_EVENTS_AFTER_LIMITED, {**params, "limit": int(limit)})]
