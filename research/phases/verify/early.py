"""Verification that starts before the review cycles end (issue 11).

A revision that another review will read is checked whole while that review reads it: most
often the review approves it, and a claim it does not change keeps its check. After the last
review cycle, only the sections the review flagged are rewritten; every other section is final
from that moment, and its claims not checked yet are judged too. Each check (both passes, the
critic, the rewrites: outcomes.judge_claims) runs in the background while the run reviews or
revises. The verify step then judges only the claims it has no outcome for and reuses the rest:
a claim is the same check when its sentence, its place and its cited sources are the same
(outcomes.key), whichever draft it was judged in.

Nothing here is stored: an interrupted run verifies everything when it resumes. A call that
fails leaves its claims unchecked exactly as in the verify step; a stop (cancel, time limit)
raised in the background is raised again when the verify step collects the results.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from concurrent.futures import Future
from dataclasses import replace

from research.core.context import RunContext
from research.phases.verify.claims import Claim, Outcome, split_claims
from research.phases.verify.outcomes import ClaimKey, attach_excerpts, judge_claims, key


class EarlyCheck:
    """The background verification of the final sections of one draft."""

    def __init__(self, ctx: RunContext) -> None:
        self.ctx = ctx
        self._jobs: list[Future[tuple[list[Outcome], list[str]]]] = []
        self.keys: set[ClaimKey] = set()  # the claims under way or judged

    def start(self, text: str, numbering: Mapping[int, str], final: Sequence[str]) -> None:
        """Judge the claims of `text` (the current draft) that sit in the `final` parts, but
        those a check started earlier covers already (the same sentence, place and sources)."""
        sources = {s.id: s for s in self.ctx.store.get_sources(self.ctx.run_id)}
        claims = [c for c in split_claims(text, numbering, sources)
                  if key(c) not in self.keys and any(c.text in part for part in final)]
        if not claims:
            return
        attach_excerpts(claims, sources)
        self.keys.update(key(c) for c in claims)
        # A unit of the run's executor: it waits on the tasks (the batches) it submits.
        self._jobs.append(self.ctx.executor.units.submit(judge_claims, self.ctx, claims, sources))

    def results(self) -> tuple[dict[ClaimKey, Outcome], list[str]]:
        """Every outcome reached, by claim key, and the failed calls' reasons (waits for the
        background work; a stop raised there is raised here)."""
        found: dict[ClaimKey, Outcome] = {}
        errors: list[str] = []
        try:
            for job in self._jobs:
                outcomes, errs = job.result()
                errors += errs
                for o in outcomes:
                    found.setdefault(key(o.claim), o)
        finally:
            self.close()
        return found, errors

    def close(self) -> None:
        for job in self._jobs:
            job.cancel()  # not started yet: not needed any more


def split(claims: Sequence[Claim], early: EarlyCheck | None) -> tuple[list[Claim], list[Claim]]:
    """The claims the early check is judging, and the rest (to judge now, at the same time)."""
    if early is None:
        return [], list(claims)
    return ([c for c in claims if key(c) in early.keys],
            [c for c in claims if key(c) not in early.keys])


def reuse(claims: Sequence[Claim], early: Mapping[ClaimKey, Outcome]) -> tuple[dict[str, Outcome], list[Claim]]:
    """The outcomes already reached for some of `claims` (by the final claim's id, rebound to
    it), and the claims still to judge."""
    done: dict[str, Outcome] = {}
    todo: list[Claim] = []
    for claim in claims:
        found = early.get(key(claim))
        if found is None:
            todo.append(claim)
        else:
            done[claim.id] = replace(found, claim=claim)
    return done, todo
