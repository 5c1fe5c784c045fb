"""End-to-end browser tests: a real `streamlit run`, driven in headless Chromium by Playwright.

1. A research run through the UI against the local API stand-in: type a question, move the three
   sliders with the keyboard, start, watch it complete, open the sources, review and report,
   download the PDF and read it back; screenshots of every page go to test-artifacts/browser/
   (set UPDATE_SCREENSHOTS=1 to also refresh docs/screenshots/ for the README).
2. Hostile content in a stored run (script tags, event handlers, javascript: links, a tracking
   pixel) is shown as text: no dialog opens, no request leaves for another host, and no payload
   becomes a live element.
"""

from __future__ import annotations

import io
import os
import re
import socket
import time
from pathlib import Path
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest
from docx import Document as _open_docx

from research.config import build_config
from research.export import build_document, to_markdown
from research.records import Query, ReviewIssue, SkippedPage, Source, Subtopic, Verdict
from storage import Store
from tests.browser_helpers import (
    ARTIFACTS,
    CHROMIUM,
    DOM_AUDIT_JS,
    ROOT,
    PageWatch,
    StreamlitServer,
    wait_idle,
)
from tests.dashboard_fixtures import finished_run
from tests.standin import GEMINI_KEY, OPENAI_KEY, TAVILY_KEY

pytestmark = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing (apt-get install chromium)"),
]

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1366, "height": 900}  # a common laptop screen
PHONE = {"width": 390, "height": 844}  # a common phone screen, in CSS pixels
RUN_TIMEOUT_MS = 120_000
EXPECT_TIMEOUT_MS = 20_000  # a fresh server's first page imports pandas, plotly and the engine
# The very first page of a fresh server also checks the configuration (which imports the
# providers' SDKs): on a machine busy with other tests that alone took over 20 s.
FIRST_PAGE_TIMEOUT_MS = 60_000


# --- helpers (the fixtures `browser` and `dashboard_env`: tests/browser_fixtures.py) -------

def _server(env: dict[str, str], name: str) -> StreamlitServer:
    return StreamlitServer(env=env, log_path=ARTIFACTS / f"{name}-streamlit.log")


def _page(browser: Any, server: StreamlitServer) -> tuple[Any, Any, PageWatch]:
    """A fresh browser context (no cookies or storage from other tests) and its watched page."""
    (ARTIFACTS / f"FAILED-{server.log_path.stem.removesuffix('-streamlit')}.png").unlink(missing_ok=True)
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(30_000)
    sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    page = context.new_page()
    watch = PageWatch(origin=server.url)
    watch.attach(page)
    _WATCHED[id(page)] = (server, watch)
    return context, page, watch


KEYS = (OPENAI_KEY, GEMINI_KEY, TAVILY_KEY)


def _shot(page: Any, name: str, *, height: int | None = None) -> bytes:
    """Screenshot the viewport (or a taller one) once hover effects and animations have
    settled; every page shot is also scanned for the API keys, which must never appear."""
    html = page.content()
    leaked = [key[:8] + "…" for key in KEYS if key in html]
    assert not leaked, f"an API key appears on the page {name}: {leaked}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTIFACTS / f"{name}.png"
    page.mouse.move(VIEWPORT["width"] - 5, VIEWPORT["height"] - 5)  # no hover effects in the sidebar
    if height:
        page.set_viewport_size({"width": VIEWPORT["width"], "height": height})
    page.wait_for_timeout(400)
    try:
        picture = page.screenshot(animations="disabled")
    finally:
        if height:
            page.set_viewport_size(VIEWPORT)
    path.write_bytes(picture)
    return picture


# Each page's dashboard and watch, for the diagnosis written when a test fails.
_WATCHED: dict[int, tuple[StreamlitServer, PageWatch]] = {}


def _failure_shot(page: Any, name: str) -> None:
    """A picture of the page as it was when the test failed, and what the browser and the
    dashboard were doing (printed, and kept beside the picture); never hides the failure."""
    try:
        (ARTIFACTS / f"{name}.png").write_bytes(page.screenshot(timeout=10_000))
    except Exception:  # noqa: BLE001 - the original error matters more
        pass
    server, watch = _WATCHED.pop(id(page), (None, None))
    if server is None or watch is None:
        return
    try:
        report = "\n".join(["browser:", *watch.connection[-40:], *watch.page_errors[-10:],
                             server.diagnose()])
        print(f"--- {name}: diagnosis ---\n{report}")
        (ARTIFACTS / f"{name}.txt").write_text(report)
    except Exception as exc:  # noqa: BLE001 - the original error matters more
        print(f"--- {name}: no diagnosis ({exc!r}) ---")


def _publish(shots: dict[str, bytes]) -> None:
    """Copy the README's screenshots to docs/screenshots/ when asked (UPDATE_SCREENSHOTS=1)."""
    if os.environ.get("UPDATE_SCREENSHOTS", "").strip() not in ("1", "true", "yes"):
        return
    DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, picture in shots.items():
        (DOCS_SCREENSHOTS / f"{name}.png").write_bytes(picture)


def _get(value: Any) -> Any:
    assert value is not None
    return value


def _query(url: str, name: str) -> str:
    values = parse_qs(urlsplit(url).query).get(name)
    assert values, f"{name} is not in {url}"
    return values[0]


def _main(page: Any) -> Any:
    return page.locator('[data-testid="stMain"]')


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


def _open_tab(page: Any, name: str) -> Any:
    """Open a tab of the Run page, scroll it to the top, and return its panel."""
    tab = page.get_by_role("tab", name=name, exact=True)
    tab.click()
    sync_api.expect(tab).to_have_attribute("aria-selected", "true")
    panel = page.locator('[role="tabpanel"]:visible')
    sync_api.expect(panel).to_have_count(1)
    return panel


def _scroll_to_tabs(page: Any) -> None:
    page.get_by_role("tablist").evaluate("el => el.scrollIntoView({block: 'start'})")


INTERNAL_NAME = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")  # SUBTOPIC_COUNT, OPENAI_API_KEY...


def _assert_plain_words(page: Any, where: str, *run_ids: str) -> None:
    """No setting or environment-variable names, run ids or a raw "None" in the page text."""
    text = _main(page).inner_text()
    assert not INTERNAL_NAME.findall(text), f"{where}: internal names {INTERNAL_NAME.findall(text)}"
    assert not re.search(r"\bNone\b", text), f"{where}: a raw None in the page"
    for run_id in run_ids:
        assert run_id not in text, f"{where}: the run id {run_id} is shown"


def _assert_clean(watch: PageWatch) -> None:
    assert watch.dialogs == [], f"a dialog opened: {watch.dialogs}"
    assert watch.foreign_requests() == [], f"requests left for other hosts: {watch.foreign_requests()}"
    assert watch.page_errors == [], f"uncaught script errors: {watch.page_errors}"


# --- 1. a research run, end to end ---------------------------------------------------------

def test_research_run_end_to_end_in_the_browser(browser: Any, dashboard_env: dict[str, str],
                                                tmp_path: Path) -> None:
    pypdf = pytest.importorskip("pypdf")
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    earlier = finished_run(store, "How fast is solar power growing?", SUBTOPIC_COUNT=5,
                           SOURCES_PER_SUBTOPIC=10, REVIEW_CYCLES=1)
    question = "How fast is wind power growing in Europe, and what holds it back?"
    shots: dict[str, bytes] = {}
    with _server(dashboard_env, "e2e") as server:
        context, page, watch = _page(browser, server)
        try:
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
            _move_slider(page, "Subtopics", -1, 3)
            _move_slider(page, "Sources per subtopic", -1, 5)
            _move_slider(page, "Review cycles", +1, 1)
            sync_api.expect(searches).not_to_have_text(estimate_before)  # the estimate follows the sliders
            wait_idle(page)
            search_field = page.locator('[data-testid="stMultiSelect"]').filter(has_text="Search services")
            sync_api.expect(search_field).to_contain_text("Tavily")
            _assert_plain_words(page, "new research")
            sync_api.expect(page.get_by_label("Model", exact=True)).to_have_value("gpt-5-mini")
            shots["new-research"] = _shot(page, "new-research", height=1400)

            page.get_by_role("button", name="Start research").click()
            page.wait_for_url(re.compile(r"/run\?run=[^&]+"))
            run_id = _query(page.url, "run")
            config = _get(store.get_run(run_id)).config
            assert (config["subtopic_count"], config["sources_per_subtopic"], config["review_cycles"]) == (3, 5, 1)

            # Run page: live progress until it completes at 100 %.
            progress = page.locator('[data-testid="stProgress"]')
            sync_api.expect(progress).to_be_visible()
            _shot(page, "run-live")
            sync_api.expect(progress).to_contain_text("Completed · 100%", timeout=RUN_TIMEOUT_MS)
            run = _get(store.get_run(run_id))
            assert run.status == "completed", run.error
            wait_idle(page)
            # The report leads the finished page: summary, one-click downloads, report, no tab click.
            report_md = _get(store.get_report(run_id)).markdown
            headings = [h.lstrip("#").strip() for h in re.findall(r"^##\s+.+$", report_md, re.MULTILINE)]
            headings = [h for h in headings if h and h not in ("Sources", "How this report was made")]
            assert headings, report_md[:500]
            summary = _main(page).locator('[data-testid="stAlertContentSuccess"]').first
            sync_api.expect(summary).to_contain_text("sources cited")
            sync_api.expect(summary).to_be_in_viewport()
            pdf_button = page.get_by_role("button", name="PDF", exact=True)
            sync_api.expect(pdf_button).to_be_in_viewport()
            sync_api.expect(_main(page).get_by_role("heading", name=headings[0]).first).to_be_visible()
            sync_api.expect(page.get_by_role("link", name="[1]").first).to_be_visible()
            _assert_plain_words(page, "finished run", run_id)
            shots["report"] = _shot(page, "report")

            with page.expect_download() as info:  # one click: no "prepare" step
                pdf_button.click()
            download = info.value
            assert download.suggested_filename == f"report-{run_id}.pdf"
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

            # The progress details sit below, in a collapsed section.
            details = page.get_by_text(re.compile("^How the run went"))
            details.click()
            progress = page.locator('[data-testid="stProgress"]')
            sync_api.expect(progress.first).to_contain_text("100%")
            page.get_by_text("Steps", exact=True).click()  # open the steps table for the picture
            wait_idle(page)
            details.scroll_into_view_if_needed()
            shots["run"] = _shot(page, "run")

            panel = _open_tab(page, "Plan")
            sync_api.expect(panel.get_by_text(f"1. {_get(store.get_plan(run_id))[0].title}")).to_be_visible()
            _scroll_to_tabs(page)
            _shot(page, "run-plan")

            # Sources: the table, its filters and the charts.
            panel = _open_tab(page, "Sources")
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
            _scroll_to_tabs(page)
            shots["run-sources"] = _shot(page, "run-sources")

            # Review feedback.
            panel = _open_tab(page, "Review")
            reviews = store.get_reviews(run_id)
            assert reviews, "the run was set to one review cycle but stored no review"
            sync_api.expect(panel.get_by_text(re.compile(r"Review cycle 1: .*(Approved|Changes requested)"))) \
                .to_be_visible()
            sync_api.expect(panel.get_by_text("Automatic checks")).to_be_visible()
            wait_idle(page)
            _scroll_to_tabs(page)
            shots["run-review"] = _shot(page, "run-review")

            if page.get_by_role("tab", name="Verification", exact=True).count():
                _open_tab(page, "Verification")
                wait_idle(page)
                _scroll_to_tabs(page)
                _shot(page, "run-verification")

            panel = _open_tab(page, "Tokens and cost")
            sync_api.expect(panel.get_by_text("Estimated cost")).to_be_visible()
            wait_idle(page)
            _shot(page, "run-usage")

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
            _assert_plain_words(page, "library", run_id, earlier)
            shots["library"] = _shot(page, "library", height=1500)

            # Settings: the stand-in's key is shown masked, never in full.
            page.get_by_role("link", name="Settings").click()
            page.wait_for_url(re.compile(r"/settings"))
            sync_api.expect(page.get_by_role("heading", name="API keys")).to_be_visible()
            wait_idle(page)
            body = _main(page).inner_text()
            assert dashboard_env["OPENAI_API_KEY"] not in body
            assert "set in the environment" in body
            shots["settings"] = _shot(page, "settings")

            _assert_clean(watch)
        except BaseException:
            _failure_shot(page, "FAILED-e2e")
            raise
        finally:
            context.close()
            store.close()
    _publish(shots)


# --- 2. hostile content stays text ---------------------------------------------------------

MARK = "xss-probe"
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


def _audit(page: Any, watch: PageWatch, where: str) -> None:
    page.wait_for_timeout(300)  # give an injected handler or image the chance to fire
    found = page.evaluate(DOM_AUDIT_JS, MARK)
    assert found == [], f"{where}: live payload elements {found}"
    assert page.locator(f"script:has-text('{MARK}')").count() == 0
    _assert_clean(watch)


def test_hostile_content_is_shown_as_text_and_never_runs(browser: Any, dashboard_env: dict[str, str]) -> None:
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    try:
        run_id = _seed_hostile_run(store)
    finally:
        store.close()
    with _server(dashboard_env, "hostile") as server:
        context, page, watch = _page(browser, server)
        try:
            started = time.monotonic()
            page.goto(f"{server.url}/run?run={run_id}")
            wait_idle(page)
            main = _main(page)
            # The question is shown, literally, as text.
            sync_api.expect(main.get_by_text(f"Hostile {MARK} question").first).to_be_visible()
            sync_api.expect(main.get_by_text("<script>alert(1)</script>").locator("visible=true").first) \
                .to_be_visible()
            # The report leads the page, its hostile text shown as text.
            sync_api.expect(main.get_by_text("<img src=x onerror=alert(2)>", exact=False)
                            .locator("visible=true").first).to_be_visible()
            for link in main.locator("a").all():
                href = link.get_attribute("href") or ""
                assert not href.strip().lower().startswith("javascript:"), href
            wait_idle(page)
            _audit(page, watch, "run page")
            page.get_by_text(re.compile("^How the run went")).click()
            sync_api.expect(page.locator('[data-testid="stProgress"]')).to_contain_text("Completed · 100%")

            # Every tab of the Run page, whatever tabs it has: each one audited after it renders.
            expected = {"Plan": f"Plan {MARK}", "Sources": "3 of 3 sources", "Review": "Changes requested",
                        "Verification": "claims", "Tokens and cost": "Estimated cost"}
            tabs = [t.strip() for t in page.get_by_role("tab").all_inner_texts()]
            assert {"Plan", "Sources", "Review"} <= set(tabs), tabs
            for tab in tabs:
                panel = _open_tab(page, tab)
                if tab in expected:
                    sync_api.expect(panel.get_by_text(expected[tab]).first).to_be_visible()
                wait_idle(page)
                if tab == "Review":
                    sync_api.expect(panel.get_by_text("Issue <script>alert(1)</script>", exact=False).first) \
                        .to_be_visible()
                    panel.get_by_text(re.compile("What changed in the revision")).click()
                    wait_idle(page)
                _scroll_to_tabs(page)
                _shot(page, f"hostile-{tab.split()[0].lower()}")
                _audit(page, watch, f"{tab} tab")

            for expander in (main.get_by_text("Steps"), main.get_by_text("Activity log (latest first)")):
                if expander.count():
                    expander.first.scroll_into_view_if_needed()
            _audit(page, watch, "run page, steps and log")

            page.get_by_role("link", name="Library").click()
            page.wait_for_url(re.compile(r"/library"))
            sync_api.expect(page.get_by_text("1 run(s) · page 1 of 1")).to_be_visible()
            wait_idle(page)
            sync_api.expect(_main(page).locator('[data-testid="stDataFrame"]')).to_be_visible()
            # The run is listed: its question shows in the table's cells or the run picker.
            page.wait_for_function(
                """(needle) => [...document.querySelectorAll('[data-testid="stMain"] *')].some(
                       el => (el.value || el.textContent || '').includes(needle))""",
                arg=f"Hostile {MARK} question", timeout=EXPECT_TIMEOUT_MS, polling=100)
            wait_idle(page)
            _shot(page, "hostile-library")
            _audit(page, watch, "library")
            assert time.monotonic() - started < 90
        except BaseException:
            _failure_shot(page, "FAILED-hostile")
            raise
        finally:
            context.close()


# --- 3. a shared Run link, opened first after a (re)start ------------------------------------

def test_a_shared_run_link_opens_inside_the_app_after_a_restart(browser: Any, dashboard_env: dict[str, str]) -> None:
    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    try:
        run_id = finished_run(store, "How fast is solar power growing?")
    finally:
        store.close()
    with _server(dashboard_env, "deep-link") as server:
        context, page, watch = _page(browser, server)
        try:
            page.goto(f"{server.url}/run?run={run_id}")  # the first page this server serves
            sync_api.expect(page.get_by_role("heading", name="Research run")).to_be_visible()
            wait_idle(page)
            nav = page.get_by_test_id("stSidebarNav")
            sync_api.expect(nav.get_by_role("link", name="New research", exact=True)).to_be_visible(timeout=3000)
            sync_api.expect(nav.get_by_role("link", name="app", exact=True)).to_have_count(0)
            _assert_clean(watch)
        finally:
            context.close()


# --- 4. live tabs while a run works, then the report first, on a laptop and a phone ----------

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
    browser: Any, dashboard_env: dict[str, str], viewport: dict[str, int]
) -> None:
    from tests.dashboard_fixtures import DRAFT_1, PLAN, source

    store = Store(dashboard_env["DEEP_RESEARCH_DB"])
    run_id = _seed_running_run(store)
    with _server(dashboard_env, f"live-{viewport['width']}") as server:
        context, page, watch = _page(browser, server)
        page.set_viewport_size(viewport)
        try:
            page.goto(f"{server.url}/run?run={run_id}")
            sync_api.expect(page.get_by_role("heading", name="Research run")).to_be_visible()
            wait_idle(page)
            panel = _open_tab(page, "Plan")
            sync_api.expect(panel.get_by_text("appears here as soon as")).to_be_visible()

            # The page is not reloaded: each tab shows what the store holds within a refresh.
            store.heartbeat(run_id, f"pid:{os.getpid()}@{socket.gethostname()}")
            store.save_plan(run_id, PLAN)
            sync_api.expect(panel.get_by_text(f"1. {PLAN[0].title}")).to_be_visible()
            store.start_step(run_id, "research:t1", kind="research", label="Researching")
            store.complete_research_step(run_id, "research:t1", sources=[source(1), source(2)],
                                         findings=[], queries=[], skipped=[])
            panel = _open_tab(page, "Sources")
            sync_api.expect(panel.get_by_text("2 of 2 sources")).to_be_visible()
            store.save_draft(run_id, 1, "partial", DRAFT_1, {1: "s0001", 2: "s0002"}, 30)
            panel = _open_tab(page, "Report")
            sync_api.expect(panel.get_by_text("Draft in progress")).to_be_visible()
            sync_api.expect(panel.get_by_text("Solar capacity grew fast", exact=False)).to_be_visible()
            store.save_verifications(run_id, [
                Verdict("c1", "Solar grew fast.", ("s0001",), "SUPPORTED", status="supported",
                        passage="grew", section="Executive summary")])
            panel = _open_tab(page, "Verification")
            sync_api.expect(panel.get_by_text("1 of 1 claims")).to_be_visible()
            _assert_plain_words(page, "running run", run_id)
            _shot(page, f"run-live-tabs-{viewport['width']}")

            # Completion: the report leads the page without any tab click or scrolling.
            _finish(store, run_id, DRAFT_1, {1: "s0001", 2: "s0002"})
            summary = _main(page).locator('[data-testid="stAlertContentSuccess"]').first
            sync_api.expect(summary).to_contain_text("sources cited", timeout=EXPECT_TIMEOUT_MS)
            wait_idle(page)
            page.evaluate("window.scrollTo(0, 0)")
            for name in ("PDF", "Word", "Markdown"):
                sync_api.expect(page.get_by_role("button", name=name, exact=True)).to_be_visible()
            sync_api.expect(page.get_by_role("button", name="PDF", exact=True)).to_be_in_viewport()
            sync_api.expect(_main(page).get_by_role("heading", name="Executive summary").first) \
                .to_be_visible()
            # Nothing is clipped sideways: the page is no wider than the screen.
            overflow = page.evaluate(
                "() => document.querySelector('[data-testid=\"stMain\"]').scrollWidth"
                " - document.documentElement.clientWidth")
            assert overflow <= 1, f"the page is {overflow}px wider than the screen"
            _assert_plain_words(page, "finished run", run_id)
            _shot(page, f"report-first-{viewport['width']}")
            _assert_clean(watch)
        except BaseException:
            _failure_shot(page, f"FAILED-live-{viewport['width']}")
            raise
        finally:
            context.close()
            store.close()
