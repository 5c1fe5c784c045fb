"""The records phases hand to each other: a subtopic of the plan, a source, a finding.

Frozen and typed, so what crosses from one phase to the next says what it holds. For plans,
sources and findings the store still returns and takes rows (dicts, JSON columns decoded; the
research phases that read them are being reworked): `from_row` is the one place such a
stored row becomes a record and `row()` the one place a record becomes what the store takes,
so the shape of each is written once, here (the table definitions in `storage.schema` are the
other side of the same shape).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass, fields
from typing import Any, Literal, cast

# The records the store returns (drafts, reviews, the report, hosted engines' reports, claim
# verdicts, searches, skipped pages, the document library) are defined beside the store,
# which builds them; they are part of this vocabulary too, so phases import them from here.
from storage.records import (
    Collection,
    Document,
    Draft,
    EngineReport,
    Passage,
    Query,
    Report,
    Review,
    ReviewIssue,
    RunPassage,
    SkippedPage,
    StoreRow,  # a row as the Store's writers take it
    Verdict,
)
from storage.run_records import (
    Activity,
    EventRow,
    GoalCheck,
    ModelUsage,
    Run,
    RunTotals,
    UsageTotals,
)

__all__ = ["Activity", "Collection", "Document", "Draft", "EngineReport", "EventRow", "FailedSubtopic", "Finding",
           "FindingKind", "GoalCheck", "ModelUsage", "Passage", "Query", "Report", "ResearchResult", "Review", "ReviewIssue",
           "Row", "Run", "RunPassage", "RunTotals", "SkippedPage", "Source", "StoreRow", "Subtopic", "UsageTotals", "Verdict",
           "findings", "plan_rows", "subtopics"]

# The edge with the store, which still returns plan, source and finding rows (decoded JSON
# columns, extra columns such as the run id): the only untyped mapping here.
Row = Mapping[str, Any]  # a row as the Store returns it

FindingKind = Literal["finding", "gap", "follow_up"]


def _texts(value: object) -> tuple[str, ...]:
    """A JSON list of strings as a tuple (None or a missing column: empty)."""
    return tuple(str(v) for v in cast("Iterable[object]", value or ()))


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

    @classmethod
    def from_row(cls, row: Row) -> Subtopic:
        """A subtopic as stored in a plan version (older plans lack the newer keys)."""
        return cls(
            id=str(row["id"]), title=str(row.get("title") or ""),
            description=str(row.get("description") or ""),
            questions=_texts(row.get("questions")),
            round=int(row["round"]) if row.get("round") is not None else 1,
            inherited=bool(row.get("inherited")), parent=row.get("parent"),
            searches=int(row["searches"]) if row.get("searches") else None,
            max_sources=int(row["max_sources"]) if row.get("max_sources") else None,
            lookup=bool(row.get("lookup")),
        )

    def row(self) -> StoreRow:
        """As a plan stores it: the optional keys only when set (the plan's JSON stays as it
        was before records, so older readers and the dashboard see the same)."""
        out: StoreRow = {"id": self.id, "title": self.title,
                               "description": self.description,
                               "questions": list(self.questions), "round": self.round}
        if self.inherited:
            out["inherited"] = True
        if self.parent is not None:
            out["parent"] = self.parent
        if self.searches is not None:
            out["searches"] = self.searches
        if self.max_sources is not None:
            out["max_sources"] = self.max_sources
        if self.lookup:
            out["lookup"] = True
        return out


def subtopics(rows: Iterable[Row] | None) -> tuple[Subtopic, ...]:
    """A stored plan (or None before planning) as records."""
    return tuple(Subtopic.from_row(r) for r in rows or ())


def plan_rows(plan: Iterable[Subtopic]) -> list[StoreRow]:
    return [s.row() for s in plan]


@dataclass(frozen=True, slots=True)
class FailedSubtopic:
    """A planned subtopic whose research did not finish, with the reason in plain words."""

    subtopic: Subtopic
    error: str

    @property
    def id(self) -> str:
        return self.subtopic.id

    @property
    def title(self) -> str:
        return self.subtopic.title


@dataclass(frozen=True, slots=True)
class Source:
    """A page (or a passage of the person's own documents) kept for the report."""

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

    @classmethod
    def from_row(cls, row: Row) -> Source:
        """A stored source row; columns that are not the source's (run id, step) are left."""
        values: StoreRow = {f.name: row[f.name] for f in fields(cls) if f.name in row}
        for name in ("signals", "cited_in"):
            if name in values:
                values[name] = _texts(values[name])
        for name in ("title", "snippet", "text", "relevance_reason", "provider", "query"):
            if values.get(name) is None:
                values.pop(name, None)
        values["relevance"] = float(values.get("relevance") or 0.0)
        values["round"] = int(values.get("round") or 1)
        return cls(**values)

    def row(self) -> StoreRow:
        """As the store takes it (`complete_research_step`) and prompts read it."""
        out = {f.name: getattr(self, f.name) for f in fields(self)}
        out["signals"], out["cited_in"] = list(self.signals), list(self.cited_in)
        return out


@dataclass(frozen=True, slots=True)
class Finding:
    """A worker's cited claim about its subtopic, or a gap or follow-up question it noted."""

    subtopic_id: str | None
    claim: str
    source_ids: tuple[str, ...] = ()
    confidence: float = 0.0
    kind: FindingKind = "finding"

    @classmethod
    def from_row(cls, row: Row) -> Finding:
        return cls(subtopic_id=row.get("subtopic_id"), claim=str(row["claim"]),
                   source_ids=_texts(row.get("source_ids")),
                   confidence=float(row.get("confidence") or 0.0),
                   kind=cast(FindingKind, row.get("kind") or "finding"))

    def row(self) -> StoreRow:
        return {"subtopic_id": self.subtopic_id, "claim": self.claim,
                "source_ids": list(self.source_ids), "confidence": self.confidence,
                "kind": self.kind}


def findings(rows: Iterable[Row]) -> tuple[Finding, ...]:
    """Stored finding rows (the store's `get_findings`) as records."""
    return tuple(Finding.from_row(r) for r in rows)


@dataclass(frozen=True, slots=True)
class ResearchResult:
    """What research gathered, as the writer, reviewer and verifier take it: the plan's
    subtopics (inherited and later rounds' included), the ones that could not be researched,
    and the kept sources (without their text) and findings."""

    subtopics: tuple[Subtopic, ...]
    failed: tuple[FailedSubtopic, ...] = ()
    sources: tuple[Source, ...] = ()
    findings: tuple[Finding, ...] = ()

    @property
    def researched(self) -> tuple[Subtopic, ...]:
        """The subtopics researched by this run (not inherited), finished or not."""
        return tuple(s for s in self.subtopics if not s.inherited)
