"""Deep links run inside app.py: the page scripts are not in a folder called `pages`.

A `pages/` folder beside the entry script is Streamlit's legacy multipage mode: on a fresh
server the first deep link (`/run?run=...`) runs the page script on its own, without the entry
script's navigation, sidebar and database check (streamlit/streamlit#10276). So the dashboard's
pages live in `app_pages/` (dashboard/ui.py, `PAGES`). AppTest starts every script run as a fresh
server does, and a first run after `switch_page` is a deep link; the browser's version of these
checks, on a real `streamlit run` server, is tests/test_browser_deep_links.py.
"""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import ui
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, finished_run, open_page  # noqa: F401 - fixture

DROP_STALE = Path(APP).parent / "scripts" / "drop-stale-pages.sh"
FRAME = "drawn by the entry script"
APP_CAPTION = "Deep Research Studio: ask a question, get a cited report."
# Each page of the dashboard, by its url path, and the title it shows for a finished run.
TITLES = {"": "New research", "run": "Research run", "library": "Library",
          "documents": "Documents", "settings": "Settings"}


def _tiny_app(root: Path, folder: str) -> str:
    """An entry script with `st.navigation` whose two page scripts sit in `folder`."""
    (root / folder).mkdir()
    (root / folder / "home.py").write_text("import streamlit as st\nst.write('home page')\n")
    (root / folder / "other.py").write_text("import streamlit as st\nst.write('other page')\n")
    (root / "app.py").write_text(f"""
import streamlit as st
st.sidebar.caption({FRAME!r})
page = st.navigation([st.Page({folder + '/home.py'!r}, default=True),
                      st.Page({folder + '/other.py'!r}, url_path="other")])
page.run()
""")
    return str(root / "app.py")


def _first_deep_link(app: str, page: str) -> AppTest:
    """A fresh server whose first script run asks for `page` by its url path."""
    return AppTest.from_file(app, default_timeout=30).switch_page(page).run()


def _texts(at: AppTest) -> list[str]:
    return [str(m.value) for m in at.markdown]


def _frame_drawn(at: AppTest) -> bool:
    return any(c.value == FRAME for c in at.sidebar.caption)


def test_no_folder_called_pages_sits_beside_app_py() -> None:
    # A `pages/` left behind (one holding only __pycache__ after a `git pull` of the rename
    # counts too: Streamlit checks that the folder exists) puts the server in the legacy mode.
    beside = [p.name for p in Path(APP).parent.iterdir() if p.is_dir() and p.name.lower() == "pages"]
    assert not beside, (f"{beside[0]}/ beside app.py puts Streamlit in its legacy pages-folder "
                        "mode; the page scripts live in app_pages/: remove it (scripts/setup.sh "
                        "removes one holding only bytecode)")
    folders = {Path(path).parent.name for path in ui.PAGES.values()}
    assert "pages" not in {name.lower() for name in folders}
    for path in ui.PAGES.values():
        assert (Path(APP).parent / path).is_file(), path


def test_a_first_deep_link_runs_the_entry_script_when_the_pages_folder_has_another_name(
    tmp_path: Path,
) -> None:
    at = _first_deep_link(_tiny_app(tmp_path, "app_pages"), "app_pages/other.py")
    assert not at.exception, [e.value for e in at.exception]
    assert "other page" in _texts(at)
    assert _frame_drawn(at), "the deep link ran the page without the entry script"


def test_a_first_deep_link_skips_the_entry_script_when_the_folder_is_called_pages(
    tmp_path: Path,
) -> None:
    """The reason for the folder's name. Should this fail, Streamlit has dropped the legacy
    mode's hold on a fresh server, and the name no longer matters (the test above still does)."""
    at = _first_deep_link(_tiny_app(tmp_path, "pages"), "pages/other.py")
    assert "other page" in _texts(at)
    assert not _frame_drawn(at)


@pytest.mark.parametrize("url_path", [p for p in TITLES if p])
def test_a_first_deep_link_opens_the_dashboards_page_inside_app_py(
    dash_env: Store, url_path: str
) -> None:
    page = next(path for path in ui.PAGES.values() if Path(path).stem == url_path)
    run_id = finished_run(dash_env, "How fast is solar power growing?")
    at = open_page(page)
    at.query_params["run"] = run_id
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title][:1] == [TITLES[url_path]], f"{page} did not open"
    assert any(c.value == APP_CAPTION for c in at.sidebar.caption), \
        f"{page} ran without app.py's sidebar"


def test_the_address_without_a_path_opens_new_research_inside_app_py(dash_env: Store) -> None:
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception, [e.value for e in at.exception]
    assert [t.value for t in at.title][:1] == [TITLES[""]]
    assert any(c.value == APP_CAPTION for c in at.sidebar.caption)


def _drop_stale_pages(root: Path) -> subprocess.CompletedProcess[str]:
    return subprocess.run([str(DROP_STALE)], cwd=root, capture_output=True, text=True, check=True,
                          timeout=60)


def test_setup_removes_a_pages_folder_that_a_pull_left_with_only_bytecode(tmp_path: Path) -> None:
    (tmp_path / "pages" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pages" / "__pycache__" / "run.cpython-311.pyc").write_bytes(b"\x00")
    (tmp_path / "app_pages").mkdir()
    (tmp_path / "app_pages" / "run.py").write_text("")
    _drop_stale_pages(tmp_path)
    assert not (tmp_path / "pages").exists()
    assert (tmp_path / "app_pages" / "run.py").exists()


def test_setup_keeps_a_pages_folder_with_scripts_in_it_and_says_what_it_does(tmp_path: Path) -> None:
    (tmp_path / "pages" / "__pycache__").mkdir(parents=True)
    (tmp_path / "pages" / "mine.py").write_text("import streamlit as st\n")
    done = _drop_stale_pages(tmp_path)
    assert (tmp_path / "pages" / "mine.py").exists()
    assert "app_pages/" in done.stderr
