"""The steering mode in a real browser (issue 14, point 2): a run started with "Ask me between
rounds" waits after round 1; on its Run page the person unticks a proposal, adds a branch of
their own and presses "Follow these"; the server carries the run on to completion with exactly
those branches.

Round 1 runs in this test process through the in-process fakes (tests/fakes.py) into the
shared dashboard's database (browser_fixtures.py); round 2, after the person's choice, runs in
the dashboard over real HTTP through the real SDKs to the stand-in."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from storage import Store
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import wait_idle
from tests.browser_pages import BROWSER_TESTS, RUN_TIMEOUT_MS, audit, main, sync_api, watched_page
from tests.runs import Runner
from tests.standin import StandinServer

pytestmark = BROWSER_TESTS

MINE = "Heat pump noise rules in cities"


def _waiting_run(standin: StandinServer, env: dict[str, str]) -> str:
    """Round 1 of a steered run, through the in-process fakes: it stops to ask the person."""
    runner = Runner(standin, env, Path(env["DEEP_RESEARCH_DB"]), fakes=True)
    try:
        store, run_id = runner("How is heat pump adoption changing in Europe?", MAX_ROUNDS=2,
                               steer=True, fetch_timeout_s=3)
        assert store.get_run(run_id).status == "waiting"  # type: ignore[union-attr]
        return run_id
    finally:
        runner.close()
        runner.store.close()


def test_the_person_steers_the_next_round_in_the_browser(
    browser: Any, shared_dashboard: SharedDashboard, standin: StandinServer
) -> None:
    run_id = _waiting_run(standin, shared_dashboard.env)
    server = shared_dashboard.server
    with watched_page(browser, server, "steering") as (page, watch):
        page.goto(f"{server.url}/run?run={run_id}")
        wait_idle(page)
        content = main(page)
        sync_api.expect(content.get_by_text(re.compile("what should we explore next"))).to_be_visible()
        boxes = content.get_by_role("checkbox")
        sync_api.expect(boxes.first).to_be_visible()  # count() does not wait for the page
        sync_api.expect(content.get_by_label("Branches of your own (one per line)")).to_be_visible()
        wait_idle(page)
        count = boxes.count()
        assert count >= 1
        if count > 1:
            boxes.nth(count - 1).uncheck(force=True)
        content.get_by_label("Branches of your own (one per line)").fill(MINE)
        content.get_by_role("button", name="Follow these").click()
        sync_api.expect(page.locator('[data-testid="stProgress"]').first).to_contain_text(
            "Completed", timeout=RUN_TIMEOUT_MS)
        wait_idle(page)
        audit(page, watch, "steered run")
    store = Store(shared_dashboard.db)
    try:
        [step] = [s for s in store.get_steps(run_id) if s.kind == "steer"]
        proposals = step.result["proposals"]
        followed = list(range(1, len(proposals))) if len(proposals) > 1 else [1]
        assert step.result["answer"] == {"follow": followed, "add": [MINE], "enough": False}
        round_two = [s.title for s in store.get_plan(run_id) or [] if s.round == 2]
        assert round_two == [p["title"] for p in proposals if p["n"] in followed] + [MINE]
        assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
    finally:
        store.close()
