"""Fixtures for the dashboard tests: an isolated database and secrets file, and a finished run
written straight through Store methods (no engine, no network)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from research.config import build_config
from research.export import build_document, to_markdown
from storage import Store

APP = str(Path(__file__).resolve().parent.parent / "app.py")
KEY_VARS = ("OPENAI_API_KEY", "GEMINI_API_KEY", "GOOGLE_API_KEY", "TAVILY_API_KEY",
            "SEMANTIC_SCHOLAR_API_KEY", "OPENAI_BASE_URL", "GEMINI_BASE_URL", "TAVILY_BASE_URL",
            "DEEP_RESEARCH_PROVIDER", "DEEP_RESEARCH_MODEL", "DEEP_RESEARCH_SEARCH")

EVIL_TITLE = 'Evil <img src=x onerror=alert(1)> [x](javascript:alert(1)) title'
DRAFT_1 = """## Executive summary

Solar capacity grew fast in 2024 [1]. Costs fell by about $0.10 per watt [2].

## Key findings

- Storage is the bottleneck [1][3].
"""
DRAFT_2 = DRAFT_1 + "\n## Open questions\n\nGrid build-out remains uncertain [2].\n"


@pytest.fixture(name="dash_env")
def dash_env_fixture(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Store]:
    """DEEP_RESEARCH_DB and the secrets file point into tmp_path; no provider keys set."""
    db = tmp_path / "data" / "research.db"
    monkeypatch.setenv("DEEP_RESEARCH_DB", str(db))
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "secrets.toml"))
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    store = Store(db)
    yield store
    store.close()


def source(n: int, *, subtopic: str = "t1", title: str | None = None, relevance: float = 0.8,
           published: str | None = "2024-06-01") -> dict[str, Any]:
    url = f"https://example{n % 7}.org/article-{n}"
    return {"id": f"s{n:04d}", "url": url, "canonical_url": url, "title": title or f"Article {n}",
            "snippet": "snippet", "text": "", "published": published, "relevance": relevance,
            "relevance_reason": "on topic", "subtopic_id": subtopic, "provider": "web",
            "query": "q", "round": 1, "fetched_at": "2024-07-01T00:00:00Z"}


def finished_run(store: Store, question: str = "How fast is solar power growing?", *,
                 sources: int = 6, events: int = 5, status: str = "completed",
                 **constants: Any) -> str:
    """A completed run with plan, steps, sources, two drafts, a review, a report and usage."""
    config = build_config(env={}, preset="quick", **constants)
    run_id = store.create_run(question, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    plan = [{"id": "t1", "title": "Growth figures", "description": "How much capacity was added.",
             "questions": ["How much was installed in 2024?"], "round": 1},
            {"id": "t2", "title": "Costs", "description": "What it costs.",
             "questions": ["How did module prices move?"], "round": 1}]
    store.save_plan(run_id, plan)
    store.start_step(run_id, "preflight", kind="preflight", label="Checking the providers")
    store.finish_step(run_id, "preflight", result={})
    store.start_step(run_id, "plan", kind="plan", label="Planning the research")
    store.finish_step(run_id, "plan", result={"subtopics": 2})
    records = [source(i, subtopic="t1" if i % 2 else "t2", relevance=0.6 + (i % 4) / 10,
                      title=EVIL_TITLE if i == 1 else None) for i in range(1, sources + 1)]
    for key, sub in (("research:t1", "t1"), ("research:t2", "t2")):
        store.start_step(run_id, key, kind="research", label=f"Researching {sub}")
        store.complete_research_step(run_id, key, sources=[r for r in records if r["subtopic_id"] == sub],
                                     findings=[], queries=[{"subtopic_id": sub, "query": "solar growth",
                                                            "provider": "web", "result_count": 5}],
                                     skipped=[{"subtopic_id": sub, "url": "https://skip.example/x",
                                               "reason": "relevance 0.20 below 0.6"}])
    numbering = {1: "s0001", 2: "s0002", 3: "s0003"}
    store.save_draft(run_id, 1, "draft", DRAFT_1, numbering, 30)
    store.save_draft(run_id, 2, "revision", DRAFT_2, numbering, 38)
    store.save_review(run_id, 1, draft_version=1, approved=False, model_approved=False,
                      issues=[{"severity": "high", "section": "Key findings",
                               "issue": "Storage claim rests on one source",
                               "suggestion": "Add a second source for storage"},
                              {"severity": "low", "section": "Summary", "issue": "Wordy",
                               "suggestion": "Trim"}],
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
