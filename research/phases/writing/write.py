"""Draft: the writer turns the gathered findings into a cited report (SPEC step 5).

Sources are numbered 1..N in a stable order (subtopic, then relevance); the draft cites
those numbers and the mapping number -> source id is stored with every draft.
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Callable, Iterable, Mapping, Sequence

from research.core.agents import Agent, Role
from research.core.context import RunContext
from research.core.events import DraftStarted
from research.core.prompts import (
    clean_untrusted,
    earlier_text,
    numbered_sources,
    system,
    without_echoed_tags,
)
from research.core.records import (
    Draft,
    Finding,
    JsonObject,
    ResearchResult,
    ReviewIssue,
    Source,
)
from research.llm.messages import Message
from research.phases.writing.sections_job import SectionJob, route
from research.phases.writing.writer import (
    LANGUAGE_RULE,
    SHORTEN_PROMPT,
    WRITER_ROLE,
    draft_step,
    is_english,
    missing_text,
    save,
)
from research.report.checks import word_count
from research.report.citations import normalise

STRUCTURE = """Structure (Markdown, these headings in this order):
# <a clear title>
## Executive summary      (the answer first, in a few sentences)
## Key findings           (by theme)
## Analysis by subtopic   (a ### heading per subtopic)
## Comparison             (a Markdown table where a comparison helps)
## Where sources disagree (both sides and why; say so if they agree)
## Recommendations
## Open questions and gaps
## Confidence assessment  (how sure, and why)

Rules:
- Cite every factual sentence with the numbers of the sources below, like [3] or [2][5].
  Cite ONLY those numbers; never invent a source, a URL or a number.
- Use only the findings and sources given here, not your own memory. When the data is
  insufficient, say "insufficient data" instead of guessing.
- Keep fact, inference and opinion apart ("according to ...", "this suggests ...").
- Mark a key claim that rests on one source with "(single source)".
- Prefer recent sources; say when a figure is old. Prefer stronger kinds of source (peer-reviewed paper, government, reference) over blogs and forums; say when a claim rests only on weak ones.
- Do not write a Sources or References section: it is added automatically.
- At most {max_words} words."""

DRAFT_PROMPT = """Write the research report answering this question:
<question>{question}</question>

{structure}

FINDINGS BY SUBTOPIC (claims with the sources that support them):
{findings}
{missing}
SOURCES (cite by number):
{sources}"""

REVISE_PROMPT = """Revise the research report below to address the REVIEW FEEDBACK. Keep what
works, fix every high-severity issue, and keep citing only the numbered sources.

Question: <question>{question}</question>

REVIEW FEEDBACK:
{feedback}

{structure}

FINDINGS BY SUBTOPIC:
{findings}
{missing}
SOURCES (cite by number):
{sources}

CURRENT REPORT:
{draft}

Reply with the full revised report only."""

def structure(ctx: RunContext) -> str:
    """The report structure and rules, in the report's language."""
    text = STRUCTURE.format(max_words=ctx.config.words_limit())
    if not is_english(ctx.config.report_language):
        text += LANGUAGE_RULE.format(language=ctx.config.report_language)
    return text


MAX_FINDINGS = 300  # keeps the writer's prompt within any model's context window


def numbering(sources: Iterable[Source]) -> dict[str, int]:
    return {s.id: i for i, s in enumerate(sources, start=1)}


def context_text(
    found: ResearchResult, sources: Sequence[Source], numbers: dict[str, int],
) -> tuple[str, str, str]:
    """The findings, missing-subtopics and sources blocks shared by draft and revision."""
    by_sub: dict[str | None, list[Finding]] = defaultdict(list)
    for finding in found.findings:
        by_sub[finding.subtopic_id].append(finding)
    parts = []
    per_subtopic = max(8, MAX_FINDINGS // max(1, len(found.subtopics)))
    for sub in found.subtopics:
        lines = [f"### Subtopic: {sub.title}"]
        for f in by_sub.get(sub.id, [])[:per_subtopic]:
            text = clean_untrusted(f.claim)
            if f.kind == "finding":
                cites = "".join(f"[{numbers[i]}]" for i in f.source_ids if i in numbers)
                if cites:
                    lines.append(f"- {text} {cites} (confidence {f.confidence:.1f})")
            elif f.kind == "gap":
                lines.append(f"- Gap: {text}")
        if len(lines) == 1:
            lines.append("- No findings: this subtopic could not be researched.")
        parts.append("\n".join(lines))
    return "\n\n".join(parts), missing_text(found.failed), numbered_sources(sources, numbers)


def draft(ctx: RunContext, found: ResearchResult) -> Draft:
    """Write draft version 1, section by section at the same time (skipped when stored).
    Over budget, the write-up is one whole-report call: the fewest tokens past the cap."""

    def make() -> JsonObject:
        writer = ctx.lead.delegate(Role.WRITER)
        sources = list(found.sources)
        numbers = numbering(found.sources)
        if ctx.budget_reason() and not ctx.wrapping_up():
            return _draft_whole(ctx, writer, found, sources, numbers)
        ctx.emit(DraftStarted(ctx.run_id, f"The writer team is drafting the report section by "
                              f"section from {len(sources)} sources", step="write",
                              sources=len(sources)))
        job = SectionJob(ctx, writer, found, sources, numbers)
        texts = job.write_all(version=1)
        text = job.report(texts)
        save(ctx, 1, "draft", text, numbers, job.counts)
        return {"version": 1, "words": word_count(text), **job.counts,
                "sections": texts, "order": job.order}

    ctx.run_step("write", "write", "Writing the first draft", make)
    return latest(ctx)


def latest(ctx: RunContext) -> Draft:
    """The newest whole draft (a draft being written section by section is not one yet)."""
    return [d for d in ctx.store.get_drafts(ctx.run_id) if d.kind != "partial"][-1]


def _draft_whole(ctx: RunContext, writer: Agent, found: ResearchResult,
                 sources: Sequence[Source], numbers: dict[str, int]) -> JsonObject:
    """The whole report in one call (the write-up after a budget stop)."""
    findings, missing, listing = context_text(found, sources, numbers)
    ctx.emit(DraftStarted(
        ctx.run_id, f"The writer is drafting from {len(sources)} sources", step="write",
        sources=len(sources)))
    prompt = DRAFT_PROMPT.format(
        question=clean_untrusted(ctx.brief),
        structure=structure(ctx), findings=findings, missing=missing, sources=listing,
    )
    messages = [system(WRITER_ROLE, ctx.today), Message("user", prompt)]
    text, counts = written(ctx, writer, writer.llm.text(messages, deadline=ctx.step_deadline()),
                           numbers, sources)
    save(ctx, 1, "draft", text, numbers, counts)
    return {"version": 1, "words": word_count(text), **counts}


def revise(
    ctx: RunContext, cycle: int, found: ResearchResult,
    feedback: str, issues: Sequence[ReviewIssue] = (),
    on_final: Callable[[str, Mapping[int, str], list[str]], None] | None = None,
) -> None:
    """Rewrite only the sections the review flagged, in parallel; the rest stays as it is.
    `on_final(draft, numbering, unflagged parts)` is told, before the rewriting starts, which
    parts this revision leaves as they are (the last cycle's: they are final).
    A draft written whole (an older run) is revised whole."""

    def make() -> JsonObject:
        writer = ctx.lead.delegate(Role.WRITER)
        current = latest(ctx)
        sources = ctx.store.get_sources(ctx.run_id, with_text=False)
        numbers = {sid: n for n, sid in current.numbering.items()}
        stored = ctx.stored_result(draft_step(current.version)) or {}
        version = current.version + 1
        if not stored.get("sections"):
            return _revise_whole(ctx, writer, cycle, found, feedback, current, sources, numbers)
        ctx.emit(DraftStarted(ctx.run_id, f"The writer team is revising the flagged sections of "
                              f"draft {current.version}", step=f"revise:{cycle}",
                              revising=current.version))
        job = SectionJob(ctx, writer, found, sources, numbers, order=stored.get("order"))
        texts = dict(stored["sections"])
        flagged = route(issues, texts, job, feedback)
        if on_final is not None:
            on_final(current.text, current.numbering,
                     [text for key, text in texts.items() if key not in flagged])
        texts = job.revise(texts, flagged)
        text = job.report(texts)
        save(ctx, version, "revision", text, numbers, job.counts)
        return {"version": version, "words": word_count(text), **job.counts, "sections": texts,
                "order": job.order, "revised": sorted(flagged)}

    ctx.run_step(f"revise:{cycle}", "revise", f"Revising the draft (cycle {cycle})", make)


def _revise_whole(ctx: RunContext, writer: Agent, cycle: int, found: ResearchResult,
                  feedback: str, current: Draft,
                  sources: Sequence[Source], numbers: dict[str, int]) -> JsonObject:
    findings, missing, listing = context_text(found, sources, numbers)
    ctx.emit(DraftStarted(ctx.run_id, f"The writer is revising draft {current.version}",
                          step=f"revise:{cycle}", revising=current.version))
    prompt = REVISE_PROMPT.format(
        question=clean_untrusted(ctx.brief), feedback=earlier_text("review_feedback", feedback),
        structure=structure(ctx), findings=findings, missing=missing, sources=listing,
        draft=earlier_text("current_report", current.text),
    )
    messages = [system(WRITER_ROLE, ctx.today), Message("user", prompt)]
    text, counts = written(ctx, writer, writer.llm.text(messages, deadline=ctx.step_deadline()),
                           numbers, sources)
    version = current.version + 1
    save(ctx, version, "revision", text, numbers, counts)
    return {"version": version, "words": word_count(text), **counts}


def written(ctx: RunContext, writer: Agent, text: str, numbers: dict[str, int],
            sources: Sequence[Source]) -> tuple[str, dict[str, int]]:
    """The writer's text with every citation as [n] (whatever style the model used), before any
    check or the length limit sees it (URLs are not words); what pointed at nothing gathered is
    removed and counted. The shortened text is normalised again: the shortening is a new answer."""
    numbering = {n: sid for sid, n in numbers.items()}
    by_id = {s.id: s for s in sources}
    first = normalise(without_echoed_tags(text), numbering, by_id)
    try:
        shorter = fit_length(ctx, writer, first.text)
    except Exception as exc:  # noqa: BLE001 - costs the length, not the report (lose decides)
        ctx.lose("the report could not be shortened and is longer than asked", exc)
        shorter = first.text
    final = normalise(without_echoed_tags(shorter), numbering, by_id)
    return final.text, {"citations_converted": first.converted + final.converted,
                        "citations_removed": first.removed + final.removed}


def fit_length(ctx: RunContext, writer: Agent, text: str) -> str:
    """One shortening pass when the draft runs clearly over REPORT_MAX_WORDS."""
    limit = ctx.config.words_limit()
    words = word_count(text)
    if words <= limit:
        return text
    messages = [
        system(WRITER_ROLE, ctx.today),
        Message("user", SHORTEN_PROMPT.format(words=words, max_words=limit,
                                              draft=earlier_text("report", text))),
    ]
    return writer.llm.text(messages, deadline=ctx.step_deadline())
