"""Copying every run (and the document library) from one store to another, e.g. from the
SQLite file one person used to a team's PostgreSQL server (`python -m research db copy`).

Why it looks like this:
- rows are copied as stored (already redacted and cleaned when they were first written),
  table by table through the same SQLAlchemy metadata, so JSON columns, upserts and ids
  translate between the two databases by themselves;
- each run is copied in one transaction on the target: a copy cut short leaves whole runs,
  and running it again with `append=True` copies only the runs not there yet;
- after copying, every table's row count per run is compared, source against target;
- a target that already holds runs is refused unless `append=True`, so nobody merges two
  teams' histories by accident. Rows of an appended run get new ids for tables keyed by a
  number (events, steps, ...), in the same order, so they cannot collide with the target's.
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from sqlalchemy import Table, func, insert, select, update

from storage.dialects import insertion_order
from storage.engine import Tx
from storage.rows import Row
from storage.schema import LIBRARY_TABLES, RUN_TABLES, collections, documents, passages, runs
from storage.schema import collection_documents as members
from storage.store import Store

_NUMBERED = frozenset(t.name for t in (*RUN_TABLES, passages)
                      if "id" in t.c and t.c.id.autoincrement is True)


class CopyRefused(RuntimeError):
    """The copy cannot go ahead; the message says why and what to do."""


@dataclass
class CopyReport:
    """What a copy did, for the sentence the command prints."""

    runs: int = 0
    skipped_runs: int = 0
    rows: dict[str, int] = field(default_factory=dict)
    documents: int = 0

    def add(self, table: str, count: int) -> None:
        self.rows[table] = self.rows.get(table, 0) + count


def copy_store(source: Store, target: Store, *, append: bool = False) -> CopyReport:
    """Copy every run with all its rows, then the document library; check the counts."""
    existing = target.count_runs()
    if existing and not append:
        raise CopyRefused(
            f"The target already holds {existing} runs, so nothing was copied. Copy into an "
            "empty database, or add --append to add the runs it does not have yet.")
    report = CopyReport()
    known = _ids(target, runs)
    for run in source.query(select(runs).order_by(runs.c.created_at,
                                                  insertion_order(source.dialect))):
        if run["id"] in known:
            report.skipped_runs += 1
            continue
        _copy_run(source, target, run, report, renumber=append)
        report.runs += 1
    _link_parents(source, target)
    report.documents = _copy_library(source, target, report, renumber=append)
    return report


def _ids(store: Store, table: Table) -> set[str]:
    return {row["id"] for row in store.query(select(table.c.id))}


def _rows_of(store: Store, table: Table, run_id: str) -> list[Row]:
    order = [table.c.id] if "id" in table.c and table.name in _NUMBERED else []
    return store.query(select(table).where(table.c.run_id == run_id).order_by(*order))


def _insert(tx: Tx, table: Table, rows: Sequence[Row], *, renumber: bool) -> None:
    if not rows:
        return
    if renumber and table.name in _NUMBERED:
        rows = [{k: v for k, v in row.items() if k != "id"} for row in rows]
    tx.execute(insert(table), list(rows))


def _copy_run(source: Store, target: Store, run: Row, report: CopyReport, *,
              renumber: bool) -> None:
    """One run and every row of it, in one transaction; then the counts are compared."""
    run_id = run["id"]
    copied: dict[str, int] = {}
    with target.transaction() as tx:
        tx.execute(insert(runs), [{**run, "parent_run_id": None}])
        for table in RUN_TABLES:
            rows = _rows_of(source, table, run_id)
            _insert(tx, table, rows, renumber=renumber)
            copied[table.name] = len(rows)
    for table in RUN_TABLES:
        stored = target.query_value(select(func.count()).select_from(table)
                                    .where(table.c.run_id == run_id))
        if int(stored or 0) != copied[table.name]:
            raise CopyRefused(
                f"Run {run_id}: {copied[table.name]} rows of {table.name} were copied but the "
                f"target holds {stored}; the copy stopped here. Nothing in the source changed.")
        report.add(table.name, copied[table.name])
    _fix_sequences(target, RUN_TABLES)


def _link_parents(source: Store, target: Store) -> None:
    """Runs built on another run point at it again (left out while copying, as a parent may
    be copied after its child)."""
    linked = source.query(select(runs.c.id, runs.c.parent_run_id)
                          .where(runs.c.parent_run_id.is_not(None)))
    present = _ids(target, runs)
    with target.transaction() as tx:
        for row in linked:
            if row["parent_run_id"] in present:
                tx.execute(update(runs).where(runs.c.id == row["id"])
                           .values(parent_run_id=row["parent_run_id"]))


def _copy_library(source: Store, target: Store, report: CopyReport, *, renumber: bool) -> int:
    """Documents (with passages and collection memberships) and collections the target does
    not have yet."""
    have = _ids(target, documents)
    new_docs = [d for d in source.query(select(documents)) if d["id"] not in have]
    wanted = {d["id"] for d in new_docs}
    names = {r["name"] for r in target.query(select(collections.c.name))}
    new_collections = [c for c in source.query(select(collections)) if c["name"] not in names]
    links = [m for m in source.query(select(members)) if m["document_id"] in wanted]
    texts = [p for p in source.query(select(passages).order_by(passages.c.id))
             if p["document_id"] in wanted]
    with target.transaction() as tx:
        _insert(tx, documents, new_docs, renumber=False)
        _insert(tx, collections, new_collections, renumber=False)
        _insert(tx, members, links, renumber=False)
        # Appending: the target's passages may already use these numbers.
        _insert(tx, passages, texts, renumber=renumber)
    for table, rows in ((documents, new_docs), (collections, new_collections), (members, links),
                        (passages, texts)):
        report.add(table.name, len(rows))
    _fix_sequences(target, [passages])
    return len(new_docs)


def _fix_sequences(target: Store, tables: Iterable[Table]) -> None:
    """PostgreSQL: rows copied with their ids leave the id sequences behind; move them on."""
    if target.dialect != "postgresql":
        return
    with target.transaction() as tx:
        for table in tables:
            if table.name in _NUMBERED:
                tx.execute(
                    f"SELECT setval(pg_get_serial_sequence('{table.name}', 'id'), "
                    f"coalesce((SELECT max(id) FROM {table.name}), 0) + 1, false)")


def count_rows(store: Store) -> dict[str, int]:
    """Rows per table, for the plain summary and the tests."""
    return {t.name: int(store.query_value(select(func.count()).select_from(t)) or 0)
            for t in (runs, *RUN_TABLES, *LIBRARY_TABLES)}
