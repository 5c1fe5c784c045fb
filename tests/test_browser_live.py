"""The Run page while a run works and when it completes, in a real browser on a laptop and a
phone screen: each tab fills from the store without a reload, then the finished report leads
the page (summary, downloads, report) with nothing clipped sideways.

This test process plays the worker: it writes the run's plan, sources, draft, verdicts and
report into the shared dashboard's database (browser_fixtures.py) and heartbeats it, so the
dashboard shows it as running; the page is the subject, not the research.
"""

from __future__ import annotations

import os
import socket
from typing import Any

import pytest

from research.config import build_config
from research.export import build_document, to_markdown
from research.records import Verdict
from storage import Store
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import CHROMIUM, wait_idle
from tests.browser_pages import (
    EXPECT_TIMEOUT_MS,
    PHONE,
    VIEWPORT,
    assert_clean,
    assert_plain_words,
    failure_shot,
    main,
    open_page,
    open_tab,
    shot,
    sync_api,
)
from tests.dashboard_fixtures import DRAFT_1, PLAN, source

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]


def _seed_running_run(store: Store) -> str:
    """A run "worked on" by this test process: its heartbeat is fresh, so it stays running."""
    config = build_config(env={}, preset="quick")
    run_id = store.create_run("How fast is solar power growing?", config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.heartbeat(run_id, f"pid:{os.getpid()}@{socket.gethostname()}")
    return run_id


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
    run_id = _seed_running_run(store)
    server = shared_dashboard.server
    context, page, watch = open_page(browser, server, f"live-{viewport['width']}")
    page.set_viewport_size(viewport)
    try:
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
    except BaseException:
        failure_shot(page, f"FAILED-live-{viewport['width']}")
        raise
    finally:
        context.close()
        store.close()
