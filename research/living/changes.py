"""What changed between two versions of a report: claims added, changed, no longer supported.

A claim here is a cited finding of the research (what a worker established from a source,
`storage.records.Finding`), the unit both versions share: the report's prose is rewritten
each time, the evidence under it is not. The update's own findings (not those it inherited
from the earlier version) are compared with the earlier version's:

- a new claim that says what an earlier one said with other figures is **changed** (old and
  new, each with its sources): the same words once the numbers are set aside;
- a new claim no earlier one resembles is **added**; one it repeats word for word is not news;
- an earlier claim is **no longer supported** when the update's verification removed a claim
  of the new report that says the same (its sources no longer bear it out).

`score` is the one number a watcher compares with its threshold: the changed claims as a share
of the earlier version's claims (0 = nothing changed; 1 or more = as many changes as it had
claims).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal

from research.core.records import Finding, Source, Verdict
from research.phases.start.inherit import SUBTOPIC_ID as INHERITED
from storage import Store
from storage.versions import version_link

ChangeKind = Literal["added", "changed", "no_longer_supported"]
_NUMBER = re.compile(r"\d+(?:[.,]\d+)*")
_WORD = re.compile(r"[a-z0-9#]+")
SAME_CLAIM = 0.8  # word overlap (numbers set aside) at which two claims say the same thing
REMOVED = frozenset({"removed"})


@dataclass(frozen=True, slots=True)
class SourceRef:
    """A source a claim rests on, as a reader sees it."""

    id: str
    title: str
    url: str


@dataclass(frozen=True, slots=True)
class ClaimChange:
    """One claim that is new, changed or no longer supported. For a change, `old` and
    `old_sources` are the earlier version's claim; for a claim no longer supported, `claim`
    and `sources` are the earlier version's and `note` says why."""

    kind: ChangeKind
    claim: str
    sources: tuple[SourceRef, ...] = ()
    old: str | None = None
    old_sources: tuple[SourceRef, ...] = ()
    note: str = ""

    def as_json(self) -> dict[str, Any]:
        return {"kind": self.kind, "claim": self.claim, "old": self.old, "note": self.note,
                "sources": [_ref_json(s) for s in self.sources],
                "old_sources": [_ref_json(s) for s in self.old_sources]}


@dataclass(frozen=True, slots=True)
class Changes:
    """What an update changed in the report it updates."""

    run_id: str
    previous_run_id: str
    since: str  # YYYY-MM-DD: the day the earlier version was finished
    added: tuple[ClaimChange, ...] = ()
    changed: tuple[ClaimChange, ...] = ()
    no_longer_supported: tuple[ClaimChange, ...] = ()
    earlier_claims: int = 0
    new_sources: int = 0
    extra: dict[str, Any] = field(default_factory=dict)

    @property
    def count(self) -> int:
        return len(self.added) + len(self.changed) + len(self.no_longer_supported)

    @property
    def score(self) -> float:
        """How much changed, for a watcher's threshold: changed claims per earlier claim."""
        return round(self.count / max(1, self.earlier_claims), 4)

    @property
    def nothing(self) -> bool:
        return self.count == 0

    def as_json(self) -> dict[str, Any]:
        return {"run_id": self.run_id, "previous_run_id": self.previous_run_id,
                "since": self.since, "score": self.score, "count": self.count,
                "earlier_claims": self.earlier_claims, "new_sources": self.new_sources,
                "added": [c.as_json() for c in self.added],
                "changed": [c.as_json() for c in self.changed],
                "no_longer_supported": [c.as_json() for c in self.no_longer_supported]}


def changes(store: Store, run_id: str) -> Changes | None:
    """What the update `run_id` changed; None when it is not an update. Meant for a finished
    update (before it ends, it says what was found so far)."""
    link = version_link(store, run_id)
    run = store.get_run(run_id)
    if link is None or run is None:
        return None
    previous = link.previous_run_id
    refs = {s.id: _ref(s) for s in (*store.get_sources(previous, with_text=False),
                                    *store.get_sources(run_id, with_text=False))}
    own_sources = [s for s in store.get_sources(run_id, with_text=False)
                   if s.subtopic_id != INHERITED]
    return compare(
        run_id=run_id, previous_run_id=previous, since=link.since,
        earlier=store.get_findings(previous),
        found=[f for f in store.get_findings(run_id) if f.subtopic_id != INHERITED],
        verdicts=store.get_verifications(run_id), refs=refs, new_sources=len(own_sources))


def compare(*, run_id: str, previous_run_id: str, since: str, earlier: Sequence[Finding],
            found: Sequence[Finding], verdicts: Sequence[Verdict] = (),
            refs: dict[str, SourceRef] | None = None, new_sources: int = 0) -> Changes:
    """The changes between an earlier version's findings and an update's own (pure)."""
    refs = refs or {}
    old = _unique(f for f in earlier if f.kind == "finding")
    new = _unique(f for f in found if f.kind == "finding")
    added: list[ClaimChange] = []
    changed: list[ClaimChange] = []
    for finding in new:
        if any(_same_text(finding.claim, o.claim) for o in old):
            continue  # found again: still stands
        match = _closest(finding.claim, old)
        sources = _refs(finding.source_ids, refs)
        if match is not None:
            changed.append(ClaimChange("changed", finding.claim, sources, old=match.claim,
                                       old_sources=_refs(match.source_ids, refs)))
        else:
            added.append(ClaimChange("added", finding.claim, sources))
    gone: list[ClaimChange] = []
    superseded = {c.old for c in changed}
    for verdict in verdicts:
        if verdict.outcome not in REMOVED:
            continue
        match = _closest(verdict.claim, old, numbers=True)
        if match is None or match.claim in superseded or any(g.claim == match.claim for g in gone):
            continue
        gone.append(ClaimChange("no_longer_supported", match.claim,
                                _refs(match.source_ids, refs),
                                note=verdict.note or "The new evidence does not bear it out."))
    return Changes(run_id=run_id, previous_run_id=previous_run_id, since=since,
                   added=tuple(added), changed=tuple(changed), no_longer_supported=tuple(gone),
                   earlier_claims=len(old), new_sources=new_sources)


def _unique(findings: Iterable[Finding]) -> list[Finding]:
    seen: dict[str, Finding] = {}
    for f in findings:
        seen.setdefault(" ".join(f.claim.split()), f)
    return list(seen.values())


def _words(text: str, *, numbers: bool) -> set[str]:
    lowered = text.lower()
    return set(_WORD.findall(lowered if numbers else _NUMBER.sub("#", lowered)))


def _same_text(a: str, b: str) -> bool:
    return " ".join(a.lower().split()) == " ".join(b.lower().split())


def _closest(claim: str, candidates: Sequence[Finding], *, numbers: bool = False) -> Finding | None:
    """The earlier claim that says the same as `claim` (numbers set aside, unless
    `numbers`), or None when none is close enough (Dice overlap of their words)."""
    words = _words(claim, numbers=numbers)
    best, best_score = None, 0.0
    for candidate in candidates:
        other = _words(candidate.claim, numbers=numbers)
        if not words or not other:
            continue
        score = 2 * len(words & other) / (len(words) + len(other))
        if score > best_score:
            best, best_score = candidate, score
    return best if best_score >= SAME_CLAIM else None


def _ref(source: Source) -> SourceRef:
    return SourceRef(id=source.id, title=source.title or source.url, url=source.url)


def _refs(ids: Iterable[str], refs: dict[str, SourceRef]) -> tuple[SourceRef, ...]:
    return tuple(refs.get(i) or SourceRef(id=i, title=i, url="") for i in ids)


def _ref_json(ref: SourceRef) -> dict[str, str]:
    return {"id": ref.id, "title": ref.title, "url": ref.url}
