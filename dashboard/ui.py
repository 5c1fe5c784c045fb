"""The Streamlit side of the dashboard: cached store and door to runs, shared page helpers.

This module, `notify`, `documents_view`, `steer_view`, `dig_deeper_view` and the Run page's
parts (`run_header`, `run_live`, `run_waiting`, `run_tabs`, `run_report`) are the modules in
`dashboard/` that import Streamlit; the rest are pure functions. Background threads never
touch anything here.
"""

from __future__ import annotations

from pathlib import Path

import streamlit as st

from dashboard import auth
from dashboard.settings_files import current_env
from research.core.config import Credentials
from research.core.errors import ConfigError
from research.core.settings import prices_path
from research.llm.pricing import PriceTable
from research.runs import Runs
from research.voice import plain_error
from storage import DatabaseUnavailableError, Store, default_db, default_db_path

# The page scripts, relative to app.py. Their folder is not called `pages`: a `pages/` folder
# beside the entry script is Streamlit's legacy multipage mode
# (https://docs.streamlit.io/develop/concepts/multipage-apps/pages-directory), in which a fresh
# server's first deep link (`/run?run=...`) runs the page on its own, without app.py's
# navigation, layout and database check (streamlit/streamlit#10276).
# tests/test_streamlit_pages_mode.py checks that deep links run inside app.py.
PAGES = {
    "new": "app_pages/new_research.py",
    "run": "app_pages/run.py",
    "library": "app_pages/library.py",
    "documents": "app_pages/documents.py",
    "settings": "app_pages/settings.py",
}


# A link to a run shows its whole question (up to views.md_label's cut), wrapped onto more
# lines where the screen is narrow: Streamlit keeps a page link on one line and clips it, so
# on a phone the Library read "How do air source heat pumps perform in very cold cl". Our own
# style (no text from a run in it), for the page's main area (not the sidebar's navigation).
WRAP_LINKS = ('<style>[data-testid="stMain"] [data-testid="stPageLink-NavLink"] p '
              '{white-space: normal; overflow-wrap: anywhere;}</style>')


def env() -> dict[str, str]:
    """Effective settings (secrets file, overridden by the environment), read fresh each time."""
    return current_env()


def db_path() -> Path:
    """The database file (with a PostgreSQL store: data/research.db, whose folder keeps the
    dashboard's own files); DatabaseValueError (plain words) when DEEP_RESEARCH_DB cannot work."""
    return default_db_path(env())


def open_failure(exc: Exception) -> str:
    """Why the store could not be opened, in plain words: the store's own message when it has
    one (a PostgreSQL server that cannot be reached, its URL without the password), else the
    database's reason ("file is not a database") without the library's wrapping (its
    exception class, its help link)."""
    if isinstance(exc, DatabaseUnavailableError):
        return str(exc)
    reason = str(getattr(exc, "orig", None) or exc).strip().splitlines()
    said = plain_error(reason[0]).rstrip(".") if reason else "an unknown problem"
    return (f"The research database at {db_path()} could not be opened: {said}. Check that "
            "the folder exists and is writable, or point DEEP_RESEARCH_DB at another file.")


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
