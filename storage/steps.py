"""The plan (versioned) and the steps of a run (the crash-safe record of what is done)."""

from __future__ import annotations

from collections.abc import Sequence
from functools import cache

from sqlalchemy import Insert, bindparam, func, insert, select, update

from storage import rows as mapped
from storage.base import StoreBase, of_run
from storage.dialects import insert_for
from storage.engine import Tx
from storage.migrations import utc_now
from storage.records import JsonObject, PlanVersion, Subtopic
from storage.run_records import Step
from storage.runs import seconds_between
from storage.schema import Json, plans, steps

# original: the lead's plan; edited: changed by the person; round: subtopics added by a
# later research round (escalated follow-up questions).
PLAN_KINDS = frozenset({"original", "edited", "round"})


# Built once: constructing a statement and its cache key costs more than running it.
GET_STEPS = of_run(steps, "id")
_LATEST_PLAN = (select(plans.c.subtopics).where(plans.c.run_id == bindparam("run_id"))
                .order_by(plans.c.version.desc()).limit(1))
_GET_STEP = select(steps).where(steps.c.run_id == bindparam("run_id"), steps.c.key == bindparam("key"))
_STARTED_AT = select(steps.c.started_at).where(steps.c.run_id == bindparam("run_id"),
                                               steps.c.key == bindparam("key"))
_FINISH = (update(steps).where(steps.c.run_id == bindparam("b_run"),
                               steps.c.key == bindparam("b_key"))
           .values(status="done", finished_at=bindparam("now"),
                   duration_s=bindparam("duration"), result=bindparam("result", type_=Json()),
                   source_count=bindparam("source_count"), error=None))


@cache
def _start_step(dialect: str) -> Insert:
    statement = insert_for(dialect, steps)
    return statement.on_conflict_do_update(  # type: ignore[no-any-return]
        index_elements=[steps.c.run_id, steps.c.key],
        set_={"attempts": steps.c.attempts + 1, "status": "running",
              "kind": statement.excluded.kind, "label": statement.excluded.label,
              "subtopic_id": statement.excluded.subtopic_id,
              "started_at": statement.excluded.started_at, "finished_at": None,
              "duration_s": None, "result": None, "error": None})


class StepsStore(StoreBase):
    """The `plans` and `steps` tables."""

    # -- plan ----------------------------------------------------------------------------

    def save_plan(self, run_id: str, subtopics: Sequence[Subtopic], *,
                  kind: str = "original") -> int:
        """Store a new plan version (1, 2, ...); older versions are kept for history."""
        if kind not in PLAN_KINDS:
            raise ValueError(f"unknown plan kind {kind!r}")
        with self.transaction() as tx:
            latest = tx.execute(select(func.coalesce(func.max(plans.c.version), 0))
                                .where(plans.c.run_id == run_id)).scalar()
            version = int(latest or 0) + 1
            tx.execute(insert(plans).values(run_id=run_id, version=version, kind=kind,
                                            subtopics=self.clean_content([mapped.subtopic_json(s)
                                                                   for s in subtopics]),
                                            created_at=utc_now()))
        return version

    def get_plan(self, run_id: str) -> list[Subtopic] | None:
        """The subtopics of the latest plan version, or None before planning."""
        row = self.query_one(_LATEST_PLAN, {"run_id": run_id})
        return list(mapped.subtopics(row["subtopics"])) if row else None

    def get_plans(self, run_id: str) -> list[PlanVersion]:
        """Every version, oldest first."""
        rows = self.query(
            select(plans.c.version, plans.c.kind, plans.c.subtopics, plans.c.created_at)
            .where(plans.c.run_id == run_id).order_by(plans.c.version))
        return [mapped.plan_version(row) for row in rows]

    # -- steps ---------------------------------------------------------------------------

    def start_step(self, run_id: str, key: str, *, kind: str, label: str,
                   subtopic_id: str | None = None) -> None:
        with self.transaction() as tx:
            self._start_step(tx, run_id, key, kind=kind, label=self._clean(label),
                             subtopic_id=subtopic_id)

    def _start_step(self, tx: Tx, run_id: str, key: str, *, kind: str, label: str,
                    subtopic_id: str | None) -> None:
        tx.execute(_start_step(self.dialect), {
            "run_id": run_id, "key": key, "kind": kind, "label": label,
            "subtopic_id": subtopic_id, "status": "running", "attempts": 1,
            "started_at": utc_now()})

    def finish_step(self, run_id: str, key: str, *, result: JsonObject | None = None,
                    source_count: int = 0) -> None:
        with self.transaction() as tx:
            self._finish_step(tx, run_id, key, result=result, source_count=source_count)

    def _started_at(self, tx: Tx, run_id: str, key: str, now: str) -> str:
        """When the step started; a step finished without a recorded start (e.g. resumed)
        is recorded as starting now."""
        row = tx.execute(_STARTED_AT, {"run_id": run_id, "key": key}).first()
        if row is None:
            self._start_step(tx, run_id, key, kind="", label=key, subtopic_id=None)
            return now
        return str(row[0] or now)

    def _finish_step(self, tx: Tx, run_id: str, key: str, *,
                     result: JsonObject | None, source_count: int) -> None:
        now = utc_now()
        started_at = self._started_at(tx, run_id, key, now)
        tx.execute(_FINISH, {
            "b_run": run_id, "b_key": key, "now": now,
            "duration": seconds_between(started_at, now),
            "result": None if result is None else self._scrub(dict(result)),
            "source_count": int(source_count)})

    def fail_step(self, run_id: str, key: str, error: str, *, final: bool = True) -> None:
        """`final=False` means another attempt follows: status "retrying"."""
        now = utc_now()
        with self.transaction() as tx:
            started_at = self._started_at(tx, run_id, key, now)
            tx.execute(update(steps).where(steps.c.run_id == run_id, steps.c.key == key).values(
                status="failed" if final else "retrying", error=self._redact(error),
                finished_at=now if final else None,
                duration_s=seconds_between(started_at, now) if final else None))

    def get_steps(self, run_id: str) -> list[Step]:
        """In the order steps were first started (read on the live panel's hot path, as
        `storage.live` does: a statement built once, so SQLAlchemy finds it compiled)."""
        return [mapped.step(row) for row in self.query(GET_STEPS, {"run_id": run_id})]

    def get_step(self, run_id: str, key: str) -> Step | None:
        row = self.query_one(_GET_STEP, {"run_id": run_id, "key": key})  # each step asks
        return mapped.step(row) if row else None
