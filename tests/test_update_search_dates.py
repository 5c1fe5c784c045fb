"""An update searches only for what was published since its earlier version (issue 36): each
search service is asked with its own documented date filter, over real HTTP to the stand-in;
one without an exact date gets the shortest span that covers the days since."""

from __future__ import annotations

from datetime import date, timedelta

import pytest

from research.core.config import Credentials, build_config
from research.search import build_search_providers
from research.search.base import SearchProvider
from research.search.dates import span_since
from tests.standin import StandinServer
from tests.standin.search_services import env

SINCE = (date.today() - timedelta(days=3)).isoformat()


@pytest.fixture
def services_env(standin: StandinServer, standin_env: dict[str, str]) -> dict[str, str]:
    return {**standin_env, **env(standin.base_url)}


def _provider(name: str, env: dict[str, str], since: str = SINCE) -> SearchProvider:
    academic = name in ("arxiv", "semanticscholar")
    config = build_config(env=env, search_providers=(name,), INCLUDE_ACADEMIC_SOURCES=academic,
                          update_since=since)
    return next(p for p in build_search_providers(config, Credentials.from_env(env))
                if p.name == name)


def test_each_service_is_asked_only_for_what_was_published_since(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    for name in ("tavily", "arxiv", "semanticscholar", "searxng", "brave", "exa", "serper"):
        _provider(name, services_env).search("solar prices", max_results=4, timeout=10)
    compact = SINCE.replace("-", "")
    assert standin.requests_for("tavily")[0]["json"]["start_date"] == SINCE
    assert standin.requests_for("arxiv")[0]["query"]["search_query"].endswith(
        f" AND submittedDate:[{compact}0000 TO 299912312359]")
    assert standin.requests_for("semanticscholar")[0]["query"]["publicationDateOrYear"] == f"{SINCE}:"
    assert standin.requests_for("brave")[0]["query"]["freshness"] == (
        f"{SINCE}to{date.today().isoformat()}")
    assert standin.requests_for("exa")[0]["json"]["startPublishedDate"] == f"{SINCE}T00:00:00.000Z"
    assert standin.requests_for("serper")[0]["json"]["tbs"] == "qdr:w"  # 3 days: the last week
    assert standin.requests_for("searxng")[0]["query"]["time_range"] == "month"  # no week there


def test_a_run_that_is_not_an_update_sends_no_date_filter(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    for name in ("tavily", "brave", "exa", "serper", "searxng"):
        _provider(name, services_env, since="").search("solar prices", max_results=4, timeout=10)
    assert "start_date" not in standin.requests_for("tavily")[0]["json"]
    assert "freshness" not in standin.requests_for("brave")[0]["query"]
    assert "startPublishedDate" not in standin.requests_for("exa")[0]["json"]
    assert "tbs" not in standin.requests_for("serper")[0]["json"]
    assert "time_range" not in standin.requests_for("searxng")[0]["query"]


def test_a_search_without_exact_dates_gets_the_shortest_span_that_covers_since() -> None:
    today = date(2026, 3, 31)
    spans = [span_since((today - timedelta(days=d)).isoformat(), today)
             for d in (0, 3, 20, 200, 400)]
    assert spans == ["d", "w", "m", "y", None]
    assert span_since(None) is None and span_since("not a date") is None
