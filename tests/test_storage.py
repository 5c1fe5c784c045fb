"""The store on both databases (SQLite file, PostgreSQL server): schema, concurrency, atomic
research steps, cascades, redaction. Tests taking `store` run once per database; the
SQLite-only ones (WAL, pragmas, the file's bytes) take `sqlite_store` or a path."""

from __future__ import annotations

import sqlite3
import threading
import time
from collections.abc import Iterator
from dataclasses import fields, replace
from pathlib import Path

import pytest
from sqlalchemy import insert, inspect, select, text, update

from research.core.events import Error, SourceFound
from research.core.records import (
    Finding,
    Query,
    ReviewIssue,
    RunTotals,
    SkippedPage,
    Source,
    Step,
    Subtopic,
    Verdict,
)
from storage import MIGRATIONS, Store, conversations, default_db_path, tokens, versions, watches
from storage.migrate import head_revision
from storage.schema import metadata, runs
from storage.schema import steps as steps_table
from tests.store_files import migrated_copy


@pytest.fixture
def store(db_target: str) -> Iterator[Store]:
    """A new store on SQLite (a copy of one migrated once: tests/store_files.py), then on
    PostgreSQL."""
    s = Store(db_target if "://" in db_target else migrated_copy(Path(db_target)))
    yield s
    s.close()


@pytest.fixture
def sqlite_store(tmp_path: Path) -> Iterator[Store]:
    s = Store(migrated_copy(tmp_path / "db" / "research.db"))
    yield s
    s.close()


def _raw(store: Store) -> sqlite3.Connection:
    """A connection from the store's own pool, as its connect hook configured it."""
    conn = store._database.engine.raw_connection().driver_connection
    assert isinstance(conn, sqlite3.Connection)
    return conn


def _source(n: int, *, url: str | None = None, subtopic: str = "t1",
            relevance: float = 0.5) -> Source:
    url = url or f"https://example.org/page-{n}"
    return Source(id=f"s_{n:08x}", url=url + "?utm_source=x", canonical_url=url,
                  title=f"Page {n}", snippet="snip", text="body text", published=None,
                  relevance=relevance, relevance_reason="on topic", subtopic_id=subtopic,
                  provider="fake", query="q", round=1, fetched_at="2024-01-01T00:00:00Z")


def test_migrations_are_recorded_once_and_reopen_is_idempotent(tmp_path: Path) -> None:
    path = tmp_path / "research.db"
    Store(path).close()
    run_id = Store(path).create_run("q", {})
    again = Store(path)
    rows = again.query("SELECT version, applied_at FROM schema_migrations ORDER BY version")
    assert [r["version"] for r in rows] == list(range(1, len(MIGRATIONS) + 1))
    assert all(r["applied_at"].endswith("Z") for r in rows)
    assert again.query("SELECT version_num FROM alembic_version") == [
        {"version_num": head_revision()}]
    assert again.get_run(run_id) is not None


def test_database_is_in_wal_mode_with_busy_timeout_and_foreign_keys(sqlite_store: Store) -> None:
    conn = _raw(sqlite_store)
    assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"
    assert conn.execute("PRAGMA busy_timeout").fetchone()[0] == 30000
    assert conn.execute("PRAGMA foreign_keys").fetchone()[0] == 1


def test_default_db_path_honours_environment(monkeypatch: pytest.MonkeyPatch,
                                             tmp_path: Path) -> None:
    monkeypatch.delenv("DEEP_RESEARCH_DB", raising=False)
    assert default_db_path() == Path(__file__).resolve().parent.parent / "data" / "research.db"
    monkeypatch.setenv("DEEP_RESEARCH_DB", str(tmp_path / "x.db"))
    assert default_db_path() == tmp_path / "x.db"


def test_concurrent_writer_threads_all_land_in_id_order(store: Store) -> None:
    run_id = store.create_run("concurrency", {})
    errors: list[BaseException] = []

    def writer(n: int) -> None:
        try:
            for i in range(200):
                store.append_event({"type": "source_found", "run_id": run_id,
                                    "message": f"t{n} e{i}", "data": {"n": n, "i": i}})
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)
        finally:
            store.close()

    threads = [threading.Thread(target=writer, args=(n,)) for n in range(8)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    events = store.get_events(run_id)
    assert len(events) == 1600
    assert {(e.data["n"], e.data["i"]) for e in events} == {
        (n, i) for n in range(8) for i in range(200)
    }
    ids = [e.id for e in events]
    assert ids == sorted(ids)
    assert store.latest_activity(run_id).last_event_id == ids[-1]


def test_events_round_trip_from_dataclasses_and_page_by_after_id(store: Store) -> None:
    run_id = store.create_run("q", {})
    first = store.append_event(SourceFound(run_id=run_id, message="found", step="r1",
                                           url="https://a"))
    second = store.append_event({"type": "warning", "run_id": run_id, "message": "hm"})
    events = store.get_events(run_id)
    assert [e.type for e in events] == ["source_found", "warning"]
    assert events[0].data == {"url": "https://a"} and events[0].step == "r1"
    assert events[0].ts.endswith("Z") and events[1].ts.endswith("Z")
    assert [e.id for e in store.get_events(run_id, after_id=first)] == [second]
    assert len(store.get_events(run_id, limit=1)) == 1


def test_complete_research_step_deduplicates_by_canonical_url(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="Topic 1", subtopic_id="t1")
    first = store.complete_research_step(
        run_id, "research:t1", sources=[_source(1), _source(2), _source(3, url="https://example.org/page-1")],
        findings=[Finding("t1", "c", ("s_00000001", "s_00000003"), 0.8, "finding")],
        queries=[Query("t1", "q", "fake", 3)],
        skipped=[SkippedPage("t1", "http://10.0.0.1/", "private address")],
        result={"summary": "ok"},
    )
    assert first == ["s_00000001", "s_00000002"]
    # the duplicate's citation now points at the stored source
    assert store.get_findings(run_id)[0].source_ids == ("s_00000001",)

    store.start_step(run_id, "research:t2", kind="research", label="Topic 2", subtopic_id="t2")
    second = store.complete_research_step(
        run_id, "research:t2", sources=[_source(2, subtopic="t2"), _source(4, subtopic="t2")],
        findings=[], queries=[], skipped=[],
    )
    assert second == ["s_00000004"]
    assert store.count_sources(run_id) == 3
    assert store.canonical_urls(run_id) == {f"https://example.org/page-{n}" for n in (1, 2, 4)}
    step = store.get_step(run_id, "research:t1")
    assert step is not None
    assert (step.status, step.source_count, step.result) == ("done", 2, {"summary": "ok"})
    assert step.duration_s is not None and step.attempts == 1
    assert len(store.get_queries(run_id)) == 1 and store.get_queries(run_id)[0].error is None
    assert store.get_skipped(run_id)[0].reason == "private address"


def test_complete_research_step_is_all_or_nothing(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="Topic 1")
    with pytest.raises(Exception, match="(?i)null"):  # the driver's NOT NULL violation
        store.complete_research_step(
            run_id, "research:t1", sources=[_source(1)],
            findings=[Finding("t1", None)],  # type: ignore[arg-type]  # no claim: fails mid-way
        )
    assert store.count_sources(run_id) == 0
    assert store.get_findings(run_id) == []
    step = store.get_step(run_id, "research:t1")
    assert step is not None and step.status == "running"


def test_rerunning_a_research_step_replaces_its_findings(store: Store) -> None:
    run_id = store.create_run("q", {})
    kwargs = {"sources": [_source(1)],
              "findings": [Finding("t1", "c", ("s_00000001",), 0.5, "gap")]}
    store.start_step(run_id, "r", kind="research", label="R")
    store.complete_research_step(run_id, "r", **kwargs)
    store.start_step(run_id, "r", kind="research", label="R")
    assert store.complete_research_step(run_id, "r", **kwargs) == []
    assert len(store.get_findings(run_id)) == 1
    step = store.get_step(run_id, "r")
    assert step is not None and step.attempts == 2


def test_sources_order_and_citations(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.complete_research_step(
        run_id, "r", sources=[_source(1, relevance=0.2), _source(2, relevance=0.9),
                              _source(3, subtopic="t0", relevance=0.1)],
        findings=[], queries=[], skipped=[],
    )
    assert [s.id for s in store.get_sources(run_id)] == ["s_00000003", "s_00000002",
                                                         "s_00000001"]
    assert [s.id for s in store.get_sources(run_id, subtopic_id="t1")] == ["s_00000002",
                                                                           "s_00000001"]
    assert store.get_sources(run_id)[0].text == "body text"
    assert store.get_sources(run_id, with_text=False)[0].text == ""
    store.set_citations(run_id, {"s_00000002": ["Introduction", "Findings"]})
    cited = {s.id: s.cited_in for s in store.get_sources(run_id)}
    assert cited == {"s_00000001": (), "s_00000002": ("Introduction", "Findings"),
                     "s_00000003": ()}


def test_delete_run_removes_every_row_of_the_run(store: Store) -> None:
    keep = store.create_run("keep me", {})
    run_id = store.create_run("delete me", {"depth": 2})
    earlier = store.create_run("an earlier version of both", {})
    for rid in (keep, run_id):
        store.save_plan(rid, [Subtopic(id="t1", title="T")])
        store.start_step(rid, "r", kind="research", label="R")
        store.complete_research_step(
            rid, "r", sources=[_source(1)],
            findings=[Finding("t1", "c", ("s_00000001",), 1.0, "finding")],
            queries=[Query("t1", "q", "p", 1)], skipped=[SkippedPage("t1", "u", "r")])
        store.save_draft(rid, 1, "draft", "text [1]", {1: "s_00000001"}, 2)
        store.save_review(rid, 1, draft_version=1, approved=True, model_approved=True,
                          issues=[], strengths=["clear"], checks={"citations": True})
        store.save_report(rid, "# Report", meta={"words": 2})
        store.save_verifications(rid, [Verdict("c1", "c", verdict="supported")])
        store.add_usage(rid, "writer", "fake", "m", 10, 5, 0.01)
        store.save_engine_job(rid, "openai-deep-research", remote_id="resp_1", status="queued")
        store.append_event(Error(run_id=rid, message="boom"))
        tokens.watch_run(store, rid, token_id="tok_1", url="https://example.org/hook")
        conversations.index_run(store, rid, [("s_00000001", 0, "a passage")])  # ask the report
        conversations.add_turn(store, rid, person=None, question="q?", answer="a.",
                               status="answered", details={})
        versions.link_version(store, rid, previous_run_id=earlier, since="2026-01-01")
        watches.add_watch(store, rid, person=None, every="weekly", next_at="2026-12-01")
    store.delete_run(run_id)
    assert store.get_run(run_id) is None
    with store._database.read() as conn:  # every table the database has, not only ours
        found = inspect(conn)
        tables = [t for t in found.get_table_names()
                  if "run_id" in {c["name"] for c in found.get_columns(t)}]
    assert len(tables) == 18
    for table in tables:
        count = f'SELECT count(*) AS n FROM "{table}" WHERE run_id = :run'
        assert store.query_one(count, {"run": run_id}) == {"n": 0}, table
        assert store.query_one(count, {"run": keep})["n"] >= 1, table  # type: ignore[index]
    assert store.get_run(keep) is not None


def test_list_runs_is_newest_first_and_searches_case_insensitively(store: Store) -> None:
    a = store.create_run("Solar panel recycling in Europe", {})
    b = store.create_run("History of the bicycle", {})
    c = store.create_run("SOLAR storms and satellites", {})
    d = store.create_run("Über die Sonne", {})
    assert [r.id for r in store.list_runs()] == [d, c, b, a]
    assert [r.id for r in store.list_runs(search="solar")] == [c, a]
    assert [r.id for r in store.list_runs(search="ÜBER")] == [d]
    assert [r.id for r in store.list_runs(search="100%")] == []
    assert store.count_runs() == 4 and store.count_runs("SoLaR") == 2
    assert [r.id for r in store.list_runs(limit=2, offset=1)] == [c, b]
    store.set_run_status(b, "running")
    assert [r.id for r in store.list_runs(status="running")] == [b]


def test_list_runs_stays_fast_with_ten_thousand_runs(store: Store) -> None:
    with store.transaction() as tx:
        tx.execute(insert(runs), [
            {"id": f"r{i:05d}", "question": f"question number {i}",
             "created_at": f"2024-01-01T00:00:{i // 1000:02d}.{i % 1000:03d}Z"}
            for i in range(10_000)])
    if store.dialect == "sqlite":
        plan = " ".join(r[3] for r in _raw(store).execute(
            "EXPLAIN QUERY PLAN SELECT * FROM runs ORDER BY created_at DESC, rowid DESC LIMIT 100"))
        assert "idx_runs_created_at" in plan
    start = time.perf_counter()
    newest = store.list_runs(limit=50)
    found = store.list_runs(search="NUMBER 99")
    total = store.count_runs("number")
    elapsed = time.perf_counter() - start
    assert newest[0].id == "r09999" and len(newest) == 50
    assert found[0].id == "r09999" and total == 10_000
    assert elapsed < 1.0


def test_run_lifecycle_statuses_timings_totals_and_control(store: Store) -> None:
    run_id = store.create_run("q", {"depth": 2}, engine="agents")
    run = store.get_run(run_id)
    assert run is not None
    assert (run.status, run.engine, run.config, run.totals) == (
        "queued", "agents", {"depth": 2}, RunTotals())
    assert run.created_at.endswith("Z") and len(run_id) == 12
    store.set_run_status(run_id, "running")
    started = store.get_run(run_id).started_at  # type: ignore[union-attr]
    store.set_run_status(run_id, "paused")
    store.set_run_status(run_id, "running")
    assert store.get_run(run_id).started_at == started  # type: ignore[union-attr]
    store.update_totals(run_id, sources=3, cost_usd=0.01)
    store.update_totals(run_id, sources=5)
    store.increment_totals(run_id, queries=2)
    store.increment_totals(run_id, queries=1)
    store.set_control(run_id, "cancel")
    assert store.get_control(run_id) == "cancel"
    store.set_run_status(run_id, "cancelled", error="stopped by user")
    run = store.get_run(run_id)
    assert run is not None
    assert run.totals == RunTotals(sources=5, cost_usd=0.01, queries=3)
    assert run.finished_at and run.duration_s is not None and run.duration_s >= 0
    assert run.error == "stopped by user" and run.control is None
    with pytest.raises(ValueError):
        store.set_run_status(run_id, "exploded")
    with pytest.raises(ValueError):
        store.set_control(run_id, "explode")
    child = store.create_run("q", {}, parent_run_id=run_id)
    assert store.get_run(child).parent_run_id == run_id  # type: ignore[union-attr]


def test_mark_interrupted_only_takes_runs_without_a_fresh_heartbeat(store: Store) -> None:
    fresh = store.create_run("fresh", {})
    stale = store.create_run("stale", {})
    silent = store.create_run("never beat", {})
    done = store.create_run("done", {})
    for rid in (fresh, stale, silent, done):
        store.set_run_status(rid, "running")
    store.set_run_status(done, "completed")
    store.heartbeat(fresh, "pid:1@host")
    store.heartbeat(stale, "pid:2@host")
    with store.transaction() as tx:
        tx.execute(update(runs).where(runs.c.id == stale)
                   .values(heartbeat_at="2020-01-01T00:00:00.000Z"))
    assert sorted(store.mark_interrupted(stale_after_s=30)) == sorted([stale, silent])
    assert store.get_run(fresh).status == "running"  # type: ignore[union-attr]
    assert store.get_run(fresh).owner == "pid:1@host"  # type: ignore[union-attr]
    assert store.get_run(stale).status == "interrupted"  # type: ignore[union-attr]
    assert store.get_run(done).status == "completed"  # type: ignore[union-attr]
    assert store.mark_interrupted() == []


def test_plans_are_versioned(store: Store) -> None:
    run_id = store.create_run("q", {})
    assert store.get_plan(run_id) is None
    first, second = Subtopic(id="t1", title="One"), Subtopic(id="t2", title="Two")
    assert store.save_plan(run_id, [first]) == 1
    assert store.save_plan(run_id, [first, second], kind="edited") == 2
    assert store.get_plan(run_id) == [first, second]
    assert [(p.version, p.kind) for p in store.get_plans(run_id)] == [
        (1, "original"), (2, "edited")]


def test_steps_keep_start_order_and_record_failures(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.start_step(run_id, "plan", kind="plan", label="Plan")
    store.finish_step(run_id, "plan", result={"subtopics": 3})
    store.start_step(run_id, "write", kind="write", label="Write")
    store.fail_step(run_id, "write", "timeout", final=False)
    assert store.get_step(run_id, "write").status == "retrying"  # type: ignore[union-attr]
    store.start_step(run_id, "write", kind="write", label="Write")
    store.fail_step(run_id, "write", "timeout again")
    steps = store.get_steps(run_id)
    assert [s.key for s in steps] == ["plan", "write"]
    assert steps[0].result == {"subtopics": 3} and steps[0].status == "done"
    assert (steps[1].status, steps[1].attempts, steps[1].error) == (
        "failed", 2, "timeout again")
    assert store.get_step(run_id, "nope") is None


def test_a_step_record_carries_every_column_and_an_unfinished_step_no_result(store: Store) -> None:
    assert [f.name for f in fields(Step)] == [c.key for c in steps_table.columns]
    run_id = store.create_run("q", {})
    store.start_step(run_id, "research:t1", kind="research", label="Topic 1", subtopic_id="t1")
    [running] = store.get_steps(run_id)
    assert running == store.get_step(run_id, "research:t1") == store.live_view(run_id, events=1).steps[0]
    assert (running.run_id, running.subtopic_id, running.status, running.attempts) == (
        run_id, "t1", "running", 1)
    assert running.result == {} and running.finished_at is None and running.duration_s is None


def test_draft_numbering_keys_come_back_as_ints(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.save_draft(run_id, 2, "revision", "b [1][2]", {1: "s_a", 2: "s_b"}, 3)
    store.save_draft(run_id, 1, "draft", "a [1]", {1: "s_a"}, 2)
    drafts = store.get_drafts(run_id)
    assert [d.version for d in drafts] == [1, 2]
    assert drafts[1].numbering == {1: "s_a", 2: "s_b"} and drafts[1].words == 3
    assert all(isinstance(k, int) for k in drafts[1].numbering)


def test_reviews_report_usage_and_verifications_round_trip(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.save_review(run_id, 1, draft_version=1, approved=False, model_approved=True,
                      issues=[ReviewIssue("high", "missing citation", section="Costs")],
                      strengths=["short"], checks={"uncited": 2})
    review = store.get_reviews(run_id)[0]
    assert review.approved is False and review.model_approved is True
    assert review.issues == (ReviewIssue("high", "missing citation", section="Costs"),)
    assert review.checks == {"uncited": 2} and review.strengths == ("short",)
    store.save_report(run_id, "# v1", meta={"a": 1})
    store.save_report(run_id, "# v2", meta={"a": 2})
    report = store.get_report(run_id)
    assert report is not None and report.markdown == "# v2" and report.meta == {"a": 2}
    assert store.get_report("missing") is None
    store.add_usage(run_id, "writer", "openai", "m1", 100, 50, 0.002)
    store.add_usage(run_id, "writer", "openai", "m1", 10, 5, 0.001)
    store.add_usage(run_id, "planner", "openai", "m2", 1, 1, 0.0)
    assert len(store.get_usage(run_id)) == 2
    totals = store.usage_totals(run_id)
    assert (totals.tokens, totals.calls) == (167, 3)
    assert totals.cost_usd == pytest.approx(0.003)
    store.save_verifications(run_id, [Verdict("c1", "x", ("s_a",), "unsupported",
                                              reviewer="model")])
    store.save_verifications(run_id, [Verdict("c1", "x", ("s_a",), "supported", passage="p",
                                              reviewer="model", details={"single_source": True})])
    verifications = store.get_verifications(run_id)
    assert len(verifications) == 1 and verifications[0].verdict == "supported"
    assert verifications[0].source_ids == ("s_a",) and verifications[0].passage == "p"
    assert verifications[0].details == {"single_source": True}
    assert verifications[0].outcome == "supported"  # no status stored: the verdict


def test_latest_activity_is_a_cheap_summary(store: Store) -> None:
    run_id = store.create_run("q", {})
    assert store.latest_activity("missing") is None
    activity = store.latest_activity(run_id)
    assert (activity.status, activity.sources, activity.events,
            activity.last_event_id) == ("queued", 0, 0, 0)
    store.complete_research_step(run_id, "r", sources=[_source(1)])
    last = store.append_event({"type": "step_completed", "run_id": run_id})
    activity = store.latest_activity(run_id)
    assert (activity.sources, activity.events, activity.last_event_id,
            activity.steps_done) == (1, 1, last, 1)


KNOWN_KEY = "custom-key-9f8e7d6c5b4a"  # not key-shaped: only the secrets list can catch it
SHAPED_KEY = "sk-proj-UNKNOWNKEY1234567890"  # never declared: caught by its shape


def _store_secrets_everywhere(store: Store) -> None:
    known, shaped = KNOWN_KEY, SHAPED_KEY
    run_id = store.create_run(f"question {known}", {"note": f"Bearer {known}"})
    store.append_event(Error(run_id=run_id, message=f"401 for key {known} / {shaped}"))
    store.append_event({"type": "warning", "run_id": run_id, "message": "payload",  # an old row
                        "data": {"detail": f"key={known}", known: [shaped]}})
    store.set_run_status(run_id, "failed", error=f"AuthError: {known} refused; {shaped}")
    store.start_step(run_id, "r", kind="research", label="R")
    store.fail_step(run_id, "r", f"provider said {shaped} / {known}")
    store.complete_research_step(
        run_id, "r", sources=[replace(_source(1), text=f"echo {known}")],
        queries=[Query("t1", "q", "p", 0, error=f"HTTP 401 {known}")])
    store.update_totals(run_id, last_error=known)
    store.save_report(run_id, f"report {known}", meta={"k": known})
    assert "[redacted]" in store.get_events(run_id)[0].message


def test_api_keys_never_reach_any_table(db_target: str) -> None:
    """On both databases: every row of every table, read back as text, holds no key."""
    store = Store(db_target, secrets=[KNOWN_KEY])
    _store_secrets_everywhere(store)
    for table in metadata.sorted_tables:
        dumped = repr(store.query(select(table)))
        assert KNOWN_KEY not in dumped and SHAPED_KEY not in dumped, table.name
    store.close()


def test_api_keys_never_reach_the_database_file(tmp_path: Path) -> None:
    known = KNOWN_KEY
    shaped = SHAPED_KEY
    path = tmp_path / "research.db"
    store = Store(path, secrets=[known])
    _store_secrets_everywhere(store)
    raw = b"".join(p.read_bytes() for p in tmp_path.iterdir() if p.name.startswith("research.db"))
    assert Path(str(path) + "-wal").exists()
    assert known.encode() not in raw
    assert shaped.encode() not in raw
    store.close()
    # and after a checkpoint folds the WAL into the main file
    conn = sqlite3.connect(path)
    conn.execute("PRAGMA wal_checkpoint(TRUNCATE)")
    conn.close()
    assert known.encode() not in path.read_bytes()


def test_many_stores_opening_a_new_database_at_once_migrate_it_once(db_target: str) -> None:
    path = db_target
    barrier = threading.Barrier(6)
    errors: list[BaseException] = []

    def opener() -> None:
        try:
            barrier.wait()
            s = Store(path)
            s.create_run("hello", {})
            s.close()
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    threads = [threading.Thread(target=opener) for _ in range(6)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    store = Store(path)
    assert store.count_runs() == 6
    assert store.query(text("SELECT version_num FROM alembic_version")) == [
        {"version_num": head_revision()}]
    if store.dialect == "sqlite":
        assert len(store.query("SELECT * FROM schema_migrations")) == len(MIGRATIONS)


def test_event_timestamps_are_normalised_to_utc_z(store: Store) -> None:
    run_id = store.create_run("q", {})
    store.append_event({"type": "warning", "run_id": run_id, "ts": "2024-05-01T12:00:00+02:00"})
    assert store.get_events(run_id)[0].ts == "2024-05-01T10:00:00.000Z"
