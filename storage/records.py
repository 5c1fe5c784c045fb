"""The records the Store returns and takes: the plan's subtopics, sources, findings, searches and
skipped pages; what the writing side stored (drafts, reviews, the report, hosted engines'
reports, claim verdicts); and the person's documents.

Frozen and typed, in the style of `research/core/records.py`, which re-exports them: together they
are the one vocabulary phases, the store, exports and the dashboard pass to each other. They
live here, not in `research/`, because the store builds them (in `storage/rows.py`, the one
place a row becomes a record) and `research` imports `storage` at package level: the arrow
points from the engine to the store, never back.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, Literal

# JsonObject: a JSON object column as stored (a report's meta, a review's checks, a verdict's
# details): the model or the phase that wrote it owns its keys, and older runs stored fewer
# of them, so readers look keys up leniently. The one untyped shape the records below carry.
from storage.run_records import JsonObject as JsonObject

FindingKind = Literal["finding", "gap", "follow_up"]


@dataclass(frozen=True, slots=True)
class Subtopic:
    """One part of the plan, or a unit of research built like one (a quick lookup)."""

    id: str
    title: str
    description: str = ""
    questions: tuple[str, ...] = ()
    round: int = 1
    inherited: bool = False  # earlier research a follow-up run builds on (its parent's)
    parent: str | None = None  # the subtopic a later round's subtopic grew out of
    searches: int | None = None  # instead of SEARCHES_PER_SUBTOPIC (later rounds, lookups)
    max_sources: int | None = None  # instead of SOURCES_PER_SUBTOPIC (quick lookups)
    lookup: bool = False  # a quick lookup: what it finds attaches to subtopic `id`


@dataclass(frozen=True, slots=True)
class PlanVersion:
    """One stored version of the plan: the lead's, the person's edit, or a later round's."""

    version: int
    kind: str  # "original", "edited" or "round"
    subtopics: tuple[Subtopic, ...]
    created_at: str = ""


@dataclass(frozen=True, slots=True)
class Source:
    """A page (or a passage of the person's own documents) kept for the report. Its fields
    are the `sources` table's columns (less the run and the step): the one statement of a
    source's shape, which `storage/rows.py` reads and writes."""

    id: str
    url: str
    canonical_url: str = ""
    title: str = ""
    snippet: str = ""
    text: str = ""  # empty when read without text (listings, the writer's numbering)
    published: str | None = None
    relevance: float = 0.0
    relevance_reason: str = ""
    subtopic_id: str | None = None
    provider: str = ""
    query: str = ""
    round: int = 1
    fetched_at: str | None = None
    source_kind: str = "unknown"
    signals: tuple[str, ...] = ()
    author: str | None = None
    cited_in: tuple[str, ...] = ()  # report sections that cite it (set when delivered)
    step_key: str | None = None  # the step that stored it (set by the store)


@dataclass(frozen=True, slots=True)
class Finding:
    """A worker's cited claim about its subtopic, or a gap or follow-up question it noted."""

    subtopic_id: str | None
    claim: str
    source_ids: tuple[str, ...] = ()
    confidence: float = 0.0
    kind: FindingKind = "finding"
    step_key: str | None = None  # the step that stored it (set by the store)


@dataclass(frozen=True, slots=True)
class Draft:
    """One stored version of the report: the first draft, a revision or the verified one."""

    version: int
    kind: str  # "draft", "revision", "verified", "engine:<name>" or "partial" (being written)
    text: str
    numbering: Mapping[int, str]  # citation number -> source id
    words: int = 0
    created_at: str = ""


@dataclass(frozen=True, slots=True)
class ReviewIssue:
    """One problem a reviewer raised about a draft."""

    severity: str  # "high", "medium" or "low"
    issue: str
    section: str = ""
    suggestion: str = ""


@dataclass(frozen=True, slots=True)
class Review:
    """One review cycle: the verdict (the model's and, after the automatic checks, ours)."""

    cycle: int
    draft_version: int
    approved: bool
    model_approved: bool
    issues: tuple[ReviewIssue, ...] = ()
    strengths: tuple[str, ...] = ()
    checks: JsonObject | None = None  # the deterministic checks (`research.report.checks`)
    created_at: str = ""


@dataclass(frozen=True, slots=True)
class Report:
    """The run's delivered report: its Markdown and how it was built (meta)."""

    run_id: str
    markdown: str
    meta: JsonObject  # draft_version, parameters_line, notes, words, cited_sources...
    created_at: str = ""


@dataclass(frozen=True, slots=True)
class EngineReport:
    """A hosted engine's remote job and, once finished, its report."""

    engine: str
    status: str  # the remote job's: queued | in_progress | completed | failed | ...
    remote_id: str | None = None
    markdown: str = ""
    numbering: Mapping[int, str] | None = None  # citation number -> source id
    meta: JsonObject | None = None  # label, model, words, cited_sources, polls, cost_usd...
    error: str | None = None
    created_at: str = ""
    updated_at: str = ""

    def _meta(self, key: str) -> Any:
        return (self.meta or {}).get(key)

    @property
    def label(self) -> str:
        """The name it was shown under ("" when it stored none)."""
        return str(self._meta("label") or "")

    @property
    def model(self) -> str:
        return str(self._meta("model") or "")

    @property
    def words(self) -> int:
        return int(self._meta("words") or 0)

    @property
    def cited_sources(self) -> int:
        return int(self._meta("cited_sources") or 0)

    @property
    def polls(self) -> int:
        return int(self._meta("polls") or 0)

    @property
    def cost_usd(self) -> float | None:
        """What it cost; None when the service did not say (stored as null)."""
        cost = (self.meta or {}).get("cost_usd", 0.0)
        return float(cost) if cost is not None else None


@dataclass(frozen=True, slots=True)
class Verdict:
    """One claim of the report checked against its sources, and what became of it."""

    claim_id: str
    claim: str
    source_ids: tuple[str, ...] = ()
    verdict: str = ""  # the combined verdict (SUPPORTED, OVERSTATED...)
    passage: str | None = None  # the quoted passage that supports (or contradicts) it
    reviewer: str | None = None
    section: str | None = None
    subtopic: str | None = None
    verifier_verdict: str | None = None
    auditor_verdict: str | None = None
    critic_verdict: str | None = None
    status: str | None = None  # supported, qualified, removed, unchecked...
    final_text: str | None = None
    note: str | None = None
    details: JsonObject | None = None  # per-pass verdicts, excerpts, single_source...
    created_at: str = ""

    @property
    def outcome(self) -> str:
        """The final status, or the combined verdict for rows stored without one."""
        return str(self.status or self.verdict or "").lower()


@dataclass(frozen=True, slots=True)
class Query:
    """One search a worker ran on one provider: how many results, or why it failed."""

    subtopic_id: str | None
    query: str
    provider: str
    result_count: int = 0
    error: str | None = None
    step_key: str | None = None  # the step that ran it (set by the store)


@dataclass(frozen=True, slots=True)
class SkippedPage:
    """A page a worker read or considered and did not keep, with the reason."""

    subtopic_id: str | None
    url: str
    reason: str
    step_key: str | None = None  # the step that skipped it (set by the store)


@dataclass(frozen=True, slots=True)
class Document:
    """A file in the person's library, with the collections it belongs to."""

    id: str
    title: str
    filename: str
    kind: str  # pdf, docx, md, txt, html
    size_bytes: int
    pages: int | None
    passages: int
    status: str  # "ready" or "no_text"
    sha256: str
    added_at: str
    message: str | None = None  # why a file has no searchable text
    collections: tuple[str, ...] = ()


@dataclass(frozen=True, slots=True)
class Passage:
    """One passage of a document, in reading order."""

    id: int
    seq: int
    page: int | None
    section: str
    text: str


@dataclass(frozen=True, slots=True)
class Collection:
    """A named group of documents a run can be limited to."""

    name: str
    created_at: str
    documents: int = 0


@dataclass(frozen=True, slots=True)
class RunPassage:
    """A document passage a run read, with the text as the run read it."""

    id: str  # the source id the run gave it
    title: str
    text: str
    cited_in: tuple[str, ...] = ()
