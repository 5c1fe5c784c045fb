"""Hosted deep-research engines -> the Run page's Engines tab (issue 4, point 5).

Pure functions, no Streamlit. Each column is one engine's report: its status, cost and
size, and a ReportDocument that the page renders with `views.report_markdown` (the same
escaping as the Report tab) and exports with `research.export`.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from research.core.errors import ResearchError
from research.engines import HOSTED_ENGINES, engine_document, engine_reports
from research.export.document import ReportDocument
from research.export.run_document import build_document_for_run
from storage import Store

STATUS = {
    "queued": "Queued", "in_progress": "Working", "completed": "Completed",
    "failed": "Failed", "cancelled": "Cancelled", "incomplete": "Incomplete",
}
PIPELINE = "pipeline"


@dataclass(frozen=True)
class EngineColumn:
    engine: str
    label: str
    status: str
    cost_usd: float | None
    words: int
    cited_sources: int
    error: str
    doc: ReportDocument | None


def status_text(status: Any) -> str:
    return STATUS.get(str(status or ""), str(status or "—").capitalize())


def has_engines(store: Store, run_id: str, config: Mapping[str, Any]) -> bool:
    """Show the tab when the run asked for a hosted engine or one has stored a job."""
    return config.get("engine") in (*HOSTED_ENGINES, "all") or bool(store.get_engine_reports(run_id))


def columns(store: Store, run_id: str) -> list[EngineColumn]:
    """The built-in pipeline's report (when it wrote one) and every hosted engine's."""
    out: list[EngineColumn] = []
    rows = engine_reports(store, run_id)
    drafts = store.get_drafts(run_id)
    report = store.get_report(run_id)
    if report is not None and any(not d.kind.startswith("engine:") for d in drafts):
        meta = report.meta
        try:
            doc: ReportDocument | None = build_document_for_run(store, run_id)
        except ResearchError:
            doc = None
        cost = sum(u.cost_usd for u in store.get_usage(run_id)
                   if u.role != "engine")  # hosted engines meter as role "engine"
        out.append(EngineColumn(PIPELINE, "Multi-agent research (built in)", "completed",
                                cost, int(meta.get("words") or 0),
                                int(meta.get("cited_sources") or 0), "", doc))
    for row in rows:
        doc = None
        if row.status == "completed":
            try:
                doc = engine_document(store, run_id, row.engine)
            except ResearchError:
                doc = None
        out.append(EngineColumn(row.engine, row.label, row.status, row.cost_usd, row.words,
                                row.cited_sources, row.error or "", doc))
    return out
