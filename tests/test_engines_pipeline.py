"""Hosted engines through the whole run (real HTTP through the real SDKs): alone, or "all"
beside the built-in pipeline."""

from __future__ import annotations

import io
from typing import Any

from pypdf import PdfReader

from research.engines import engine_document, engine_reports
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from research.untrusted.urls import canonical_url
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer


def _run(standin: StandinServer, runner: Runner, **overrides: Any) -> tuple[Store, str]:
    """A quick run; the pipeline beside the engines ("all") searches once a subtopic, no
    academic or other-side searches (what is tested is how their results come together)."""
    standin.hosted.polls_to_complete = 2
    return runner(preset="quick", hosted_poll_interval_s=0.05, searches_per_subtopic=1,
                  include_academic_sources=False, search_other_side=False, **overrides)


def test_a_run_handed_to_openai_deep_research_is_verified_and_exported(
    standin: StandinServer, http_runs: Runner
) -> None:
    store, run_id = _run(standin, http_runs, engine="openai-deep-research")
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    assert standin.count("tavily") == 0  # no built-in search for a hosted-only run
    reports = engine_reports(store, run_id)
    assert [r.engine for r in reports] == ["openai-deep-research"]
    drafts = store.get_drafts(run_id)
    assert drafts[0].kind == "engine:openai-deep-research"
    assert store.get_step(run_id, "verify") is not None
    doc = build_document_for_run(store, run_id)
    gathered = {s.canonical_url for s in store.get_sources(run_id)}
    assert doc.sources and all(canonical_url(s.url) in gathered for s in doc.sources)
    text = "\n".join(p.extract_text() for p in PdfReader(io.BytesIO(to_pdf(doc))).pages)
    assert "[1]" in text and "Sources" in text
    assert any(u.role == "engine" and u.cost_usd > 0 for u in store.get_usage(run_id))


def test_all_runs_the_pipeline_and_both_engines_into_one_source_list(
    standin: StandinServer, http_runs: Runner
) -> None:
    store, run_id = _run(standin, http_runs, engine="all")
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    reports = engine_reports(store, run_id)
    assert {r.engine for r in reports} == {"openai-deep-research", "gemini-deep-research"}
    assert all(r.status == "completed" for r in reports)
    sources = store.get_sources(run_id)
    providers = {s.provider for s in sources}
    assert {"openai-deep-research", "gemini-deep-research"} <= providers
    assert len({s.canonical_url for s in sources}) == len(sources)  # one merged list
    assert store.get_drafts(run_id)[0].kind == "draft"  # the pipeline's report is the main one
    for engine in ("openai-deep-research", "gemini-deep-research"):
        markdown = to_markdown(engine_document(store, run_id, engine))
        assert "## Sources" in markdown


def test_a_failing_engine_beside_the_pipeline_is_an_event_not_a_failed_run(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("gemini_interactions", "status", times=20, status=500)
    store, run_id = _run(standin, http_runs, engine="all", max_retries=0)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    warnings = [e for e in store.get_events(run_id) if e.type == "warning"]
    assert any("Gemini Deep Research failed" in e.message for e in warnings)
