"""Verify, part 3: from claims to outcomes, for any set of claims (the whole report's, or one
section's while the rest of the report is still being revised; see early.py).

Each claim's outcome depends only on the claim and the text of the sources it cites: the two
passes, the quote guard, the combined verdict, the critic's challenge, the decision and the
writer's rewrite of a qualified claim. So the claims of a section can be judged as soon as the
section is final, and their outcomes are the ones the whole report's verification would reach.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence

from research.core.context import RunContext
from research.core.records import Source
from research.phases.verify.apply import decide
from research.phases.verify.claims import (
    CRITICAL_KINDS,
    LOAD_BEARING_KINDS,
    MAX_SOURCES_PER_CLAIM,
    Claim,
    Outcome,
    PassVerdict,
    excerpt,
)
from research.phases.verify.critic import challenge
from research.phases.verify.judge import (
    AUDITOR_PASS,
    VERIFIER_PASS,
    collect,
    combine,
    guard,
    submit_pass,
)
from research.phases.verify.rewrite import rewrite
from research.untrusted.excerpts import without_title, words

ClaimKey = tuple[str, str, str, str | None, tuple[str, ...], bool]


def key(claim: Claim) -> ClaimKey:
    """What makes two claims the same check: the sentence, where it sits and what it cites."""
    return (claim.text, claim.section, claim.kind, claim.subtopic, tuple(claim.source_ids),
            claim.table_row)


def source_text(source: Source) -> str:
    return source.text or source.snippet or source.title


def attach_excerpts(claims: Sequence[Claim], sources: Mapping[str, Source]) -> None:
    """Each claim's excerpts: the passage of each cited source nearest the claim, the most
    relevant MAX_SOURCES_PER_CLAIM kept."""
    for claim in claims:
        found = {sid: excerpt(without_title(source_text(sources[sid]), sources[sid].title),
                              claim.text) for sid in claim.source_ids}  # the title comes beside it
        wanted = words(claim.text)
        ranked = sorted(found, key=lambda sid: -len(wanted & words(found[sid])))  # stable
        claim.excerpts = {sid: found[sid] for sid in ranked[:MAX_SOURCES_PER_CLAIM]}


def judge_claims(ctx: RunContext, claims: Sequence[Claim],
                 sources: Mapping[str, Source]) -> tuple[list[Outcome], list[str]]:
    """The outcome of every claim (in order) and the failed calls' reasons."""
    checkable = [c for c in claims if c.source_ids]
    errors: list[str] = []
    # Both passes at once (every batch a task of the run's executor); neither sees the
    # other's answers.
    pending = [submit_pass(ctx, spec, checkable, sources, ctx.executor.tasks)
               for spec in (VERIFIER_PASS, AUDITOR_PASS)]
    (first, errs1), (second, errs2) = (collect(ctx, futures) for futures in pending)
    errors += errs1 + errs2

    outcomes = []
    for claim in claims:
        a = guard(first.get(claim.id, PassVerdict("")), claim, sources)
        b = guard(second.get(claim.id, PassVerdict("")), claim, sources)
        combined = combine(a.verdict, b.verdict) if claim.source_ids else "uncited"
        if not claim.source_ids:
            a = b = PassVerdict("UNSUPPORTED", note="cites no source gathered in this run")
        outcomes.append(Outcome(claim, a, b, combined))

    challenged = [o for o in outcomes if o.claim.source_ids and (
        o.combined == "contested"
        or (o.claim.kind in CRITICAL_KINDS and o.combined in ("supported", "overstated")))]
    judgements, errs = challenge(ctx, challenged, sources)
    errors += errs
    for o in challenged:
        if o.claim.id in judgements:
            o.critic = judgements[o.claim.id].verdict
            o.critic_reason = judgements[o.claim.id].reason.strip()
    for o in outcomes:
        decide(o)

    rewrites, errs = rewrite(ctx, [o for o in outcomes if o.status == "qualified"])
    errors += errs
    for o in outcomes:
        if o.claim.id in rewrites:
            o.final_text, o.rewritten = rewrites[o.claim.id], True
        o.single_source = (o.status in ("supported", "qualified")
                           and o.claim.kind in LOAD_BEARING_KINDS and len(o.claim.source_ids) == 1)
    return outcomes, errors
