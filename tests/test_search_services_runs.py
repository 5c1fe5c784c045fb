"""A complete research run per new search service (SearXNG, Brave Search, Exa, Serper), over
real HTTP to the stand-in, at the smallest configuration; and a run with all four, whose
sources are de-duplicated across services by canonical URL (issue 37.2 and 37.5)."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from research import Credentials, build_config, run_research
from research.core.records import Run, Source
from research.llm.pacing import forget_pacers
from research.search import pacing
from storage import Store
from tests.standin import StandinServer
from tests.standin.search_services import env as services_env
from tests.store_files import migrated_copy

SERVICES = ("searxng", "brave", "exa", "serper")
QUESTION = "How is heat pump adoption changing in Europe?"
# The smallest run that proves the point: 3 subtopics (the least), one search each, no
# academic search, no review.
SMALL = {"preset": "quick", "SOURCES_PER_SUBTOPIC": 5, "SEARCHES_PER_SUBTOPIC": 1,
         "INCLUDE_ACADEMIC_SOURCES": False, "fetch_timeout_s": 5, "max_retries": 0}


@pytest.fixture(scope="module")
def finished(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory,
             ) -> Iterator[dict[str, tuple[Run, list[Source], int]]]:
    """Each service's run, and one with all four: (run, its sources, the fewest requests any of
    its services got)."""
    standin.reset()
    forget_pacers()
    pacing.forget()
    env = {**standin.env(), **services_env(standin.base_url), "DEEP_RESEARCH_SEARCH_PACE": "0"}
    store = Store(migrated_copy(tmp_path_factory.mktemp("services") / "research.sqlite3"))
    done: dict[str, tuple[Run, list[Source], int]] = {}
    for name in (*SERVICES, ",".join(SERVICES)):
        before = {s: standin.count(s) for s in SERVICES}
        run_env = {**env, "DEEP_RESEARCH_SEARCH": name}
        run_id = run_research(QUESTION, store=store, config=build_config(env=run_env, **SMALL),
                              credentials=Credentials.from_env(run_env))
        run = store.get_run(run_id)
        assert run is not None
        asked = min(standin.count(s) - before[s] for s in name.split(","))
        done[name] = (run, store.get_sources(run_id, with_text=False), asked)
    yield done
    store.close()
    standin.reset()


@pytest.mark.parametrize("name", SERVICES)
def test_a_run_with_only_this_service_completes_with_its_sources(
        name: str, finished: dict[str, tuple[Run, list[Source], int]]) -> None:
    run, sources, asked = finished[name]
    assert run.status == "completed", run.error
    assert asked >= 3  # one search per subtopic at least
    assert sources and {s.provider for s in sources} == {name}


def test_a_run_with_all_four_keeps_one_source_per_page(
        finished: dict[str, tuple[Run, list[Source], int]]) -> None:
    run, sources, asked = finished[",".join(SERVICES)]
    assert run.status == "completed", run.error
    assert asked >= 3  # every service was searched for every subtopic
    canonical = [s.canonical_url for s in sources]
    # The four services find the same pages for a query (the stand-in's articles): each page
    # is kept once, whichever service found it first.
    assert sources and len(canonical) == len(set(canonical))


@pytest.mark.parametrize("name", ["brave", "exa", "serper"])
def test_a_refused_key_stops_the_run_before_research_naming_the_setting(
        name: str, standin: StandinServer, standin_env: dict[str, str], tmp_db: Path) -> None:
    wrong = "wrong-key-0123456789abcdef"
    run_env = {**standin_env, **services_env(standin.base_url), "DEEP_RESEARCH_SEARCH": name,
               f"{name.upper()}_API_KEY": wrong}
    store = Store(migrated_copy(tmp_db))
    run_id = run_research(QUESTION, store=store, config=build_config(env=run_env, **SMALL),
                          credentials=Credentials.from_env(run_env))
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert f"{name.upper()}_API_KEY" in run.error and wrong not in run.error
    assert store.get_plan(run_id) is None


def test_searxng_without_an_address_stops_the_run_saying_what_to_set(
        standin: StandinServer, standin_env: dict[str, str], tmp_db: Path) -> None:
    run_env = {**standin_env, "DEEP_RESEARCH_SEARCH": "searxng"}
    store = Store(migrated_copy(tmp_db))
    run_id = run_research(QUESTION, store=store, config=build_config(env=run_env, **SMALL),
                          credentials=Credentials.from_env(run_env))
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "SEARXNG_BASE_URL" in run.error and "address" in run.error, run.error
