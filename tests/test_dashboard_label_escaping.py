"""Text that is not ours (questions, titles) is escaped wherever Streamlit reads Markdown:
alerts, page links, radio options. Checked by parsing what the page sends with a CommonMark parser."""

from __future__ import annotations

import pytest
from markdown_it import MarkdownIt
from streamlit.testing.v1 import AppTest

from dashboard.views import md_label
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, finished_run, open_page  # noqa: F401 - fixture

pytestmark = pytest.mark.usefixtures("dash_env")

HOSTILE = ("How fast is solar power growing ![pixel](https://evil.example/p.png) "
           "[click me](https://evil.example/phish) **now** :red[alarm] $x^2$ <b>bold</b>?")
_MD = MarkdownIt("commonmark", {"html": True}).enable("strikethrough")


def live_markup(text: str) -> list[str]:
    """Links, images, emphasis and HTML a Markdown renderer would make of `text`."""
    found = []
    for block in _MD.parse(text):
        for token in block.children or []:
            if token.type in ("link_open", "image", "strong_open", "em_open", "html_inline"):
                found.append(token.type)
    return found + ([":red["] if ":red[" in text else [])


def test_the_helper_makes_hostile_text_inert() -> None:
    assert live_markup(HOSTILE)  # live before
    assert live_markup(md_label(HOSTILE, 500)) == []
    assert "$" not in md_label(HOSTILE, 500).replace("\\$", "")


def test_library_delete_warning_shows_the_question_as_text(dash_env: Store) -> None:
    run_id = finished_run(dash_env, HOSTILE)
    at = open_page("app_pages/library.py").run()
    at.selectbox(key="lib_selected").select(run_id).run()
    next(b for b in at.button if b.label == "Delete").click().run()
    warning = next(w.value for w in at.warning if "Delete" in w.value)
    assert "solar power" in warning and live_markup(warning) == []


def test_new_research_similar_run_link_and_options_are_text(dash_env: Store) -> None:
    run_id = finished_run(dash_env, HOSTILE)
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_area(key="question").input("How fast is solar power growing in Europe?").run()
    assert not at.exception
    links = [str(p.proto.label) for p in at.get("page_link") if "similar" in str(p.proto.label)]
    assert links and all(live_markup(label) == [] for label in links)
    radio = at.radio(key="build_on")
    labels = list(radio.options)  # as the page formatted them
    assert any("solar power" in label for label in labels)
    assert all(live_markup(label) == [] for label in labels)
    assert run_id


def test_run_page_links_to_runs_show_questions_as_text(dash_env: Store) -> None:
    finished_run(dash_env, HOSTILE)
    at = open_page("app_pages/run.py").run()
    labels = [str(p.proto.label) for p in at.get("page_link") if "solar" in str(p.proto.label)]
    assert labels and all(live_markup(label) == [] for label in labels)
