"""What the browser tests do on a page: open one in a fresh context, take a checked screenshot,
wait for tabs and sliders, refuse internal names, dialogs, foreign requests and live payloads,
and say what went wrong when a test fails.

Shared by the `tests/test_browser*.py` modules (the servers and Chromium: browser_helpers.py,
the fixtures: browser_fixtures.py).
"""

from __future__ import annotations

import os
import re
import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any
from urllib.parse import parse_qs, urlsplit

import pytest

from tests.browser_helpers import ARTIFACTS, CHROMIUM, DOM_AUDIT_JS, ROOT, PageWatch, StreamlitServer
from tests.standin import GEMINI_KEY, OPENAI_KEY, TAVILY_KEY

sync_api = pytest.importorskip("playwright.sync_api", reason="the playwright package is not installed")

# A browser test module's marks (its `pytestmark`): a browser test, skipped where Chromium is missing.
BROWSER_TESTS = [
    pytest.mark.browser,
    pytest.mark.skipif(not os.path.exists(CHROMIUM),
                       reason=f"{CHROMIUM} is missing (scripts/setup.sh --dev installs it)"),
]
DOCS_SCREENSHOTS = ROOT / "docs" / "screenshots"
VIEWPORT = {"width": 1366, "height": 900}  # a common laptop screen
PHONE = {"width": 390, "height": 844}  # a common phone screen, in CSS pixels
RUN_TIMEOUT_MS = 120_000
EXPECT_TIMEOUT_MS = 20_000  # a fresh server's first page imports pandas, plotly and the engine
KEYS = (OPENAI_KEY, GEMINI_KEY, TAVILY_KEY)
MARK = "xss-probe"  # in every hostile payload; `audit` looks for it in live elements
INTERNAL_NAME = re.compile(r"\b[A-Z][A-Z0-9]*_[A-Z0-9_]+\b")  # SUBTOPIC_COUNT, OPENAI_API_KEY...

# Every animation and transition ends at once in the test pages (a style added to each document
# as it starts): Streamlit fades and slides elements on every script run, and Chromium drew each
# of those frames for nothing a check looks at. Measured (issue 33): about 12% less Chromium CPU
# on tests/test_browser_run_page.py. A finite animation still runs its end (0 s long, once), so
# nothing waiting for `animationend` or `transitionend` waits longer; screenshots were already
# taken with animations disabled.
NO_MOTION_JS = """
(() => {
  const add = () => {
    const style = document.createElement('style');
    style.textContent = '*, *::before, *::after { animation-duration: 0s !important;'
      + ' animation-delay: 0s !important; animation-iteration-count: 1 !important;'
      + ' transition-duration: 0s !important; transition-delay: 0s !important; }';
    (document.head || document.documentElement).appendChild(style);
  };
  if (document.documentElement) add(); else document.addEventListener('DOMContentLoaded', add);
})();
"""

# Each page's dashboard and watch, for the diagnosis written when a test fails.
_WATCHED: dict[int, tuple[StreamlitServer, PageWatch]] = {}


def own_server(env: dict[str, str], name: str) -> StreamlitServer:
    """A test's own dashboard (not started), logging to test-artifacts/browser/<name>-streamlit.log."""
    return StreamlitServer(env=env, log_path=ARTIFACTS / f"{name}-streamlit.log")


@contextmanager
def watched_page(browser: Any, dashboard: StreamlitServer, name: str) -> Iterator[tuple[Any, PageWatch]]:
    """A page in a fresh browser context (no cookies or storage from other tests), watched
    for console errors and lost connections, closed afterwards. If the test fails inside,
    `failure_shot` keeps a picture and a diagnosis as test-artifacts/browser/FAILED-<name>."""
    (ARTIFACTS / f"FAILED-{name}.png").unlink(missing_ok=True)
    context = browser.new_context(viewport=VIEWPORT, accept_downloads=True)
    context.set_default_timeout(30_000)
    context.add_init_script(script=NO_MOTION_JS)
    sync_api.expect.set_options(timeout=EXPECT_TIMEOUT_MS)
    page = context.new_page()
    watch = PageWatch(origin=dashboard.url)
    watch.attach(page)
    _WATCHED[id(page)] = (dashboard, watch)
    try:
        yield page, watch
    except BaseException:
        failure_shot(page, f"FAILED-{name}")
        raise
    finally:
        _WATCHED.pop(id(page), None)
        context.close()


def shot(page: Any, name: str, *, height: int | None = None) -> bytes:
    """Screenshot the viewport (or a taller one) once the pointer has left the page and two
    frames are drawn (hover effects and animations end at once: NO_MOTION_JS; this waited a
    fixed 400 ms before, some 40 times in the browser tests); every page shot is also scanned
    for the API keys, which must never appear."""
    html = page.content()
    leaked = [key[:8] + "…" for key in KEYS if key in html]
    assert not leaked, f"an API key appears on the page {name}: {leaked}"
    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    size = page.viewport_size or VIEWPORT
    page.mouse.move(size["width"] - 5, size["height"] - 5)  # no hover effects in the sidebar
    if height:
        page.set_viewport_size({"width": size["width"], "height": height})
    page.evaluate("() => new Promise(done => requestAnimationFrame(() => requestAnimationFrame(done)))")
    try:
        picture = page.screenshot(animations="disabled")
    finally:
        if height:
            page.set_viewport_size(size)
    (ARTIFACTS / f"{name}.png").write_bytes(picture)
    return picture


def failure_shot(page: Any, name: str) -> None:
    """A picture of the page as it was when the test failed, and what the browser and the
    dashboard were doing (printed, and kept beside the picture); never hides the failure.

    The dashboard's thread stacks come from stopping it with SIGABRT (a shared dashboard is
    started again for the next test: browser_fixtures.py)."""
    try:
        (ARTIFACTS / f"{name}.png").write_bytes(page.screenshot(timeout=10_000))
    except Exception:  # noqa: BLE001 - the original error matters more
        pass
    dashboard, watch = _WATCHED.pop(id(page), (None, None))
    if dashboard is None or watch is None:
        return
    try:
        report = "\n".join(["browser:", *watch.connection[-40:], *watch.page_errors[-10:],
                             dashboard.diagnose()])
        print(f"--- {name}: diagnosis ---\n{report}")
        (ARTIFACTS / f"{name}.txt").write_text(report)
    except Exception as exc:  # noqa: BLE001 - the original error matters more
        print(f"--- {name}: no diagnosis ({exc!r}) ---")


def publish(shots: dict[str, bytes]) -> None:
    """Copy the README's screenshots to docs/screenshots/ when asked (UPDATE_SCREENSHOTS=1)."""
    if os.environ.get("UPDATE_SCREENSHOTS", "").strip() not in ("1", "true", "yes"):
        return
    DOCS_SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    for name, picture in shots.items():
        (DOCS_SCREENSHOTS / f"{name}.png").write_bytes(picture)


def query(url: str, name: str) -> str:
    values = parse_qs(urlsplit(url).query).get(name)
    assert values, f"{name} is not in {url}"
    return values[0]


def main(page: Any) -> Any:
    return page.locator('[data-testid="stMain"]')


def open_tab(page: Any, name: str) -> Any:
    """Open a tab of the Run page and return its panel.

    While a run works, its tabs are drawn again every few seconds, and a click that lands as
    that starts can find the tab disabled for the moment and be dropped (seen once, on the
    phone-sized page, in a whole-suite run). A person then clicks again; so does this, until
    the tab is selected or the usual time is up."""
    tab = page.get_by_role("tab", name=name, exact=True)
    deadline = time.monotonic() + EXPECT_TIMEOUT_MS / 1000
    while True:
        sync_api.expect(tab).to_be_enabled()
        tab.click()
        try:
            sync_api.expect(tab).to_have_attribute("aria-selected", "true", timeout=3_000)
            break
        except AssertionError:
            if time.monotonic() > deadline:
                raise
    panel = page.locator('[role="tabpanel"]:visible')
    sync_api.expect(panel).to_have_count(1)
    return panel


def scroll_to_tabs(page: Any) -> None:
    page.get_by_role("tablist").evaluate("el => el.scrollIntoView({block: 'start'})")


def assert_plain_words(page: Any, where: str, *run_ids: str) -> None:
    """No setting or environment-variable names, run ids or a raw "None" in the page text."""
    text = main(page).inner_text()
    assert not INTERNAL_NAME.findall(text), f"{where}: internal names {INTERNAL_NAME.findall(text)}"
    assert not re.search(r"\bNone\b", text), f"{where}: a raw None in the page"
    for run_id in run_ids:
        assert run_id not in text, f"{where}: the run id {run_id} is shown"


def assert_clean(watch: PageWatch) -> None:
    assert watch.dialogs == [], f"a dialog opened: {watch.dialogs}"
    assert watch.foreign_requests() == [], f"requests left for other hosts: {watch.foreign_requests()}"
    assert watch.page_errors == [], f"uncaught script errors: {watch.page_errors}"


def audit(page: Any, watch: PageWatch, where: str) -> None:
    """No payload became a live element, and nothing a payload could do has happened."""
    page.wait_for_timeout(300)  # give an injected handler or image the chance to fire
    found = page.evaluate(DOM_AUDIT_JS, MARK)
    assert found == [], f"{where}: live payload elements {found}"
    assert page.locator(f"script:has-text('{MARK}')").count() == 0
    assert_clean(watch)

