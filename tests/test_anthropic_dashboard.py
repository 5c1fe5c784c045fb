"""Claude on the dashboard: its key and connection test in Settings, its models on the New
research form (with a priced estimate), over the stand-in's Messages API."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, open_page  # noqa: F401 - fixture
from tests.standin import ANTHROPIC_KEY, StandinServer

pytestmark = pytest.mark.usefixtures("dash_env")


@pytest.fixture
def claude_only(standin: StandinServer, monkeypatch: pytest.MonkeyPatch) -> StandinServer:
    """Anthropic's key and address (the stand-in's), and no other model provider's."""
    standin.reset()
    monkeypatch.setenv("ANTHROPIC_API_KEY", ANTHROPIC_KEY)
    monkeypatch.setenv("ANTHROPIC_BASE_URL", standin.base_url)
    return standin


def test_settings_shows_the_key_masked_and_its_connection_test_works(
        dash_env: Store, claude_only: StandinServer) -> None:
    at = open_page("app_pages/settings.py").run()
    assert any(t.key == "key_ANTHROPIC_API_KEY" for t in at.text_input)
    shown = "\n".join(m.value for m in at.markdown)
    assert "**Anthropic (Claude)** · " in shown and ANTHROPIC_KEY not in shown
    test = next(b for b in at.button if b.key == "test_llm_anthropic")
    assert not test.disabled
    test.click().run()
    assert any("anthropic/claude-haiku-4-5 answered" in s.value for s in at.success)
    assert claude_only.count("anthropic") == 1


def test_the_form_offers_claude_when_its_key_is_the_only_one(
        dash_env: Store, claude_only: StandinServer) -> None:
    at = AppTest.from_file(APP, default_timeout=30).run()
    provider = at.selectbox(key="provider")
    assert provider.value == "anthropic" and "Anthropic Claude" in provider.options
    assert at.text_input(key="model").value == "claude-haiku-4-5"
    assert "claude-sonnet-5-5" in (at.text_input(key="model").help or "")
    assert not any("No model provider is set up" in e.value for e in at.error)
    costs = [m.value for m in at.metric if m.label == "Cost"]
    assert costs and costs[0] not in ("", "$0.00")  # priced from the price table
    at.selectbox(key="role_provider_writer").select("anthropic")
    at.text_input(key="role_model_writer").input("claude-sonnet-5-5").run()
    assert not at.exception
