"""Only chosen providers speak (issue 9.6): the New research form shows every search provider
the run will use, academic ones included, and a provider the person did not choose is never
reported as degraded."""

from __future__ import annotations

from pathlib import Path

from streamlit.testing.v1 import AppTest

from dashboard import form
from research import Credentials, build_config, run_research
from research.core.config import ACADEMIC_PROVIDERS
from storage import Store
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixture
from tests.standin import StandinServer


def test_the_form_starts_with_every_provider_a_default_run_searches(dash_env: Store) -> None:
    at = AppTest.from_file(APP, default_timeout=30).run()
    shown = at.multiselect(key="search").value
    default_run = build_config(env={}).active_search_providers()
    assert set(default_run) <= set(shown)  # academic ones included, nothing hidden
    assert set(ACADEMIC_PROVIDERS) <= set(shown)


def test_the_form_searches_exactly_the_providers_it_shows() -> None:
    def active(search: list[str]) -> tuple[str, ...]:
        return form.build_form_config(
            {}, preset="quick", constants={}, provider="openai", model="", role_models={},
            search=search).active_search_providers()

    assert active(["web"]) == ("web",)  # academic sources were added unseen before
    assert active(["web", "arxiv"]) == ("web", "arxiv")
    assert set(active(["web", *ACADEMIC_PROVIDERS])) == {"web", *ACADEMIC_PROVIDERS}


def test_run_again_shows_the_providers_that_run_actually_searched() -> None:
    config = build_config(env={}, search_providers=("web",)).model_dump(mode="json")
    assert form.run_form_values(config)["search"] == ["web", *ACADEMIC_PROVIDERS]
    off = build_config(env={}, search_providers=("web",), INCLUDE_ACADEMIC_SOURCES=False)
    assert form.run_form_values(off.model_dump(mode="json"))["search"] == ["web"]


def test_a_provider_not_chosen_is_never_reported_as_degraded(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    # Only "tavily" was chosen; the academic providers were added by the default and are down.
    for api in ACADEMIC_PROVIDERS:
        standin.add_fault(api, "status", times=10_000, status=503)
    env = {**standin_env, "DEEP_RESEARCH_SEARCH": "tavily"}
    store = Store(tmp_db)
    config = build_config(env=env, preset="quick", fetch_timeout_s=3, max_retries=0)
    assert set(ACADEMIC_PROVIDERS) <= set(config.active_search_providers())
    run_id = run_research("How is heat pump adoption changing in Europe?", store=store,
                          config=config, credentials=Credentials.from_env(env))
    run = store.get_run(run_id) or {}
    assert run.status == "completed", run.error
    report = store.get_report(run_id).markdown  # type: ignore[union-attr]
    assert "Search degraded" not in report
    assert not any(name in report for name in ("arxiv was not", "semanticscholar was not"))
