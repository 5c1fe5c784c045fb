"""The one place stored rows become what the `Store` returns.

The Store's getters return records (`storage/records.py`: Subtopic, PlanVersion, Source,
Finding, Query, SkippedPage; Draft, Review, Report, EngineReport, Verdict; Document, Passage,
Collection, RunPassage; `storage/run_records.py`: Run, RunTotals, Step, UsageTotals,
ModelUsage, Activity, EventRow), built here from the row (JSON columns already decoded by
`storage.schema.Json`; citation numberings get int keys, flags become bools). The writers'
rows for plans, sources and findings are built here too, so each shape is written once.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable, Mapping
from dataclasses import fields
from typing import Any, cast

from storage.records import (
    Collection,
    Document,
    Draft,
    EngineReport,
    Finding,
    FindingKind,
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
    JsonObject,
    ModelUsage,
    Run,
    RunTotals,
    Step,
    UsageTotals,
)

# The database edge, the only untyped shapes of storage/'s plumbing: a row as the driver
# returns it (JSON columns decoded) before a function below makes it a record, with values of
# every column type; and a statement's bind parameters by name (any column's value).
Row = dict[str, Any]
Params = Mapping[str, object]


def numbering_out(value: Mapping[str, str] | None) -> dict[int, str]:
    """A stored citation numbering {"1": source_id} as {1: source_id}."""
    return {int(n): sid for n, sid in (value or {}).items()}


def numbering_in(numbering: Mapping[int, str]) -> dict[str, str]:
    return {str(int(n)): sid for n, sid in numbering.items()}


def _int_or_none(value: object) -> int | None:
    return None if value is None else int(value)  # type: ignore[call-overload]


def _float_or_none(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def run_totals(value: object) -> RunTotals:
    """The run's `totals` JSON column (written key by key by `update_totals`; older runs
    stored fewer keys, and a key never written reads as None)."""
    stored: JsonObject = value if isinstance(value, Mapping) else {}
    goal = stored.get("goal")
    return RunTotals(
        sources=_int_or_none(stored.get("sources")), queries=_int_or_none(stored.get("queries")),
        tokens=_int_or_none(stored.get("tokens")), cost_usd=_float_or_none(stored.get("cost_usd")),
        calls=_int_or_none(stored.get("calls")), rounds=_int_or_none(stored.get("rounds")),
        stop_reason=str(stored.get("stop_reason") or ""),
        goal=GoalCheck(met=bool(goal.get("met")), round=_int_or_none(goal.get("round")),
                       why=str(goal.get("why") or "")) if isinstance(goal, Mapping) else None)


def run(row: Row) -> Run:
    config = row["config"]
    return Run(
        id=str(row["id"]), question=str(row["question"]), status=str(row["status"]),
        config=dict(config) if isinstance(config, Mapping) else {},
        engine=str(row["engine"] or "pipeline"), parent_run_id=row["parent_run_id"],
        person=row["person"], error=row["error"], warnings=_texts(row["warnings"]),
        totals=run_totals(row["totals"]), created_at=str(row["created_at"] or ""),
        started_at=row["started_at"], finished_at=row["finished_at"],
        duration_s=_float_or_none(row["duration_s"]), owner=row["owner"],
        heartbeat_at=row["heartbeat_at"], control=row["control"], updated_at=row["updated_at"])


def usage_totals(row: Row | None) -> UsageTotals:
    """The sums of a run's usage rows (no rows: zeros)."""
    row = row or {}
    inp, out = int(row.get("input_tokens") or 0), int(row.get("output_tokens") or 0)
    return UsageTotals(tokens=inp + out, cost_usd=float(row.get("cost_usd") or 0.0),
                       calls=int(row.get("calls") or 0), input_tokens=inp, output_tokens=out)


def model_usage(row: Row) -> ModelUsage:
    return ModelUsage(role=str(row["role"]), provider=str(row["provider"]),
                      model=str(row["model"]), input_tokens=int(row["input_tokens"] or 0),
                      output_tokens=int(row["output_tokens"] or 0),
                      cost_usd=float(row["cost_usd"] or 0.0), calls=int(row["calls"] or 0))


def event(row: Row) -> EventRow:
    """Lean on purpose: the live panel maps its last 200 events on every refresh. The columns
    are NOT NULL text (id an integer) as stored; `data` is the row's own decoded dict."""
    data = row["data"]
    return EventRow(row["id"], row["run_id"], row["ts"], row["type"], row["step"],
                    row["message"] or "", data if isinstance(data, dict) else {})


def step(row: Row) -> Step:
    """Lean on purpose, like `event`: the live panel maps a run's steps on every refresh.
    The columns are as stored (kind, label, status, attempts and source_count NOT NULL);
    `result` is the row's own decoded JSON (NULL: nothing stored, read as empty)."""
    return Step(row["id"], row["run_id"], row["key"], row["kind"], row["label"],
                row["subtopic_id"], row["status"], row["attempts"], row["started_at"],
                row["finished_at"], row["duration_s"], row["result"] or {},
                row["source_count"], row["error"])


def _texts(value: object) -> tuple[str, ...]:
    """A JSON list of strings as a tuple (None: empty)."""
    return tuple(str(v) for v in value or ()) if isinstance(value, list | tuple) else ()


def subtopic(item: JsonObject) -> Subtopic:
    """A subtopic as a plan version's JSON stores it (older plans lack the newer keys)."""
    return Subtopic(
        id=str(item["id"]), title=str(item.get("title") or ""),
        description=str(item.get("description") or ""), questions=_texts(item.get("questions")),
        round=int(item["round"]) if item.get("round") is not None else 1,
        inherited=bool(item.get("inherited")), parent=item.get("parent"),
        searches=int(item["searches"]) if item.get("searches") else None,
        max_sources=int(item["max_sources"]) if item.get("max_sources") else None,
        lookup=bool(item.get("lookup")))


def subtopics(value: object) -> tuple[Subtopic, ...]:
    """A plan's JSON list of subtopics as records."""
    items = value if isinstance(value, list | tuple) else ()
    return tuple(subtopic(item) for item in items)


def subtopic_json(sub: Subtopic) -> dict[str, object]:
    """As a plan version stores it: the optional keys only when set (the plan's JSON stays as
    it was before records, so older readers and the dashboard see the same)."""
    out: dict[str, object] = {"id": sub.id, "title": sub.title, "description": sub.description,
                              "questions": list(sub.questions), "round": sub.round}
    optional = {"inherited": sub.inherited or None, "parent": sub.parent,
                "searches": sub.searches, "max_sources": sub.max_sources,
                "lookup": sub.lookup or None}
    out.update({key: value for key, value in optional.items() if value is not None})
    return out


def plan_version(row: Row) -> PlanVersion:
    return PlanVersion(version=int(row["version"]), kind=str(row["kind"]),
                       subtopics=subtopics(row["subtopics"]),
                       created_at=str(row["created_at"] or ""))


_SOURCE_FIELDS = tuple(f.name for f in fields(Source))
_SOURCE_TEXTS = ("title", "snippet", "text", "relevance_reason", "provider", "query")


def source(row: Row) -> Source:
    """A stored source row; the run and step columns are left (a listing has no `text`)."""
    values = {name: row[name] for name in _SOURCE_FIELDS if name in row}
    for name in ("signals", "cited_in"):
        if name in values:
            values[name] = _texts(values[name])
    for name in _SOURCE_TEXTS:
        if values.get(name) is None:
            values.pop(name, None)
    values["relevance"] = float(values.get("relevance") or 0.0)
    values["round"] = int(values.get("round") or 1)
    return Source(**values)


def source_row(src: Source, *, run_id: str, key: str, now: str,
               plain: Callable[[str], str]) -> Row:
    """A source as the `sources` table stores it: every field, its text passed through
    `plain` (the store's known-secret removal), the defaults a worker leaves empty filled."""
    row: Row = {name: getattr(src, name) for name in _SOURCE_FIELDS}
    for name in ("url", *_SOURCE_TEXTS):
        row[name] = plain(row[name] or "")
    row.update(run_id=run_id, step_key=key, canonical_url=plain(src.canonical_url or src.url),
               fetched_at=src.fetched_at or now, source_kind=src.source_kind or "unknown",
               signals=list(src.signals), cited_in=list(src.cited_in),
               author=plain(src.author) if src.author else None, round=int(src.round or 1),
               relevance=float(src.relevance or 0.0))
    return row


def finding(row: Row) -> Finding:
    return Finding(subtopic_id=row["subtopic_id"], claim=str(row["claim"]),
                   source_ids=_texts(row["source_ids"]),
                   confidence=float(row["confidence"] or 0.0),
                   kind=cast(FindingKind, row["kind"] or "finding"), step_key=row["step_key"])


def finding_row(found: Finding, *, run_id: str, key: str, now: str,
                plain: Callable[[str], str]) -> Row:
    return {"run_id": run_id, "step_key": key, "subtopic_id": found.subtopic_id,
            "claim": plain(found.claim), "source_ids": list(found.source_ids),
            "confidence": float(found.confidence or 0.0), "kind": found.kind or "finding",
            "created_at": now}


def draft(row: Row) -> Draft:
    return Draft(version=int(row["version"]), kind=str(row["kind"]), text=str(row["text"]),
                 numbering=numbering_out(row["numbering"]), words=int(row["word_count"] or 0),
                 created_at=str(row["created_at"] or ""))


def engine_report(row: Row) -> EngineReport:
    return EngineReport(
        engine=str(row["engine"]), status=str(row["status"] or ""), remote_id=row["remote_id"],
        markdown=str(row["markdown"] or ""), numbering=numbering_out(row["numbering"]),
        meta=dict(row["meta"] or {}), error=row["error"], created_at=str(row["created_at"] or ""),
        updated_at=str(row["updated_at"] or ""))


def report(row: Row | None) -> Report | None:
    if row is None:
        return None
    return Report(run_id=str(row["run_id"]), markdown=str(row["markdown"] or ""),
                  meta=dict(row["meta"] or {}), created_at=str(row["created_at"] or ""))


def review_issue(value: object) -> ReviewIssue:
    """A stored issue (a JSON object the reviewer model's answer was validated into), from
    the reviews table or the review step's result."""
    item: Mapping[str, object] = value if isinstance(value, Mapping) else {"issue": value}
    return ReviewIssue(severity=str(item.get("severity") or "low").lower(),
                       issue=str(item.get("issue") or ""), section=str(item.get("section") or ""),
                       suggestion=str(item.get("suggestion") or ""))


def issue_row(issue: ReviewIssue) -> dict[str, str]:
    return {"severity": issue.severity, "section": issue.section, "issue": issue.issue,
            "suggestion": issue.suggestion}


def review(row: Row) -> Review:
    return Review(cycle=int(row["cycle"]), draft_version=int(row["draft_version"]),
                  approved=bool(row["approved"]), model_approved=bool(row["model_approved"]),
                  issues=tuple(review_issue(i) for i in row["issues"] or ()),
                  strengths=_texts(row["strengths"]), checks=dict(row["checks"] or {}),
                  created_at=str(row["created_at"] or ""))


_VERDICT_TEXT = ("passage", "reviewer", "section", "subtopic", "verifier_verdict",
                 "auditor_verdict", "critic_verdict", "status", "final_text", "note")


def verdict(row: Row) -> Verdict:
    return Verdict(claim_id=str(row["claim_id"]), claim=str(row["claim"] or ""),
                   source_ids=_texts(row["source_ids"]), verdict=str(row["verdict"] or ""),
                   details=dict(row["details"] or {}), created_at=str(row["created_at"] or ""),
                   **{name: row[name] for name in _VERDICT_TEXT})


def document(row: Row, collections: Iterable[str] = ()) -> Document:
    return Document(
        id=str(row["id"]), title=str(row["title"] or ""), filename=str(row["filename"] or ""),
        kind=str(row["kind"] or ""), size_bytes=int(row["size_bytes"] or 0), pages=row["pages"],
        passages=int(row["passages"] or 0), status=str(row["status"] or ""),
        sha256=str(row["sha256"] or ""), added_at=str(row["added_at"] or ""),
        message=row["message"], collections=tuple(sorted(collections)))


def passage(row: Row) -> Passage:
    return Passage(id=int(row["id"]), seq=int(row["seq"] or 0), page=row["page"],
                   section=str(row["section"] or ""), text=str(row["text"] or ""))


def collection(row: Row) -> Collection:
    return Collection(name=str(row["name"]), created_at=str(row["created_at"] or ""),
                      documents=int(row["documents"] or 0))


def run_passage(row: Row) -> RunPassage:
    return RunPassage(id=str(row["id"]), title=str(row["title"] or ""),
                      text=str(row["text"] or ""), cited_in=_texts(row["cited_in"]))


def query(row: Row) -> Query:
    return Query(subtopic_id=row["subtopic_id"], query=str(row["query"]),
                 provider=str(row["provider"] or ""), result_count=int(row["result_count"] or 0),
                 error=row["error"], step_key=row["step_key"])


def skipped(row: Row) -> SkippedPage:
    return SkippedPage(subtopic_id=row["subtopic_id"], url=str(row["url"]),
                       reason=str(row["reason"] or ""), step_key=row["step_key"])


def activity(row: Row | None) -> Activity | None:
    """`latest_activity`'s row (None: no such run); counts as ints whatever the driver gave."""
    if not row:
        return None
    return Activity(run_id=str(row["run_id"]), status=str(row["status"]),
                    control=row["control"], error=row["error"],
                    heartbeat_at=row["heartbeat_at"], updated_at=row["updated_at"],
                    **{key: int(row[key] or 0) for key in
                       ("sources", "events", "last_event_id", "steps_done", "steps_total")})
