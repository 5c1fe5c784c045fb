"""New research page: the estimate's time under the account's known limits (issue 31)."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

import research.estimate as estimate_module
from research.llm.limits import Account, AccountLimits
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixtures

pytestmark = pytest.mark.usefixtures("dash_env")


def _time_and_captions() -> tuple[str, list[str]]:
    at = AppTest.from_file(APP, default_timeout=30).run()
    time = next(m.value for m in at.metric if m.label == "Time")
    return time, [c.value for c in at.caption]


def test_without_known_limits_the_estimate_says_nothing_about_them(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    time, captions = _time_and_captions()
    assert time.startswith("~")
    assert not any("limit" in c or "slow this run" in c for c in captions)


def test_a_tier_one_key_shows_the_time_its_token_limit_allows_and_names_that_limit(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    unpaced, _ = _time_and_captions()
    asked: list[Account] = []

    def tier_one(account: Account, books: object = None) -> AccountLimits:
        assert isinstance(books, Store)  # what earlier runs and other processes learned
        asked.append(account)
        return AccountLimits(requests_per_minute=500, tokens_per_minute=30_000)

    monkeypatch.setattr(estimate_module, "known_limits", tier_one)
    time, captions = _time_and_captions()
    assert time != unpaced  # the paced time, longer than the run would take unhindered
    line = next(c for c in captions if "tokens a minute" in c)
    assert "with your account's limit of 30,000 tokens a minute" in line and "About " in line
    assert asked and all(a.provider == "openai" and a.key_hash for a in asked)
