"""What research steps find: sources (deduplicated per run), findings, queries, skipped pages,
and which report sections cite each source."""

from __future__ import annotations

from collections.abc import Mapping
from functools import cache
from typing import Any

from sqlalchemy import Insert, bindparam, delete, func, insert, select, update

from storage import rows as mapped
from storage.dialects import insert_for
from storage.engine import Tx
from storage.migrations import utc_now
from storage.records import Query, SkippedPage
from storage.schema import findings, queries, skipped_pages, sources
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


@cache
def _insert_source(dialect: str) -> Insert:
    """A source, unless the run has its id or canonical URL already; returns its id if stored."""
    return insert_for(dialect, sources).on_conflict_do_nothing().returning(  # type: ignore[no-any-return]
        sources.c.id)


class ResultsStore(StepsStore):
    """The `sources`, `findings`, `queries` and `skipped_pages` tables."""

    def complete_research_step(
        self, run_id: str, key: str, *, sources: list[dict[str, Any]],
        findings: list[dict[str, Any]], queries: list[dict[str, Any]],
        skipped: list[dict[str, Any]], result: Mapping[str, Any] | None = None,
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
        source_rows = [self._source_row(run_id, key, src, now) for src in sources]
        step_rows = self._step_rows(run_id, key, findings, queries, skipped, now)
        with self._write() as tx:
            inserted, remap = self._insert_sources(tx, run_id, source_rows)
            for finding in step_rows["findings"]:
                cited = finding["source_ids"]
                finding["source_ids"] = list(dict.fromkeys(remap.get(s, s) for s in cited))
            for name, clear in _CLEAR_STEP.items():
                tx.run(clear, {"run_id": run_id, "key": key})
                tx.run_many(_INSERT_ROW[name], step_rows[name])
            self._finish_step(tx, run_id, key, result=result, source_count=len(inserted))
        return inserted

    def _source_row(self, run_id: str, key: str, src: Mapping[str, Any], now: str) -> dict[str, Any]:
        """A source as stored: the one place its columns are filled in."""
        return {
            "run_id": run_id, "id": src["id"], "url": self._plain(src["url"]),
            "canonical_url": self._plain(src.get("canonical_url") or src["url"]),
            "title": self._plain(src.get("title") or ""),
            "snippet": self._plain(src.get("snippet") or ""),
            "text": self._plain(src.get("text") or ""), "published": src.get("published"),
            "relevance": float(src.get("relevance") or 0.0),
            "relevance_reason": self._plain(src.get("relevance_reason") or ""),
            "subtopic_id": src.get("subtopic_id"), "provider": src.get("provider") or "",
            "query": self._plain(src.get("query") or ""), "round": int(src.get("round") or 1),
            "fetched_at": src.get("fetched_at") or now, "step_key": key,
            "source_kind": src.get("source_kind") or "unknown",
            "signals": list(src.get("signals") or []),
            "author": self._plain(src["author"]) if src.get("author") else None,
        }

    def _insert_sources(self, tx: Tx, run_id: str, rows: list[dict[str, Any]],
                        ) -> tuple[list[str], dict[str, str]]:
        """Insert the new sources; (ids inserted, {id given: id stored} for known URLs)."""
        inserted: list[str] = []
        remap: dict[str, str] = {}
        for row, stored in zip(rows, tx.inserted_each(_insert_source(self.dialect), rows),
                               strict=True):
            if stored:
                inserted.append(row["id"])
                continue
            existing = tx.run(_SOURCE_ID_OF_URL,
                              {"run_id": run_id, "url": row["canonical_url"]}).first()
            if existing and existing[0] != row["id"]:
                remap[row["id"]] = existing[0]
        return inserted, remap

    def _step_rows(self, run_id: str, key: str, found: list[dict[str, Any]],
                   asked: list[dict[str, Any]], skipped: list[dict[str, Any]],
                   now: str) -> dict[str, list[dict[str, Any]]]:
        """The findings, queries and skipped pages of a step as stored, by table."""
        return {
            "findings": [{
                "run_id": run_id, "step_key": key, "subtopic_id": f.get("subtopic_id"),
                "claim": self._plain(f["claim"]), "source_ids": list(f.get("source_ids") or []),
                "confidence": float(f.get("confidence") or 0.0),
                "kind": f.get("kind") or "finding", "created_at": now} for f in found],
            "queries": [{
                "run_id": run_id, "step_key": key, "subtopic_id": q.get("subtopic_id"),
                "query": self._plain(q["query"]), "provider": q.get("provider") or "",
                "result_count": int(q.get("result_count") or 0),
                "error": self._redact(q.get("error")), "created_at": now} for q in asked],
            "skipped_pages": [{
                "run_id": run_id, "step_key": key, "subtopic_id": p.get("subtopic_id"),
                "url": self._plain(p["url"]), "reason": self._redact(p.get("reason") or ""),
                "created_at": now} for p in skipped],
        }

    def get_sources(self, run_id: str, *, subtopic_id: str | None = None,
                    with_text: bool = True) -> list[dict[str, Any]]:
        """Ordered by subtopic, then relevance (highest first), then id.
        `with_text=False` leaves out the extracted page text (lighter for listings)."""
        query = select(sources) if with_text else select(*_LIGHT_SOURCE)
        query = query.where(sources.c.run_id == run_id)
        if subtopic_id is not None:
            query = query.where(sources.c.subtopic_id == subtopic_id)
        # NULLS FIRST on both: SQLite sorts NULL first by itself, PostgreSQL does not.
        return self._rows(query.order_by(sources.c.subtopic_id.nulls_first(),
                                         sources.c.relevance.desc(), sources.c.id))

    def count_sources(self, run_id: str) -> int:
        return int(self._scalar(_COUNT_SOURCES, {"run_id": run_id}) or 0)

    def canonical_urls(self, run_id: str) -> set[str]:
        rows = self._rows(select(sources.c.canonical_url).where(sources.c.run_id == run_id))
        return {row["canonical_url"] for row in rows}

    def set_citations(self, run_id: str, cited_in: Mapping[str, list[str]]) -> None:
        """Replace the run's citation map: sources not in `cited_in` become uncited."""
        with self._write() as tx:
            tx.execute(update(sources).where(sources.c.run_id == run_id).values(cited_in=[]))
            for source_id, sections in cited_in.items():
                tx.execute(update(sources)
                           .where(sources.c.run_id == run_id, sources.c.id == source_id)
                           .values(cited_in=list(sections)))

    def get_findings(self, run_id: str) -> list[dict[str, Any]]:
        return self._rows(select(findings).where(findings.c.run_id == run_id)
                          .order_by(findings.c.id))

    def get_queries(self, run_id: str) -> list[Query]:
        rows = self._rows(select(queries).where(queries.c.run_id == run_id)
                          .order_by(queries.c.id))
        return [mapped.query(row) for row in rows]

    def get_skipped(self, run_id: str) -> list[SkippedPage]:
        rows = self._rows(select(skipped_pages).where(skipped_pages.c.run_id == run_id)
                          .order_by(skipped_pages.c.id))
        return [mapped.skipped(row) for row in rows]
