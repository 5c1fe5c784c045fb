"""A research run end to end in the browser: a real `streamlit run`, driven in headless
Chromium by Playwright, against the local API stand-in over real HTTP.

Type a question, move the three sliders with the keyboard, start, watch it complete, open the
sources, review and report, download the PDF and Word files and read them back; screenshots of
every page go to test-artifacts/browser/ (set UPDATE_SCREENSHOTS=1 to also refresh
docs/screenshots/ for the README). The suite's one run started in the browser and followed to its end;
the other browser tests open runs written beside the dashboard (test_browser_run_page.py,
test_browser_map.py, test_browser_steering.py...).
"""

from __future__ import annotations

import io
import os
import re
from pathlib import Path
from typing import Any

import pytest
from docx import Document as _open_docx

from research.export.formats import file_stem
from storage import Store
from tests.browser_helpers import ARTIFACTS, CHROMIUM, wait_idle
from tests.browser_pages import (
    RUN_TIMEOUT_MS,
    assert_clean,
    assert_plain_words,
    main,
    open_tab,
    own_server,
    publish,
    query,
    scroll_to_tabs,
    shot,
    sync_api,
    watched_page,
)
from tests.dashboard_fixtures import finished_run

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (scripts/setup.sh --dev installs it)"),
]

# The very first page of a fresh server also checks the configuration (which imports the
# providers' SDKs): on a machine busy with other tests that alone took over 20 s.
FIRST_PAGE_TIMEOUT_MS = 60_000


def _get(value: Any) -> Any:
    assert value is not None
    return value


def _slider(page: Any, label: str) -> Any:
    return page.locator('[data-testid="stSlider"]').filter(
        has=page.locator('[data-testid="stWidgetLabel"]', has_text=re.compile(f"^{re.escape(label)}$")))


def _move_slider(page: Any, label: str, presses: int, expected: int) -> None:
    slider = _slider(page, label)
    thumb_value = slider.locator('[data-testid="stSliderThumbValue"]')
    before = int(thumb_value.inner_text())
    assert before != expected, f"{label} already shows {expected}"
    thumb = slider.locator('input[type="range"]')
    thumb.focus()
    for _ in range(abs(presses)):
        thumb.press("ArrowRight" if presses > 0 else "ArrowLeft")
    sync_api.expect(thumb_value).to_have_text(str(expected))
    sync_api.expect(thumb).to_have_attribute("aria-valuetext", str(expected))
    wait_idle(page)


def test_research_run_end_to_end_in_the_browser(browser: Any, dashboard_env: dict[str, str],
                                                tmp_path: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    earlier = finished_run(store, "How fast is solar power growing?", SUBTOPIC_COUNT=5,
                           SOURCES_PER_SUBTOPIC=10, REVIEW_CYCLES=1)
    question = "How fast is wind power growing in Europe, and what holds it back?"
    shots: dict[str, bytes] = {}
    with own_server(dashboard_env, "e2e") as server:
        with watched_page(browser, server, "e2e") as (page, watch):
            # New research: question, the three sliders, the estimate, Start.
            page.goto(server.url + "/")
            # Wait for the first run to be drawn in full: touching the form earlier can blank the
            # Model and Search providers fields (see the note in the hand-over).
            searches = page.locator('[data-testid="stMetric"]').filter(has_text="Web searches")
            sync_api.expect(searches).to_be_visible(timeout=FIRST_PAGE_TIMEOUT_MS)
            wait_idle(page)
            sync_api.expect(page.get_by_role("heading", name="New research")).to_be_visible()
            box = page.get_by_label("Your research question")
            box.fill(question)
            box.press("Control+Enter")  # commits a text area in Streamlit
            sync_api.expect(page.get_by_text(f"{len(question)} / 2000 characters")).to_be_visible()
            wait_idle(page)
            estimate_before = searches.inner_text()
            # Beyond the question, the preset and the estimate, every control is one click away.
            sync_api.expect(_slider(page, "Subtopics")).not_to_be_visible()
            page.get_by_text(re.compile("^More settings")).click()
            wait_idle(page)
            sync_api.expect(_slider(page, "Subtopics")).to_be_visible()
            # A first run starts from Quick (3 subtopics, 8 sources each, no review).
            _move_slider(page, "Subtopics", +1, 4)
            _move_slider(page, "Subtopics", -1, 3)
            _move_slider(page, "Sources per subtopic", -3, 5)
            _move_slider(page, "Review cycles", +1, 1)
            sync_api.expect(searches).not_to_have_text(estimate_before)  # the estimate follows the sliders
            wait_idle(page)
            search_field = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Search services")
            sync_api.expect(search_field).to_contain_text("Tavily")
            assert_plain_words(page, "new research")
            sync_api.expect(page.get_by_label("Model", exact=True)).to_have_value("gpt-5-mini")
            shots["new-research"] = shot(page, "new-research", height=1400)

            page.get_by_role("button", name="Start research").click()
            page.wait_for_url(re.compile(r"/run\?run=[^&]+"))
            run_id = query(page.url, "run")
            config = _get(store.get_run(run_id)).config
            assert (config["subtopic_count"], config["sources_per_subtopic"], config["review_cycles"]) == (3, 5, 1)

            # Run page: live progress until it completes at 100 %.
            progress = page.locator('[data-testid="stProgress"]')
            sync_api.expect(progress).to_be_visible()
            shot(page, "run-live")
            sync_api.expect(progress).to_contain_text("Completed · 100%", timeout=RUN_TIMEOUT_MS)
            run = _get(store.get_run(run_id))
            assert run.status == "completed", run.error
            wait_idle(page)
            # The report leads the finished page: summary, one-click downloads, report, no tab click.
            report_md = _get(store.get_report(run_id)).markdown
            headings = [h.lstrip("#").strip() for h in re.findall(r"^##\s+.+$", report_md, re.MULTILINE)]
            headings = [h for h in headings if h and h not in ("Sources", "How this report was made")]
            assert headings, report_md[:500]
            summary = main(page).locator('[data-testid="stAlertContentSuccess"]').first
            sync_api.expect(summary).to_contain_text("sources cited")
            sync_api.expect(summary).to_be_in_viewport()
            pdf_button = page.get_by_role("button", name="PDF", exact=True)
            sync_api.expect(pdf_button).to_be_in_viewport()
            sync_api.expect(main(page).get_by_role("heading", name=headings[0]).first).to_be_visible()
            sync_api.expect(page.get_by_role("link", name="[1]").first).to_be_visible()
            assert_plain_words(page, "finished run", run_id)
            shots["report"] = shot(page, "report")

            with page.expect_download() as info:  # one click: no "prepare" step
                pdf_button.click()
            download = info.value
            stored_run, stored = _get(store.get_run(run_id)), _get(store.get_report(run_id))
            # Named by the question and date (not "report-<id>"), so downloads tell runs apart.
            assert download.suggested_filename == f"{file_stem(stored_run.question, stored.created_at)}.pdf"
            assert download.suggested_filename.startswith(stored_run.question.split()[0].lower())
            pdf_path = tmp_path / download.suggested_filename
            download.save_as(str(pdf_path))
            data = pdf_path.read_bytes()
            (ARTIFACTS / "report.pdf").write_bytes(data)
            assert data.startswith(b"%PDF")
            text = " ".join(p.extract_text() or "" for p in pypdf.PdfReader(io.BytesIO(data)).pages)
            flat = " ".join(text.split())
            for heading in headings[:3]:
                assert " ".join(heading.split()) in flat, f"{heading!r} is not in the PDF"
            assert "[1]" in flat and "How this report was made" in flat

            with page.expect_download() as info:  # Word, also one click, read back by python-docx
                page.get_by_role("button", name="Word", exact=True).click()
            word_path = tmp_path / info.value.suggested_filename
            info.value.save_as(str(word_path))
            word = _open_docx(str(word_path))
            assert headings[0] in [p.text for p in word.paragraphs]
            assert word.core_properties.author == "Deep Research Studio"

            # The progress details sit below, in a collapsed section.
            details = page.get_by_text(re.compile("^How the run went"))
            details.click()
            progress = page.locator('[data-testid="stProgress"]')
            sync_api.expect(progress.first).to_contain_text("100%")
            page.get_by_text("Steps", exact=True).click()  # open the steps table for the picture
            wait_idle(page)
            details.scroll_into_view_if_needed()
            shots["run"] = shot(page, "run")

            panel = open_tab(page, "Plan")
            sync_api.expect(panel.get_by_text(f"1. {_get(store.get_plan(run_id))[0].title}")).to_be_visible()
            scroll_to_tabs(page)
            shot(page, "run-plan")

            # Sources: the table, its filters and the charts.
            panel = open_tab(page, "Sources")
            count = store.count_sources(run_id)
            assert count > 0
            sync_api.expect(panel.get_by_text(f"{count} of {count} sources")).to_be_visible()
            # The first table lists the kept sources (pages looked at but not kept follow it).
            table = panel.locator('[data-testid="stDataFrame"]').first
            sync_api.expect(table).to_be_visible()
            # The grid draws on a canvas; its accessible (hidden) table carries the cell texts.
            sync_api.expect(table.locator('[role="gridcell"]').first).to_be_attached()
            titles = {" ".join(s.title.split()) for s in store.get_sources(run_id, with_text=False)}
            cells = {" ".join(t.split()) for t in table.locator('[role="gridcell"]').all_text_contents()}
            assert titles & cells, f"no source title in the table: {sorted(cells)[:10]}"
            sync_api.expect(table.locator('[role="columnheader"]', has_text="Relevance")).to_be_attached()
            sync_api.expect(panel.locator('[data-testid="stPlotlyChart"]')).to_have_count(4)
            wait_idle(page)
            scroll_to_tabs(page)
            shots["run-sources"] = shot(page, "run-sources")

            # Review feedback.
            panel = open_tab(page, "Review")
            reviews = store.get_reviews(run_id)
            assert reviews, "the run was set to one review cycle but stored no review"
            sync_api.expect(panel.get_by_text(re.compile(r"Review cycle 1: .*(Approved|Changes requested)"))) \
                .to_be_visible()
            sync_api.expect(panel.get_by_text("Automatic checks")).to_be_visible()
            wait_idle(page)
            scroll_to_tabs(page)
            shots["run-review"] = shot(page, "run-review")

            if page.get_by_role("tab", name="Verification", exact=True).count():
                open_tab(page, "Verification")
                wait_idle(page)
                scroll_to_tabs(page)
                shot(page, "run-verification")

            panel = open_tab(page, "Tokens and cost")
            sync_api.expect(panel.get_by_text("Estimated cost")).to_be_visible()
            wait_idle(page)
            shot(page, "run-usage")

            # Library: both runs, and a comparison of them.
            page.get_by_role("link", name="Library").click()
            page.wait_for_url(re.compile(r"/library"))
            sync_api.expect(page.get_by_role("heading", name="Library")).to_be_visible()
            sync_api.expect(page.get_by_text("2 run(s) · page 1 of 1")).to_be_visible()
            compare = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Pick two or more runs")
            for asked in (question, "How fast is solar power growing?"):
                compare.locator("input").click()  # runs are picked by question, date and preset
                page.get_by_role("option", name=re.compile("^" + re.escape(asked[:40]))).click()
                page.keyboard.press("Escape")
                wait_idle(page)
            sync_api.expect(page.locator('[data-testid="stPlotlyChart"]').first).to_be_visible()
            wait_idle(page)
            assert_plain_words(page, "library", run_id, earlier)
            shots["library"] = shot(page, "library", height=1500)

            # Settings: the stand-in's key is shown masked, never in full.
            page.get_by_role("link", name="Settings").click()
            page.wait_for_url(re.compile(r"/settings"))
            sync_api.expect(page.get_by_role("heading", name="API keys")).to_be_visible()
            wait_idle(page)
            body = main(page).inner_text()
            assert dashboard_env["OPENAI_API_KEY"] not in body
            assert "set in the environment" in body
            shots["settings"] = shot(page, "settings")

            assert_clean(watch)
            store.close()
    publish(shots)
