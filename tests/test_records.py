"""Typed records (issue 15): stored rows become records in one place, and records become the
rows the store takes without changing what is stored."""

from __future__ import annotations

import json
from dataclasses import FrozenInstanceError, fields, replace
from pathlib import Path

import pytest
from sqlalchemy import text

from research.core.records import (
    Draft,
    EngineReport,
    Finding,
    Query,
    Report,
    Review,
    ReviewIssue,
    SkippedPage,
    Source,
    Subtopic,
    Verdict,
)
from storage import Store
from storage.schema import sources as sources_table
from tests.store_files import migrated_copy


@pytest.fixture
def store(tmp_db: Path) -> Store:
    return Store(migrated_copy(tmp_db))


def test_a_stored_plan_reads_back_as_the_same_records(store: Store) -> None:
    plan = [
        Subtopic(id="p0", title="Earlier research", round=0, inherited=True),
        Subtopic(id="t1", title="Costs", description="What it costs", questions=("How much?",)),
        Subtopic(id="r2t1", title="Subsidies?", description="why", questions=("Subsidies?",),
                 round=2, parent="t1", searches=2),
    ]
    run_id = store.create_run("q", {})
    store.save_plan(run_id, plan)
    assert store.get_plan(run_id) == plan
    [version] = store.get_plans(run_id)
    assert (version.version, version.kind, version.subtopics) == (1, "original", tuple(plan))
    raw = store._rows("SELECT subtopics FROM plans WHERE run_id = :r", {"r": run_id})[0]
    stored = json.loads(raw["subtopics"]) if isinstance(raw["subtopics"], str) else raw["subtopics"]
    assert stored == [  # the plan's JSON keeps its shape: optional keys only when set
        {"id": "p0", "title": "Earlier research", "description": "", "questions": [],
         "round": 0, "inherited": True},
        {"id": "t1", "title": "Costs", "description": "What it costs",
         "questions": ["How much?"], "round": 1},
        {"id": "r2t1", "title": "Subsidies?", "description": "why", "questions": ["Subsidies?"],
         "round": 2, "parent": "t1", "searches": 2},
    ]


def test_a_plan_stored_before_records_reads_leniently(store: Store) -> None:
    """An older plan's JSON lacks the newer keys (and may hold keys no record knows)."""
    run_id = store.create_run("q", {})
    with store._write() as tx:
        tx.execute(text("INSERT INTO plans (run_id, version, kind, subtopics, created_at) "
                        "VALUES (:r, 1, 'original', :s, '2025-01-01T00:00:00Z')"),
                   {"r": run_id, "s": json.dumps([{"id": "t1", "title": "Costs",
                                                    "added_by_person": True}])})
    assert store.get_plan(run_id) == [Subtopic(id="t1", title="Costs")]


def test_a_source_is_stored_and_read_back_as_the_same_record(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="r")
    source = Source(id="s_1", url="https://a.example/x", canonical_url="https://a.example/x",
                    title="A", text="body", relevance=0.8, subtopic_id="t1",
                    signals=("peer-reviewed",), source_kind="paper")
    finding = Finding("t1", "A claim", ("s_1",), 0.7)
    store.complete_research_step(run_id, "research:t1", sources=[source], findings=[finding])
    [back] = store.get_sources(run_id)
    assert back.fetched_at  # stamped by the store
    assert back == replace(source, fetched_at=back.fetched_at, step_key="research:t1")
    light = store.get_sources(run_id, with_text=False)[0]
    assert light.text == "" and light.title == "A"
    assert store.get_findings(run_id) == [replace(finding, step_key="research:t1")]


def test_a_sources_shape_is_written_once_the_records_fields_are_the_tables_columns() -> None:
    """The `sources` table and the Source record say the same thing (the run id aside): a
    column added to one without the other fails here, not in a run."""
    assert {f.name for f in fields(Source)} == {c.name for c in sources_table.c} - {"run_id"}


def test_a_source_without_a_canonical_url_is_stored_under_its_url(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="r")
    store.complete_research_step(run_id, "research:t1",
                                 sources=[Source(id="s_2", url="https://b.example/y")])
    [back] = store.get_sources(run_id)
    assert (back.canonical_url, back.source_kind, back.round) == ("https://b.example/y", "unknown", 1)


def test_searches_and_skipped_pages_read_back_as_the_records_written(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="r")
    asked = [Query("t1", "heat pumps", "tavily", 4), Query("t1", "cop", "exa", error="timeout")]
    skipped = SkippedPage("t1", "https://b.example/y", "relevance 0.20 below 0.6")
    store.complete_research_step(run_id, "research:t1", queries=asked, skipped=[skipped])
    assert store.get_queries(run_id) == [replace(q, step_key="research:t1") for q in asked]
    assert store.get_skipped(run_id) == [replace(skipped, step_key="research:t1")]


def test_records_are_frozen() -> None:
    sub = Subtopic(id="t1", title="Costs")
    with pytest.raises(FrozenInstanceError):
        sub.title = "Other"  # type: ignore[misc]
    verdict = Verdict("c1", "A claim")
    with pytest.raises(FrozenInstanceError):
        verdict.status = "removed"  # type: ignore[misc]


def test_the_writing_side_reads_back_as_records(store: Store) -> None:
    """Drafts, reviews, the report, engine reports and verdicts come back typed, whatever
    the JSON columns held (an older reviewer's issue without a severity reads as low)."""
    run_id = store.create_run("q", {})
    store.save_draft(run_id, 2, "revision", "x [1]", {1: "s_1"}, 2)
    [draft] = store.get_drafts(run_id)
    assert isinstance(draft, Draft) and draft.numbering == {1: "s_1"} and draft.words == 2
    assert draft.created_at  # stamped by the store
    store.save_review(run_id, 1, draft_version=2, approved=True, model_approved=False,
                      issues=[ReviewIssue("medium", "Too long")], strengths=[], checks={})
    [review] = store.get_reviews(run_id)
    assert isinstance(review, Review) and review.issues[0].severity == "medium"
    store.save_engine_report(run_id, "openai-deep-research", "Engine [1]", numbering={1: "s_1"},
                             meta={"label": "OpenAI", "words": 1, "cost_usd": None})
    report = store.get_engine_report(run_id, "openai-deep-research")
    assert isinstance(report, EngineReport) and report.status == "completed"
    assert (report.label, report.words, report.polls, report.cost_usd) == ("OpenAI", 1, 0, None)
    store.save_verifications(run_id, [Verdict("c1", "A claim", ("s_1",), "SUPPORTED",
                                              status="qualified", final_text="Some claim")])
    [verdict] = store.get_verifications(run_id)
    assert verdict.outcome == "qualified" and verdict.final_text == "Some claim"
    assert verdict.source_ids == ("s_1",) and verdict.created_at
    store.save_report(run_id, "# R", meta={"words": 1})
    assert store.get_report(run_id) == Report(run_id, "# R", {"words": 1},
                                              store.get_report(run_id).created_at)  # type: ignore[union-attr]
