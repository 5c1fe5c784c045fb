"""Verify: every factual statement is checked against the text of the sources it cites (SPEC step 7).

    claims.py    split the latest draft into claims (cited or not; table rows with figures too)
    judge.py     two independent passes (verifier, auditor) judge each cited claim against
                 excerpts of its sources -> combine -> the critic challenges decision-critical
                 and contested claims -> the writer rewrites the qualified ones
    outcomes.py  that chain for any set of claims (the report's, or one section's)
    early.py     the claims of sections that are final judged while the rest is revised
    carried.py   an update's claims its earlier version verified keep their verdicts
    apply.py     decide each claim's status and write the new draft: remove, rewrite, mark
    verdict_summary.py
                 the counts and the report header's line, kept as this step's result

The result is a new draft version (kind "verified", same numbering) that deliver exports, one
stored verdict row per claim, and a summary (share of supported claims...) kept as this step's
result. Deterministic guards sit beside the models: a claim citing no gathered source is never
sent to a model and never survives unmarked (removed when it gives a figure or cites only what
was never gathered); a SUPPORTED verdict whose quoted passage is not in the cited source's
stored text counts as UNSUPPORTED; a rewrite may not add numbers or citations. A failed model
call, or an answer that says nothing usable about a claim, leaves it "unchecked": marked
"(not verified)", never removed; when that is most claims the report says verification could
not be completed. Never a failed run.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from research.core.context import RunContext
from research.core.errors import ResearchError
from research.core.events import DraftCompleted
from research.core.events import Warning as WarningEvent
from research.core.records import FailedSubtopic, JsonObject, Verdict
from research.phases.verify.apply import (
    INSUFFICIENT,
    MARKS,
    NOT_FULLY_SUPPORTED,
    NOT_VERIFIED,
    NOTE_PREFIXES,
    QUALIFIED,
    SINGLE_SOURCE,
    UNVERIFIED,
    apply,
    decide,
    mark,
)
from research.phases.verify.carried import carry_over
from research.phases.verify.claims import (
    PASSAGE_CHARS,
    Claim,
    Outcome,
    PassVerdict,
    excerpt,
    split_claims,
)
from research.phases.verify.early import EarlyCheck, reuse, split
from research.phases.verify.judge import combine, guard, quote_found
from research.phases.verify.outcomes import attach_excerpts, judge_claims
from research.phases.verify.rewrite import accept_rewrite
from research.phases.verify.verdict_summary import STEP_KEY, VerifySummary, summarise, summary
from research.report.checks import word_count

__all__ = [
    "EarlyCheck", "INSUFFICIENT", "MARKS", "NOTE_PREFIXES", "NOT_FULLY_SUPPORTED", "NOT_VERIFIED", "QUALIFIED",
    "SINGLE_SOURCE", "STEP_KEY", "UNVERIFIED", "Claim", "Outcome", "PassVerdict", "accept_rewrite",
    "apply", "combine", "decide", "excerpt", "guard", "mark", "quote_found", "run",
    "split_claims", "summarise", "summary", "VerifyResult", "VerifySummary",
]

# --- the step ---------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class VerifyResult:
    """The verified draft's version and the summary line the report's header carries."""

    version: int
    claims: int
    supported: int
    line: str


def run(ctx: RunContext, failed: Sequence[FailedSubtopic],
        early: EarlyCheck | None = None) -> VerifyResult:
    """Verify the latest draft and save the result as a new "verified" draft (skipped on resume).
    `failed` are the subtopics research could not cover (their sections are marked unverified);
    `early` holds the outcomes of the sections judged as soon as they were final."""
    try:
        done = ctx.run_step(STEP_KEY, "verify", "Verifying claims against their sources",
                            lambda: _verify(ctx, failed, early))
    except Exception as exc:  # noqa: BLE001 - costs the verification, not the report
        if not isinstance(exc, ResearchError):  # (run_step marked a ResearchError's step)
            ctx.store.fail_step(ctx.run_id, STEP_KEY, "a problem in the program itself")
        ctx.lose("the claims could not be verified; the report is delivered unverified", exc,
                 step=STEP_KEY)
        return VerifyResult(0, 0, 0, "")
    finally:
        if early is not None:
            early.close()
    # A result stored by an older version may lack some counts: read leniently.
    return VerifyResult(int(done.get("version") or 0), int(done.get("claims") or 0),
                        int(done.get("supported") or 0), str(done.get("line") or ""))


def _verify(ctx: RunContext, failed: Sequence[FailedSubtopic],
            early: EarlyCheck | None = None) -> JsonObject:
    drafts = ctx.store.get_drafts(ctx.run_id)
    base = [d for d in drafts if d.kind not in ("verified", "partial")][-1]
    # A verified draft saved by an attempt that did not finish is replaced, not added to.
    redo = [d for d in drafts if d.kind == "verified" and d.version > base.version]
    version = redo[0].version if redo else max(d.version for d in drafts) + 1
    sources = {s.id: s for s in ctx.store.get_sources(ctx.run_id)}
    numbering = base.numbering
    claims = split_claims(base.text, numbering, sources)
    attach_excerpts(claims, sources)
    # The claims of sections checked early are judged in the background already; the rest are
    # judged now, at the same time. One the early check has no outcome for is judged after.
    under_way, todo = split(claims, early)
    carried, todo = carry_over(ctx, todo)  # an update: what its earlier version verified
    judged, errors = judge_claims(ctx, todo, sources)
    known: dict[str, Outcome] = {}
    if early is not None:
        found, errs = early.results()
        known, missed = reuse(under_way, found)
        late, more = judge_claims(ctx, missed, sources) if missed else ([], [])
        judged, errors = judged + late, errors + errs + more
    by_id = {**known, **carried, **{o.claim.id: o for o in judged}}
    outcomes = [by_id[c.id] for c in claims]
    if not any(c.source_ids or c.invalid for c in claims):  # the writer cited nothing at all:
        for o in outcomes:  # its claims are marked as citing no source, not all cut (issue 32)
            if o.status == "removed":
                o.status, o.note = "uncited", "It cites no source; marked as such."

    failed_titles = [s.title for s in failed]
    text, unverified = apply(base.text, outcomes, numbering=numbering, sources=sources,
                             failed_titles=failed_titles)
    rows = [_verdict(o, numbering) for o in outcomes]
    ctx.store.save_draft(ctx.run_id, version, "verified", text, numbering, word_count(text))
    ctx.store.save_verifications(ctx.run_id, rows)
    result = summarise(rows, unverified)
    if errors or result.unchecked:
        why = f"{len(errors)} verification call(s) failed ({errors[0]}); " if errors else ""
        ctx.emit(WarningEvent(ctx.run_id, f"{why}{result.unchecked} claim(s) could not be "
                              "checked (no usable verdict) and are marked as not verified."
                              + (" Verification could not be completed." if result.incomplete else ""),
                              step=STEP_KEY))
    ctx.emit(_verified(ctx.run_id, version, result))
    return {**result.as_json(), "version": version, "draft_version": base.version,
            "errors": errors[:10], "checked_early": len(known), "carried_over": len(carried)}


def _verified(run_id: str, version: int, result: VerifySummary) -> DraftCompleted:
    """The event of the verified draft, with the counts the run log shows."""
    return DraftCompleted(
        run_id, f"Verified draft {version} saved. {result.line}", step=STEP_KEY,
        version=version, claims=result.claims, supported=result.supported,
        share_supported=result.share_supported, unsupported_removed=result.unsupported_removed,
        rewritten=result.rewritten, single_source=result.single_source,
        unchecked=result.unchecked, uncited=result.uncited, incomplete=result.incomplete)


def _verdict(o: Outcome, numbering: Mapping[int, str]) -> Verdict:
    quote = next((v.quote for v in (o.first, o.second)
                  if v.verdict in ("SUPPORTED", "OVERSTATED", "CONTRADICTED") and v.quote), "")
    numbers = {sid: n for n, sid in numbering.items()}
    return Verdict(
        claim_id=o.claim.id, claim=o.claim.text, source_ids=tuple(o.claim.source_ids),
        verdict=o.combined.upper(), passage=quote or None,
        reviewer="verifier, auditor" + (", critic" if o.critic else ""),
        section=o.claim.section, subtopic=o.claim.subtopic,
        verifier_verdict=o.first.verdict or None, auditor_verdict=o.second.verdict or None,
        critic_verdict=o.critic or None, status=o.status,
        final_text=o.final_text if o.status != "removed" else None,
        note=" ".join(n for n in (o.note, o.first.note, o.second.note) if n) or None,
        details={
            "numbers": [numbers.get(sid) for sid in o.claim.source_ids],
            "invalid_citations": o.claim.invalid,
            "verifier": _pass_dict(o.first), "auditor": _pass_dict(o.second),
            "critic_reason": o.critic_reason, "rewritten": o.rewritten,
            "single_source": o.single_source,
            "excerpts": {sid: text[:PASSAGE_CHARS] for sid, text in o.claim.excerpts.items()},
        },
    )


def _pass_dict(v: PassVerdict) -> dict[str, str]:
    return {"verdict": v.verdict, "quote": v.quote, "source": v.source, "reason": v.reason,
            "note": v.note}
