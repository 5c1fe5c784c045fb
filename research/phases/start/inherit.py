"""Build on earlier research: a follow-up run starts with its parent's sources and findings.

"Dig deeper" on a report section, or a new question that builds on an earlier run,
creates a run linked to its parent (`parent_run_id`). Its first step copies the parent's
kept sources and findings into a subtopic of its own ("Earlier research"), which the
writer sees like any other; the new plan's subtopics are researched as usual, and URLs
the parent already read are not fetched again.
"""

from __future__ import annotations

from dataclasses import replace

from research.core.context import RunContext
from research.core.events import SourceFound
from research.core.records import Subtopic

SUBTOPIC_ID = "p0"


def run(ctx: RunContext) -> Subtopic | None:
    """Copy the parent's research once; return the inherited pseudo-subtopic, if any."""
    run = ctx.store.get_run(ctx.run_id)
    parent_id = run.parent_run_id if run else None
    if not parent_id:
        return None
    parent = ctx.store.get_run(parent_id)
    title = f"Earlier research: {(parent.question if parent else parent_id)[:150]}"
    subtopic = Subtopic(id=SUBTOPIC_ID, title=title, description=f"Sources of run {parent_id}",
                        round=0, inherited=True)
    if ctx.stored_result("inherit") is not None:
        return subtopic
    # A parent's source as a new one of this run: no row ids, no citation marks.
    sources = [replace(s, subtopic_id=SUBTOPIC_ID, round=0, cited_in=())
               for s in ctx.store.get_sources(parent_id)] if parent else []
    findings = [replace(f, subtopic_id=SUBTOPIC_ID)
                for f in (ctx.store.get_findings(parent_id) if parent else [])
                if f.kind in ("finding", "gap")]
    ctx.store.start_step(ctx.run_id, "inherit", kind="inherit",
                         label="Reusing the earlier run's sources", subtopic_id=SUBTOPIC_ID)
    inserted = ctx.store.complete_research_step(
        ctx.run_id, "inherit", sources=sources, findings=findings,
        result={"parent_run_id": parent_id, "sources": len(sources)},
    )
    for sid in inserted[:50]:
        ctx.emit(SourceFound(ctx.run_id, "Source reused from the earlier run", step="inherit",
                             source_id=sid, subtopic_id=SUBTOPIC_ID))
    return subtopic
