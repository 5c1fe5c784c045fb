"""Writing and revising the report's sections at the same time (see write_sections.py).

`SectionJob` holds what every section call of one step shares (outline, rules, numbering,
citation counts); `route` sends each review issue and each failed check to the sections it is
about, so a revision rewrites those and nothing else.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping, Sequence

from research.core.agents import Agent
from research.core.context import RunContext
from research.core.prompts import clean_untrusted, earlier_text, system
from research.core.records import ResearchResult, ReviewIssue, Source
from research.llm.messages import Message
from research.phases.writing.write_sections import (
    FRAME,
    KEY_FINDINGS,
    REVISE_SECTION,
    SECTION_RULES,
    Section,
    assemble,
    clean_part,
    frame_section,
    frame_sources,
    outline_text,
    part_name,
    prompt,
    run_parts,
    sections,
    shorten_parts,
)
from research.phases.writing.writer import WRITER_ROLE, missing_text, save
from research.report.checks import MIN_CITED_SHARE, run_checks, word_count


class SectionJob:
    """One step's section calls: the first draft, or a revision of some sections."""

    def __init__(self, ctx: RunContext, writer: Agent, found: ResearchResult,
                 sources: Sequence[Source], numbers: Mapping[str, int],
                 order: Sequence[str] | None = None) -> None:
        self.ctx, self.writer, self.numbers = ctx, writer, numbers
        self.sources = {s.id: s for s in sources}
        self.shape = ctx.config.shape()
        self.parts = {p.key: p for p in sections(found.subtopics, found.findings, numbers,
                                                 self.shape)}
        self.order = list(order or self.parts)
        self.weights = {k: p.weight for k, p in self.parts.items()} | {FRAME: 1.0}
        self.outline = outline_text(found.subtopics, self.shape)
        self.missing = missing_text(found.failed)
        self.counts = {"citations_converted": 0, "citations_removed": 0}
        self._lock = threading.Lock()

    # --- one call -------------------------------------------------------------------------

    def call(self, part: Section, extra: str = "",
             sources: Mapping[str, Source] | None = None) -> str:
        """One part from the writer, its citations as [n] (counted)."""
        text = prompt(self.ctx, part, self.outline, SECTION_RULES, self.numbers,
                      self.sources if sources is None else sources, self.missing,
                      sum(self.weights.values()))
        messages = [system(WRITER_ROLE, self.ctx.today), Message("user", text + extra)]
        answer = self.writer.llm.text(messages, deadline=self.ctx.step_deadline())
        return self.finish(part, answer)

    def finish(self, part: Section, answer: str) -> str:
        part = self.parts.get(part.key, part)  # (a shortening names the part by its key)
        cleaned, converted, removed = clean_part(answer, part, self.numbers, self.sources)
        with self._lock:
            self.counts["citations_converted"] += converted
            self.counts["citations_removed"] += removed
        return cleaned

    def _frame(self, texts: Mapping[str, str], extra: str = "") -> str:
        return self.call(frame_section(texts, self.shape), extra,
                         frame_sources(texts, self.numbers, self.sources))

    # --- the draft and a revision ----------------------------------------------------------

    def write_all(self, version: int) -> dict[str, str]:
        """Every section at once (the growing draft stored as "partial" as each one ends),
        then the frame from the finished key findings."""
        texts: dict[str, str] = {}

        def one(part: Section) -> str:
            text = self.call(part)
            with self._lock:  # stored in the order assembled: the live draft only grows
                texts[part.key] = text
                save_partial(self.ctx, version, self.report(texts), self.numbers)
            return text

        failed: dict[str, BaseException] = {}
        run_parts(self.ctx.executor.tasks, list(self.parts.values()), one, failed=failed)
        if failed and len(failed) == len(self.parts):  # nothing written: the writer is down
            raise next(iter(failed.values()))
        for key, exc in failed.items():
            self.ctx.lose(f"{part_name(self.parts[key])} could not be written and is left out "
                          "of the report", exc, step="write")
        try:
            texts[FRAME] = self._frame(texts)
        except Exception as exc:  # noqa: BLE001 - costs the title and summary (lose decides)
            self.ctx.lose("the title and executive summary could not be written and are left "
                          "out of the report", exc, step="write")
        return self._shortened(texts)

    def _shortened(self, texts: dict[str, str]) -> dict[str, str]:
        parts = {**self.parts, FRAME: frame_section(texts, self.shape)}
        return shorten_parts(self.ctx, self.writer, texts, parts, self.weights, self.finish)

    def revise(self, texts: Mapping[str, str], flagged: Mapping[str, Sequence[str]]) -> dict[str, str]:
        """The flagged sections rewritten at the same time. The frame is revised beside the key
        findings, told what is being changed in them (its summary is drawn from them; the next
        review reads both together)."""
        out = dict(texts)
        notes = {k: list(v) for k, v in flagged.items()}
        if FRAME in notes and KEY_FINDINGS in notes:
            notes[FRAME].append("- (The key findings are being revised at the same time for: "
                                + " ".join(line.lstrip("- ") for line in notes[KEY_FINDINGS]) + ")")

        def redo(part: Section) -> str:
            extra = REVISE_SECTION.format(
                current=earlier_text("current_part", texts.get(part.key, "")),
                feedback=earlier_text("review_feedback", "\n".join(notes[part.key])))
            if part.key == FRAME:
                return self._frame(texts, extra)
            return self.call(part, extra)

        parts = [self.parts[k] if k != FRAME else frame_section(texts, self.shape) for k in flagged
                 if k in self.parts or k == FRAME]
        failed: dict[str, BaseException] = {}
        out.update(run_parts(self.ctx.executor.tasks, parts, redo, failed=failed))
        for part in parts:
            if part.key in failed:
                kept = "are kept as they were" if part.key == FRAME else "is kept as it was"
                self.ctx.lose(f"{part_name(part)} could not be revised and {kept}",
                              failed[part.key])
        return self._shortened(out)

    def report(self, texts: Mapping[str, str]) -> str:
        return assemble(texts, self.order)


def save_partial(ctx: RunContext, version: int, text: str, numbers: Mapping[str, int]) -> None:
    """The draft so far, under the version being written (the full draft replaces it)."""
    ctx.store.save_draft(ctx.run_id, version, "partial", text,
                         {n: sid for sid, n in numbers.items()}, word_count(text))


# --- which sections an issue is about ------------------------------------------------------

def _plain(text: str) -> str:
    return " ".join(text.replace("#", " ").replace(":", " ").lower().split())


def labels(job: SectionJob, texts: Mapping[str, str]) -> dict[str, list[str]]:
    """Each part's names: the outline's headings and the headings it wrote (translated ones too)."""
    out: dict[str, list[str]] = {}
    for key in [*job.order, FRAME]:
        part = job.parts.get(key)
        names = [_plain(h) for h in (part.headings if part else ["title", "executive summary"])]
        names += [_plain(line) for line in texts.get(key, "").splitlines() if line.startswith("#")]
        out[key] = [n for n in names if len(n) >= 3 and "<" not in n]
    out[FRAME] = [n for n in out[FRAME] if n != "analysis by subtopic"]
    return out


def matching(section: str, names: Mapping[str, list[str]], order: Sequence[str]) -> list[str]:
    """The parts a review issue's section names; "Analysis by subtopic" means every subtopic."""
    wanted = _plain(section)
    if len(wanted) < 3 or wanted in ("general", "overall", "report", "whole report"):
        return []
    hits = [k for k, ns in names.items() if any(n == wanted or n in wanted or wanted in n for n in ns)]
    if not hits and "analysis" in wanted:
        hits = [k for k in order if k.startswith("sub:")]
    return hits


def route(issues: Sequence[ReviewIssue], texts: Mapping[str, str], job: SectionJob,
          feedback: str) -> dict[str, list[str]]:
    """Feedback lines per part to rewrite. An issue naming no known section goes to the frame,
    or, when high-severity, to every part (it is about the whole); a failed citation check goes
    to the parts that fail it; an over-long report to the parts over their share."""
    names = labels(job, texts)
    flagged: dict[str, list[str]] = {}
    for issue in issues:
        line = (f"- [{issue.severity}] {issue.section or 'general'}: "
                f"{clean_untrusted(issue.issue)}"
                + (f" Suggestion: {clean_untrusted(issue.suggestion)}" if issue.suggestion else ""))
        keys = matching(issue.section, names, job.order)
        if not keys:
            keys = [*texts] if issue.severity == "high" else [FRAME]
        for key in keys:
            flagged.setdefault(key, []).append(line)
    for key, lines in check_lines(job, texts).items():
        flagged.setdefault(key, []).extend(lines)
    if not flagged:  # not approved, nothing specific: the summary gets the general note
        flagged[FRAME] = [feedback or "- No specific issues; polish the summary."]
    return flagged


def check_lines(job: SectionJob, texts: Mapping[str, str]) -> dict[str, list[str]]:
    """The deterministic checks, part by part: citations that resolve, the cited share, and
    the length of the whole."""
    ctx = job.ctx
    numbering = {n: sid for sid, n in job.numbers.items()}
    out: dict[str, list[str]] = {}
    for key, text in texts.items():
        checks = run_checks(text, numbering, job.sources, max_words=10**9,
                            max_age_days=ctx.config.source_max_age_days, today=ctx.today)
        lines = []
        if checks.unresolved_citations:
            nums = ", ".join(f"[{n}]" for n in checks.unresolved_citations)
            lines.append(f"- [check] Citations {nums} match no listed source: remove or fix them.")
        if checks.cited_share < MIN_CITED_SHARE and key != FRAME:
            examples = " | ".join(f'"{e}"' for e in checks.uncited_examples)
            lines.append(f"- [check] Only {checks.cited_share:.0%} of factual statements cite "
                         f"a source (at least {MIN_CITED_SHARE:.0%} must)"
                         + (f"; without a citation: {examples}" if examples else "."))
        if lines:
            out[key] = lines
    limit = ctx.config.words_limit()
    total = sum(job.weights.values()) or 1.0
    if word_count(job.report(texts)) > limit:
        for key, text in texts.items():
            share = int(limit * job.weights.get(key, 1.0) / total)
            if word_count(text) > share:
                out.setdefault(key, []).append(
                    f"- [check] This part has {word_count(text)} words; keep it under {share}.")
    return out


__all__ = ["SectionJob", "route", "save", "save_partial"]
