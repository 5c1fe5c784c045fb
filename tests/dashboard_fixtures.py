"""Fixtures for the dashboard tests: an isolated database and secrets file, and a finished run
written straight through Store methods (no engine, no network)."""

from __future__ import annotations

import os
import socket
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from streamlit.testing.v1 import AppTest

from research.core.config import ResearchConfig, build_config
from research.core.records import Query, ReviewIssue, Run, SkippedPage, Source, Subtopic
from research.export import build_document, to_markdown
from storage import Store
from tests.fakes import Fakes, take_misuses
from tests.standin import StandinServer
from tests.store_files import migrated_copy

APP = str(Path(__file__).resolve().parent.parent / "app.py")
KEY_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "ANTHROPIC_API_KEY",
            "ANTHROPIC_BASE_URL", "TAVILY_API_KEY",
            "SEMANTIC_SCHOLAR_API_KEY", "OPENAI_BASE_URL", "GEMINI_BASE_URL", "TAVILY_BASE_URL",
            "DEEP_RESEARCH_PROVIDER", "DEEP_RESEARCH_MODEL", "DEEP_RESEARCH_SEARCH",
            "SEARXNG_BASE_URL", "BRAVE_API_KEY", "EXA_API_KEY", "SERPER_API_KEY")

EVIL_TITLE = 'Evil <img src=x onerror=alert(1)> [x](javascript:alert(1)) title'
DRAFT_1 = """## Executive summary

Solar capacity grew fast in 2024 [1]. Costs fell by about $0.10 per watt [2].

## Key findings

- Storage is the bottleneck [1][3].
"""
DRAFT_2 = DRAFT_1 + "\n## Open questions\n\nGrid build-out remains uncertain [2].\n"


@pytest.fixture(name="dash_env")
def dash_env_fixture(request: pytest.FixtureRequest, tmp_path: Path,
                     monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """DEEP_RESEARCH_DB and the secrets file point into tmp_path; no provider keys set.

    A SQLite file by default; a test marked `on_both_databases` runs again with
    DEEP_RESEARCH_DB set to a fresh PostgreSQL database's URL (tests/pg_server.py), where the
    job queue lives in that database as it does for a team.

    On SQLite the job queue is one file per test process (DEEP_RESEARCH_JOBS_DB), not one
    beside each test's store: DBOS is one instance per process, and a new queue database
    means tearing it down and launching it again (about 1.5 s and 0.2 CPU-s per test). The
    default place of the queue is tested in test_durable_jobs.py and test_worker_recovery.py.
    A run a test leaves queued is cancelled when it ends, so it never runs in the next test.
    """
    database = getattr(request, "param", "sqlite")
    if database == "sqlite":
        db = str(migrated_copy(tmp_path / "data" / "research.db"))
        queue = request.getfixturevalue("tmp_path_factory").getbasetemp() / "dashboard-jobs.sqlite"
        monkeypatch.setenv("DEEP_RESEARCH_JOBS_DB", f"sqlite:///{queue}")
    else:
        db = str(request.getfixturevalue("pg_url"))
        monkeypatch.delenv("DEEP_RESEARCH_JOBS_DB", raising=False)
    monkeypatch.setenv("DEEP_RESEARCH_DB", db)
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "secrets.toml"))
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    store = Store(db)
    yield store
    _cancel_runs_left_queued()
    store.close()


def _cancel_runs_left_queued(wait_s: float = 10.0) -> None:
    """Runs still executing get `wait_s` to end; then every queued or executing workflow on
    the process's job queue is cancelled (it would otherwise run in the next test)."""
    from research.runs import engine

    engine.cancel_all(wait_s)


# The dashboard test runs on a SQLite file, then with DEEP_RESEARCH_DB a PostgreSQL URL.
on_both_databases = pytest.mark.parametrize("dash_env", ["sqlite", "postgresql"], indirect=True)
# Only PostgreSQL: a page file's checks run again, together, on one PostgreSQL database (one
# database and one job queue for the lot, where a parametrised test would make one for each).
on_postgresql = pytest.mark.parametrize("dash_env", ["postgresql"], indirect=True)


def source(n: int, *, subtopic: str = "t1", title: str | None = None, relevance: float = 0.8,
           published: str | None = "2024-06-01") -> Source:
    url = f"https://example{n % 7}.org/article-{n}"
    return Source(id=f"s{n:04d}", url=url, canonical_url=url, title=title or f"Article {n}",
                  snippet="snippet", text="", published=published, relevance=relevance,
                  relevance_reason="on topic", subtopic_id=subtopic, provider="web",
                  query="q", round=1, fetched_at="2024-07-01T00:00:00Z")


def finished_run(store: Store, question: str = "How fast is solar power growing?", *,
                 sources: int = 6, events: int = 5, status: str = "completed",
                 person: str | None = None, **constants: Any) -> str:
    """A completed run (of `person`) with plan, steps, sources, two drafts, a review, a
    report and usage."""
    config = build_config(env={}, preset="quick", **constants)
    run_id = store.create_run(question, config.model_dump(mode="json"), person=person)
    store.set_run_status(run_id, "running")
    plan = [Subtopic(id="t1", title="Growth figures", description="How much capacity was added.",
                     questions=("How much was installed in 2024?",)),
            Subtopic(id="t2", title="Costs", description="What it costs.",
                     questions=("How did module prices move?",))]
    store.save_plan(run_id, plan)
    store.start_step(run_id, "preflight", kind="preflight", label="Checking the providers")
    store.finish_step(run_id, "preflight", result={})
    store.start_step(run_id, "plan", kind="plan", label="Planning the research")
    store.finish_step(run_id, "plan", result={"subtopics": 2})
    records = [source(i, subtopic="t1" if i % 2 else "t2", relevance=0.6 + (i % 4) / 10,
                      title=EVIL_TITLE if i == 1 else None) for i in range(1, sources + 1)]
    for key, sub in (("research:t1", "t1"), ("research:t2", "t2")):
        store.start_step(run_id, key, kind="research", label=f"Researching {sub}")
        store.complete_research_step(run_id, key, sources=[r for r in records if r.subtopic_id == sub],
                                     queries=[Query(sub, "solar growth", "web", 5)],
                                     skipped=[SkippedPage(sub, "https://skip.example/x",
                                                          "relevance 0.20 below 0.6")])
    numbering = {1: "s0001", 2: "s0002", 3: "s0003"}
    store.save_draft(run_id, 1, "draft", DRAFT_1, numbering, 30)
    store.save_draft(run_id, 2, "revision", DRAFT_2, numbering, 38)
    store.save_review(run_id, 1, draft_version=1, approved=False, model_approved=False,
                      issues=[ReviewIssue("high", "Storage claim rests on one source",
                                          section="Key findings",
                                          suggestion="Add a second source for storage"),
                              ReviewIssue("low", "Wordy", section="Summary", suggestion="Trim")],
                      strengths=["Clear executive summary"],
                      checks={"unresolved_citations": [], "cited_share": 0.9, "sentences": 10,
                              "cited_sentences": 9, "word_count": 30, "max_words": 1500,
                              "stale_sources": [], "undated_sources": 0, "passed": True})
    doc = build_document(run_id=run_id, question=question, created_at="2024-07-01T00:00:00Z",
                         parameters_line=config.parameters_line(), draft=DRAFT_2, numbering=numbering,
                         sources=records)
    store.save_report(run_id, to_markdown(doc), meta={"draft_version": 2, "cited_sources": 3,
                                                      "parameters_line": config.parameters_line()})
    store.set_citations(run_id, {"s0001": ["Executive summary"], "s0002": ["Executive summary"]})
    store.add_usage(run_id, "worker", "openai", "gpt-5-mini", 12000, 3000, 0.009)
    store.add_usage(run_id, "writer", "openai", "gpt-5-mini", 8000, 4000, 0.010)
    for i in range(events):
        store.append_event({"run_id": run_id, "type": "step_completed", "message": f"event {i}"})
    store.update_totals(run_id, sources=sources, cost_usd=0.019)
    store.set_run_status(run_id, status)
    return run_id


# -- runs that wait for the person, rounds, hosted engines, budgets (issue 4 and 5) ----------

CLARIFY_QUESTIONS = ["What will you use the answer for?", "Which region matters most?"]
PLAN = [Subtopic("t1", "Growth figures", description="How much capacity was added.",
                 questions=("How much was installed in 2024?",)),
        Subtopic("t2", "Costs", description="What it costs.",
                 questions=("How did module prices move?", "What do installers charge?")),
        Subtopic("t3", "Policy", description="Subsidies and rules.",
                 questions=("Which subsidies exist?",))]


def running_run(store: Store, question: str = "How fast is solar power growing?") -> str:
    """A run worked on by an engine in this very process: its heartbeat is fresh, so it stays
    running (no sweep takes it for interrupted)."""
    config = build_config(env={}, preset="quick")
    run_id = store.create_run(question, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.heartbeat(run_id, f"pid:{os.getpid()}@{socket.gethostname()}")
    return run_id


def waiting_for_answers(store: Store, question: str = "heat pumps") -> str:
    """A run paused after asking clarifying questions (research/phases/start/clarify.py)."""
    config = build_config(env={}, preset="quick", REQUIRE_CLARIFICATION=True)
    run_id = store.create_run(question, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.start_step(run_id, "preflight", kind="preflight", label="Checking the providers")
    store.finish_step(run_id, "preflight", result={})
    store.start_step(run_id, "clarify", kind="clarify", label="Clarifying the question")
    store.finish_step(run_id, "clarify", result={"questions": CLARIFY_QUESTIONS, "answers": None})
    store.set_run_status(run_id, "waiting")
    return run_id


def waiting_for_plan_review(store: Store, question: str = "How fast is solar power growing?") -> str:
    """A run paused after planning, for the person to review the plan (phases/plan.py)."""
    config = build_config(env={}, preset="quick", review_plan=True)
    run_id = store.create_run(question, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.start_step(run_id, "plan", kind="plan", label="Planning the research")
    store.save_plan(run_id, PLAN)
    store.finish_step(run_id, "plan", result={"subtopics": len(PLAN)})
    store.set_run_status(run_id, "waiting")
    return run_id


TRIAGE_1 = {
    "round": 1,
    "coverage": [{"subtopic_id": "t1", "status": "answered", "note": "Clear figures from two agencies"},
                 {"subtopic_id": "t2", "status": "conflicting", "note": "Price series disagree"}],
    "decisions": [
        {"id": "q1", "question": "Is <b>rooftop</b> solar counted?", "subtopic_id": "t1",
         "action": "filter", "reason": "redundant with the plan", "searches": 1},
        {"id": "q2", "question": "What did modules cost in China?", "subtopic_id": "t2",
         "action": "answer", "reason": "a quick lookup settles it", "searches": 2},
        {"id": "q3", "question": "How do grid connection queues affect growth?", "subtopic_id": "t1",
         "action": "escalate", "reason": "broad and important", "searches": 2},
    ],
    "stop_reason": None, "new_subtopics": 1,
}
TRIAGE_2 = {"round": 2, "coverage": [{"subtopic_id": "e1", "status": "open", "note": "Little data"}],
            "decisions": [], "stop_reason": "MAX_ROUNDS reached.", "new_subtopics": 0}


def add_rounds(store: Store, run_id: str) -> None:
    """Two rounds of triage on a finished run: a filtered, an answered and an escalated question."""
    plan = (store.get_plan(run_id) or []) + [
        Subtopic("e1", "Grid connection queues", description="Escalated follow-up.",
                 questions=("How do grid connection queues affect growth?",), round=2)]
    store.save_plan(run_id, plan, kind="original")
    store.start_step(run_id, "triage:1", kind="triage", label="Assessing round 1")
    store.finish_step(run_id, "triage:1", result=TRIAGE_1)
    store.start_step(run_id, "followup:1:2", kind="followup", label="Quick lookup: modules")
    store.finish_step(run_id, "followup:1:2", result={}, source_count=3)
    store.start_step(run_id, "triage:2", kind="triage", label="Assessing round 2")
    store.finish_step(run_id, "triage:2", result=TRIAGE_2)
    store.update_totals(run_id, rounds=2, stop_reason="MAX_ROUNDS reached.")


def add_engine_reports(store: Store, run_id: str) -> None:
    """A finished OpenAI deep-research report (with hostile text) and a failed Gemini job."""
    markdown = ("## Summary\n\nModules got cheaper [1]. <img src=https://evil.example/t.png> "
                "![track](https://evil.example/p.gif) [click](javascript:alert(1))\n")
    store.save_engine_job(run_id, "openai-deep-research", remote_id="resp_1", status="in_progress",
                          meta={"label": "OpenAI deep research (o4-mini-deep-research)",
                                "model": "o4-mini-deep-research"})
    store.save_engine_report(run_id, "openai-deep-research", markdown, numbering={1: "s0001"},
                             meta={"words": 9, "cited_sources": 1, "cost_usd": 0.42})
    store.save_engine_job(run_id, "gemini-deep-research", remote_id="int_1", status="failed",
                          error="The Gemini job failed: quota exhausted.",
                          meta={"label": "Gemini Deep Research"})


class FakeExecutor:
    """Stands in for research.pipeline.execute: records each call and completes the run."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def __call__(self, run_id: str, *, store: Store, **_: Any) -> Run | None:
        self.calls.append(run_id)
        store.set_run_status(run_id, "completed")
        return store.get_run(run_id)


@pytest.fixture(name="fake_jobs")
def fake_jobs_fixture(dash_env: Store, monkeypatch: pytest.MonkeyPatch) -> Iterator[FakeExecutor]:
    """The dashboard's door to runs (`research.runs.Runs`) runs FakeExecutor instead of the engine (no network)."""
    from dashboard import ui
    from research.runs import Runs

    executor = FakeExecutor()
    manager = Runs(ui.db_target(), executor=executor)
    monkeypatch.setattr(ui, "_jobs", lambda path: manager)
    yield executor
    for run_id in manager.alive():
        manager.wait(run_id, 10)
    manager.store.close()  # its pooled connections (PostgreSQL) do not outlive the test


class FakesEngine:
    """research.pipeline.execute itself, with the model, search and fetcher of tests/fakes.py
    (the stand-in's answers, in-process): the whole engine, without sockets."""

    def __init__(self, standin: StandinServer) -> None:
        self.fakes = Fakes(standin)
        self.fetchers: list[Any] = []
        self.runs: Any = None  # the door to runs the pages use (set by the fixture)

    def __call__(self, run_id: str, *, store: Store, **kwargs: Any) -> Run:
        from research.pipeline import execute

        run = store.get_run(run_id)
        assert run is not None
        deps = self.fakes.deps(ResearchConfig(**run.config))
        self.fetchers.append(deps["fetcher"])
        return execute(run_id, store=store, **kwargs, **deps)


@pytest.fixture(name="fake_engine")
def fake_engine_fixture(dash_env: Store, standin: StandinServer, standin_env: dict[str, str],
                        monkeypatch: pytest.MonkeyPatch) -> Iterator[FakesEngine]:
    """The dashboard's door to runs (real queue, real worker) runs the engine on the fakes;
    the stand-in's keys are set, so the pages offer what a person with keys sees."""
    from dashboard import ui
    from research.runs import Runs

    for name, value in standin_env.items():
        monkeypatch.setenv(name, value)
    engine = FakesEngine(standin)
    manager = engine.runs = Runs(ui.db_target(), executor=engine)
    monkeypatch.setattr(ui, "_jobs", lambda path: manager)
    yield engine
    for run_id in manager.alive():
        manager.wait(run_id, 60)
    manager.store.close()  # its pooled connections (PostgreSQL) do not outlive the test
    for fetcher in engine.fetchers:
        fetcher.close()
    misused = take_misuses()
    assert not misused, misused


def open_page(page: str) -> AppTest:
    """An AppTest whose first script run asks for `page` (e.g. "app_pages/library.py"), as a deep
    link does: its url path is its file name, which AppTest documents as the page's name
    before the first run, and app.py's navigation serves it. Call `.run()` to open it."""
    return AppTest.from_file(APP, default_timeout=30).switch_page(page)


def open_run_page(run_id: str, tab: str | None = None) -> AppTest:
    """The Run page of `run_id` (optionally one tab), opened by its deep link."""
    at = open_page("app_pages/run.py")
    at.query_params["run"] = run_id
    if tab:
        at.query_params["tab"] = tab
    return at.run()
