"""Full research runs over real HTTP: the real openai / google-genai / tavily-python
clients talk to the local stand-in server, pages are fetched from it, the store is a
real SQLite file, and the exports are real Markdown and WeasyPrint PDFs."""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import pytest
from pypdf import PdfReader

from research import Credentials, resume, run_research
from research.core.events import StepCompleted
from research.export import to_markdown, to_pdf
from research.export.run_document import build_document_for_run
from research.runs import control
from research.untrusted.urls import canonical_url
from storage import Store
from tests.runs import QUESTION, Runner
from tests.standin import StandinServer, openai_error
from tests.standin.pages import INJECTION_FACT

# (A redirect to a private address is covered in test_fetch.py: with loopback allowed for
# the stand-in, private addresses are allowed too; metadata addresses never are.)
HOSTILE = ["/pages/hostile/injection", "/pages/hostile/redirect-metadata", "/pages/hostile/huge", "/pages/hostile/slow",
           "/pages/hostile/binary"]
# Research as small as the tests of faults, failures and resuming need: one search a subtopic,
# no other-side searches (the default constants are the first test's).
SMALL = {"searches_per_subtopic": 1, "search_other_side": False}
SPEC_EVENTS = {"initiated", "plan_created", "step_started", "step_completed", "source_found",
               "draft_started", "review_cycle", "completed"}


def _strings(value: Any) -> list[str]:
    """Every string inside a JSON request body (message texts, whatever the API shape)."""
    if isinstance(value, str):
        return [value]
    if isinstance(value, dict):
        return [s for v in value.values() for s in _strings(v)]
    if isinstance(value, list):
        return [s for v in value for s in _strings(v)]
    return []


def _pdf_text(data: bytes) -> str:
    return "\n".join(page.extract_text() for page in PdfReader(io.BytesIO(data)).pages)


@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_full_run_at_default_constants_produces_cited_markdown_and_pdf(
    standin: StandinServer, http_runs: Runner, provider: str
) -> None:
    standin.set_extra_results(HOSTILE)
    env = http_runs.with_env(DEEP_RESEARCH_PROVIDER=provider).env
    tmp_db = http_runs.db
    store, run_id = http_runs()
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error

    llm_api = "openai" if provider == "openai" else "gemini"
    other = "gemini" if provider == "openai" else "openai"
    assert standin.count(llm_api) > 10 and standin.count(other) == 0

    steps = store.get_steps(run_id)
    plan = store.get_plan(run_id) or []
    first_round = [s for s in plan if s.round == 1]
    assert len(first_round) == 6  # SUBTOPIC_COUNT
    # MAX_ROUNDS = 2: one follow-up was escalated to a second round, one answered inline.
    assert [s.round for s in plan].count(2) == 1
    research_steps = [s for s in steps if s.kind == "research"]
    assert len(research_steps) == 7 and all(s.status == "done" for s in research_steps)
    assert any(s.kind == "followup" and s.status == "done" for s in steps)
    assert run.totals.stop_reason == "MAX_ROUNDS reached."
    assert all(0 < s.source_count <= 20 for s in research_steps)  # SOURCES_PER_SUBTOPIC
    assert all(s.source_count <= 5 for s in steps if s.kind == "followup")
    sources = store.get_sources(run_id)
    assert len({s.canonical_url for s in sources}) == len(sources)
    assert all(s.relevance >= 0.6 for s in sources)

    # Hostile pages were skipped with a reason, and the injection changed nothing.
    skipped = {s.url.split("/pages/")[-1]: s.reason for s in store.get_skipped(run_id)}
    # Refused at the redirect (test_fetch proves the refusal itself); on a machine loaded
    # enough that the stand-in's first answer misses the page time limit, it is skipped for that.
    assert re.search(r"refused|took longer than", skipped["hostile/redirect-metadata"])
    assert "hostile/binary" in skipped and "hostile/huge" in skipped and "hostile/slow" in skipped

    # The injection page reached the model only as delimited data: its attempt to close
    # our delimiter and open a block of its own was defused.
    prompts = ["\n".join(_strings(r["json"])) for r in standin.requests_for(llm_api)]
    injected = [p for p in prompts if "Ignore all previous instructions" in p]
    assert injected
    for text in injected:
        assert '<untrusted_source id="evil"' not in text
        assert "</untrusted_source>" not in text  # ours always carry their nonce
        if "the source ends here." in text:  # an excerpt of the page may leave its tags out
            assert re.search(r"the source ends here\.\s*\[removed tag\]", text)
        start = text.index("Ignore all previous instructions")
        opened = text.rfind("<untrusted_source id=", 0, start)
        closed = text.rfind("</untrusted_source", 0, start)
        assert opened > closed  # inside an open block, not after one
    assert any(INJECTION_FACT.split(",")[0] in p for p in injected)  # its real content was read

    reviews = store.get_reviews(run_id)
    assert [r.approved for r in reviews] == [False, True], "\n".join(str(x) for x in [
        (r.model_approved, r.issues, {k: v for k, v in r.checks.items() if k != "uncited_examples"})
        for r in reviews])
    assert all("cited_share" in r.checks for r in reviews)
    assert [d.kind for d in store.get_drafts(run_id)] == ["draft", "revision", "verified"]

    doc = build_document_for_run(store, run_id)
    markdown = to_markdown(doc)
    assert "PWNED" not in markdown
    gathered = {s.canonical_url for s in sources}
    cited_urls = [s.url for s in doc.sources]
    assert cited_urls and all(canonical_url(u) in gathered for u in cited_urls)
    linked = re.findall(r"\]\((https?://[^)\s]+)\)", markdown)
    assert linked and all(canonical_url(u) in gathered for u in linked)
    for heading in ("## Executive summary", "## Key findings", "## Analysis by subtopic",
                    "## Comparison", "## Where sources disagree", "## Recommendations",
                    "## Open questions and gaps", "## Confidence assessment", "## Sources"):
        assert heading in markdown
    assert "Run record:" in markdown

    text = _pdf_text(to_pdf(doc))
    for heading in ("Executive summary", "Key findings", "Confidence assessment", "Sources"):
        assert heading in text
    assert "[1]" in text and "Page 1" in text

    events = store.get_events(run_id)
    assert SPEC_EVENTS <= {e.type for e in events}
    assert all(re.fullmatch(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{3}Z", e.ts) for e in events)
    usage = store.get_usage(run_id)
    assert {u.role for u in usage} >= {"lead", "worker", "writer", "reviewer"}
    assert sum(u.input_tokens for u in usage) > 0

    store.close()
    raw = b"".join(p.read_bytes() for p in tmp_db.parent.glob(tmp_db.name + "*"))
    for key in Credentials.from_env(env).secrets():
        assert key.encode() not in raw
        assert key not in markdown


def test_retries_faults_and_a_search_provider_down(
    standin: StandinServer, http_runs: Runner
) -> None:
    # A 429 that names no limit (one that does is paced by: research.llm.pacing).
    standin.add_fault("openai", "status", times=1, status=429, headers={"Retry-After": "1"},
                      body=openai_error("Rate limit reached. Please try again in 1s.",
                                        type="requests", code="rate_limit_exceeded"))
    standin.add_fault("openai", "status", times=2, status=500)
    standin.add_fault("openai", "invalid_json", times=1)
    standin.add_fault("openai", "hang", times=1, seconds=8)
    standin.add_fault("tavily", "status", times=1000, status=503)
    # A call that hangs is given up after 2 s (room for a slow answer on a busy machine).
    store, run_id = http_runs(preset="quick", request_timeout_s=2, **SMALL)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    types = [e.type for e in store.get_events(run_id)]
    assert "retrying" in types and "search_failed" in types
    providers = {s.provider for s in store.get_sources(run_id)}
    assert providers and "tavily" not in providers
    report = store.get_report(run_id)
    assert report is not None and "Search degraded: tavily" in report.markdown


def test_quota_exhausted_fails_fast_with_a_clear_message(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("openai", "status", times=10, status=429,
                      body={"error": {"message": "You exceeded your current quota.",
                                      "type": "insufficient_quota", "code": "insufficient_quota"}})
    store, run_id = http_runs(preset="quick")
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "quota" in run.error.lower() and "OPENAI_API_KEY" in run.error
    # No retry on an exhausted quota: the connection check, and the plan's call made beside
    # it (research.phases.start.plan.Ahead), each went out once.
    from tests.standin.server import _task_of
    sent = [_task_of("openai", r["json"]) for r in standin.requests_for("openai")]
    assert "Ping" in sent and len(sent) == len(set(sent)) <= 2, sent
    assert "Traceback" not in run.error


def test_no_working_search_provider_means_no_run(
    standin: StandinServer, http_runs: Runner
) -> None:
    for api in ("tavily", "arxiv", "semanticscholar"):
        standin.add_fault(api, "status", times=1000, status=500)
    # One retry per search before it counts as down (the default three, with their back-off,
    # are the retries test's: its Tavily is down too).
    store, run_id = http_runs(preset="quick", max_retries=1)
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "No search provider could be reached" in run.error
    assert store.get_plan(run_id) is None and store.get_report(run_id) is None


def test_a_subtopic_failing_three_times_is_marked_and_the_report_says_so(
    standin: StandinServer, http_runs: Runner
) -> None:
    # One worker at a time and no retries inside a unit: the first subtopic's three
    # attempts each meet one failing query-writing call, the others succeed.
    standin.add_fault("openai", "status", times=3, status=500, task="SearchQueries")
    store, run_id = http_runs(preset="quick", max_retries=0, MAX_PARALLEL_WORKERS=1,
                              include_academic_sources=False, **SMALL)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    step = store.get_step(run_id, "research:t1")
    assert step is not None and step.status == "failed" and step.attempts == 3
    report = store.get_report(run_id)
    assert report is not None and "could not be researched" in report.markdown


def test_a_cancelled_run_resumes_to_the_same_sources_as_an_uninterrupted_one(
    standin: StandinServer, http_runs: Runner, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Every checkpoint reads the control: against an instant stand-in the other subtopics
    # could all finish inside one poll interval, and the cut would cut nothing.
    monkeypatch.setattr(control, "POLL_S", 0.0)
    credentials = http_runs.credentials
    config = http_runs.config(preset="quick", MAX_PARALLEL_WORKERS=1,
                              include_academic_sources=False, **SMALL)

    full = Store(tmp_path / "full.db")
    full_id = run_research(QUESTION, store=full, config=config, credentials=credentials)
    expected = {s.canonical_url for s in full.get_sources(full_id)}

    store = Store(tmp_path / "cut.db")
    finished: list[str] = []

    def stop_after_first_subtopic(event: Any) -> None:
        if isinstance(event, StepCompleted) and (event.step or "").startswith("research:"):
            finished.append(event.step or "")
            store.set_control(event.run_id, "cancel")

    run_id = run_research(QUESTION, store=store, config=config, credentials=credentials,
                          on_event=stop_after_first_subtopic)
    run = store.get_run(run_id)
    assert run is not None and run.status == "cancelled"
    partial = {s.canonical_url for s in store.get_sources(run_id)}
    assert partial and partial < expected

    resumed = resume(run_id, store=store, credentials=credentials)
    assert resumed.status == "completed", resumed.error
    sources = store.get_sources(run_id)
    assert {s.canonical_url for s in sources} == expected
    assert len(sources) == len(expected)
    first = store.get_step(run_id, finished[0])
    assert first is not None and first.attempts == 1  # not redone
    assert store.get_step(run_id, "plan").attempts == 1  # type: ignore[union-attr]
