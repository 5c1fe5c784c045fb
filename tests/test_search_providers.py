"""Search providers against the local stand-in (Tavily through tavily-python, arXiv and
Semantic Scholar over httpx); the keyless web search with `DDGS` replaced, so no network."""

from __future__ import annotations

import time
from typing import Any

import pytest

from research.core.config import Credentials, build_config
from research.core.errors import (
    AuthError,
    ConfigError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
)
from research.search import build_search_providers, web
from research.search.arxiv import ArxivSearch, parse_atom
from research.search.base import SearchProvider
from research.search.semanticscholar import SemanticScholarSearch, _result
from research.search.tavily import TavilySearch, iso_date
from research.search.web import WebSearch
from tests.standin import TAVILY_KEY, StandinServer
from tests.standin.server import article_meta, paper_meta

APIS = ["tavily", "arxiv", "semanticscholar"]


def provider_for(api: str, env: dict[str, str]) -> SearchProvider:
    if api == "tavily":
        return TavilySearch(env["TAVILY_API_KEY"], base_url=env["TAVILY_BASE_URL"])
    if api == "arxiv":
        return ArxivSearch(env["ARXIV_BASE_URL"])
    return SemanticScholarSearch(env["SEMANTIC_SCHOLAR_BASE_URL"])


def test_tavily_results_match_the_pages_they_link_to(standin: StandinServer,
                                                     standin_env: dict[str, str]) -> None:
    results = provider_for("tavily", standin_env).search(
        "coffee and heart health", max_results=3, timeout=10)
    assert len(results) == 3
    base = standin.base_url
    for result in results:
        assert result.provider == "tavily"
        assert result.url.startswith(f"{base}/pages/article/")
        meta = article_meta(result.url.rsplit("/", 1)[1])
        assert (result.title, result.snippet, result.published) == (
            meta["title"], meta["snippet"], meta["published"])
        assert result.score is not None
    sent = standin.requests_for("tavily")[0]
    assert sent["headers"]["authorization"] == f"Bearer {TAVILY_KEY}"
    assert sent["json"]["search_depth"] == "basic"
    assert sent["json"]["include_raw_content"] is False
    assert sent["json"]["max_results"] == 3


def test_tavily_is_deterministic(standin: StandinServer, standin_env: dict[str, str]) -> None:
    tavily = provider_for("tavily", standin_env)
    first = tavily.search("solar panel prices", max_results=4, timeout=10)
    assert first == tavily.search("solar panel prices", max_results=4, timeout=10)
    assert first != tavily.search("wind turbine prices", max_results=4, timeout=10)


def test_arxiv_parses_the_atom_feed(standin: StandinServer,
                                    standin_env: dict[str, str]) -> None:
    results = provider_for("arxiv", standin_env).search("coffee heart", max_results=5, timeout=10)
    assert len(results) == 2
    for result in results:
        assert result.provider == "arxiv"
        assert result.url.startswith(f"{standin.base_url}/pages/paper/")
        meta = paper_meta(result.url.rsplit("/", 1)[1])
        assert (result.title, result.snippet, result.published) == (
            meta["title"], meta["snippet"], meta["published"])
    assert standin.requests_for("arxiv")[0]["query"]["search_query"] == "all:coffee heart"


def test_arxiv_refuses_doctype_and_entities() -> None:
    bomb = (b'<?xml version="1.0"?><!DOCTYPE lolz [<!ENTITY lol "lol">]>'
            b'<feed xmlns="http://www.w3.org/2005/Atom"><entry><title>&lol;</title></entry></feed>')
    with pytest.raises(ProviderError, match="DOCTYPE"):
        parse_atom(bomb)


def test_arxiv_error_feed_is_a_provider_error() -> None:
    feed = (b'<feed xmlns="http://www.w3.org/2005/Atom"><entry>'
            b"<id>http://arxiv.org/api/errors#incorrect_id_format</id><title>Error</title>"
            b"<summary>incorrect id format</summary></entry></feed>")
    with pytest.raises(ProviderError, match="incorrect id format"):
        parse_atom(feed)


def test_semanticscholar_maps_papers_and_sends_the_key(standin: StandinServer,
                                                       standin_env: dict[str, str]) -> None:
    s2 = SemanticScholarSearch(standin_env["SEMANTIC_SCHOLAR_BASE_URL"], api_key="s2-key-123456")
    results = s2.search("coffee heart", max_results=5, timeout=10)
    assert len(results) == 2
    assert all(r.provider == "semanticscholar" and r.published for r in results)
    assert results[0].url.startswith(f"{standin.base_url}/pages/paper/")
    sent = standin.requests_for("semanticscholar")[0]
    assert sent["headers"]["x-api-key"] == "s2-key-123456"
    assert sent["query"]["fields"] == "title,url,abstract,year,publicationDate,openAccessPdf"
    provider_for("semanticscholar", standin_env).search("x y", max_results=1, timeout=10)
    assert "x-api-key" not in standin.requests_for("semanticscholar")[1]["headers"]


def test_semanticscholar_prefers_the_open_pdf_and_falls_back_to_the_year() -> None:
    paper = {"paperId": "p1", "title": "T", "url": "https://s2.example/p1", "abstract": None,
             "year": 2021, "publicationDate": None,
             "openAccessPdf": {"url": "https://pdf.example/p1.pdf", "status": "GREEN"}}
    result = _result(paper, "semanticscholar")
    assert result is not None
    assert (result.url, result.published, result.snippet) == (
        "https://pdf.example/p1.pdf", "2021-01-01", "")
    assert _result({"title": "no url"}, "semanticscholar") is None


@pytest.mark.parametrize("api", APIS)
def test_provider_down_is_a_provider_error(api: str, standin: StandinServer,
                                           standin_env: dict[str, str]) -> None:
    standin.add_fault(api, "status", status=500)
    with pytest.raises(ProviderError) as caught:
        provider_for(api, standin_env).search("anything", max_results=2, timeout=10)
    assert caught.value.status == 500
    assert not isinstance(caught.value, (RateLimited, QuotaExhausted, AuthError))


@pytest.mark.parametrize("api", APIS)
def test_rate_limit_carries_retry_after(api: str, standin: StandinServer,
                                        standin_env: dict[str, str]) -> None:
    standin.add_fault(api, "status", status=429, headers={"Retry-After": "7"})
    with pytest.raises(RateLimited) as caught:
        provider_for(api, standin_env).search("anything", max_results=2, timeout=10)
    assert caught.value.retry_after == 7.0


@pytest.mark.parametrize("api", APIS)
def test_hanging_provider_times_out(api: str, standin: StandinServer,
                                    standin_env: dict[str, str]) -> None:
    standin.add_fault(api, "hang", seconds=5)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        provider_for(api, standin_env).search("anything", max_results=2, timeout=0.5)
    assert time.monotonic() - started < 3.0


@pytest.mark.parametrize("api", APIS)
def test_trickling_provider_is_cut_off_at_the_deadline(api: str, standin: StandinServer,
                                                       standin_env: dict[str, str]) -> None:
    standin.add_fault(api, "trickle", interval=0.2)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        provider_for(api, standin_env).search("anything", max_results=2, timeout=1.0)
    assert time.monotonic() - started < 4.0


def test_tavily_plan_limit_is_quota_exhausted(standin: StandinServer,
                                              standin_env: dict[str, str]) -> None:
    standin.add_fault("tavily", "status", status=432)
    with pytest.raises(QuotaExhausted):
        provider_for("tavily", standin_env).search("anything", max_results=2, timeout=10)


def test_tavily_bad_key_is_auth_error_without_the_key(standin: StandinServer,
                                                      standin_env: dict[str, str]) -> None:
    standin.add_fault("tavily", "status", status=401,
                      body={"detail": {"error": f"Unauthorized: invalid API key {TAVILY_KEY}"}})
    with pytest.raises(AuthError) as caught:
        provider_for("tavily", standin_env).search("anything", max_results=2, timeout=10)
    assert TAVILY_KEY not in str(caught.value)
    assert "TAVILY_API_KEY" in str(caught.value)


def test_tavily_dates_become_iso_dates() -> None:
    assert iso_date("2025-03-04T10:00:00Z") == "2025-03-04"
    assert iso_date("Tue, 04 Mar 2025 10:00:00 GMT") == "2025-03-04"
    assert iso_date("soon") is None
    assert iso_date(None) is None


class FakeDDGS:
    """Stands in for ddgs.DDGS: returns `rows` or raises `error`."""

    rows: list[dict[str, Any]] = []
    error: Exception | None = None
    calls: list[tuple[str, int]] = []

    def __init__(self, timeout: int | None = 5, **kwargs: Any) -> None:
        self.timeout = timeout

    def text(self, query: str, max_results: int | None = 10, **kwargs: Any) -> list[dict[str, Any]]:
        FakeDDGS.calls.append((query, max_results or 0))
        if FakeDDGS.error is not None:
            raise FakeDDGS.error
        return FakeDDGS.rows


@pytest.fixture
def fake_ddgs(monkeypatch: pytest.MonkeyPatch) -> type[FakeDDGS]:
    monkeypatch.setattr(web, "DDGS", FakeDDGS)
    FakeDDGS.rows, FakeDDGS.error, FakeDDGS.calls = [], None, []
    return FakeDDGS


def test_web_search_maps_ddgs_rows(fake_ddgs: type[FakeDDGS]) -> None:
    fake_ddgs.rows = [
        {"title": "Coffee study", "href": "https://news.example/coffee", "body": "A 12% drop."},
        {"title": "No link", "body": "skipped"},
    ]
    results = WebSearch().search("coffee", max_results=5, timeout=5)
    assert [(r.url, r.title, r.snippet, r.provider) for r in results] == [
        ("https://news.example/coffee", "Coffee study", "A 12% drop.", "web")]
    assert fake_ddgs.calls == [("coffee", 5)]


@pytest.mark.parametrize(("error_name", "expected"), [
    ("RatelimitException", RateLimited),
    ("TimeoutException", ProviderTimeout),
    ("DDGSException", ProviderError),
])
def test_web_search_errors_are_mapped(fake_ddgs: type[FakeDDGS], error_name: str,
                                      expected: type[Exception]) -> None:
    fake_ddgs.error = getattr(web, error_name)("engine trouble")
    with pytest.raises(expected):
        WebSearch().search("coffee", max_results=5, timeout=5)


def test_web_search_with_no_results_is_empty(fake_ddgs: type[FakeDDGS]) -> None:
    fake_ddgs.error = web.DDGSException("No results found.")
    assert WebSearch().search("coffee", max_results=5, timeout=5) == []


def test_registry_builds_the_configured_providers(standin_env: dict[str, str]) -> None:
    config = build_config(env=standin_env)
    providers = build_search_providers(config, Credentials.from_env(standin_env))
    assert [(p.name, p.academic) for p in providers] == [
        ("tavily", False), ("arxiv", True), ("semanticscholar", True)]


def test_registry_leaves_out_academic_sources_when_asked(standin_env: dict[str, str]) -> None:
    config = build_config(env={**standin_env, "DEEP_RESEARCH_SEARCH": "web,arxiv"},
                          INCLUDE_ACADEMIC_SOURCES=False)
    providers = build_search_providers(config, Credentials.from_env(standin_env))
    assert [p.name for p in providers] == ["web"]


def test_tavily_without_key_names_the_variable() -> None:
    config = build_config(env={"DEEP_RESEARCH_SEARCH": "tavily"})
    with pytest.raises(ConfigError, match="TAVILY_API_KEY"):
        build_search_providers(config, Credentials())
