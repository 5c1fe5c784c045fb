"""Ask, part 3: an answer checked like the report (issue 35, point 2).

The same verification as the report's (research/phases/verify), lighter: one verifier pass
judges each cited sentence against the passages of the sources it cites, the quote guard
overrules a SUPPORTED verdict whose quote is in no cited source, and the critic challenges the
contested ones (those the verifier found overstated). Each sentence is then kept, marked or
removed exactly as in reports (`verify.decide`, `verify.apply`): a sentence citing nothing
gathered is removed when it gives a figure and marked otherwise; one no check answered for is
marked "(not verified)".
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from research.core.context import RunContext
from research.core.records import Source
from research.phases.verify import (
    NOTE_PREFIXES,
    Outcome,
    PassVerdict,
    apply,
    combine,
    decide,
    guard,
    split_claims,
)
from research.phases.verify.critic import challenge
from research.phases.verify.judge import VERIFIER_PASS, collect, submit_pass
from research.phases.verify.outcomes import attach_excerpts
from research.report.citations import normalise

# The answer is checked as a section whose every statement is a claim (as the report's
# analysis); the heading is the checker's, never shown.
_SECTION = "## Analysis"
CHECKED = ("supported", "qualified", "removed")


@dataclass(frozen=True, slots=True)
class Checked:
    """An answer's text after the checks, and what they found."""

    text: str
    claims: int           # statements that had to rest on a source
    checked: int          # ...that a check answered for
    supported: int
    qualified: int
    removed: int
    unchecked: int        # cite a source, but no check answered for them: marked
    uncited: int = 0      # cite nothing gathered (and give no figure): marked
    errors: tuple[str, ...] = ()

    @property
    def grounded(self) -> int:
        """Statements left in the answer that rest on a cited source (checked or not)."""
        return self.supported + self.qualified + self.unchecked

    @property
    def line(self) -> str:
        """The answer's check line, in plain words."""
        if not self.claims:
            return "No claims to check."
        parts = [f"{self.supported} supported"]
        if self.qualified:
            parts.append(f"{self.qualified} marked as not fully supported")
        if self.removed:
            parts.append(f"{self.removed} removed")
        if self.unchecked:
            parts.append(f"{self.unchecked} not verified")
        if self.uncited:
            parts.append(f"{self.uncited} citing no source")
        return (f"{self.checked} of {self.claims} claim{'s' if self.claims != 1 else ''} checked "
                f"against their sources: {', '.join(parts)}.")

    def as_json(self) -> dict[str, object]:
        return {"claims": self.claims, "checked": self.checked, "supported": self.supported,
                "qualified": self.qualified, "removed": self.removed,
                "unchecked": self.unchecked, "uncited": self.uncited, "line": self.line}


def check(ctx: RunContext, text: str, numbering: Mapping[int, str],
          sources: Mapping[str, Source]) -> Checked:
    """`text` (the model's, any citation style) with every statement checked and applied."""
    body = normalise(text, numbering, sources).text.strip()
    if not body:
        return Checked("", 0, 0, 0, 0, 0, 0)
    draft = f"{_SECTION}\n\n{body}\n"
    claims = split_claims(draft, numbering, sources)
    attach_excerpts(claims, sources)
    checkable = [c for c in claims if c.source_ids]
    verdicts, errors = collect(ctx, submit_pass(ctx, VERIFIER_PASS, checkable, sources,
                                                ctx.executor.tasks))
    outcomes = []
    for claim in claims:
        if claim.source_ids:
            one = guard(verdicts.get(claim.id, PassVerdict("")), claim, sources)
            # One verifier is enough here: its verdict stands for both passes.
            outcomes.append(Outcome(claim, one, one, combine(one.verdict, one.verdict)))
        else:
            none = PassVerdict("UNSUPPORTED", note="cites no source gathered in this run")
            outcomes.append(Outcome(claim, none, none, "uncited"))
    contested = [o for o in outcomes if o.claim.source_ids and o.combined == "overstated"]
    judgements, more = challenge(ctx, contested, sources)
    for o in contested:
        if o.claim.id in judgements:
            o.critic = judgements[o.claim.id].verdict
            o.critic_reason = judgements[o.claim.id].reason.strip()
    for o in outcomes:
        decide(o)
    applied, _ = apply(draft, outcomes, numbering=numbering, sources=sources, failed_titles=())
    statuses = [o.status for o in outcomes]
    return Checked(
        text=_answer_lines(applied), claims=len(outcomes),
        checked=sum(1 for s in statuses if s in CHECKED),
        supported=statuses.count("supported"), qualified=statuses.count("qualified"),
        removed=statuses.count("removed"),
        unchecked=sum(1 for s in statuses if s not in CHECKED and s != "uncited"),
        uncited=statuses.count("uncited"), errors=tuple(errors + more))


def _answer_lines(applied: str) -> str:
    """The checked text without the checker's own headings and notes (the answer's check
    line says what was removed)."""
    kept = [line for line in applied.splitlines()
            if not line.lstrip().startswith("#")
            and not line.lstrip().startswith(NOTE_PREFIXES)
            and line.strip() != "Insufficient verified data for this section."]
    return "\n".join(kept).strip()
