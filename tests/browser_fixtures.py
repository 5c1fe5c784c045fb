"""Fixtures for the browser tests (conftest.py imports them, so every test module can use them).

Where the CPU of a browser test goes (measured, issue 15 point 6): a fresh `streamlit run`
spends about 2 CPU-s up to its first page (0.65 started warm, as browser_helpers.py does), a
fresh Chromium about 1 CPU-s starting, each new browser context about 1.5 CPU-s of Chromium
loading Streamlit's page, and an open page of a working run about 0.1-0.5 CPU-s a second.
So one Chromium (and one Playwright driver, a node process) serves the browser tests of a
pytest process that run one after another, across test modules; each test still opens a fresh
context in it (no cookies or storage carry over). It is closed when the next test is not a
browser test, like the shared dashboard below: Playwright's sync API keeps an asyncio loop
running in the test thread while it is open, and later tests that start a durable-jobs queue
(DBOS refuses to register one under a running loop) would then fail in their setup. A driver
and a Chromium cost about 1.1 CPU-s to start and stop (measured, issue 33), once per module
before.

A test whose subject is a page rather than the server's start (the map, steering, documents,
hostile content and live tabs on the Run page, no sign-in) uses `shared_dashboard`: one `streamlit run` per
pytest process on one SQLite database, beside which each test writes its own runs (a
dashboard on SQLite sees rows other processes add). Those tests find their own runs by id or
question, never by counting the whole database. A test about a fresh server, its settings or
its database (the end-to-end run, deep links, sign-in) starts its own with `dashboard_env`.
Once a page has run its job manager, an idle dashboard still costs about 0.02 CPU-s a second
(its durable-jobs queue polls the database), so the shared one is stopped when the next test
is not a browser test (`pytest_runtest_teardown`, registered by conftest.py) and started again
if a later browser test asks for it.
"""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_helpers import ARTIFACTS, CHROMIUM, CHROMIUM_ARGS, StreamlitServer, free_port
from tests.standin import StandinServer


class SharedBrowser:
    """This process's headless Chromium (see above), started on first use, again if it went
    away, and closed by `stop_shared_dashboard` when the browser tests are done."""

    def __init__(self) -> None:
        self.playwright: Any = None
        self.chromium: Any = None

    def live(self) -> Any:
        if self.chromium is None or not self.chromium.is_connected():
            self.close()
            sync_api = pytest.importorskip("playwright.sync_api",
                                           reason="the playwright package is not installed")
            self.playwright = sync_api.sync_playwright().start()
            self.chromium = self.playwright.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        return self.chromium

    def close(self) -> None:
        chromium, playwright = self.chromium, self.playwright
        self.chromium = self.playwright = None
        try:
            if chromium is not None:
                chromium.close()
        finally:
            if playwright is not None:
                playwright.stop()


_BROWSER = SharedBrowser()


class LiveBrowser:
    """Stands for the process's Chromium, started (again) when a test uses it: a module whose
    browser tests are split by other tests gets a live one each time."""

    def __getattr__(self, name: str) -> Any:
        return getattr(_BROWSER.live(), name)


@pytest.fixture(scope="module")
def browser() -> Any:
    """The process's headless Chromium (see above); tests open their own contexts in it."""
    return LiveBrowser()


def dashboard_settings(folder: Path, standin: StandinServer) -> dict[str, str]:
    """The stand-in's addresses and keys, and a database and secrets file in `folder`."""
    (folder / "data").mkdir(parents=True, exist_ok=True)  # a missing database folder is refused
    return {
        **standin.env(),
        "DEEP_RESEARCH_DB": str(folder / "data" / "research.db"),
        "DEEP_RESEARCH_SECRETS_FILE": str(folder / "secrets.toml"),
        # Where the form's sliders start (the test moves each one step) and a short run.
        "DEEP_RESEARCH_SUBTOPIC_COUNT": "4",
        "DEEP_RESEARCH_SOURCES_PER_SUBTOPIC": "6",
        "DEEP_RESEARCH_REVIEW_CYCLES": "0",
        "DEEP_RESEARCH_SEARCHES_PER_SUBTOPIC": "2",
        "DEEP_RESEARCH_MAX_ROUNDS": "1",
        "DEEP_RESEARCH_REPORT_MAX_WORDS": "1500",
        "DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES": "false",
        "DEEP_RESEARCH_SEARCH": "tavily",
    }


@pytest.fixture
def dashboard_env(tmp_path: Path, standin: StandinServer) -> dict[str, str]:
    """Settings for a test's own fresh dashboard (a clean stand-in, a database in tmp_path)."""
    standin.reset()
    return dashboard_settings(tmp_path, standin)


class SharedDashboard:
    """One dashboard for the tests of a pytest process (see above), started on first use and
    again if a failed test's diagnosis stopped it."""

    def __init__(self, folder: Path, standin: StandinServer) -> None:
        self.env = dashboard_settings(folder, standin)
        no_auth = folder / "streamlit-secrets.toml"  # a Streamlit secrets file without [auth]
        no_auth.write_text('OPENAI_MODEL_NOTE = "no sign-in here"\n', encoding="utf-8")
        self.env["STREAMLIT_SECRETS_FILES"] = str(no_auth)
        worker = os.environ.get("PYTEST_XDIST_WORKER", "main")
        self.server = StreamlitServer(env=self.env, log_path=ARTIFACTS / f"shared-{worker}-streamlit.log")

    @property
    def db(self) -> str:
        return self.env["DEEP_RESEARCH_DB"]

    def live(self) -> StreamlitServer:
        """The server, started (again) if it is not running; on a fresh port, since the old
        one may still be held a moment by the stopped server's connections."""
        if not self.server.alive():
            self.server.stop()
            self.server.port = free_port()
            self.server.start()
        return self.server


_STARTED: list[SharedDashboard] = []  # the shared dashboards of this process (at most one)


def stop_shared_dashboard(nextitem: pytest.Item | None) -> None:
    """Stop the shared dashboard and close Chromium once the browser tests are done (see
    above; conftest.py's `pytest_runtest_teardown` calls this after each test)."""
    if nextitem is not None and nextitem.get_closest_marker("browser") is not None:
        return
    try:
        for shared in _STARTED:
            shared.server.stop()
    finally:
        _BROWSER.close()


@pytest.fixture(scope="session")
def _shared_dashboard(tmp_path_factory: pytest.TempPathFactory,
                      standin: StandinServer) -> Iterator[SharedDashboard]:
    shared = SharedDashboard(tmp_path_factory.mktemp("shared-dashboard"), standin)
    _STARTED.append(shared)
    try:
        yield shared
    finally:
        _STARTED.remove(shared)
        shared.server.stop()


@pytest.fixture
def shared_dashboard(_shared_dashboard: SharedDashboard, standin: StandinServer) -> SharedDashboard:
    """The shared dashboard, running, with a clean stand-in (no faults or delays left over)."""
    standin.reset()
    _shared_dashboard.live()
    return _shared_dashboard
