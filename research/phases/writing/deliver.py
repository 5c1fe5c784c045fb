"""Deliver: renumber citations, list cited sources, store the final report (SPEC step 8)."""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Sequence
from dataclasses import dataclass
from datetime import UTC, datetime

from pydantic import BaseModel

from research.core import counts
from research.core.context import WRAP_UP_NOTE, WRAP_UP_REASON, RunContext
from research.core.errors import ResearchError
from research.core.events import Warning
from research.core.prompts import system
from research.core.records import Draft, FailedSubtopic, JsonObject, Source
from research.export import build_document, to_markdown
from research.export.document import LABELS
from research.export.markdown import format_date
from research.export.method import METHOD_TITLE, method_lines, reading_time_line
from research.llm.messages import Message
from research.phases import verify
from research.phases.writing.review import UNCITED_NOTE, current_checks, writer_cited_nothing
from research.phases.writing.writer import is_english
from research.report.checks import cited_numbers, word_count


def run_record(ctx: RunContext) -> str:
    """SPEC's one-line record of the run's parameters."""
    run = ctx.store.get_run(ctx.run_id)
    steps = ctx.store.get_steps(ctx.run_id)
    rounds = max((s.round for s in ctx.store.get_plan(ctx.run_id) or []), default=1)
    subtopics = sum(1 for s in steps if s.kind == "research")
    queries = len(ctx.store.get_queries(ctx.run_id))
    kept = ctx.store.count_sources(ctx.run_id)
    read = kept + len(ctx.store.get_skipped(ctx.run_id))
    started = run.started_at if run else None
    seconds = 0.0
    if started:
        seconds = (datetime.now(UTC) - datetime.fromisoformat(started.replace("Z", "+00:00"))).total_seconds()
    minutes, secs = divmod(int(seconds), 60)
    return (f"Run record: {rounds} research round{'s' if rounds != 1 else ''}, {subtopics} subtopics, {queries} queries, "
            f"{read} pages considered, {kept} sources kept, {minutes} min {secs} s.")


def run(ctx: RunContext, failed: Sequence[FailedSubtopic]) -> None:
    """Store the final report; `failed` are the subtopics its caveats say it does not cover."""

    def make() -> JsonObject:
        current, checks = current_checks(ctx)
        sources = ctx.store.get_sources(ctx.run_id, with_text=False)
        notes = [f"The subtopic \u201c{s.title}\u201d could not be researched ({s.error}); "
                 "the report does not cover it." for s in failed]
        budget = ctx.budget_reason()
        if budget == WRAP_UP_REASON:
            notes.insert(0, WRAP_UP_NOTE)
        elif budget:
            notes.insert(0, f"Stopped by the budget: research ended early because {budget}. "
                            "This report covers only what was gathered until then, without review.")
        notes += _search_notes(ctx) + counts.report_notes(ctx)
        uncited = writer_cited_nothing(ctx)
        notes += [UNCITED_NOTE] if uncited else []
        run = ctx.store.get_run(ctx.run_id)
        verification = verify.summary(ctx, ctx.run_id).line
        record = run_record(ctx)
        labels = translated_labels(ctx)
        created = (run.created_at if run else "") or datetime.now(UTC).isoformat()
        method = method_of(ctx, current, sources, created)
        # What the engine itself wrote (caveats, verification marks, the run record, the
        # method section) in the report's language too: the writer already wrote the rest.
        translations = translate_own_text(ctx, [*notes, verification, record,
                                                *method.values_to_translate(),
                                                *engine_lines(current.text)])
        notes = [translations.get(n, n) for n in notes]
        verification = translations.get(verification, verification)
        record = translations.get(record, record)
        method = method.translated(translations)
        doc = build_document(
            run_id=ctx.run_id, question=ctx.question,
            created_at=created,
            parameters_line=record, draft=apply_translations(current.text, translations),
            numbering=current.numbering, sources=sources, notes=tuple(notes),
            verification=verification, labels=labels, reading_time=method.reading_time,
            method_title=method.title, method=method.lines,
        )
        markdown = to_markdown(doc)
        ctx.store.set_citations(ctx.run_id, _cited_in(doc.body, {s.number: s.source_id for s in doc.sources}))
        meta = {
            "draft_version": current.version, "checks": checks.as_json(),
            "cited_sources": len(doc.sources), "words": word_count(doc.body),
            "failed_subtopics": [s.id for s in failed], "notes": notes,
            "parameters_line": doc.parameters_line, "verification": verification,
            "labels": dict(doc.labels), "language": ctx.config.report_language,
            "translations": translations, "reading_time": doc.reading_time,
            "method_title": doc.method_title, "method": list(doc.method),
            "writer_cited_nothing": uncited,
        }
        ctx.store.save_report(ctx.run_id, markdown, meta=meta)
        return {"cited_sources": len(doc.sources), "words": meta["words"]}

    ctx.run_step("deliver", "deliver", "Finishing the report", make)


@dataclass(frozen=True)
class Method:
    """The reading-time line and the "How this report was made" section of one report."""
    reading_time: str
    title: str
    lines: tuple[str, ...]

    def values_to_translate(self) -> list[str]:
        return [self.reading_time, self.title, *self.lines]

    def translated(self, translations: dict[str, str]) -> Method:
        return Method(translations.get(self.reading_time, self.reading_time),
                      translations.get(self.title, self.title),
                      tuple(translations.get(line, line) for line in self.lines))


def method_of(ctx: RunContext, current: Draft, sources: Sequence[Source],
              created: str) -> Method:
    """Reading time (of the body as it will be delivered) and the method section's lines."""
    doc = build_document(run_id=ctx.run_id, question=ctx.question, created_at=created,
                         parameters_line="", draft=current.text,
                         numbering=current.numbering, sources=sources)
    lines = method_lines(ctx.store, ctx.run_id, ctx.config, date=format_date(created),
                         cited=len(doc.sources))
    return Method(reading_time_line(word_count(doc.body)), METHOD_TITLE, tuple(lines))


class ReportLabels(BaseModel):
    """The exports' fixed words, translated (see research.export.document.LABELS)."""
    date: str
    run: str
    parameters: str
    verification: str
    caveats: str
    sources: str
    no_sources: str
    page: str
    of: str


LABELS_PROMPT = """Translate these labels of a research report into {language}. Keep them short;
reply with the same keys.
{labels}"""


def translated_labels(ctx: RunContext) -> dict[str, str]:
    """The report's fixed words in its language ({} for English: the defaults)."""
    if is_english(ctx.config.report_language):
        return {}
    messages = [
        system("You translate user-interface labels precisely.", ctx.today),
        Message("user", LABELS_PROMPT.format(
            language=ctx.config.report_language,
            labels="\n".join(f"{k}: {v}" for k, v in LABELS.items()))),
    ]
    try:
        answer = ctx.lead.llm.structured(messages, ReportLabels, deadline=ctx.step_deadline())
    except ResearchError as exc:  # English labels are a fine fallback; say so
        ctx.emit(Warning(ctx.run_id, f"Report labels stay in English: {ctx.safe(str(exc))}",
                         step="deliver"))
        return {}
    return answer.model_dump()


class Translations(BaseModel):
    texts: list[str]


TRANSLATE_PROMPT = """Translate each text below into {language}. Keep numbers, names, citation
marks like [3], Markdown marks (*, -, ###) and parentheses as they are. Reply with the
translations in the same order, one per input text.

{texts}"""


def engine_lines(draft: str) -> list[str]:
    """Marks and notes verification put into the draft, which the writer did not write."""
    found = [mark for mark in verify.MARKS if mark in draft]
    found += [line for line in draft.splitlines()
              if line.startswith(verify.NOTE_PREFIXES)]
    return list(dict.fromkeys(found))


def translate_own_text(ctx: RunContext, texts: list[str]) -> dict[str, str]:
    """English text -> the report's language, for what the engine wrote itself."""
    texts = [t for t in dict.fromkeys(texts) if t.strip()]
    if is_english(ctx.config.report_language) or not texts:
        return {}
    messages = [
        system("You translate short texts of a research report precisely.", ctx.today),
        Message("user", TRANSLATE_PROMPT.format(
            language=ctx.config.report_language,
            texts="\n".join(f"{i}. {t}" for i, t in enumerate(texts, start=1)))),
    ]
    try:
        answer = ctx.lead.llm.structured(messages, Translations, deadline=ctx.step_deadline())
    except ResearchError as exc:
        ctx.emit(Warning(ctx.run_id, f"Some report notes stay in English: {ctx.safe(str(exc))}",
                         step="deliver"))
        return {}
    if len(answer.texts) != len(texts):
        return {}
    return {src: dst.strip() for src, dst in zip(texts, answer.texts, strict=True) if dst.strip()}


def apply_translations(draft: str, translations: dict[str, str]) -> str:
    """Replace the engine's own English marks and notes in a draft (longest first)."""
    for english in sorted(translations, key=len, reverse=True):
        draft = draft.replace(english, translations[english])
    return draft


def _search_notes(ctx: RunContext) -> list[str]:
    """"Search degraded" when a provider failed: the report relies on the others."""
    queries = ctx.store.get_queries(ctx.run_id)
    failed: dict[str, int] = defaultdict(int)
    total: dict[str, int] = defaultdict(int)
    for q in queries:
        total[q.provider] += 1
        if q.error:
            failed[q.provider] += 1
    preflight = ctx.stored_result("preflight") or {}
    chosen = set(ctx.config.search_providers)  # only providers the person chose are reported
    down = [f.split(":")[0] for f in preflight.get("search_failed", [])]
    notes = [f"Search degraded: {name} was not reachable, so it was not used."
             for name in down if name in chosen]
    notes += [
        f"Search degraded: {name} failed for {failed[name]} of {total[name]} searches; "
        "results come from the other search providers."
        for name in sorted(failed) if name in chosen
    ]
    return notes


def _cited_in(body: str, numbers: dict[int, str]) -> dict[str, list[str]]:
    cited: dict[str, list[str]] = defaultdict(list)
    section = "Introduction"
    for line in body.splitlines():
        heading = re.match(r"^#{1,3}\s+(.*)", line)
        if heading:
            section = heading.group(1).strip()
            continue
        for n in cited_numbers(line):
            sid = numbers.get(n)
            if sid and section not in cited[sid]:
                cited[sid].append(section)
    return dict(cited)
