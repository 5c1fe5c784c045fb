"""An update inside the pipeline: reuse the earlier version's plan, then say what changed.

An update run (`ResearchConfig.update_since` set; started by research/living/update.py) is a
follow-up of the version it updates (`parent_run_id`): the inherit step copies that
version's sources and findings, so pages it read are not read again. Here it also takes
that version's plan and clarifications instead of planning anew, and its searches ask only
for what was published since (the providers' date filters, research/search/). After
research:

- nothing new found: the earlier version's final draft and verification are kept as they
  were (no writing, review or verification to pay for);
- otherwise the report is written, reviewed and verified as usual from the earlier and the
  new evidence together;

and either way the report opens with "What changed since <date>" (research/living/
changes.py), added as the newest draft so that delivery and every export show it.
"""

from __future__ import annotations

from dataclasses import replace

from research.core.context import RunContext
from research.core.errors import ResearchError
from research.core.records import JsonObject, ResearchResult
from research.export.markdown import escape_markdown
from research.living.changes import Changes, SourceRef, changes
from research.phases.start import inherit
from research.phases.verify.verdict_summary import STEP_KEY as VERIFY_KEY
from research.phases.writing import write
from research.report.checks import word_count
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


def without_superseded(ctx: RunContext, found: ResearchResult) -> ResearchResult:
    """What the writer takes for an update: the earlier version's findings that new evidence
    changed are left out (the new ones replace them), so the report states the new figure,
    not both; everything else the earlier version found still stands and is kept."""
    result = changes(ctx.store, ctx.run_id)
    replaced = {c.old for c in result.changed} if result else set()
    if not replaced:
        return found
    return replace(found, findings=tuple(
        f for f in found.findings
        if not (f.subtopic_id == inherit.SUBTOPIC_ID and f.claim in replaced)))


def keep_earlier(ctx: RunContext) -> None:
    """Nothing new: the earlier version's final draft and its verification become this run's,
    as they were (its sources are this run's too, inherited under the same ids)."""

    def make() -> JsonObject:
        run = ctx.store.get_run(ctx.run_id)
        previous = run.parent_run_id if run else None
        drafts = [d for d in ctx.store.get_drafts(previous) if d.kind != "partial"] if previous else []
        if not previous or not drafts:
            raise ResearchError("The earlier version has no report to keep.")
        final = drafts[-1]
        ctx.store.save_draft(ctx.run_id, 1, final.kind, final.text, final.numbering, final.words)
        ctx.store.save_verifications(ctx.run_id, ctx.store.get_verifications(previous))
        checked = _step_result(ctx, previous, VERIFY_KEY)
        if checked is not None and ctx.stored_result(VERIFY_KEY) is None:
            ctx.store.start_step(ctx.run_id, VERIFY_KEY, kind="verify",
                                 label="Keeping the earlier version's verification")
            ctx.store.finish_step(ctx.run_id, VERIFY_KEY, result=checked)
        return {"kept_from": previous, "draft_version": final.version}

    ctx.run_step("keep_earlier", "write", "Nothing new: keeping the earlier report", make)


def what_changed(ctx: RunContext) -> None:
    """Open the report with "What changed since <date>": a new draft version, the latest one
    with the section after its title, which deliver then renders (and every export)."""

    def make() -> JsonObject:
        found = changes(ctx.store, ctx.run_id)
        if found is None:
            return {"count": 0}
        current = write.latest(ctx)
        numbers = {source_id: n for n, source_id in current.numbering.items()}
        text = with_section(current.text, section(found, numbers))
        ctx.store.save_draft(ctx.run_id, current.version + 1, current.kind, text,
                             current.numbering, word_count(text))
        return found.as_json()

    ctx.run_step(SECTION_KEY, "write", "Saying what changed", make)


def section(found: Changes, numbers: dict[str, int]) -> str:
    """The "What changed since" section (Markdown). Claims and titles came from the web
    through a model: escaped; a source is cited by its number in the report, or named."""
    since = found.since
    added, changed, gone = found.added, found.changed, found.no_longer_supported
    counts = (f"{_n(len(added), 'claim')} added, {len(changed)} changed, "
              f"{len(gone)} no longer supported")
    lines = [f"## What changed since {since}", "",
             f"This version updates the earlier report (run {escape_markdown(found.previous_run_id)}) "
             f"with what was published since {since}: {counts}.", ""]
    if not (added or changed or gone):
        lines += ["Nothing new was found that changes the earlier report; it stands as it was.",
                  ""]
    if added:
        lines += ["**Added**", ""]
        lines += [f"- {escape_markdown(c.claim)} {_cite(c.sources, numbers)}" for c in added]
        lines.append("")
    if changed:
        lines += ["**Changed**", ""]
        for c in changed:
            lines.append(f"- Now: {escape_markdown(c.claim)} {_cite(c.sources, numbers)}")
            lines.append(f"  Before: {escape_markdown(c.old or '')} "
                         f"{_cite(c.old_sources, numbers)}")
        lines.append("")
    if gone:
        lines += ["**No longer supported**", ""]
        lines += [f"- {escape_markdown(c.claim)} {_cite(c.sources, numbers)}: "
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


def _cite(refs: tuple[SourceRef, ...], numbers: dict[str, int]) -> str:
    """Citation marks for the sources the report numbers; the others by name, as text."""
    marks = "".join(f"[{numbers[r.id]}]" for r in refs if r.id in numbers)
    named = [escape_markdown(r.title or r.url) for r in refs if r.id not in numbers]
    if named:
        marks += ("" if not marks else " ") + f"(source: {'; '.join(named)})"
    return marks or "(no source recorded)"


def _n(count: int, word: str) -> str:
    return f"{count} {word}{'s' if count != 1 else ''}"


def _step_result(ctx: RunContext, run_id: str, key: str) -> JsonObject | None:
    for step in ctx.store.get_steps(run_id):
        if step.key == key and step.status == "done":
            return step.result
    return None
