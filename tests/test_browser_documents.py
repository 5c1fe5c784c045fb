"""The Documents page in a real browser: upload real PDF and DOCX files (one of them a zip
bomb) through the file uploader into a new collection, see each file's result in plain
words, and find a passage by its page. The page shot is the README's Documents screenshot
(UPDATE_SCREENSHOTS=1 refreshes docs/screenshots/documents.png)."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Any

import pytest

from storage import Store
from storage import documents as docstore
from tests.browser_fixtures import SharedDashboard
from tests.browser_helpers import CHROMIUM, wait_idle
from tests.browser_pages import assert_clean, publish, shot, sync_api, watched_page
from tests.document_files import docx_bytes, pdf_bytes, zip_bomb_docx_bytes

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing"),
]


def test_uploading_documents_in_the_browser_adds_the_good_and_names_the_bad(
        browser: Any, shared_dashboard: SharedDashboard, tmp_path: Path,
) -> None:
    files = {"field-report.pdf": pdf_bytes(), "market-notes.docx": docx_bytes(),
             "bomb.docx": zip_bomb_docx_bytes()}
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    server = shared_dashboard.server
    with watched_page(browser, server, "documents") as (page, watch):
        page.goto(server.url + "/documents")
        sync_api.expect(page.get_by_role("heading", name="Documents", exact=True)).to_be_visible()
        wait_idle(page)
        page.locator('input[type="file"]').set_input_files(paths)
        sync_api.expect(page.get_by_text("bomb.docx")).to_be_visible()
        page.get_by_label("or a new collection").fill("Heat pumps")
        page.get_by_role("button", name="Add to library").click()
        sync_api.expect(page.get_by_text("3 passages from 3 pages")).to_be_visible(
            timeout=60_000)
        sync_api.expect(page.get_by_text("zip bomb")).to_be_visible()
        wait_idle(page)
        box = page.get_by_label("Search your documents")
        box.fill("payback time gas boiler")
        box.press("Enter")
        sync_api.expect(page.get_by_text("Heat Pump Field Report · p. 3")).to_be_visible()
        wait_idle(page)
        publish({"documents": shot(page, "documents", height=1500)})
        assert_clean(watch)
    store = Store(shared_dashboard.db)
    try:
        titles = sorted(d.title for d in docstore.list_documents(store, collection="Heat pumps"))
    finally:
        store.close()
    assert titles == ["Heat Pump Field Report", "Heat pump market notes"]
