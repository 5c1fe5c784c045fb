"""The Streamlit side of the dashboard: cached store and door to runs, shared page helpers.

This module, `notify`, `documents_view`, `steer_view`, `dig_deeper_view` and the Run page's
parts (`run_header`, `run_live`, `run_waiting`, `run_tabs`, `run_report`) are the modules in
`dashboard/` that import Streamlit; the rest are pure functions. Background threads never
touch anything here.
"""

from __future__ import annotations

import runpy
from pathlib import Path

import streamlit as st

from dashboard import auth
from dashboard.settings_files import current_env
from research.config import Credentials
from research.errors import ConfigError
from research.llm.pricing import PriceTable
from research.runs import Runs
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
def _jobs(path: str) -> Runs:
    """The process's one door to runs (research/runs/): its embedded worker executes the
    runs this dashboard starts, with the keys of this dashboard's settings."""
    return Runs(path, env=current_env, store=_store(path))


def store() -> Store:
    return _store(db_target())


def jobs() -> Runs:
    runs = _jobs(db_target())
    runs.sweep()  # throttled: marks runs of a dead terminal (`python -m research`) as interrupted
    return runs


def credentials() -> Credentials:
    return Credentials.from_env(env())


def prices() -> PriceTable:
    """The price table; a broken prices file is reported once and the defaults are used."""
    try:
        return PriceTable.load(prices_path(env()))
    except ConfigError as exc:
        st.warning(f"{exc} Cost figures use the built-in prices.")
        return PriceTable()


def viewer() -> str | None:
    """Whose runs this session sees and starts: the signed-in person, or None without sign-in
    (one person: every run). Every store read of runs on a page passes it as `person=`."""
    return auth.viewer()


def open_run(run_id: str) -> None:
    st.switch_page(PAGES["run"], query_params={"run": run_id})


def require_navigation() -> None:
    """Run a page under app.py's `st.navigation`, also on a fresh server's first deep link.

    The design keeps the page scripts in `pages/`, and Streamlit 1.67 has no documented way to
    say "this app uses `st.navigation`" before app.py has run once: until some session has
    called `st.navigation` (documented: from then on the `pages/` folder is ignored in every
    session), a first visit to `/run?run=...` runs `pages/run.py` on its own in the legacy
    pages-folder mode and skips app.py (layout, navigation, the database check). Upstream:
    streamlit/streamlit#10276 (review: "a `pages` folder + MPAv2 ... directly access an URL
    path ... Sometimes it completely switch[es] back to MPAv1"). So in that mode, and only
    then, app.py runs here in this same script run (a button press that led here is not lost);
    its `st.navigation` ends the mode for good and runs this page; the stray run stops.
    Under app.py the flag is already False, and a page run on its own (as tests do) has no
    `pages/` folder beside it. tests/test_streamlit_pages_mode.py fails loudly when Streamlit
    changes this; then drop this function and its calls.
    """
    from streamlit.runtime.pages_manager import PagesManager  # private: the one place we read it

    if PagesManager.uses_pages_directory:
        runpy.run_path(str(APP_FILE), run_name="__main__")
        st.stop()
