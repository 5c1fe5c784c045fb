"""What the writing side stores: drafts, reviews, the report, hosted engines' reports and the
claim verifications (verdicts)."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from functools import cache
from typing import Any

from sqlalchemy import Table, select

from storage import rows as mapped
from storage.base import StoreBase, of_run
from storage.dialects import insert_for
from storage.engine import Tx
from storage.migrations import utc_now
from storage.records import Draft, EngineReport, JsonObject, Report, Review, ReviewIssue, Verdict
from storage.schema import drafts, engine_reports, reports, reviews, verifications

_VERIFICATION_TEXT = ("passage", "section", "subtopic", "verifier_verdict", "auditor_verdict",
                      "critic_verdict", "status", "final_text", "note")


@cache
def _upsert(dialect: str, table: Table, conflict: tuple[str, ...], names: tuple[str, ...]) -> Any:
    """INSERT the columns given (the parameters' names), or, in the row that has the same
    `conflict` values, overwrite `names` (but the `conflict` columns). Built once per dialect,
    table and column set: a statement built for each row cost SQLAlchemy about 30 times what
    the database spent writing it (50 verdicts: 31 ms of CPU, against 1 ms)."""
    statement = insert_for(dialect, table)
    return statement.on_conflict_do_update(
        index_elements=list(conflict),
        set_={name: statement.excluded[name] for name in names if name not in conflict})


class WritingStore(StoreBase):
    """The `drafts`, `reviews`, `reports`, `engine_reports` and `verifications` tables."""

    def _replace(self, tx: Tx, table: Table, values: Mapping[str, object]) -> None:
        """Insert, or overwrite every column of the row with the same primary key."""
        keys = tuple(c.name for c in table.primary_key.columns)
        tx.execute(_upsert(self.dialect, table, keys, tuple(values)), values)

    # -- drafts, reviews, report ---------------------------------------------------------

    def save_draft(self, run_id: str, version: int, kind: str, text: str,
                   numbering: Mapping[int, str], word_count: int) -> None:
        """`numbering` maps citation number -> source id (saving a version again replaces it)."""
        with self.transaction() as tx:
            self._replace(tx, drafts, {
                "run_id": run_id, "version": int(version), "kind": kind,
                "text": self.clean_content(text), "numbering": mapped.numbering_in(numbering),
                "word_count": int(word_count), "created_at": utc_now()})

    def get_drafts(self, run_id: str) -> list[Draft]:
        return [mapped.draft(row) for row in self._run_rows(drafts, run_id, "version")]

    def save_review(self, run_id: str, cycle: int, *, draft_version: int, approved: bool,
                    model_approved: bool, issues: Sequence[ReviewIssue], strengths: Sequence[str],
                    checks: JsonObject) -> None:
        with self.transaction() as tx:
            self._replace(tx, reviews, {
                "run_id": run_id, "cycle": int(cycle), "draft_version": int(draft_version),
                "approved": int(bool(approved)), "model_approved": int(bool(model_approved)),
                "issues": self.clean_content([mapped.issue_row(i) for i in issues]),
                "strengths": self.clean_content(list(strengths)),
                "checks": self.clean_content(dict(checks)), "created_at": utc_now()})

    def get_reviews(self, run_id: str) -> list[Review]:
        return [mapped.review(row) for row in self._run_rows(reviews, run_id, "cycle")]

    def save_report(self, run_id: str, markdown: str, *, meta: JsonObject) -> None:
        """One report per run; saving again replaces it."""
        with self.transaction() as tx:
            self._replace(tx, reports, {
                "run_id": run_id, "markdown": self.clean_content(markdown),
                "meta": self.clean_content(dict(meta)), "created_at": utc_now()})

    def get_report(self, run_id: str) -> Report | None:
        return mapped.report(self.query_one(of_run(reports), {"run_id": run_id}))

    # -- hosted engines ------------------------------------------------------------------

    def _engine_meta(self, tx: Tx, run_id: str, engine: str,
                     meta: JsonObject | None) -> JsonObject:
        row = tx.execute(select(engine_reports.c.meta).where(
            engine_reports.c.run_id == run_id, engine_reports.c.engine == engine)
            .with_for_update()).first()
        return {**(row[0] or {} if row else {}), **dict(meta or {})}

    def save_engine_job(self, run_id: str, engine: str, *, remote_id: str | None, status: str,
                        error: str | None = None, meta: JsonObject | None = None) -> None:
        """Record a hosted engine's remote job and its status (the report, if any, is kept).
        `meta`, when given, is merged into the stored meta."""
        now = utc_now()
        with self.transaction() as tx:
            merged = self._engine_meta(tx, run_id, engine, meta)
            tx.execute(_upsert(self.dialect, engine_reports, ("run_id", "engine"),
                               ("remote_id", "status", "meta", "error", "updated_at")), {
                "run_id": run_id, "engine": engine, "remote_id": remote_id, "status": status,
                "meta": self.clean_content(merged), "error": self._redact(error),
                "created_at": now, "updated_at": now})

    def save_engine_report(self, run_id: str, engine: str, markdown: str, *,
                           numbering: Mapping[int, str], meta: JsonObject,
                           status: str = "completed") -> None:
        """Store a hosted engine's finished report; `meta` is merged into the stored meta."""
        now = utc_now()
        with self.transaction() as tx:
            merged = self._engine_meta(tx, run_id, engine, meta)
            tx.execute(_upsert(self.dialect, engine_reports, ("run_id", "engine"),
                               ("status", "markdown", "numbering", "meta", "error", "updated_at")), {
                "run_id": run_id, "engine": engine, "status": status,
                "markdown": self.clean_content(markdown),
                "numbering": mapped.numbering_in(numbering), "meta": self.clean_content(merged),
                "error": None, "created_at": now, "updated_at": now})

    def get_engine_reports(self, run_id: str) -> list[EngineReport]:
        """Every hosted engine row of the run (oldest first), numbering keys as ints."""
        rows = self.query(select(engine_reports).where(engine_reports.c.run_id == run_id)
                          .order_by(engine_reports.c.created_at, engine_reports.c.engine))
        return [mapped.engine_report(row) for row in rows]

    def get_engine_report(self, run_id: str, engine: str) -> EngineReport | None:
        return next((r for r in self.get_engine_reports(run_id) if r.engine == engine), None)

    # -- verification --------------------------------------------------------------------

    def save_verifications(self, run_id: str, verdicts: Iterable[Verdict]) -> None:
        """Upsert by (run_id, claim_id); the stored `created_at` is now."""
        now = utc_now()
        rows = [{"run_id": run_id, "claim_id": str(row.claim_id),
                 "claim": self.clean_content(row.claim), "source_ids": list(row.source_ids),
                 "verdict": row.verdict, "reviewer": row.reviewer, "created_at": now,
                 **{c: self.clean_content(getattr(row, c)) for c in _VERIFICATION_TEXT},
                 "details": self.clean_content(dict(row.details or {}))} for row in verdicts]
        if not rows:
            return
        statement = _upsert(self.dialect, verifications, ("run_id", "claim_id"), tuple(rows[0]))
        with self.transaction() as tx:
            tx.execute_many(statement, rows)

    def get_verifications(self, run_id: str) -> list[Verdict]:
        return [mapped.verdict(row) for row in self._run_rows(verifications, run_id, "id")]
