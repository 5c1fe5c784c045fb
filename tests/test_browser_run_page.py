"""The Run page in a real browser, showing runs this test process writes into the shared
dashboard's database (browser_fixtures.py): the page is the subject, not the research.

1. Hostile content in a stored run (script tags, event handlers, javascript: links, a tracking
   pixel) is shown as text: no dialog opens, no request leaves for another host, and no
   payload becomes a live element, on the Run page, every one of its tabs and the Library.
2. While a run works (this process plays its worker: it heartbeats the run and writes its plan,
   sources, draft, verdicts and report), each tab fills from the store without a reload; when
   it completes, the report leads the page with nothing clipped sideways, on a laptop and a
   phone screen.
"""

from __future__ import annotations

import os
import re
import socket
import time
from typing import Any

import pytest

from research.core.config import build_config
from research.core.records import Query, ReviewIssue, SkippedPage, Source, Subtopic, Verdict
from research.export import build_document, to_markdown
from storage import Store
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import wait_idle
from tests.browser_pages import (
    BROWSER_TESTS,
    EXPECT_TIMEOUT_MS,
    MARK,
    PHONE,
    VIEWPORT,
    assert_clean,
    assert_plain_words,
    audit,
    main,
    open_tab,
    scroll_to_tabs,
    shot,
    sync_api,
    watched_page,
)
from tests.dashboard_fixtures import DRAFT_1, PLAN, running_run, source

pytestmark = BROWSER_TESTS

# --- 1. hostile content stays text ---------------------------------------------------------

PAYLOADS = (
    f"<script>alert(1)</script> <img src=x onerror=alert(2)> <svg onload=alert(3)> "
    f"[click](javascript:alert(4)) <img src=\"http://tracker.example/pixel.gif\"> "
    f"![pixel](http://tracker.example/pixel2.gif) <a href=\"javascript:alert(5)\">{MARK}</a>"
)
HOSTILE_REPORT = f"""## Executive summary

Wind grew fast [1]. {PAYLOADS}

<script>alert(6)</script>

<img src="http://tracker.example/pixel3.gif" onerror="alert(7)">

## Key findings

- Costs fell [2]. <svg onload=alert(8)></svg> [also click](javascript:alert(9))
"""


def _seed_hostile_run(store: Store) -> str:
    config = build_config(env={}, preset="quick", review_cycles=1)
    question = f"Hostile {MARK} question {PAYLOADS}"
    run_id = store.create_run(question, config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.save_plan(run_id, [
        Subtopic("t1", f"Plan {MARK} {PAYLOADS}", description=PAYLOADS, questions=(PAYLOADS,)),
        Subtopic("t2", "Costs", description="What it costs.", questions=("Prices?",)),
    ])
    store.start_step(run_id, "plan", kind="plan", label=f"Planning {PAYLOADS}")
    store.finish_step(run_id, "plan", result={"subtopics": 2})
    sources = []
    for n, sub in ((1, "t1"), (2, "t2"), (3, "t1")):
        url = f"https://tracker.example/article-{n}" if n == 3 else f"https://example{n}.org/article-{n}"
        sources.append(Source(
            id=f"s{n:04d}", url=url, canonical_url=url,
            title=f"Source {n} {MARK} {PAYLOADS}", snippet=f"Snippet {PAYLOADS}",
            text=f"Body {PAYLOADS}", published="2024-06-01", relevance=0.9,
            relevance_reason=PAYLOADS, subtopic_id=sub, provider="web", query=PAYLOADS,
            round=1, fetched_at="2024-07-01T00:00:00Z"))
    for sub in ("t1", "t2"):
        store.start_step(run_id, f"research:{sub}", kind="research", label=f"Researching {PAYLOADS}")
        store.complete_research_step(
            run_id, f"research:{sub}", sources=[s for s in sources if s.subtopic_id == sub],
            queries=[Query(sub, PAYLOADS, "web", 3)],
            skipped=[SkippedPage(sub, "https://tracker.example/skipped", PAYLOADS)])
    numbering = {1: "s0001", 2: "s0002", 3: "s0003"}
    store.save_draft(run_id, 1, "draft", HOSTILE_REPORT, numbering, 40)
    store.save_draft(run_id, 2, "revision", HOSTILE_REPORT + f"\n## Open questions\n\n{PAYLOADS} [3]\n",
                     numbering, 50)
    store.save_review(run_id, 1, draft_version=1, approved=False, model_approved=True,
                      issues=[ReviewIssue("high", f"Issue {PAYLOADS}", section=PAYLOADS,
                                          suggestion=f"Suggestion {PAYLOADS}")],
                      strengths=[f"Strength {PAYLOADS}"],
                      checks={"unresolved_citations": [PAYLOADS], "cited_share": 0.9, "sentences": 10,
                              "cited_sentences": 9, "word_count": 40, "max_words": 1500,
                              "stale_sources": [PAYLOADS], "undated_sources": 0, "passed": False})
    draft = HOSTILE_REPORT + f"\n## Open questions\n\n{PAYLOADS} [3]\n"
    doc = build_document(run_id=run_id, question=question, created_at="2024-07-01T00:00:00Z",
                         parameters_line=config.parameters_line(), draft=draft, numbering=numbering,
                         sources=sources)
    store.save_report(run_id, to_markdown(doc), meta={"draft_version": 2, "cited_sources": 3,
                                                      "parameters_line": config.parameters_line(),
                                                      "notes": [f"Note {PAYLOADS}"]})
    store.set_citations(run_id, {"s0001": [PAYLOADS], "s0002": ["Key findings"]})
    store.save_verifications(run_id, [
        Verdict(f"c{n}", f"Claim {n} {PAYLOADS}", ("s0001",), verdict, passage=f"Passage {PAYLOADS}",
                reviewer="verifier", section=PAYLOADS)
        for n, verdict in ((1, "supported"), (2, "unsupported"))])
    store.add_usage(run_id, "worker", "openai", "gpt-5-mini", 1000, 300, 0.001)
    for i in range(3):
        store.append_event({"run_id": run_id, "type": "step_completed", "message": f"event {i} {PAYLOADS}"})
    store.update_totals(run_id, sources=len(sources), cost_usd=0.001)
    store.set_run_status(run_id, "completed")
    return run_id


def test_hostile_content_is_shown_as_text_and_never_runs(browser: Any, shared_dashboard: SharedDashboard) -> None:
    store = Store(shared_dashboard.db)
    try:
        run_id = _seed_hostile_run(store)
    finally:
        store.close()
    server = shared_dashboard.server
    with watched_page(browser, server, "hostile") as (page, watch):
        started = time.monotonic()
        page.goto(f"{server.url}/run?run={run_id}")
        wait_idle(page)
        content = main(page)
        # The question is shown, literally, as text.
        sync_api.expect(content.get_by_text(f"Hostile {MARK} question").first).to_be_visible()
        sync_api.expect(content.get_by_text("<script>alert(1)</script>").locator("visible=true").first) \
            .to_be_visible()
        # The report leads the page, its hostile text shown as text.
        sync_api.expect(content.get_by_text("<img src=x onerror=alert(2)>", exact=False)
                        .locator("visible=true").first).to_be_visible()
        for link in content.locator("a").all():
            href = link.get_attribute("href") or ""
            assert not href.strip().lower().startswith("javascript:"), href
        wait_idle(page)
        audit(page, watch, "run page")
        page.get_by_text(re.compile("^How the run went")).click()
        sync_api.expect(page.locator('[data-testid="stProgress"]')).to_contain_text("Completed · 100%")

        # Every tab of the Run page, whatever tabs it has: each one audited after it renders.
        expected = {"Plan": f"Plan {MARK}", "Sources": "3 of 3 sources", "Review": "Changes requested",
                    "Verification": "claims", "Tokens and cost": "Estimated cost"}
        tabs = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
        assert {"Plan", "Sources", "Review"} <= set(tabs), tabs
        for tab in tabs:
            panel = open_tab(page, tab)
            if tab in expected:
                sync_api.expect(panel.get_by_text(expected[tab]).first).to_be_visible()
            wait_idle(page)
            if tab == "Review":
                sync_api.expect(panel.get_by_text("Issue <script>alert(1)</script>", exact=False).first) \
                    .to_be_visible()
                panel.get_by_text(re.compile("What changed in the revision")).click()
                wait_idle(page)
            scroll_to_tabs(page)
            shot(page, f"hostile-{tab.split()[0].lower()}")
            audit(page, watch, f"{tab} tab")

        for expander in (content.get_by_text("Steps"), content.get_by_text("Activity log (latest first)")):
            if expander.count():
                expander.first.scroll_into_view_if_needed()
        audit(page, watch, "run page, steps and log")

        page.get_by_role("link", name="Library").click()
        page.wait_for_url(re.compile(r"/library"))
        # The shared dashboard's database holds other tests' runs too; this one is the newest.
        sync_api.expect(page.get_by_text(re.compile(r"^\d+ run\(s\) · page 1 of \d+$"))).to_be_visible()
        wait_idle(page)
        # The list of runs leads; the full table is one click away: open it to audit it too.
        page.get_by_text(re.compile("^All details as a table")).click()
        sync_api.expect(main(page).locator('[data-testid="stDataFrame"]')).to_be_visible()
        # The run is listed: its question shows in the list, the table's cells or the picker.
        page.wait_for_function(
            """(needle) => [...document.querySelectorAll('[data-testid="stMain"] *')].some(
                   el => (el.value || el.textContent || '').includes(needle))""",
            arg=f"Hostile {MARK} question", timeout=EXPECT_TIMEOUT_MS, polling=100)
        wait_idle(page)
        shot(page, "hostile-library")
        audit(page, watch, "library")
        assert time.monotonic() - started < 90


# --- 2. live tabs while a run works, then the report first, on a laptop and a phone ----------

def _finish(store: Store, run_id: str, draft: str, numbering: dict[int, str]) -> None:
    sources = store.get_sources(run_id, with_text=False)
    doc = build_document(run_id=run_id, question="How fast is solar power growing?",
                         created_at="2024-07-01T00:00:00Z", parameters_line="preset quick",
                         draft=draft, numbering=numbering, sources=sources)
    store.save_report(run_id, to_markdown(doc), meta={"draft_version": 1, "cited_sources": 2})
    store.update_totals(run_id, sources=len(sources))
    store.set_run_status(run_id, "completed")


@pytest.mark.parametrize("viewport", [VIEWPORT, PHONE], ids=["laptop", "phone"])
def test_tabs_fill_while_a_run_works_and_the_report_leads_when_it_completes(
    browser: Any, shared_dashboard: SharedDashboard, viewport: dict[str, int]
) -> None:
    store = Store(shared_dashboard.db)
    run_id = running_run(store)
    server = shared_dashboard.server
    try:
        with watched_page(browser, server, f"live-{viewport['width']}") as (page, watch):
            page.set_viewport_size(viewport)
            page.goto(f"{server.url}/run?run={run_id}")
            sync_api.expect(page.get_by_role("heading", name="Research run")).to_be_visible()
            wait_idle(page)
            panel = open_tab(page, "Plan")
            sync_api.expect(panel.get_by_text("appears here as soon as")).to_be_visible()

            # The page is not reloaded: each tab shows what the store holds within a refresh.
            store.heartbeat(run_id, f"pid:{os.getpid()}@{socket.gethostname()}")
            store.save_plan(run_id, PLAN)
            sync_api.expect(panel.get_by_text(f"1. {PLAN[0].title}")).to_be_visible()
            store.start_step(run_id, "research:t1", kind="research", label="Researching")
            store.complete_research_step(run_id, "research:t1", sources=[source(1), source(2)],
                                         findings=[], queries=[], skipped=[])
            panel = open_tab(page, "Sources")
            sync_api.expect(panel.get_by_text("2 of 2 sources")).to_be_visible()
            store.save_draft(run_id, 1, "partial", DRAFT_1, {1: "s0001", 2: "s0002"}, 30)
            panel = open_tab(page, "Report")
            sync_api.expect(panel.get_by_text("Draft in progress")).to_be_visible()
            sync_api.expect(panel.get_by_text("Solar capacity grew fast", exact=False)).to_be_visible()
            store.save_verifications(run_id, [
                Verdict("c1", "Solar grew fast.", ("s0001",), "SUPPORTED", status="supported",
                        passage="grew", section="Executive summary")])
            panel = open_tab(page, "Verification")
            sync_api.expect(panel.get_by_text("1 of 1 claims")).to_be_visible()
            assert_plain_words(page, "running run", run_id)
            shot(page, f"run-live-tabs-{viewport['width']}")

            # Completion: the report leads the page without any tab click or scrolling.
            _finish(store, run_id, DRAFT_1, {1: "s0001", 2: "s0002"})
            summary = main(page).locator('[data-testid="stAlertContentSuccess"]').first
            sync_api.expect(summary).to_contain_text("sources cited", timeout=EXPECT_TIMEOUT_MS)
            wait_idle(page)
            page.evaluate("window.scrollTo(0, 0)")
            for name in ("PDF", "Word", "Markdown"):
                sync_api.expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
            sync_api.expect(page.get_by_role("button", name="PDF", exact=True)).to_be_in_viewport()
            sync_api.expect(main(page).get_by_role("heading", name="Executive summary").first) \
                .to_be_visible()
            # Nothing is clipped sideways: the page is no wider than the screen.
            overflow = page.evaluate(
                "() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth"
                " - document.documentElement.clientWidth")
            assert overflow <= 1, f"the page is {overflow}px wider than the screen"
            assert_plain_words(page, "finished run", run_id)
            shot(page, f"report-first-{viewport['width']}")
            assert_clean(watch)
    finally:
        store.close()
