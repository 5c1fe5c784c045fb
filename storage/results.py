"""What research steps find: sources (deduplicated per run), findings, queries, skipped pages,
and which report sections cite each source."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Insert, Select, bindparam, delete, func, insert, select, update

from storage import rows as mapped
from storage.dialects import insert_for
from storage.engine import Tx
from storage.migrations import utc_now
from storage.records import Finding, JsonObject, Query, SkippedPage, Source
from storage.rows import Row
from storage.schema import Json, findings, queries, skipped_pages, sources
from storage.steps import StepsStore

# Everything but the extracted page text, for listings.
_LIGHT_SOURCE = [c for c in sources.c if c.name != "text"]


# Built once: constructing a statement and its cache key costs more than running it.
_SOURCE_ID_OF_URL = select(sources.c.id).where(sources.c.run_id == bindparam("run_id"),
                                               sources.c.canonical_url == bindparam("url"))
_COUNT_SOURCES = (select(func.count()).select_from(sources)
                  .where(sources.c.run_id == bindparam("run_id")))
_CLEAR_STEP = {table.name: delete(table).where(table.c.run_id == bindparam("run_id"),
                                               table.c.step_key == bindparam("key"))
               for table in (findings, queries, skipped_pages)}
_INSERT_ROW = {table.name: insert(table) for table in (findings, queries, skipped_pages)}
# The citation map: every source uncited, then each cited one's sections (built once: one
# statement per source cost more than its write).
_UNCITE_ALL = (update(sources).where(sources.c.run_id == bindparam("b_run"))
               .values(cited_in=bindparam("cited", type_=Json())))
_CITE_ONE = (update(sources).where(sources.c.run_id == bindparam("b_run"),
                                   sources.c.id == bindparam("b_id"))
             .values(cited_in=bindparam("cited", type_=Json())))


@cache
def _get_sources(with_text: bool, one_subtopic: bool) -> Select[Any]:
    """The sources of a run (or of one subtopic), in their order: built once per variant."""
    query = select(sources) if with_text else select(*_LIGHT_SOURCE)
    query = query.where(sources.c.run_id == bindparam("run_id"))
    if one_subtopic:
        query = query.where(sources.c.subtopic_id == bindparam("subtopic_id"))
    # NULLS FIRST on both: SQLite sorts NULL first by itself, PostgreSQL does not.
    return query.order_by(sources.c.subtopic_id.nulls_first(), sources.c.relevance.desc(),
                          sources.c.id)


@cache
def _insert_source(dialect: str) -> Insert:
    """A source, unless the run has its id or canonical URL already; returns its id if stored."""
    return insert_for(dialect, sources).on_conflict_do_nothing().returning(  # type: ignore[no-any-return]
        sources.c.id)


class ResultsStore(StepsStore):
    """The `sources`, `findings`, `queries` and `skipped_pages` tables."""

    def complete_research_step(
        self, run_id: str, key: str, *, sources: Sequence[Source] = (),
        findings: Sequence[Finding] = (), queries: Sequence[Query] = (),
        skipped: Sequence[SkippedPage] = (), result: JsonObject | None = None,
    ) -> list[str]:
        """Store everything one research step produced and mark it done, atomically.

        A source whose canonical URL (or id) the run already has is not inserted; findings
        that cite it are pointed at the stored source instead. Findings, queries and skipped
        pages previously stored for this same step are replaced, so re-running a step does
        not duplicate them. Returns the ids of the sources actually inserted.
        """
        now = utc_now()
        # Rows are cleaned and built before the transaction: on SQLite every other writer
        # waits while this one holds the lock, so the lock is held for the SQL alone.
        source_rows = [mapped.source_row(src, run_id=run_id, key=key, now=now,
                                         plain=self.clean_content) for src in sources]
        step_rows = self._step_rows(run_id, key, findings, queries, skipped, now)
        with self.transaction() as tx:
            inserted, remap = self._insert_sources(tx, run_id, source_rows)
            for finding in step_rows["findings"]:
                cited = finding["source_ids"]
                finding["source_ids"] = list(dict.fromkeys(remap.get(s, s) for s in cited))
            for name, clear in _CLEAR_STEP.items():
                tx.execute(clear, {"run_id": run_id, "key": key})
                tx.execute_many(_INSERT_ROW[name], step_rows[name])
            self._finish_step(tx, run_id, key, result=result, source_count=len(inserted))
        return inserted

    def _insert_sources(self, tx: Tx, run_id: str, rows: list[Row],
                        ) -> tuple[list[str], dict[str, str]]:
        """Insert the new sources; (ids inserted, {id given: id stored} for known URLs)."""
        inserted: list[str] = []
        remap: dict[str, str] = {}
        stored_each = tx.inserted_each(_insert_source(self.dialect), "id", rows)
        for row, stored in zip(rows, stored_each, strict=True):
            if stored:
                inserted.append(row["id"])
                continue
            existing = tx.execute(_SOURCE_ID_OF_URL,
                                  {"run_id": run_id, "url": row["canonical_url"]}).first()
            if existing and existing[0] != row["id"]:
                remap[row["id"]] = existing[0]
        return inserted, remap

    def _step_rows(self, run_id: str, key: str, found: Sequence[Finding],
                   asked: Sequence[Query], skipped: Sequence[SkippedPage],
                   now: str) -> dict[str, list[Row]]:
        """The findings, queries and skipped pages of a step as stored, by table."""
        return {
            "findings": [mapped.finding_row(f, run_id=run_id, key=key, now=now,
                                            plain=self.clean_content) for f in found],
            "queries": [{
                "run_id": run_id, "step_key": key, "subtopic_id": q.subtopic_id,
                "query": self.clean_content(q.query), "provider": q.provider or "",
                "result_count": int(q.result_count or 0),
                "error": self._redact(q.error), "created_at": now} for q in asked],
            "skipped_pages": [{
                "run_id": run_id, "step_key": key, "subtopic_id": p.subtopic_id,
                "url": self.clean_content(p.url), "reason": self._redact(p.reason or ""),
                "created_at": now} for p in skipped],
        }

    def get_sources(self, run_id: str, *, subtopic_id: str | None = None,
                    with_text: bool = True) -> list[Source]:
        """Ordered by subtopic, then relevance (highest first), then id.
        `with_text=False` leaves out the extracted page text (lighter for listings)."""
        params = {"run_id": run_id} if subtopic_id is None else {"run_id": run_id,
                                                                 "subtopic_id": subtopic_id}
        rows = self.query(_get_sources(with_text, subtopic_id is not None), params)
        return [mapped.source(row) for row in rows]

    def count_sources(self, run_id: str) -> int:
        return int(self.query_value(_COUNT_SOURCES, {"run_id": run_id}) or 0)

    def canonical_urls(self, run_id: str) -> set[str]:
        rows = self.query(select(sources.c.canonical_url).where(sources.c.run_id == run_id))
        return {row["canonical_url"] for row in rows}

    def set_citations(self, run_id: str, cited_in: Mapping[str, list[str]]) -> None:
        """Replace the run's citation map: sources not in `cited_in` become uncited."""
        with self.transaction() as tx:
            tx.execute(_UNCITE_ALL, {"b_run": run_id, "cited": []})
            tx.execute_many(_CITE_ONE, [
                {"b_run": run_id, "b_id": source_id, "cited": list(sections)}
                for source_id, sections in cited_in.items()])

    def get_findings(self, run_id: str) -> list[Finding]:
        return [mapped.finding(row) for row in self._run_rows(findings, run_id, "id")]

    def get_queries(self, run_id: str) -> list[Query]:
        return [mapped.query(row) for row in self._run_rows(queries, run_id, "id")]

    def get_skipped(self, run_id: str) -> list[SkippedPage]:
        return [mapped.skipped(row) for row in self._run_rows(skipped_pages, run_id, "id")]
