"""Deep links on a fresh `streamlit run` server, in a real browser (issue 15, point 4).

The first page a new server serves is a shared link to a page (`/run?run=...`, `/library`):
it must still run inside app.py (its sidebar, its navigation, its database check). Streamlit
skips app.py there when the page scripts sit in a folder called `pages/` (its legacy mode), so
they live in `app_pages/` (dashboard/ui.py, `PAGES`; tests/test_streamlit_pages_mode.py). These
tests start their own dashboards: the deep link must be the first page a server serves.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any
from urllib.parse import urlsplit

from storage import Store
from tests.browser_helpers import wait_idle
from tests.browser_pages import BROWSER_TESTS, assert_clean, main, own_server, query, sync_api, watched_page
from tests.dashboard_fixtures import finished_run

pytestmark = BROWSER_TESTS

QUESTION = "How fast is solar power growing?"
APP_CAPTION = "Deep Research Studio: ask a question, get a cited report."


def test_a_fresh_servers_first_link_to_a_run_opens_it_inside_the_app(
    browser: Any, dashboard_env: dict[str, str]
) -> None:
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    try:
        run_id = finished_run(store, QUESTION)
    finally:
        store.close()
    with own_server(dashboard_env, "deep-link-run") as server:
        with watched_page(browser, server, "deep-link-run") as (page, watch):
            page.goto(f"{server.url}/run?run={run_id}")  # the first page this server serves
            content = main(page)
            sync_api.expect(content.get_by_role("heading", name="Research run")).to_be_visible()
            sync_api.expect(content.get_by_text(QUESTION).first).to_be_visible()
            wait_idle(page)
            sidebar = page.get_by_test_id("stSidebar")
            sync_api.expect(sidebar.get_by_text(APP_CAPTION)).to_be_visible()
            nav = page.get_by_test_id("stSidebarNav")
            # The navigation is there once the first script run ends, not after a later rerun.
            sync_api.expect(nav.get_by_role("link", name="New research", exact=True)).to_be_visible(timeout=3000)
            for title in ("Run", "Library", "Documents", "Settings"):
                sync_api.expect(nav.get_by_role("link", name=title, exact=True)).to_be_visible()
            sync_api.expect(nav.get_by_role("link", name=re.compile("^(app|new_research)$"))) \
                .to_have_count(0)  # no page of the legacy pages-folder mode
            assert query(page.url, "run") == run_id
            assert urlsplit(page.url).path == "/run"

            # The page works on: a tab of the finished run, then another page through the menu.
            content.get_by_text(re.compile("^How the run went")).click()
            content.get_by_role("tab", name="Sources").click()
            sync_api.expect(content.get_by_text("6 of 6 sources")).to_be_visible()
            nav.get_by_role("link", name="Library", exact=True).click()
            sync_api.expect(content.get_by_role("heading", name="Library")).to_be_visible()
            wait_idle(page)
            assert urlsplit(page.url).path == "/library"
            sync_api.expect(content.get_by_text(QUESTION).first).to_be_attached()  # a table cell
            assert_clean(watch)


def test_a_fresh_servers_first_deep_link_gets_the_apps_database_check(
    browser: Any, dashboard_env: dict[str, str], tmp_path: Path
) -> None:
    missing = tmp_path / "no-such-folder" / "research.db"
    env = {**dashboard_env, "DEEP_RESEARCH_DB": str(missing)}
    with own_server(env, "deep-link-db") as server:
        with watched_page(browser, server, "deep-link-db") as (page, watch):
            page.goto(f"{server.url}/library")  # the first page this server serves
            content = main(page)
            sync_api.expect(content.get_by_text("does not exist; create it first")).to_be_visible()
            wait_idle(page)
            sync_api.expect(content.get_by_role("heading", name="Library")).to_have_count(0)
            sync_api.expect(page.get_by_test_id("stException")).to_have_count(0)
            assert not missing.parent.exists()  # nothing was created for a setting we refused
            assert_clean(watch)

