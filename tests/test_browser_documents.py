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
from tests.browser_helpers import CHROMIUM, wait_idle
from tests.document_files import docx_bytes, pdf_bytes, zip_bomb_docx_bytes
from tests.test_browser import (
    _assert_clean,
    _failure_shot,
    _page,
    _publish,
    _server,
    _shot,
)

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing"),
]
sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")


def test_uploading_documents_in_the_browser_adds_the_good_and_names_the_bad(
        browser: Any, dashboard_env: dict[str, str], tmp_path: Path,
) -> None:
    files = {"field-report.pdf": pdf_bytes(), "market-notes.docx": docx_bytes(),
             "bomb.docx": zip_bomb_docx_bytes()}
    paths = []
    for name, data in files.items():
        (tmp_path / name).write_bytes(data)
        paths.append(str(tmp_path / name))
    with _server(dashboard_env, "documents") as server:
        context, page, watch = _page(browser, server)
        try:
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
            _publish({"documents": _shot(page, "documents", height=1500)})
            _assert_clean(watch)
        except Exception:
            _failure_shot(page, "FAILED-documents")
            raise
        finally:
            context.close()
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    titles = sorted(d.title for d in docstore.list_documents(store, collection="Heat pumps"))
    assert titles == ["Heat Pump Field Report", "Heat pump market notes"]
