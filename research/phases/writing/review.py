"""Review cycles: a reviewer (no tools) judges the draft, the writer revises (SPEC step 6).

At most REVIEW_CYCLES cycles, ending early once approved. Approval needs the reviewer's
approval, no high-severity issue, and the deterministic checks passing (citations
resolve, >= 80% of claims cited, within the word limit, sources mostly recent).
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from functools import partial
from typing import Literal

from pydantic import BaseModel, Field

from research.core.agents import Role
from research.core.context import RunContext
from research.core.events import IssueCounts, ReviewCycle
from research.core.prompts import clean_untrusted, earlier_text, numbered_sources, system
from research.core.records import Draft, JsonObject, ResearchResult
from research.core.records import ReviewIssue as StoredIssue
from research.llm.messages import Message
from research.phases.verify.early import EarlyCheck
from research.phases.writing import write, writer
from research.phases.writing.write_sections import CITED, assemble
from research.report.checks import DraftChecks, cited_numbers, claim_sentences, problems, run_checks
from storage.rows import review_issue

REVIEWER_ROLE = (
    "You are a research team's reviewer: you check reports for accuracy, sourcing, balance, "
    "structure and clarity, judging only what you see."
)

REVIEW_PROMPT = """Review the research report below, written to answer:
<question>{question}</question>

Check: does the executive summary answer the question; is every factual claim cited with a
listed source; are disagreements shown with both sides; are fact, inference and opinion kept
apart; are gaps admitted rather than filled; are sources recent; is anything missing from
the required sections (executive summary, key findings, analysis by subtopic, comparison,
disagreements, recommendations, open questions, confidence assessment); does it read as one
piece (consistent terms and numbering, no section repeating another). Name the section of
each issue by its heading, so that only that section is revised.
Approve only if no high-severity issue remains. Severity is high, medium or low.

Review cycle {cycle} of {cycles}.
{previous}
Automatic checks already found:
{checks}

SOURCES THE REPORT CITES:
{sources}

REPORT:
{draft}"""


REREAD = """The sections the last revision left as they were are shown by their headings and
first lines only, marked "(unchanged)": the last review read them whole. Judge the revised
sections in full, and whether they fix these issues of the last review:
{issues}
"""
UNCHANGED_MARK = "(unchanged)"


class ReviewIssue(BaseModel):
    severity: Literal["high", "medium", "low"]
    section: str = ""
    issue: str
    suggestion: str = ""


class ReviewResult(BaseModel):
    approved: bool
    issues: list[ReviewIssue] = Field(default_factory=list)
    strengths: list[str] = Field(default_factory=list)


# A draft that cites nothing in its text (a writer that cites only in an end list, or not at
# all): the review asks every part for in-text citations, whatever the reviewer said.
CITE_IN_TEXT = ReviewIssue(
    severity="high", section="",
    issue="The report cites none of the gathered sources in its text, so no claim can be checked "
          "against a source.",
    suggestion="Cite every factual sentence in the text itself with the numbers of the listed "
               "sources, like [3] or [2][5]. A list of sources or links at the end is not a "
               "citation: it is removed, and the report's Sources section is added automatically.")
UNCITED_NOTE = ("The writing model did not cite its claims with the sources gathered in this run: no "
                "statement of this report is tied to one, although every draft asked for citations. "
                "Treat its statements as unchecked.")
UNCITED_WARNING = ("The writing model did not cite its claims in the text with the gathered sources, even "
                   "when asked to: the report's statements are marked as citing no source and could not "
                   "be checked against what was gathered.")


def cites_nothing(checks: DraftChecks) -> bool:
    """A draft that states things and cites no gathered source in its text."""
    return checks.sentences > 0 and checks.cited_sources == 0


def writer_cited_nothing(ctx: RunContext) -> bool:
    """Whether the writer's last draft or revision (before verification edits it) states things
    and cites no gathered source in its text: the review's request was not met."""
    drafts = [d for d in ctx.store.get_drafts(ctx.run_id) if d.kind in ("draft", "revision")]
    if not drafts:
        return False
    last = drafts[-1]
    gathered = {s.id for s in ctx.store.get_sources(ctx.run_id, with_text=False)}
    cited = [n for n in cited_numbers(last.text) if last.numbering.get(n) in gathered]
    return not cited and bool(claim_sentences(last.text))


def current_checks(ctx: RunContext) -> tuple[Draft, DraftChecks]:
    """The latest draft and its deterministic checks."""
    current = write.latest(ctx)
    sources = {s.id: s for s in ctx.store.get_sources(ctx.run_id, with_text=False)}
    written = ((ctx.stored_result(writer.draft_step(current.version)) or {})
               if current.kind in ("draft", "revision") else {})
    checks = run_checks(
        current.text, current.numbering, sources,
        max_words=ctx.config.words_limit(), max_age_days=ctx.config.source_max_age_days,
        today=ctx.today, removed_citations=int(written.get("citations_removed") or 0),
        needs_table=ctx.config.shape().table,
    )
    return current, checks


@dataclass(frozen=True, slots=True)
class ReviewOutcome:
    """How the review cycles ended: `approved` when a review approved the draft; `early` holds
    the checks of the sections that were final before the last revision (for verify.run)."""

    approved: bool
    early: EarlyCheck | None = None


def run(ctx: RunContext, found: ResearchResult) -> ReviewOutcome:
    """The review cycles, each revising the draft from what research gathered.

    Verification starts before the cycles end (the outcome's `early`, for verify.run): every
    draft a review will read is checked while that review reads it (a claim no revision
    changes keeps its check, so after a revision only its changed claims are new, and a few
    claims are checked fast); after the last review, the sections it did not flag are final
    and what of them is not checked yet is checked while the flagged ones are revised. Only
    the claims no check has covered are left to verify."""
    cycles = ctx.config.review_cycles
    if not cycles:
        return ReviewOutcome(False)
    early = EarlyCheck(ctx)

    def check(draft: Draft) -> None:  # the draft a review is about to read
        early.start(draft.text, draft.numbering, [draft.text])

    try:
        for cycle in range(1, cycles + 1):
            if ctx.wrapping_up():  # the person asked for the report now: no further cycle
                return ReviewOutcome(False, early)
            done = ctx.stored_result(f"review:{cycle}")
            if done is None:  # (a resume past it verifies that draft at the end)
                done = ctx.run_step(
                    f"review:{cycle}", "review", f"Reviewing the draft (cycle {cycle} of {cycles})",
                    partial(_review, ctx, cycle, cycles, check),
                )
            if done["approved"]:
                return ReviewOutcome(True, early)
            issues = [review_issue(i) for i in done.get("issues") or ()]
            write.revise(ctx, cycle, found, done["feedback"], issues,
                         on_final=early.start if cycle == cycles else None)
    except BaseException:
        early.close()
        raise
    return ReviewOutcome(False, early)


def _review(ctx: RunContext, cycle: int, cycles: int,
            reading: Callable[[Draft], None] | None = None) -> JsonObject:
    """One review; `reading(draft)` is told the draft just before the reviewer is asked (its
    checks start then: the review's own preparation does not share the processor with them)."""
    reviewer = ctx.lead.delegate(Role.REVIEWER)
    current, checks = current_checks(ctx)
    sources = ctx.store.get_sources(ctx.run_id, with_text=False)
    numbers = {sid: n for n, sid in current.numbering.items()}
    shown, previous = reread(ctx, current, cycle)
    cited = {int(n) for n in CITED.findall(shown)}
    listed = [s for s in sources if numbers.get(s.id) in cited]  # only what the text shown cites
    found = problems(checks) or ["none"]
    messages = [
        system(REVIEWER_ROLE, ctx.today),
        Message("user", REVIEW_PROMPT.format(
            cycle=cycle, cycles=cycles, question=clean_untrusted(ctx.brief), previous=previous,
            checks="\n".join(f"- {p}" for p in found),
            sources=numbered_sources(listed, numbers), draft=earlier_text("report", shown),
        )),
    ]
    if reading is not None:
        reading(current)
    review = reviewer.llm.structured(messages, ReviewResult, deadline=ctx.step_deadline())
    issues = [i.model_dump() for i in review.issues]
    if cites_nothing(checks):
        issues.append(CITE_IN_TEXT.model_dump())
    high = [i for i in issues if i["severity"] == "high"]
    raised = [StoredIssue(**i) for i in issues]
    approved = review.approved and not high and checks.passed
    ctx.store.save_review(
        ctx.run_id, cycle, draft_version=current.version, approved=approved,
        model_approved=review.approved, issues=raised, strengths=list(review.strengths),
        checks=checks.as_json(),
    )
    counts = {sev: sum(1 for i in issues if i["severity"] == sev) for sev in ("high", "medium", "low")}
    verdict = "approved" if approved else "changes requested"
    ctx.emit(ReviewCycle(
        ctx.run_id,
        f"Review {cycle}: {verdict} ({counts['high']} high, {counts['medium']} medium, "
        f"{counts['low']} low; {checks.cited_share:.0%} of claims cited)",
        step=f"review:{cycle}",
        cycle=cycle, approved=approved, issues=IssueCounts(**counts),
        checks_passed=checks.passed,
    ))
    feedback_lines = [
        f"- [{i['severity']}] {i['section'] or 'general'}: {clean_untrusted(i['issue'])}"
        + (f" Suggestion: {clean_untrusted(i['suggestion'])}" if i["suggestion"] else "")
        for i in issues
    ] + [f"- [check] {p}" for p in problems(checks)]
    return {"approved": approved, "draft_version": current.version, "issues": issues,
            "feedback": "\n".join(feedback_lines) or "- No specific issues; polish the report."}


def reread(ctx: RunContext, current: Draft, cycle: int) -> tuple[str, str]:
    """The draft as a review reads it, and what the prompt says of the last review. After a
    revision of some sections, the unchanged ones are shown by their headings and first lines,
    with the last review's issues (issue 31: the reviewer read them whole a cycle ago); the
    whole draft otherwise (the first review, a draft revised whole, an older run)."""
    last = ctx.stored_result(f"review:{cycle - 1}") if cycle > 1 else None
    written = (ctx.stored_result(writer.draft_step(current.version)) or {}
               if current.kind == "revision" else {})
    texts, order, revised = written.get("sections"), written.get("order"), written.get("revised")
    if not (last and isinstance(texts, dict) and isinstance(order, list)
            and isinstance(revised, list)):
        return current.text, ""
    if assemble(texts, order).strip() != current.text.strip():
        return current.text, ""  # the stored parts are not this draft's text: read it whole
    shown = {key: text if key in revised else unchanged(text) for key, text in texts.items()}
    issues = [f"- [{i.get('severity')}] {i.get('section') or 'general'}: "
              f"{clean_untrusted(str(i.get('issue') or ''))}" for i in last.get("issues") or ()]
    return assemble(shown, order), REREAD.format(issues="\n".join(issues) or "- none")


def unchanged(text: str) -> str:
    """A part left as it was: each heading with the first line under it, marked unchanged."""
    lines = [line for line in text.splitlines() if line.strip()]
    out: list[str] = []
    for i, line in enumerate(lines):
        if line.startswith("#"):
            out.append(line)
            if i + 1 < len(lines) and not lines[i + 1].startswith("#"):
                out.append(f"{lines[i + 1][:200]} … {UNCHANGED_MARK}")
    return "\n".join(out) or f"{text.strip()[:200]} … {UNCHANGED_MARK}"
