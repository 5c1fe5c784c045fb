"""Hosted deep-research engines beside the built-in pipeline (SPEC "Engines").

    run_hosted(ctx, "openai-deep-research")   # one step: start/poll/normalise, see hosted.py
    merge_for_delivery(ctx, engines)          # give deliver a draft when no pipeline wrote one
    engine_reports(store, run_id)             # the engines' reports, for side-by-side display
    engine_document(store, run_id, engine)    # one engine's report as a ReportDocument (export)

All engines of a run share one source list (de-duplicated by canonical URL), so the
pipeline's report, each engine's report and every export cite the same stored sources.
"""

from __future__ import annotations

from dataclasses import replace

from research.core.context import RunContext
from research.core.errors import ResearchError
from research.core.records import EngineReport
from research.engines.hosted import HOSTED_ENGINES, LABELS, build_client, run_hosted
from research.export.document import ReportDocument, build_document
from research.report.checks import word_count
from storage import Store

__all__ = [
    "HOSTED_ENGINES", "LABELS", "build_client", "engine_document", "engine_reports",
    "merge_for_delivery", "run_hosted",
]


def merge_for_delivery(ctx: RunContext, engines: list[str]) -> None:
    """Make sure the deliver step has a draft to export.

    When the built-in pipeline wrote a draft (engine "pipeline" or "all"), it stays the main
    report and nothing changes: the hosted reports sit beside it (`engine_reports`) and their
    sources are already in the run's one source list. When no draft exists (a hosted-only
    run, or "all" whose pipeline part failed), the first completed engine report, in the
    order of `engines`, becomes draft version 1 of kind "engine:<name>", with its numbering,
    so `phases.deliver` exports it like any other report. Calling it again is harmless.
    """
    drafts = ctx.store.get_drafts(ctx.run_id)
    if any(not d.kind.startswith("engine:") for d in drafts):
        return
    reports = {r.engine: r for r in ctx.store.get_engine_reports(ctx.run_id)}
    for name in engines:
        report = reports.get(name)
        if report is None or report.status != "completed" or not report.markdown.strip():
            continue
        ctx.store.save_draft(ctx.run_id, 1, f"engine:{name}", report.markdown,
                             report.numbering or {}, word_count(report.markdown))
        return
    raise ResearchError(
        "None of the hosted engines produced a report, so there is nothing to deliver."
    )


def engine_reports(store: Store, run_id: str) -> list[EngineReport]:
    """The run's hosted-engine reports, OpenAI first, then Gemini, for a side-by-side view;
    each labelled (its stored label, else the engine's name in plain words)."""
    order = {name: i for i, name in enumerate(HOSTED_ENGINES)}
    rows = sorted(store.get_engine_reports(run_id), key=lambda r: order.get(r.engine, 99))
    return [r if r.label else replace(r, meta={**(r.meta or {}), "label": label(r.engine)})
            for r in rows]


def label(engine: str) -> str:
    return LABELS.get(engine, engine)


def engine_document(store: Store, run_id: str, engine: str) -> ReportDocument:
    """One engine's finished report as a ReportDocument, for `to_markdown` / `to_pdf`."""
    run = store.get_run(run_id)
    row = store.get_engine_report(run_id, engine)
    if run is None or row is None or row.status != "completed":
        raise ResearchError(f"Run {run_id} has no finished {label(engine)} report.")
    return build_document(
        run_id=run_id, question=run.question, created_at=run.created_at,
        parameters_line=(f"Engine: {row.label or engine}; {row.cited_sources} "
                         f"sources cited; {row.words} words."),
        draft=row.markdown, numbering=row.numbering or {}, sources=store.get_sources(run_id),
    )
