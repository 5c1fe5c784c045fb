"""A report's versions: an update is a run of its own, linked to the version it updates.

Why it looks like this:
- an update (research/living/) is an ordinary run, with its own steps, sources, usage and
  report; only the link is new: `report_versions` says which run it updates (`previous`),
  which run was the first version (`first`, what the Library groups by) and since which
  day it looked for news (`since`);
- the first version has no row: a run without one is a version 1 of its own;
- a deleted version leaves the rows of later ones, so they still group together; reading
  skips runs that are gone.

Functions take a `storage.Store` and use its connections, like `storage.tokens`.
"""

from __future__ import annotations

from dataclasses import dataclass

from sqlalchemy import insert, select

from storage.migrations import utc_now
from storage.rows import Row
from storage.schema import report_versions
from storage.store import Store

_V = report_versions.c


@dataclass(frozen=True, slots=True)
class VersionLink:
    """An update run and the version it updates."""

    run_id: str
    previous_run_id: str
    first_run_id: str
    since: str  # YYYY-MM-DD: the day the previous version was finished
    created_at: str = ""


def _link(row: Row) -> VersionLink:
    return VersionLink(run_id=row["run_id"], previous_run_id=row["previous_run_id"],
                       first_run_id=row["first_run_id"], since=row["since"],
                       created_at=row["created_at"])


def link_version(store: Store, run_id: str, *, previous_run_id: str, since: str) -> VersionLink:
    """Record that `run_id` updates `previous_run_id` (its first version is the previous
    one's first version, or the previous run itself)."""
    before = version_link(store, previous_run_id)
    first = before.first_run_id if before else previous_run_id
    now = utc_now()
    with store.transaction() as tx:
        tx.execute(insert(report_versions).values(
            run_id=run_id, previous_run_id=previous_run_id, first_run_id=first, since=since,
            created_at=now))
    return VersionLink(run_id, previous_run_id, first, since, now)


def version_link(store: Store, run_id: str) -> VersionLink | None:
    """The link of an update run; None for a first version (or an unknown run)."""
    row = store.query_one(select(report_versions).where(_V.run_id == run_id))
    return _link(row) if row else None


def versions_of(store: Store, run_id: str) -> list[str]:
    """Every version of the report `run_id` is a version of, oldest first (the first
    version, then its updates in the order they were started); runs since deleted are left
    out by the caller's reads, not here."""
    link = version_link(store, run_id)
    first = link.first_run_id if link else run_id
    rows = store.query(select(report_versions.c.run_id)
                       .where(_V.first_run_id == first).order_by(_V.created_at, _V.run_id))
    return [first, *(str(r["run_id"]) for r in rows)]


def version_groups(store: Store, run_ids: list[str]) -> dict[str, str]:
    """For each of `run_ids` that is an update, its first version's id (the group it
    belongs to in the Library); first versions and unlinked runs are not in the map."""
    if not run_ids:
        return {}
    rows = store.query(select(_V.run_id, _V.first_run_id).where(_V.run_id.in_(run_ids)))
    return {str(r["run_id"]): str(r["first_run_id"]) for r in rows}
