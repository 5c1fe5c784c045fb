"""An update's claims its earlier version already verified keep their verdicts.

An update (research/living/) writes its report again from the earlier version's evidence and
the new, so many of its claims are the earlier version's, word for word. A claim stated as the
earlier version stated it, in the same section, citing the same sources (an update inherits
them with their stored text unchanged) would be judged the same: its verdict carries over
instead of asking the verifier, auditor and critic again. Only claims the earlier version
found supported carry over; every other claim, and every claim of a run that is not an
update, is judged as usual.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from typing import Any

from research.core.context import RunContext
from research.core.records import Verdict
from research.phases.verify.claims import LOAD_BEARING_KINDS, Claim, Outcome, PassVerdict

_CITATIONS = re.compile(r"\s*\[\d+(?:\s*[,–-]\s*\d+)*\]")
Key = tuple[str, str, frozenset[str]]


def key(text: str, section: str | None, source_ids: Sequence[str]) -> Key:
    """A claim as two versions can share it: its words without citation numbers (renumbered
    in every version), its section and the sources it cites."""
    words = " ".join(_CITATIONS.sub("", text).split()).lower()
    return words, (section or "").strip().lower(), frozenset(source_ids)


def carry_over(ctx: RunContext, claims: Sequence[Claim]) -> tuple[dict[str, Outcome], list[Claim]]:
    """The outcomes carried over from the earlier version (by claim id), and the claims still
    to judge."""
    if not ctx.config.update_since or not claims:
        return {}, list(claims)
    run = ctx.store.get_run(ctx.run_id)
    previous = run.parent_run_id if run else None
    if not previous:
        return {}, list(claims)
    earlier = {key(v.claim, v.section, v.source_ids): v
               for v in ctx.store.get_verifications(previous)
               if v.outcome == "supported" and v.source_ids}
    carried: dict[str, Outcome] = {}
    todo: list[Claim] = []
    for claim in claims:
        verdict = earlier.get(key(claim.text, claim.section, claim.source_ids)) \
            if claim.source_ids else None
        if verdict is None:
            todo.append(claim)
        else:
            carried[claim.id] = outcome(claim, verdict)
    return carried, todo


def outcome(claim: Claim, verdict: Verdict) -> Outcome:
    """The earlier verdict as this claim's outcome (its passes, the critic's word)."""
    details = verdict.details or {}
    return Outcome(
        claim, _pass(details.get("verifier")), _pass(details.get("auditor")), "supported",
        critic=verdict.critic_verdict or "", critic_reason=str(details.get("critic_reason") or ""),
        status="supported", note="Verified in the earlier version of this report.",
        single_source=claim.kind in LOAD_BEARING_KINDS and len(claim.source_ids) == 1)


def _pass(stored: Any) -> PassVerdict:
    values = stored if isinstance(stored, dict) else {}
    return PassVerdict(**{name: str(values.get(name) or "")
                          for name in ("verdict", "quote", "source", "reason", "note")})
