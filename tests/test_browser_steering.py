"""The steering mode in a real browser (issue 14, point 2): a run started with "Ask me between
rounds" waits after round 1; on its Run page the person unticks a proposal, adds a branch of
their own and presses "Follow these"; the server carries the run on to completion with exactly
those branches."""

from __future__ import annotations

import re
from typing import Any

import pytest

from research import Credentials, build_config, run_research
from storage import Store
from tests.browser_helpers import wait_idle
from tests.test_browser import (
    RUN_TIMEOUT_MS,
    _audit,
    _failure_shot,
    _main,
    _page,
    _server,
)

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")
pytestmark = [pytest.mark.browser]

MINE = "Heat pump noise rules in cities"


def _waiting_run(env: dict[str, str]) -> str:
    credentials = Credentials.from_env(env)
    store = Store(env["DEEP_RESEARCH_DB"], secrets=credentials.secrets())
    try:
        config = build_config(env=env, MAX_ROUNDS=2, steer=True, fetch_timeout_s=3)
        run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                              config=config, credentials=credentials)
        assert store.get_run(run_id).status == "waiting"  # type: ignore[union-attr]
        return run_id
    finally:
        store.close()


def test_the_person_steers_the_next_round_in_the_browser(
    browser: Any, dashboard_env: dict[str, str]
) -> None:
    run_id = _waiting_run(dashboard_env)
    with _server(dashboard_env, "steering") as server:
        context, page, watch = _page(browser, server)
        try:
            page.goto(f"{server.url}/run?run={run_id}")
            wait_idle(page)
            main = _main(page)
            sync_api.expect(main.get_by_text(re.compile("what should we explore next"))).to_be_visible()
            boxes = main.get_by_role("checkbox")
            sync_api.expect(boxes.first).to_be_visible()  # count() does not wait for the page
            sync_api.expect(main.get_by_label("Branches of your own (one per line)")).to_be_visible()
            wait_idle(page)
            count = boxes.count()
            assert count >= 1
            if count > 1:
                boxes.nth(count - 1).uncheck(force=True)
            main.get_by_label("Branches of your own (one per line)").fill(MINE)
            main.get_by_role("button", name="Follow these").click()
            sync_api.expect(page.locator('[data-testid="stProgress"]').first).to_contain_text(
                "Completed", timeout=RUN_TIMEOUT_MS)
            wait_idle(page)
            _audit(page, watch, "steered run")
        except BaseException:
            _failure_shot(page, "FAILED-steering")
            raise
        finally:
            context.close()
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
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
