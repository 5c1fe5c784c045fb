"""The Streamlit behaviour `dashboard.ui.require_navigation` works around, pinned down.

Streamlit 1.67 runs an app that has a `pages/` folder beside its entry script in the legacy
pages-folder mode until some session has called `st.navigation`; a first visit to a deep link
then runs the page script on its own, without the entry script (streamlit/streamlit#10276).
AppTest starts every run in that fresh-server state, so a tiny app in tmp_path shows it.
If one of the first two tests fails, Streamlit changed: read `require_navigation`'s docstring,
and drop the workaround if deep links now run the entry script by themselves.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from streamlit.runtime.pages_manager import PagesManager
from streamlit.testing.v1 import AppTest

from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, finished_run  # noqa: F401 - fixture

FRAME = "drawn by the entry script"
ENTRY = f"""
import streamlit as st
st.sidebar.caption({FRAME!r})
page = st.navigation([st.Page("pages/home.py", default=True),
                      st.Page("pages/other.py", url_path="other")])
page.run()
"""


@pytest.fixture
def tiny_app(tmp_path: Path) -> str:
    """An entry script with `st.navigation` and its two page scripts in `pages/`."""
    (tmp_path / "pages").mkdir()
    (tmp_path / "pages" / "home.py").write_text("import streamlit as st\nst.write('home page')\n")
    (tmp_path / "pages" / "other.py").write_text("import streamlit as st\nst.write('other page')\n")
    (tmp_path / "app.py").write_text(ENTRY)
    return str(tmp_path / "app.py")


def _texts(at: AppTest) -> list[str]:
    return [str(m.value) for m in at.markdown]


def _frame_drawn(at: AppTest) -> bool:
    return any(c.value == FRAME for c in at.sidebar.caption)


def test_a_pages_folder_beside_the_entry_script_starts_a_server_in_the_legacy_mode(
    tiny_app: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(PagesManager, "uses_pages_directory", None)  # a fresh server
    PagesManager(tiny_app)
    assert PagesManager.uses_pages_directory is True, (
        "Streamlit no longer starts in the pages-folder mode when pages/ sits beside the entry "
        "script: dashboard.ui.require_navigation may be unneeded now")


def test_the_first_deep_link_of_a_fresh_server_skips_the_entry_script(tiny_app: str) -> None:
    at = AppTest.from_file(tiny_app, default_timeout=30).run()
    assert "home page" in _texts(at) and _frame_drawn(at)
    at.switch_page("pages/other.py").run()  # AppTest resets to the fresh-server state each run
    assert "other page" in _texts(at)
    assert not _frame_drawn(at), (
        "Streamlit now runs the entry script for a fresh server's first deep link into pages/: "
        "drop dashboard.ui.require_navigation and its calls in pages/*.py")


def test_st_navigation_ends_the_legacy_mode_for_every_session(tiny_app: str) -> None:
    AppTest.from_file(tiny_app, default_timeout=30).run()
    assert PagesManager.uses_pages_directory is False


@pytest.mark.parametrize("page", ["pages/library.py", "pages/run.py", "pages/settings.py",
                                  "pages/documents.py", "pages/new_research.py"])
def test_a_deep_link_on_a_fresh_server_runs_the_page_inside_app_py(dash_env: Store, page: str) -> None:
    run_id = finished_run(dash_env, "How fast is solar power growing?")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.switch_page(page)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert any("ask a question, get a cited report" in c.value for c in at.sidebar.caption), \
        f"{page} ran without app.py's layout"
    assert PagesManager.uses_pages_directory is False
