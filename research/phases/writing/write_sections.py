"""The draft written section by section, all at once, then framed (issue 11).

A whole-report answer takes a model tens of seconds to write, and the run used to write it three
times in a row (draft, two revisions). Here every section is its own writer call, made at the
same time: each sees the shared outline (so terms and scope stay consistent), its own findings
and only the sources those findings cite; numbering is global (write.numbering) so citations
need no renumbering. One short pass then writes the title, the executive summary and the lead-in
to the analysis from the finished key findings. A revision rewrites only the sections the review
named, again in parallel, and stitches them back in.

The sections of the latest version are kept in the step's result (`write` / `revise:N`), so a
revision knows the sections however the model spelled (or translated) the headings. While the
first draft is written, the growing draft is stored as kind "partial" under its version number
(replaced by the full draft) so the dashboard can show it filling in.
"""

from __future__ import annotations

import re
from collections import defaultdict
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import dataclass, field

from research.core.agents import Agent
from research.core.context import RunContext
from research.core.errors import contained
from research.core.prompts import (
    clean_untrusted,
    earlier_text,
    numbered_sources,
    system,
    without_echoed_tags,
)
from research.core.records import Finding, Source, Subtopic
from research.core.shapes import REPORT, Shape
from research.llm.messages import Message
from research.phases.writing.writer import LANGUAGE_RULE, SHORTEN_PROMPT, WRITER_ROLE, is_english
from research.report.checks import word_count
from research.report.citations import normalise

CITED = re.compile(r"\[(\d{1,4})\]")
FRAME = "frame"
KEY_FINDINGS = "key_findings"
COMPARISON = "comparison"
CLOSING = "closing"
GAPS = "gaps"
DIGEST_PER_SUBTOPIC = 4  # findings per subtopic the key findings see
# ...and the other cross-cutting sections (comparison, disagreements and recommendations, gaps
# and confidence), which set the subtopics side by side or weigh them rather than report them
# (issue 31: each of the four prompts carries its digest and the sources it cites)
BRIEF_DIGEST_PER_SUBTOPIC = 3

SECTION_RULES = """Rules:
- Cite every factual sentence with the numbers of the sources listed with your findings, like
  [3] or [2][5]; ONLY those numbers, never an invented source, URL or number.
- Use only the findings and sources given here, not your memory; when the data is
  insufficient, say "insufficient data" instead of guessing.
- Keep fact, inference and opinion apart ("according to ...", "this suggests ...").
- Mark a key claim that rests on one source with "(single source)".
- Prefer recent sources; say when a figure is old.
- Write only your part, starting with its heading line(s) as the outline gives them; repeat
  nothing the other sections cover; no Sources or References section.
- Use the terms of the outline and the question."""

OUTLINE_HEAD = ("OUTLINE OF {what} (several writers write its sections at once; the title and "
                "summary last):")

SECTION_PROMPT = """Question: <question>{question}</question>

{outline}

{rules}
{language}
YOUR PART: {task}
{headings}
Length: at most {words} words (of a report of at most {total} words).
{missing}
FINDINGS (claims with the sources that support them and a confidence of 0-1):
{findings}

SOURCES YOUR FINDINGS CITE (cite by number):
{sources}"""

REVISE_SECTION = """
CURRENT TEXT OF YOUR PART:
{current}

REVIEW FEEDBACK ON YOUR PART (fix every high-severity issue, keep what works):
{feedback}

Reply with the revised part only, headings included."""


@dataclass
class Section:
    """One writer call's part of the report."""
    key: str
    task: str                   # what the part covers, for the prompt
    headings: list[str]         # the outline's heading lines this part writes
    weight: float               # its share of the report's length
    findings: str = ""
    cited: list[str] = field(default_factory=list)  # source ids its findings cite


def outline_text(plan: Sequence[Subtopic], shape: Shape = REPORT) -> str:
    """The shared outline every writer sees: the shape's sections in the report's order."""
    subs = [f"### {clean_untrusted(s.title).replace(chr(10), ' ')}" for s in plan]
    lines = [OUTLINE_HEAD.format(what=f"THE REPORT ({shape.name.upper()})"), *shape.frame[:2]]
    for i, part in enumerate(shape.parts):
        lines += part.headings
        if i == 0 and shape.subtopics:
            lines += [*shape.frame[2:], *(subs or ["### <one per subtopic>"])]
    return "\n".join(lines)


def sections(plan: Sequence[Subtopic], findings: Sequence[Finding],
             numbers: Mapping[str, int], shape: Shape = REPORT) -> list[Section]:
    """The parts written in parallel, each with the findings it needs (the frame comes after),
    in the order of the `shape` the person asked for (a brief has no section per subtopic)."""
    by_sub: dict[str | None, list[Finding]] = defaultdict(list)
    for finding in findings:
        by_sub[finding.subtopic_id].append(finding)
    per_subtopic = max(8, 300 // max(1, len(plan)))
    digest_lines: list[str] = []
    digest_ids: list[str] = []
    brief_lines: list[str] = []
    brief_ids: list[str] = []
    out = []
    for sub in plan:
        title = clean_untrusted(sub.title).replace("\n", " ")
        lines, ids = _finding_lines(by_sub.get(sub.id, [])[:per_subtopic], numbers)
        part = Section(f"sub:{sub.id}", f'the analysis of the subtopic "{title}"',
                       [f"### {title}"], 1.0)
        part.findings = "\n".join(lines) or "- No findings: this subtopic could not be researched."
        part.cited = ids
        out.append(part)
        top, top_ids = _finding_lines(by_sub.get(sub.id, [])[:DIGEST_PER_SUBTOPIC], numbers)
        digest_lines += [f"### Subtopic: {title}", *(top or ["- No findings."])]
        digest_ids += top_ids
        few, few_ids = _finding_lines(by_sub.get(sub.id, [])[:BRIEF_DIGEST_PER_SUBTOPIC],
                                      numbers)
        brief_lines += [f"### Subtopic: {title}", *(few or ["- No findings."])]
        brief_ids += few_ids
    digest = "\n".join(digest_lines)
    # The sections across the subtopics (the full report's closing ones in two parts: each
    # answer is written at the model's speed, so two halves at once take about half the time).
    cross = [Section(p.key, p.task, list(p.headings), p.weight) for p in shape.parts]
    for part in cross:
        if part.key != KEY_FINDINGS:
            part.findings, part.cited = "\n".join(brief_lines), list(dict.fromkeys(brief_ids))
        else:
            part.findings, part.cited = digest, list(dict.fromkeys(digest_ids))
    if not shape.subtopics:  # the whole digest feeds the shape's few sections
        for part in cross:
            part.findings, part.cited = digest, list(dict.fromkeys(digest_ids))
        return cross
    return [cross[0], *out, *cross[1:]]


def frame_section(done: Mapping[str, str], shape: Shape = REPORT) -> Section:
    """The last, short pass: title, summary and (a shape with subtopics) the lead-in to them."""
    part = Section(FRAME, shape.frame_task, list(shape.frame), 1.0)
    part.findings = "KEY FINDINGS AS WRITTEN:\n" + done.get(KEY_FINDINGS, "")
    return part


def _finding_lines(findings: Sequence[Finding],
                   numbers: Mapping[str, int]) -> tuple[list[str], list[str]]:
    lines, ids = [], []
    for f in findings:
        text = clean_untrusted(f.claim)
        if f.kind == "finding":
            cited = [i for i in f.source_ids if i in numbers]
            if cited:
                lines.append(f"- {text} {''.join(f'[{numbers[i]}]' for i in cited)} "
                             f"({f.confidence:.1f})")
                ids += cited
        elif f.kind == "gap":
            lines.append(f"- Gap: {text}")
    return lines, ids


def prompt(ctx: RunContext, part: Section, outline: str, rules: str, numbers: Mapping[str, int],
           sources: Mapping[str, Source], missing: str, total_weight: float) -> str:
    """One part's prompt: the shared text first (the same for every part, so a provider's
    prompt cache can hold it), then what only this part needs."""

    total = ctx.config.words_limit()
    listed = [sources[i] for i in dict.fromkeys(part.cited) if i in sources]
    if part.key == FRAME:  # it cites what the key findings cite
        listed = list(sources.values())
    language = ("" if is_english(ctx.config.report_language)
                else LANGUAGE_RULE.format(language=ctx.config.report_language))
    return SECTION_PROMPT.format(
        question=clean_untrusted(ctx.brief), outline=outline, rules=rules, language=language,
        task=part.task, headings="\n".join(f"<section>{h}</section>" for h in part.headings),
        words=max(60, int(total * part.weight / total_weight)), total=total,
        missing=missing if part.key in (GAPS, FRAME) else "",
        findings=part.findings, sources=numbered_sources(listed, numbers) or "(none)",
    )


def frame_sources(done: Mapping[str, str], numbers: Mapping[str, int],
                  sources: Mapping[str, Source]) -> dict[str, Source]:
    """The sources the key findings cite: all the frame's summary may cite."""
    by_number = {n: sid for sid, n in numbers.items()}
    cited = {by_number.get(int(n)) for n in CITED.findall(done.get(KEY_FINDINGS, ""))}
    return {sid: sources[sid] for sid in sources if sid in cited}


def run_parts(pool: Executor, parts: Sequence[Section], call: Callable[[Section], str],
              on_done: Callable[[str, str], None] | None = None,
              failed: dict[str, BaseException] | None = None) -> dict[str, str]:
    """Each part's text, the calls made at the same time (tasks of the run's executor, `pool`).
    A part that fails is left out: with `failed`, its error is kept there (the caller decides
    what the piece's loss means); without, the first failure is raised once all have ended
    (nothing half-written is kept in its place). A stop, and an error the test suite wants
    raised (errors.contained), is always raised once all have ended."""
    out: dict[str, str] = {}
    if not parts:
        return out
    futures = {part.key: pool.submit(call, part) for part in parts}
    error: BaseException | None = None
    for key, future in futures.items():
        try:
            out[key] = future.result()
        except BaseException as exc:  # noqa: BLE001 - re-raised below, after the others end
            if failed is not None and contained(exc):
                failed[key] = exc
            else:
                error = error or exc
            continue
        if on_done is not None:
            on_done(key, out[key])
    if error is not None:
        raise error
    return out


def part_name(part: Section) -> str:
    """How the warnings name a part: its headings, or the title and summary."""
    if part.key == FRAME:
        return "the title and executive summary"
    names = [h.lstrip("#").strip() for h in part.headings if h.strip()]
    return f"the section \u201c{' and '.join(names)}\u201d" if names else "a section"


def assemble(texts: Mapping[str, str], order: Sequence[str]) -> str:
    """The report from its parts: the frame's title and summary, the key findings, the frame's
    lead-in to the analysis, the subtopics, the rest. A missing part is left out."""
    head, lead_in = split_frame(texts.get(FRAME, ""))
    pieces = [head]
    for key in order:
        if key == FRAME:
            continue
        if key.startswith("sub:") and lead_in:
            pieces.append(lead_in)
            lead_in = ""
        pieces.append(texts.get(key, ""))
    if lead_in:
        pieces.append(lead_in)
    return "\n\n".join(p.strip() for p in pieces if p and p.strip()) + "\n"


def split_frame(text: str) -> tuple[str, str]:
    """The frame's title and summary, and its lead-in to the analysis (from its last "## "
    heading, when it wrote two or more)."""
    lines = text.strip().splitlines()
    h2 = [i for i, line in enumerate(lines) if line.startswith("## ")]
    if len(h2) < 2:
        return text.strip(), ""
    cut = h2[-1]
    return "\n".join(lines[:cut]).strip(), "\n".join(lines[cut:]).strip()


def clean_part(text: str, part: Section, numbers: Mapping[str, int],
               sources: Mapping[str, Source]) -> tuple[str, int, int]:
    """A part's text with citations as [n] (citations.normalise): text, converted, removed.
    A part that came back without a heading gets the outline's."""
    numbering = {n: sid for sid, n in numbers.items()}
    result = normalise(without_echoed_tags(text), numbering, dict(sources))
    body = result.text.strip()
    if part.key != FRAME and part.headings and not body.lstrip().startswith("#"):
        body = f"{part.headings[0]}\n\n{body}"
    return body, result.converted, result.removed


def shorten_parts(ctx: RunContext, writer: Agent, texts: dict[str, str],
                  parts: Mapping[str, Section], weights: Mapping[str, float],
                  finish: Callable[[Section, str], str]) -> dict[str, str]:
    """When the whole runs over REPORT_MAX_WORDS, shorten (in parallel) only the parts over
    their share of it; the rest stays as written, and so does a part whose shortening failed
    (the run says it is longer than asked)."""

    limit = ctx.config.words_limit()
    if word_count("\n\n".join(texts.values())) <= limit:
        return texts
    total = sum(weights.values()) or 1.0
    over = [parts.get(k) or Section(k, "", [], 0) for k, text in texts.items()
            if word_count(text) > limit * weights.get(k, 1.0) / total]

    def shorten(part: Section) -> str:
        text = texts[part.key]
        share = max(40, int(limit * weights.get(part.key, 1.0) / total))
        messages = [system(WRITER_ROLE, ctx.today), Message("user", SHORTEN_PROMPT.format(
            words=word_count(text), max_words=share, draft=earlier_text("part", text)))]
        return finish(part, writer.llm.text(messages, deadline=ctx.step_deadline()))

    failed: dict[str, BaseException] = {}
    shortened = run_parts(ctx.executor.tasks, over, shorten, failed=failed)
    for part in over:
        if part.key in failed:
            are = "are" if part.key == FRAME else "is"
            ctx.lose(f"{part_name(part)} could not be shortened and {are} longer than asked",
                     failed[part.key])
    return {**texts, **shortened}
