"""The records phases hand to each other: a subtopic of the plan, a source, a finding, and
what research gathered as the writer takes it.

Frozen and typed, so what crosses from one phase to the next says what it holds. The records
the store returns and takes (subtopics, plan versions, sources, findings, searches, skipped
pages, the writing side, the document library) are defined beside the store, which builds
them in `storage/rows.py`, the one place a row becomes a record; they are part of this
vocabulary too, so phases import them from here.
"""

from __future__ import annotations

from dataclasses import dataclass

from storage.records import (
    Collection,
    Document,
    Draft,
    EngineReport,
    Finding,
    FindingKind,
    JsonObject,  # a JSON column as stored (a step's result, a report's meta): see storage.records
    Passage,
    PlanVersion,
    Query,
    Report,
    Review,
    ReviewIssue,
    RunPassage,
    SkippedPage,
    Source,
    Subtopic,
    Verdict,
)
from storage.run_records import (
    Activity,
    EventRow,
    GoalCheck,
    ModelUsage,
    Run,
    RunTotals,
    Step,
    UsageTotals,
)

__all__ = ["Activity", "Collection", "Document", "Draft", "EngineReport", "EventRow",
           "FailedSubtopic", "Finding", "FindingKind", "GoalCheck", "JsonObject",
           "ModelUsage", "Passage", "PlanVersion", "Query", "Report", "ResearchResult",
           "Review", "ReviewIssue", "Run", "RunPassage", "RunTotals", "SkippedPage", "Source",
           "Step", "Subtopic", "UsageTotals", "Verdict"]

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
