"""SearXNG, Brave Search, Exa and Serper on the dashboard (issue 37.2): Settings lists their keys
(and SearXNG's address) with a test button each; the New research form offers them once they can
work."""

from __future__ import annotations

import tomllib
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import readiness, search_services
from dashboard.connection import check_search
from research.core.config import SEARCH_PROVIDERS
from research.export.method import PROVIDER_NAMES
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture, open_page  # noqa: F401 - fixture
from tests.standin import StandinServer
from tests.standin.search_services import env as services_env

pytestmark = pytest.mark.usefixtures("dash_env")
BUILT_IN = ["tavily", "web", "arxiv", "semanticscholar"]


def _form(monkeypatch: pytest.MonkeyPatch, **env: str) -> AppTest:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-openai-0123456789abcdef")
    for name, value in env.items():
        monkeypatch.setenv(name, value)
    return AppTest.from_file(APP, default_timeout=30).run()


def _offered(at: AppTest) -> list[str]:
    """The services the form offers, by name (its options show their labels)."""
    names = {PROVIDER_NAMES[n]: n for n in SEARCH_PROVIDERS}
    return [names[label.split(" (needs")[0]] for label in at.multiselect(key="search").options]


def test_the_form_offers_a_new_service_only_once_it_can_work(
        monkeypatch: pytest.MonkeyPatch) -> None:
    at = _form(monkeypatch)
    assert not at.exception
    assert _offered(at) == BUILT_IN
    at = _form(monkeypatch, BRAVE_API_KEY="BSA0123456789abcdef",
               SEARXNG_BASE_URL="http://localhost:8888")
    assert _offered(at) == [*BUILT_IN, "searxng", "brave"]


def test_a_service_chosen_in_settings_stays_on_the_form_with_what_it_needs(
        monkeypatch: pytest.MonkeyPatch) -> None:
    at = _form(monkeypatch, DEEP_RESEARCH_SEARCH="web,exa")
    assert "exa" in _offered(at) and "exa" in at.multiselect(key="search").value  # never hidden
    assert readiness.search_label("exa", {}) == "Exa (needs a key)"
    assert readiness.search_label("searxng", {}) == "SearXNG (needs its address)"


def test_settings_lists_the_new_keys_and_a_test_button_for_each_service(
        monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("EXA_API_KEY", "exa-0123456789abcdef0123")
    at = open_page("app_pages/settings.py").run()
    assert not at.exception
    markdown = "\n".join(m.value for m in at.markdown)
    for label in ("**Brave Search**", "**Exa search**", "**Serper search (Google results)**"):
        assert label in markdown
    buttons = {b.key: b for b in at.button}
    for name in search_services.OPTIONAL:
        assert f"test_search_{name}" in buttons
    assert buttons["test_search_brave"].disabled and not buttons["test_search_exa"].disabled
    assert buttons["test_search_searxng"].disabled  # no address yet


def test_testing_searxng_from_settings_searches_the_instance(
        monkeypatch: pytest.MonkeyPatch, standin: StandinServer, standin_env: dict[str, str]) -> None:
    # A SearXNG on this computer, with private hosts not allowed for pages: it still works.
    monkeypatch.setenv("SEARXNG_BASE_URL", services_env(standin.base_url)["SEARXNG_BASE_URL"])
    at = open_page("app_pages/settings.py").run()
    next(b for b in at.button if b.key == "test_search_searxng").click().run()
    assert not at.exception
    assert any("searxng works" in s.value for s in at.success), [e.value for e in at.error]
    assert standin.count("searxng") == 1


@pytest.mark.parametrize("name", ["brave", "exa", "serper"])
def test_the_connection_check_says_in_plain_words_when_a_key_is_refused(
        name: str, standin: StandinServer, standin_env: dict[str, str]) -> None:
    env = {**standin_env, **services_env(standin.base_url), f"{name.upper()}_API_KEY": "wrong" * 5}
    ok, message = check_search(name, env)
    assert not ok and f"{name.upper()}_API_KEY" in message and "wrong" * 5 not in message
    ok, message = check_search(name, {**standin_env, **services_env(standin.base_url)})
    assert ok, message


def test_saving_an_address_that_is_never_a_search_service_is_refused(tmp_path: Path) -> None:
    at = open_page("app_pages/settings.py").run()
    field = next(t for t in at.text_input if "SearXNG" in t.label)
    field.input("http://169.254.169.254:8888")
    next(b for b in at.button if b.label == "Save models and search").click().run()
    assert any("cloud metadata" in e.value for e in at.error)
    secrets = tmp_path / "secrets.toml"
    assert not secrets.exists() or "SEARXNG_BASE_URL" not in tomllib.loads(secrets.read_text())
    field = next(t for t in at.text_input if "SearXNG" in t.label)
    field.input("http://localhost:8888")
    next(b for b in at.button if b.label == "Save models and search").click().run()
    assert tomllib.loads(secrets.read_text())["SEARXNG_BASE_URL"] == "http://localhost:8888"


def test_a_stored_run_of_a_new_service_fills_the_form_again(dash_env: Store) -> None:
    from dashboard import form
    from research.core.config import build_config

    config = build_config(env={"SEARXNG_BASE_URL": "http://localhost:8888"},
                          search_providers=("searxng", "serper"), INCLUDE_ACADEMIC_SOURCES=False)
    assert form.run_form_values(config.model_dump(mode="json"))["search"] == ["searxng", "serper"]
