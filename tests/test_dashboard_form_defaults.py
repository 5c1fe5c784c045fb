"""New research: the form's starting values are filled in key by key, never over a value the
session already has (a first run cut short leaves some widgets with a value and some without)."""

from __future__ import annotations

from streamlit.testing.v1 import AppTest

from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixture

TYPED = "How fast is offshore wind power growing in the North Sea?"
FILLED = ("preset", "provider", "model", "engine", "schedule", "source_mix", "search",
          "max_tokens", "max_sources", "language_choice", "c_SUBTOPIC_COUNT", "c_REVIEW_CYCLES",
          "role_provider_writer", "build_on")


def test_a_session_that_has_some_values_keeps_them_and_gets_the_rest(dash_env: Store) -> None:
    fresh = AppTest.from_file(APP, default_timeout=30).run()
    at = AppTest.from_file(APP, default_timeout=30)
    at.session_state["question"] = TYPED
    at.session_state["max_cost_usd"] = 7.5
    at.run()
    assert not at.exception, [e.value for e in at.exception]
    assert at.text_area(key="question").value == TYPED
    assert at.number_input(key="max_cost_usd").value == 7.5
    assert fresh.number_input(key="max_cost_usd").value != 7.5
    for key in FILLED:
        assert key in at.session_state, key
        assert at.session_state[key] == fresh.session_state[key], key
