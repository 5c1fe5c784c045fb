"""Deep Research Studio in the browser: `streamlit run app.py`.

The pages live in `app_pages/` and stay thin; the logic they call is in `dashboard/` and the
engine in `research/`. Runs execute as durable jobs on the worker that the door to runs
embeds (`research.runs.Runs`, held once per process by `dashboard.ui`), so they go on when the
tab is closed and carry on after a crash or restart.
"""

from __future__ import annotations

import streamlit as st

from dashboard import auth, notify, ui
from storage import DatabaseValueError

# An emoji favicon is sent as a data: URL; a ":material/..." one makes every browser tab fetch
# it from fonts.gstatic.com, a request to another host.
st.set_page_config(page_title="Deep Research Studio", page_icon="🔎", layout="wide")

URL_PATHS = ("run", "library", "documents", "settings")  # the pages' addresses, as below

if auth.needs_sign_in():  # a team's dashboard ([auth] in secrets.toml): every address asks first
    st.navigation([st.Page(auth.sign_in_page, title="Sign in", default=True),
                   *(st.Page(auth.sign_in_page, title="Sign in", url_path=path)
                     for path in URL_PATHS)], position="hidden").run()
    st.stop()

pages = [
    st.Page(ui.PAGES["new"], title="New research", icon=":material/edit_note:",
            default=True),
    st.Page(ui.PAGES["run"], title="Run", icon=":material/monitoring:", url_path="run"),
    st.Page(ui.PAGES["library"], title="Library", icon=":material/library_books:",
            url_path="library"),
    st.Page(ui.PAGES["documents"], title="Documents", icon=":material/folder_open:",
            url_path="documents"),
    st.Page(ui.PAGES["settings"], title="Settings", icon=":material/settings:",
            url_path="settings"),
]
page = st.navigation(pages)

try:
    ui.db_path()
except DatabaseValueError as exc:  # refused before anything is created or opened
    st.error(str(exc))
    st.stop()
try:
    ui.store()
    ui.jobs()  # started early: its worker picks up the runs a stopped server left unfinished
except Exception as exc:  # noqa: BLE001 - shown in plain words instead of a traceback
    st.error(ui.open_failure(exc))
    st.stop()

with st.sidebar:
    st.caption("Deep Research Studio: ask a question, get a cited report.")
    auth.account_sidebar()
    # Toasts and the tab title say when a run finishes, fails or waits, on every page.
    st.fragment(run_every=notify.WATCH_EVERY_S)(notify.watch)()

st.html(ui.WRAP_LINKS)  # links to runs wrap on a phone instead of being clipped
page.run()
