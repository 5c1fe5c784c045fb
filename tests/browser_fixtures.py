"""Fixtures for the browser tests (conftest.py imports them, so every test module can use them).

Where the CPU of a browser test goes (measured, issue 15 point 6): a fresh `streamlit run`
spends about 6 CPU-s starting and importing the dashboard for its first page, a fresh Chromium
about 1 CPU-s starting, and each new browser context about 4 CPU-s loading Streamlit's page.
So one Chromium serves each test module; each test still opens a fresh context in it (no
cookies or storage carry over) and starts its own dashboard on its own database. Not one for
the whole pytest process: Playwright's sync API keeps an asyncio loop running in the test
thread while it is open, and later tests that start a durable-jobs queue (DBOS refuses to
register one under a running loop) would then fail in their setup.
"""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from tests.browser_helpers import CHROMIUM, CHROMIUM_ARGS
from tests.standin import StandinServer


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """One headless Chromium per test module (see above); tests open their own contexts in it."""
    sync_api = pytest.importorskip("playwright.sync_api",
                                   reason="the playwright package is not installed")
    with sync_api.sync_playwright() as pw:
        chromium = pw.chromium.launch(executable_path=CHROMIUM, args=CHROMIUM_ARGS)
        try:
            yield chromium
        finally:
            chromium.close()


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
