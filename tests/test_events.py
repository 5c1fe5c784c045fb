"""Typed events: every kind survives the event log, old rows still read, listeners fail loudly."""

from __future__ import annotations

import dataclasses
import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dashboard.views import events_frame, tail_events
from research.core import events as ev
from storage import Store

RUN = "r_events"

# One event of every kind, each own field set away from its default so a field the log
# forgets cannot pass unnoticed.
SAMPLES: list[ev.Event] = [
    ev.Initiated(RUN, "Research started: q"),
    ev.PlanCreated(RUN, "Plan: 2 subtopics", step="plan", subtopics=("Costs", "Risks")),
    ev.StepStarted(RUN, "Researching: Costs", step="research:t1", kind="research",
                   label="Researching: Costs", attempt=2, engine="openai", remote_id="job_1"),
    ev.StepCompleted(RUN, "done", step="engine:openai", kind="engine", label="OpenAI",
                     duration_s=12.5, sources=7, new_sources=3, remote_id="job_1"),
    ev.StepFailed(RUN, "failed", step="research:t1", kind="research", label="Researching",
                  error="HTTP 500", attempt=2, final=False),
    ev.SourceFound(RUN, "Source: A", step="research:t1", source_id="s_1", url="https://a.example",
                   title="A", relevance=0.75, subtopic_id="t1"),
    ev.SourceSkipped(RUN, "Skipped", step="research:t1", url="https://b.example",
                     reason="timed out", subtopic_id="t1"),
    ev.SearchFailed(RUN, "tavily failed", step="research:t1", provider="tavily", query="costs",
                    reason="HTTP 502"),
    ev.Retrying(RUN, "retry", step="engine:openai", attempt=1, delay_s=2.5),
    ev.LimitWait(RUN, "Waiting for OpenAI's limit", provider="openai", model="gpt-4.1",
                 wait_s=40.0),
    ev.RoundCompleted(RUN, "Round 1", step="triage:1", round=1, filter=2, answer=1, escalate=3,
                      stop_reason="MAX_ROUNDS reached."),
    ev.DraftStarted(RUN, "revising", step="revise:1", sources=12, revising=1),
    ev.DraftCompleted(RUN, "Verified", step="verify", version=3, words=900,
                      citations_converted=2, citations_removed=1, claims=10, supported=8,
                      share_supported=0.8, unsupported_removed=1, rewritten=1, single_source=2,
                      unchecked=1, uncited=0, incomplete=True),
    ev.ReviewCycle(RUN, "Review 1", step="review:1", cycle=1, approved=True,
                   issues=ev.IssueCounts(high=1, medium=2, low=3), checks_passed=True),
    ev.Completed(RUN, "Research complete.", warnings=2),
    ev.Error(RUN, "No search provider could be reached."),
    ev.Warning(RUN, "The model gave 2 of 3", step="plan", count_note=True, got=2, asked=3,
               detail="Traceback (most recent call last): ..."),
    ev.Cancelled(RUN, "cancelled"),
    ev.Paused(RUN, "Paused."),
    ev.Waiting(RUN, "Answer the questions"),
    ev.Resumed(RUN, "Resumed."),
]


@pytest.fixture
def store(tmp_path: Path) -> Iterator[Store]:
    s = Store(tmp_path / "events.db")
    yield s
    s.close()


def _stored(store: Store, *rows: ev.Event | dict[str, Any]) -> list[ev.Event]:
    """The rows through the store's log of a new run, typed again (run ids put back to RUN)."""
    run_id = store.create_run("q", {})
    for row in rows:
        store.append_event(dataclasses.replace(row, run_id=run_id) if isinstance(row, ev.Event)
                           else {**row, "run_id": run_id})
    return [dataclasses.replace(ev.from_row(r), run_id=RUN) for r in store.get_events(run_id)]


def test_every_event_kind_has_a_sample_with_its_own_fields_set() -> None:
    assert {e.type for e in SAMPLES} == set(ev.EVENT_TYPES)
    for event in SAMPLES:
        for f in dataclasses.fields(event):
            if f.name not in ("run_id", "message", "step", "ts"):
                assert getattr(event, f.name) != f.default, (event.type, f.name)


def test_every_event_kind_round_trips_through_the_event_log(store: Store) -> None:
    back = _stored(store, *SAMPLES)
    assert back == SAMPLES
    assert [type(e) for e in back] == [type(e) for e in SAMPLES]


@pytest.mark.parametrize("event", SAMPLES, ids=lambda e: e.type)
def test_every_event_kind_round_trips_through_json(event: ev.Event) -> None:
    assert ev.from_json(event.to_json()) == event


def test_the_stored_row_keeps_the_old_shape() -> None:
    """`data` holds the kind's own fields under the keys earlier versions wrote."""
    row = SAMPLES[5].to_dict()
    assert set(row) == {"type", "run_id", "ts", "step", "message", "data"}
    assert row["data"] == {"source_id": "s_1", "url": "https://a.example", "title": "A",
                           "relevance": 0.75, "subtopic_id": "t1"}
    assert ev.ReviewCycle(RUN, issues=ev.IssueCounts(high=2)).to_dict()["data"]["issues"] == {
        "high": 2, "medium": 0, "low": 0}
    assert ev.StepStarted(RUN, "x").to_dict()["data"] == {}  # defaults are not written


def test_rows_written_by_earlier_versions_read_back_typed(store: Store) -> None:
    old = [  # payloads as the engine wrote them before events had fields
        {"type": "step_started", "run_id": RUN, "message": "Planning", "step": "plan"},
        {"type": "source_found", "run_id": RUN, "message": "Source reused", "step": "inherit",
         "data": {"source_id": "s_9", "subtopic_id": "inherited"}},
        {"type": "review_cycle", "run_id": RUN, "message": "Review 1", "data": {
            "cycle": 1, "approved": False, "issues": {"high": 1, "medium": 0, "low": 2},
            "checks_passed": False}},
        {"type": "warning", "run_id": RUN, "message": "short", "data": {
            "count_note": True, "got": 2, "asked": 5}},
        {"type": "step_completed", "run_id": RUN, "message": "done", "data": {
            "duration_s": 3, "sources": "4", "unheard_of": [1, 2]}},
        {"type": "source_found", "run_id": RUN, "message": "odd", "data": {
            "relevance": "very", "url": "https://c.example"}},
        {"type": "plan_created", "run_id": RUN, "message": "Plan", "data": {
            "subtopics": ["A", "B"]}},
        {"type": "from_the_future", "run_id": RUN, "message": "new kind", "data": {"x": 1}},
    ]
    started, reused, review, warning, completed, odd, plan, future = _stored(store, *old)
    assert isinstance(started, ev.StepStarted) and started.step == "plan"
    assert (started.kind, started.label, started.attempt) == ("", "", 1)
    assert isinstance(reused, ev.SourceFound)
    assert (reused.source_id, reused.subtopic_id, reused.url, reused.relevance) == (
        "s_9", "inherited", "", None)
    assert isinstance(review, ev.ReviewCycle) and review.issues == ev.IssueCounts(1, 0, 2)
    assert isinstance(warning, ev.Warning) and warning.count_note and warning.asked == 5
    assert isinstance(completed, ev.StepCompleted)
    assert completed.duration_s == 3.0 and completed.sources == 4  # coerced to the field types
    assert isinstance(odd, ev.SourceFound)
    assert odd.relevance is None and odd.url == "https://c.example"  # a bad value: its default
    assert isinstance(plan, ev.PlanCreated) and plan.subtopics == ("A", "B")
    assert isinstance(future, ev.Other) and future.type == "from_the_future"
    assert future.data == {"x": 1} and future.message == "new kind"
    assert all(e.ts.endswith("Z") and e.run_id == RUN for e in (started, future))


def test_rows_with_a_missing_or_unreadable_payload_still_read() -> None:
    assert ev.from_row({"type": "error", "run_id": RUN, "message": "boom", "data": None}) == \
        ev.Error(RUN, "boom", ts="")
    text = ev.from_row({"type": "search_failed", "run_id": RUN, "data": '{"provider": "arxiv"}'})
    assert isinstance(text, ev.SearchFailed) and text.provider == "arxiv"
    broken = ev.from_row({"type": "search_failed", "data": "{not json"})
    assert isinstance(broken, ev.SearchFailed) and broken.provider == "" and broken.run_id == ""


def test_the_dashboard_log_shows_old_and_new_rows(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.append_event({"type": "step_completed", "run_id": run_id, "message": "old row"})
    store.append_event(ev.SourceSkipped(run_id, "Skipped https://b: timed out",
                                        url="https://b", reason="timed out"))
    tail = tail_events(store, run_id)
    assert [type(e) for e in tail] == [ev.StepCompleted, ev.SourceSkipped]
    frame = events_frame(tail)
    assert list(frame["Event"]) == ["Page skipped", "Step done"]  # in words (research/voice.py)
    assert list(frame["Message"]) == ["Skipped https://b: timed out", "old row"]


def test_a_failing_listener_is_logged_and_the_others_still_hear(
    caplog: pytest.LogCaptureFixture,
) -> None:
    heard: list[ev.Event] = []

    def broken_listener(event: ev.Event) -> None:
        raise RuntimeError("listener bug")

    emit = ev.fan_out(broken_listener, heard.append)
    event = ev.SourceFound(RUN, "Source: A", source_id="s_1")
    with caplog.at_level(logging.ERROR, logger="research.core.events"):
        emit(event)
    assert heard == [event]
    [record] = [r for r in caplog.records if r.name == "research.core.events"]
    text = record.getMessage()
    assert "broken_listener" in text and "source_found" in text and RUN in text
    assert record.exc_info is not None and "listener bug" in str(record.exc_info[1])
