"""Rebuild a finished run's ReportDocument from the store, for any export format."""

from __future__ import annotations

from research.core.errors import ResearchError
from research.export.doc_passages import attach_passages
from research.export.document import ReportDocument, build_document
from storage import Store


def build_document_for_run(store: Store, run_id: str) -> ReportDocument:
    run = store.get_run(run_id)
    report = store.get_report(run_id)
    if run is None or report is None:
        raise ResearchError(f"Run {run_id} has no finished report yet.")
    meta = report.meta
    drafts = {d.version: d for d in store.get_drafts(run_id)}
    draft = drafts.get(int(meta.get("draft_version") or 0)) or drafts[max(drafts)]
    text = draft.text
    for english in sorted(meta.get("translations") or {}, key=len, reverse=True):
        text = text.replace(english, meta["translations"][english])  # the engine's own words
    return attach_passages(store, build_document(
        run_id=run_id, question=run.question, created_at=run.created_at,
        parameters_line=meta.get("parameters_line", ""), draft=text,
        numbering=draft.numbering, sources=store.get_sources(run_id, with_text=False),
        notes=tuple(meta.get("notes", ())),
        verification=meta.get("verification") or _verification_line(store, run_id),
        labels=meta.get("labels") or None, reading_time=meta.get("reading_time") or "",
        method_title=meta.get("method_title") or "", method=meta.get("method") or (),
    ))


def _verification_line(store: Store, run_id: str) -> str:
    """The verify step's summary line, for reports delivered before it was kept in meta."""
    step = store.get_step(run_id, "verify")
    return str(step.result.get("line") or "") if step and step.status == "done" else ""
