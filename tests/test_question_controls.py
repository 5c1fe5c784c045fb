"""Control characters in a question are refused with a message naming them, never dropped
silently (issue 40, point 5): "grid\\x00storage" must not become "gridstorage"."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from research import validate_question
from research.core.config import ResearchConfig
from research.core.errors import ConfigError
from research.pipeline import create_run
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixtures


@pytest.mark.parametrize(("question", "named"), [
    ("grid\x00storage", "U+0000"),
    ("grid\x07storage", "U+0007"),
    ("grid\x1bstorage", "U+001B"),
    ("grid\x85storage", "U+0085"),
    ("grid\u202estorage", "U+202E"),
    ("grid\u200bstorage", "U+200B"),
])
def test_a_question_with_a_control_character_is_refused_naming_it(question: str, named: str) -> None:
    with pytest.raises(ConfigError) as caught:
        validate_question(question)
    message = str(caught.value)
    assert named in message
    assert question not in message  # the character itself never reaches the message


def test_line_breaks_tabs_and_joiners_that_shape_text_are_kept_as_typed() -> None:
    question = "How do grids store power?\n\tCompare:\r\nlithium vs pumped hydro 👩\u200d💻 می\u200cخواهم"
    assert validate_question(question) == question


def test_a_refused_question_creates_no_run(tmp_path) -> None:  # type: ignore[no-untyped-def]
    store = Store(tmp_path / "runs.db")
    with pytest.raises(ConfigError, match="U\\+0000"):
        create_run(store, "grid\x00storage", ResearchConfig())
    assert store.count_runs() == 0


def test_the_new_research_page_names_the_character_and_starts_nothing(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_area(key="question").input("grid\x00storage").run()
    next(b for b in at.button if b.label == "Start research").click().run()
    assert any("U+0000" in e.value for e in at.error)
    assert dash_env.count_runs() == 0
