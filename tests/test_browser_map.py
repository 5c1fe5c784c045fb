"""The research map in a real browser (issue 14, point 1): clicking a branch of the sunburst
opens that branch's findings and sources below the map."""

from __future__ import annotations

import re
import time
from typing import Any

from storage import Store
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import wait_idle
from tests.browser_pages import BROWSER_TESTS, audit, main, sync_api, watched_page
from tests.dashboard_fixtures import finished_run

pytestmark = BROWSER_TESTS


def test_clicking_a_branch_of_the_map_opens_its_sources(
    browser: Any, shared_dashboard: SharedDashboard
) -> None:
    store = Store(shared_dashboard.db)
    try:
        run_id = finished_run(store)  # subtopics "Growth figures" (t1) and "Costs" (t2)
        costs = [s.title for s in store.get_sources(run_id, with_text=False)
                 if s.subtopic_id == "t2"]
        growth = [s.title for s in store.get_sources(run_id, with_text=False)
                  if s.subtopic_id == "t1"]
    finally:
        store.close()
    assert costs and growth
    server = shared_dashboard.server
    with watched_page(browser, server, "map") as (page, watch):
        page.goto(f"{server.url}/run?run={run_id}")
        wait_idle(page)
        content = main(page)
        content.get_by_text(re.compile("^How the run went")).click()
        content.get_by_role("tab", name="Map").click()
        label = page.locator("g.slice text.slicetext", has_text="Costs").first
        sync_api.expect(label).to_be_visible()
        label.scroll_into_view_if_needed()
        box = _settled_box(page, label)
        # The label ignores the pointer; the click lands on the slice beneath it.
        page.mouse.click(box["x"] + box["width"] / 2, box["y"] + box["height"] / 2)
        wait_idle(page)
        chosen = content.get_by_role("combobox", name="Show a branch's findings and sources")
        sync_api.expect(chosen).to_have_value(re.compile("Costs"))
        table = content.locator('[data-testid="stDataFrame"]').last
        sync_api.expect(table).to_be_visible()
        audit(page, watch, "map branch")


def _settled_box(page: Any, label: Any, timeout_s: float = 10.0) -> dict[str, float]:
    """The label's box once it stays put for 200 ms: the chart may still be drawn or moved
    (a transition, the page settling after the tab opened), and a click aimed at where the
    label was a moment ago lands on another slice or none."""
    deadline = time.monotonic() + timeout_s
    box = label.bounding_box()
    while time.monotonic() < deadline:
        page.wait_for_timeout(200)
        again = label.bounding_box()
        if box is not None and again == box:
            return box
        box = again
    raise AssertionError(f"the map's label did not stay in place for 200 ms in {timeout_s:.0f} s: {box}")
