"""The model calls of a latency run and the chains they form (used by bench/latency.py).

A call costs its own lower bound (bench.latency.Latency.call); calls under way together cost
their slowest, groups of them add up (`chain_bound`). `EarlyChecks` files the verification
calls sent before the verify step into the checks they belong to (see bench/README.md, "How
the latency section computes its lower bound").
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Call:
    """One model request as the stand-in logged it."""
    sent: float
    answered: float
    task: str
    text: str
    cost: float           # its own lower bound (Latency.call)

    @property
    def prompt_tokens(self) -> int:
        return max(1, len(self.text) // 4)  # the stand-in's own count


def overlapping(calls: Sequence[Call]) -> list[list[Call]]:
    """The calls in groups that were under way together (each group's calls overlap in time, a
    chain of them at least): what ran in parallel costs its slowest call, groups add up."""
    groups: list[list[Call]] = []
    end = float("-inf")
    for call in sorted(calls, key=lambda c: c.sent):
        if groups and call.sent < end:
            groups[-1].append(call)
            end = max(end, call.answered)
        else:
            groups.append([call])
            end = call.answered
    return groups


def chain_bound(calls: Sequence[Call]) -> tuple[float, int]:
    """The lower bound of calls run as they were (parallel groups, one after another)."""
    groups = overlapping(calls)
    return sum(max(c.cost for c in g) for g in groups), len(groups)


CHECK_TASKS = ("ClaimVerdicts", "AuditVerdicts", "CriticVerdicts", "ClaimRewrites")
PASS_TASKS = ("ClaimVerdicts", "AuditVerdicts")
_CLAIM = re.compile(r'<claim id="[^"]*"(?: section="[^"]*")?>([^<\n]*)')


def claims_of(call: Call) -> set[str]:
    """The claims a verification call is about (their text, as the prompt gives it)."""
    return {t.strip() for t in _CLAIM.findall(call.text) if t.strip()}


@dataclass
class CheckJob:
    """One check started before the verify step: its passes went out in one phase, its
    critic and rewrites follow for the same claims."""
    start: float             # the phase its passes went out in, on the critical path's clock
    claims: set[str] = field(default_factory=set)
    calls: list[Call] = field(default_factory=list)


@dataclass
class EarlyChecks:
    """Verification calls sent before the verify step (research/phases/verify/early.py: every
    draft a review will read is checked while the review reads it). They are left out of the
    review and revise phases they were sent in (a check beside a review is not part of the
    review's chain) and counted in the verify phase: each check as a chain of its own (its
    passes, then the critic and rewrites about the same claims) that could not start before
    the phase its passes went out in; only what reaches past the verify step's start counts,
    beside the step's own calls."""
    jobs: list[CheckJob] = field(default_factory=list)

    @property
    def calls(self) -> list[Call]:
        return [c for job in self.jobs for c in job.calls]

    def take(self, window: list[Call], at: float) -> list[Call]:
        """The window's other calls; its checks are kept here (`at`: the phase's start on the
        critical path's clock)."""
        for call in sorted((c for c in window if c.task in CHECK_TASKS), key=lambda c: c.sent):
            self._file(call, at)
        return [c for c in window if c.task not in CHECK_TASKS]

    def _file(self, call: Call, at: float) -> None:
        claims = claims_of(call)
        if call.task in PASS_TASKS:
            job = next((j for j in self.jobs if j.start == at), None)
            if job is None:
                job = CheckJob(at)
                self.jobs.append(job)
        else:  # the newest check whose passes were about these claims
            job = next((j for j in reversed(self.jobs) if claims & j.claims),
                       self.jobs[-1] if self.jobs else None)
            if job is None:
                job = CheckJob(at)
                self.jobs.append(job)
        job.claims |= claims
        job.calls.append(call)

    def verify_bound(self, window: list[Call], at: float) -> tuple[float, int]:
        """The verify step's bound (it starts at `at` on the critical path's clock): the longest
        of its own calls' chain and what of each early check's chain reaches past `at`. The
        step's critic and rewrites about claims an early check's passes judged (and the step's
        passes did not) belong to that check."""
        early = set(self.calls)
        mine = sorted((c for c in window if c not in early), key=lambda c: c.sent)
        judged = {t for c in mine if c.task in PASS_TASKS for t in claims_of(c)}
        own: list[Call] = []
        for call in mine:
            claims = claims_of(call)
            job = next((j for j in reversed(self.jobs) if claims & j.claims), None)
            if call.task in CHECK_TASKS and call.task not in PASS_TASKS and job is not None \
                    and not claims & judged:
                job.calls.append(call)
            else:
                own.append(call)
        best = chain_bound(own)
        for job in self.jobs:
            chain, chain_n = chain_bound(job.calls)
            if job.start + chain - at > best[0]:
                best = (job.start + chain - at, chain_n)
        return best
