"""An update inside the pipeline: reuse the earlier version's plan, then say what changed.

An update run (`ResearchConfig.update_since` set; started by research/living/update.py) is a
follow-up of the version it updates (`parent_run_id`): the inherit step copies that
version's sources and findings, so pages it read are not read again. Here it also takes
that version's plan and clarifications instead of planning anew, and its searches ask only
for what was published since (the providers' date filters, research/search/). After
research:

- nothing new found: the earlier report is kept as it was, under a "What changed since"
  section that says so (no writing, review or verification to pay for);
- otherwise the report is written, reviewed and verified as usual from the earlier and the
  new evidence together, and opens with "What changed since <date>"
  (research/living/changes.py).
"""

from __future__ import annotations

from research.core.context import RunContext
from research.core.records import JsonObject
from research.export.markdown import escape_markdown, safe_link_url
from research.living.changes import ClaimChange, SourceRef, changes
from research.phases.start import inherit
from storage.versions import link_version, version_link

SECTION_KEY = "what_changed"
HEADER_LINES = 20  # the export's header block is shorter (research/export/markdown.py)


def is_update(ctx: RunContext) -> bool:
    return bool(ctx.config.update_since)


def prepare(ctx: RunContext) -> None:
    """Link the run to the version it updates and reuse that version's plan and answers
    (once: a resumed update finds them stored)."""
    run = ctx.store.get_run(ctx.run_id)
    previous = run.parent_run_id if run else None
    if not previous:
        return
    if version_link(ctx.store, ctx.run_id) is None:
        link_version(ctx.store, ctx.run_id, previous_run_id=previous,
                     since=ctx.config.update_since)
    inherited = inherit.run(ctx)
    if ctx.stored_result("clarify") is None:
        asked = _step_result(ctx, previous, "clarify") or {}
        ctx.store.start_step(ctx.run_id, "clarify", kind="clarify",
                             label="Reusing the earlier version's clarifications")
        ctx.store.finish_step(ctx.run_id, "clarify", result={
            "questions": list(asked.get("questions") or []),
            "answers": list(asked.get("answers") or [])})
    if ctx.stored_result("plan") is None:
        planned = [s for s in ctx.store.get_plan(previous) or [] if not s.inherited]
        ctx.store.start_step(ctx.run_id, "plan", kind="plan",
                             label="Reusing the earlier version's plan")
        ctx.store.save_plan(ctx.run_id, ([inherited] if inherited else []) + planned)
        ctx.store.finish_step(ctx.run_id, "plan", result={"subtopics": len(planned),
                                                          "reused_from": previous})


def found_nothing_new(ctx: RunContext) -> bool:
    """True when the update's own research kept no source (everything found was read)."""
    return not any(s.subtopic_id != inherit.SUBTOPIC_ID
                   for s in ctx.store.get_sources(ctx.run_id, with_text=False))


def keep_earlier(ctx: RunContext) -> None:
    """Nothing new: the earlier report, as it was, under "What changed since" saying so."""

    def make() -> dict[str, object]:
        run = ctx.store.get_run(ctx.run_id)
        previous = run.parent_run_id if run else None
        report = ctx.store.get_report(previous) if previous else None
        if report is None:
            return {"kept": False}
        markdown = report.markdown.replace(f"**Run:** {previous}", f"**Run:** {ctx.run_id}", 1)
        ctx.store.save_report(ctx.run_id, markdown, meta={**report.meta, "kept_from": previous})
        return {"kept": True}

    ctx.run_step("keep_earlier", "deliver", "Nothing new: keeping the earlier report", make)


def what_changed(ctx: RunContext) -> None:
    """Open the delivered report with "What changed since <date>" (stored in its meta too)."""

    def make() -> dict[str, object]:
        found = changes(ctx.store, ctx.run_id)
        report = ctx.store.get_report(ctx.run_id)
        if found is None or report is None:
            return {"count": 0}
        markdown = with_section(report.markdown, section(found.since, found.added,
                                                         found.changed, found.no_longer_supported,
                                                         previous_run_id=found.previous_run_id))
        ctx.store.save_report(ctx.run_id, markdown,
                              meta={**report.meta, "what_changed": found.as_json()})
        return {"count": found.count, "score": found.score}

    ctx.run_step(SECTION_KEY, "deliver", "Saying what changed", make)


def section(since: str, added: tuple[ClaimChange, ...], changed: tuple[ClaimChange, ...],
            gone: tuple[ClaimChange, ...], *, previous_run_id: str) -> str:
    """The "What changed since" section (Markdown). Claims and titles came from the web
    through a model: escaped, and links only to http(s) addresses."""
    counts = (f"{_n(len(added), 'claim')} added, {len(changed)} changed, "
              f"{len(gone)} no longer supported")
    lines = [f"## What changed since {since}", "",
             f"This version updates the earlier report (run {escape_markdown(previous_run_id)}) "
             f"with what was published since {since}: {counts}.", ""]
    if not (added or changed or gone):
        lines += ["Nothing new was found that changes the earlier report; it stands as it was.",
                  ""]
    if added:
        lines += ["**Added**", ""]
        lines += [f"- {escape_markdown(c.claim)} ({_sources(c.sources)})" for c in added]
        lines.append("")
    if changed:
        lines += ["**Changed**", ""]
        for c in changed:
            lines.append(f"- Now: {escape_markdown(c.claim)} ({_sources(c.sources)})")
            lines.append(f"  Before: {escape_markdown(c.old or '')} ({_sources(c.old_sources)})")
        lines.append("")
    if gone:
        lines += ["**No longer supported**", ""]
        lines += [f"- {escape_markdown(c.claim)} ({_sources(c.sources)}): "
                  f"{escape_markdown(c.note)}" for c in gone]
        lines.append("")
    return "\n".join(lines)


def with_section(markdown: str, block: str) -> str:
    """The report with `block` opening it: after its header (the title and the lines of
    date, run and parameters up to the `---` rule), or after the title line when it has no
    such header; in place of an earlier version's own "What changed" section."""
    lines = _without_section(markdown.split("\n"))
    rule = next((i for i, line in enumerate(lines[:HEADER_LINES]) if line.strip() == "---"), None)
    at = rule + 1 if rule is not None else (1 if lines and lines[0].startswith("# ") else 0)
    return "\n".join([*lines[:at], "", block.rstrip(), "", *lines[at:]]).rstrip() + "\n"


def _without_section(lines: list[str]) -> list[str]:
    start = next((i for i, line in enumerate(lines) if line.startswith("## What changed since")),
                 None)
    if start is None:
        return lines
    end = next((i for i in range(start + 1, len(lines))
                if lines[i].startswith("#") or lines[i].strip() == "---"), len(lines))
    return lines[:start] + lines[end:]


def _sources(refs: tuple[SourceRef, ...]) -> str:
    if not refs:
        return "no source recorded"
    parts = []
    for ref in refs:
        title = escape_markdown(ref.title or ref.url)
        url = safe_link_url(ref.url) if ref.url else None
        parts.append(f"[{title}]({url})" if url else title)
    return "source: " + "; ".join(parts) if len(parts) == 1 else "sources: " + "; ".join(parts)


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _step_result(ctx: RunContext, run_id: str, key: str) -> JsonObject | None:
    for step in ctx.store.get_steps(run_id):
        if step.key == key and step.status == "done":
            return step.result
    return None
