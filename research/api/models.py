"""What the API's routes take and give: the shapes its OpenAPI document shows.

A new run's options are the CLI's flags by the same names (`python -m research --help`),
and `research.cli.run_config` turns both into one `ResearchConfig`: the bounds of every
number are checked there, once, with the same words; the document shows them from the same
table (`research.core.constants`). Types are checked here (a number is a number).
"""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field

from research.core.constants import CONSTANTS, MAX_QUESTION_CHARS
from research.export.formats import FORMATS

FormatName = Literal["md", "pdf", "docx", "bib", "ris", "csv", "xlsx"]
assert set(FormatName.__args__) == set(FORMATS)  # type: ignore[attr-defined]


def _bounded(name: str, what: str) -> Any:
    """An optional number documented with its constant's bounds (checked by run_config)."""
    const = CONSTANTS[name]
    return Field(default=None, description=f"{what} ({const.minimum:g}-{const.maximum:g}; {name}).",
                 json_schema_extra={"minimum": const.minimum, "maximum": const.maximum})


class StrictModel(BaseModel):
    model_config = ConfigDict(extra="forbid")


class DigDeeper(StrictModel):
    run_id: str = Field(max_length=64, description="The earlier run (one of yours).")
    section: str = Field(max_length=300, description="The title of a section of its report.")


class StartRun(StrictModel):
    """A new run: the question and the CLI's options (unset: the server's defaults)."""

    question: str = Field(default="", description=f"The research question (at most "
                          f"{MAX_QUESTION_CHARS} characters; no control characters). May be "
                          "empty with dig_deeper.",
                          json_schema_extra={"maxLength": MAX_QUESTION_CHARS})
    preset: Literal["quick", "standard", "deep", "exhaustive"] | None = None
    subtopics: int | None = _bounded("SUBTOPIC_COUNT", "Subtopic count")
    sources: int | None = _bounded("SOURCES_PER_SUBTOPIC", "Sources per subtopic")
    reviews: int | None = _bounded("REVIEW_CYCLES", "Review cycles")
    schedule: Literal["rounds", "breadth-depth"] | None = None
    breadth: int | None = _bounded("BREADTH", "breadth-depth: new subtopics of the first "
                                   "deeper level")
    depth: int | None = _bounded("DEPTH", "breadth-depth: research levels")
    language: str | None = Field(default=None, max_length=40,
                                 description="The report's language, e.g. German.")
    max_cost: float | None = Field(default=None, description="Stop research at this many US "
                                   "dollars (0-10000; 0: no cap).",
                                   json_schema_extra={"minimum": 0, "maximum": 10_000})
    clarify: bool = Field(default=False, description="Ask 1-3 clarifying questions first "
                          "(the run then waits: answer with POST .../clarification).")
    engine: Literal["pipeline", "openai-deep-research", "gemini-deep-research",
                    "all"] | None = None
    build_on: str | None = Field(default=None, max_length=64,
                                 description="Start from the sources of an earlier run of yours.")
    dig_deeper: DigDeeper | None = Field(default=None, description="A follow-up run into one "
                                         "section of an earlier report (the question is made "
                                         "from it).")
    review_plan: bool = Field(default=False, description="Wait for the plan's approval "
                              "(POST .../plan) before research starts.")
    done_when: str = Field(default="", max_length=500,
                           description="An exit case in plain words: research stops once met.")
    want: str = Field(default="", max_length=300, description="The output you want.")
    steer: bool = Field(default=False, description="Wait after each round for your choice "
                        "of branches (POST .../steering).")
    collection: str | None = Field(default=None, max_length=80,
                                   description="Research this document collection too.")
    documents: list[str] | None = Field(default=None, max_length=200,
                                        description="Research these documents (ids) too.")
    no_web: bool = Field(default=False, description="Research only your documents.")
    callback_url: str | None = Field(default=None, max_length=2000, description="Where to "
                                     "POST the run's status when it completes, fails or asks "
                                     "you something (signed: X-Signature).")


class Links(BaseModel):
    status: str
    events: str
    report: str


class Started(BaseModel):
    run_id: str
    status: str
    links: Links


class QueueInfo(BaseModel):
    place: int = Field(description="Among your queued runs (1: the next of yours to start).")
    ahead: int = Field(description="Queued runs of everyone ahead of it.")
    text: str


class Totals(BaseModel):
    sources: int | None = None
    queries: int | None = None
    tokens: int | None = None
    cost_usd: float | None = None
    calls: int | None = None
    rounds: int | None = None
    stop_reason: str = ""


class Waiting(BaseModel):
    """What a waiting run needs from you, and where to send it."""

    kind: Literal["clarification", "plan", "steering", "nothing"]
    questions: list[str] = []
    plan: list[dict[str, Any]] = []
    round: int | None = None
    proposals: list[dict[str, Any]] = []
    answer_at: str = ""


class RunSummary(BaseModel):
    id: str
    question: str
    status: str = Field(description="queued, running, paused, waiting, completed, failed, "
                        "cancelled or interrupted: for programs.")
    status_text: str = Field(default="", description="The status as a person reads it, in the "
                             "words of the dashboard, the CLI and the notifications (e.g. "
                             "'Completed with warnings', 'Waiting for you').")
    created_at: str
    finished_at: str | None = None
    preset: str = ""
    engine: str = "pipeline"
    parent_run_id: str | None = None


class RunStatus(RunSummary):
    status_line: str = Field(default="", description="The status and what it means, in one "
                             "plain line (the reason of a failure, a completed run's first "
                             "warning), as the CLI's status command says it.")
    progress: int = Field(description="0-100; 100 only when completed.")
    step: str | None = Field(default=None, description="What the run is doing now.")
    queue: QueueInfo | None = None
    totals: Totals
    warnings: list[str] = []
    error: str | None = None
    started_at: str | None = None
    duration_s: float | None = None
    waiting_for: Waiting | None = None
    settings: dict[str, Any] = {}


class RunList(BaseModel):
    runs: list[RunSummary]
    total: int


class ClarificationAnswers(StrictModel):
    answers: list[str] = Field(max_length=10, description="One answer per question, in "
                               "order; an empty one lets the planner decide.")


class PlanSubtopic(StrictModel):
    id: str = Field(default="", max_length=40, description="Empty for a new subtopic.")
    title: str = Field(max_length=200)
    description: str = Field(default="", max_length=2000)
    questions: list[str] = Field(default=[], max_length=20)


class PlanApproval(StrictModel):
    subtopics: list[PlanSubtopic] | None = Field(default=None, max_length=30, description=
                                                 "The plan as you edited it (unset: as is).")


class SteeringChoice(StrictModel):
    follow: list[int] = Field(default=[], max_length=30, description="Proposal numbers.")
    add: list[str] = Field(default=[], max_length=10, description="Branches of your own.")
    enough: bool = Field(default=False, description="Stop researching and write the report.")


class SourceOut(BaseModel):
    id: str
    number: int | None = Field(description="Its number in the report, if the report cites it.")
    url: str
    title: str
    domain: str = ""
    published: str | None = None
    relevance: float = 0.0
    subtopic_id: str | None = None
    provider: str = ""
    kind: str = ""
    cited_in: list[str] = []


class SourceList(BaseModel):
    sources: list[SourceOut]


class EvidenceOut(BaseModel):
    claim: str
    verdict: str
    passage: str
    source: str
    source_url: str
    section: str


class EvidenceList(BaseModel):
    rows: list[EvidenceOut]


class Me(BaseModel):
    token_id: str
    person: str | None


class DocumentOut(BaseModel):
    id: str
    title: str
    filename: str
    kind: str
    size_bytes: int
    pages: int | None = None
    passages: int = 0
    status: str
    message: str | None = None
    added_at: str = ""
    collections: list[str] = []


class DocumentList(BaseModel):
    documents: list[DocumentOut]


class Uploaded(BaseModel):
    filename: str
    ok: bool
    message: str
    document_id: str | None = None


class CollectionOut(BaseModel):
    name: str
    documents: int
    created_at: str = ""


class CollectionList(BaseModel):
    collections: list[CollectionOut]


class NewCollection(StrictModel):
    name: str = Field(max_length=80)


class CollectionMembers(StrictModel):
    document_ids: list[str] = Field(max_length=500)


class PassageOut(BaseModel):
    document_id: str
    title: str
    page: int | None = None
    section: str = ""
    text: str
    rank: float


class PassageList(BaseModel):
    passages: list[PassageOut]


class ErrorDetail(BaseModel):
    code: str
    message: str


class ErrorBody(BaseModel):
    error: ErrorDetail
