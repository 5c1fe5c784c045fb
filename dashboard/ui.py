"""The Streamlit side of the dashboard: cached store and job manager, shared page helpers.

This, `run_report` and `run_tabs` (the Run page's parts) are the modules in `dashboard/` that
import Streamlit; the rest are pure functions. Background threads never touch anything here.
"""

from __future__ import annotations

import runpy
import threading
from pathlib import Path
from typing import Any

import streamlit as st

from dashboard.jobs import JobManager
from dashboard.settings_files import current_env
from research.config import Credentials
from research.errors import ConfigError
from research.llm.pricing import PriceTable
from research.settings import prices_path
from storage import Store, default_db, default_db_path

APP_FILE = Path(__file__).resolve().parent.parent / "app.py"
PAGES = {
    "new": "pages/new_research.py",
    "run": "pages/run.py",
    "library": "pages/library.py",
    "documents": "pages/documents.py",
    "settings": "pages/settings.py",
}


def env() -> dict[str, str]:
    """Effective settings (secrets file, overridden by the environment), read fresh each time."""
    return current_env()


def db_path() -> Path:
    """The database file (with a PostgreSQL store: data/research.db, whose folder keeps the
    dashboard's own files); DatabaseValueError (plain words) when DEEP_RESEARCH_DB cannot work."""
    return default_db_path(env())


def db_target() -> str:
    """What the Store opens: the database file, or the postgresql:// URL."""
    return str(default_db(env()))


@st.cache_resource(show_spinner=False)
def _store(path: str) -> Store:
    # One Store object is safe to share between threads (it pools its connections).
    return Store(path)


@st.cache_resource(show_spinner=False)
def _jobs(path: str) -> JobManager:
    return JobManager(path)


def store() -> Store:
    return _store(db_target())


def jobs() -> JobManager:
    manager = _jobs(db_target())
    manager.sweep()  # throttled: marks runs of a dead server as interrupted
    return manager


def credentials() -> Credentials:
    return Credentials.from_env(env())


def prices() -> PriceTable:
    """The price table; a broken prices file is reported once and the defaults are used."""
    try:
        return PriceTable.load(prices_path(env()))
    except ConfigError as exc:
        st.warning(f"{exc} Cost figures use the built-in prices.")
        return PriceTable()


def open_run(run_id: str) -> None:
    st.switch_page(PAGES["run"], query_params={"run": run_id})



_navigation = threading.local()


def run_page(page: Any) -> None:
    """Run the page app.py's `st.navigation` chose, marked as run through the app."""
    _navigation.active = True
    try:
        page.run()
    finally:
        _navigation.active = False


def require_navigation() -> None:
    """Run a page only under app.py's `st.navigation`.

    The page files live in `pages/`, so on the first visit to a deep link after the server
    starts (a shared or bookmarked `/run?run=...`), Streamlit runs the page on its own in its
    old pages-folder mode and skips app.py (layout, navigation, the database check).
    Then app.py runs here instead, in this same script run (so a button press that led
    here is not lost), and its `st.navigation` switches that mode off for good; the stray
    run of the page stops. (A page run on its own on purpose, as tests do, is not in that
    mode and runs as is.)
    """
    from streamlit.runtime.pages_manager import PagesManager

    if PagesManager.uses_pages_directory and not getattr(_navigation, "active", False):
        PagesManager.uses_pages_directory = False
        runpy.run_path(str(APP_FILE), run_name="__main__")
        st.stop()
