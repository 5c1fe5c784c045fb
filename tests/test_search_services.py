"""SearXNG, Brave Search, Exa and Serper against the stand-in, over real HTTP (issue 37.2):
what each sends, how its answer is read, and each documented error in plain words."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest

from research.core.config import Credentials, build_config
from research.core.errors import (
    AuthError,
    ConfigError,
    FetchRefused,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
)
from research.search import build_search_providers, pacing
from research.search.base import SearchProvider
from research.search.brave import BraveSearch
from research.search.exa import ExaSearch
from research.search.searxng import SearxngSearch
from research.search.serper import SerperSearch
from research.untrusted.own_service import check_own_service_url, own_service_problem
from research.untrusted.urls import check_url
from tests.standin import StandinServer
from tests.standin.search_services import BRAVE_KEY, EXA_KEY, SERPER_KEY, env
from tests.standin.server import article_meta

SERVICES = ["searxng", "brave", "exa", "serper"]


@pytest.fixture
def services_env(standin: StandinServer, standin_env: dict[str, str]) -> dict[str, str]:
    return {**standin_env, **env(standin.base_url)}


def provider(name: str, env: dict[str, str], **overrides: str) -> SearchProvider:
    config = build_config(env={**env, **overrides}, search_providers=(name,),
                          INCLUDE_ACADEMIC_SOURCES=False)
    return build_search_providers(config, Credentials.from_env({**env, **overrides}))[0]


@pytest.mark.parametrize("name", SERVICES)
def test_results_are_read_as_the_pages_they_link_to(
        name: str, standin: StandinServer, services_env: dict[str, str]) -> None:
    results = provider(name, services_env).search("coffee and heart health", max_results=3,
                                                  timeout=10)
    assert len(results) == 3
    for result in results:
        assert result.provider == name
        assert result.url.startswith(f"{standin.base_url}/pages/article/")
        meta = article_meta(result.url.rsplit("/", 1)[1])
        assert (result.title, result.snippet) == (meta["title"], meta["snippet"])
        assert result.published == (meta["published"] or None)
    assert len(standin.requests_for(name)) == 1


def test_each_service_is_asked_as_its_documentation_says(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    for name in SERVICES:
        provider(name, services_env).search("solar prices", max_results=4, timeout=10)
    searxng = standin.requests_for("searxng")[0]
    assert (searxng["method"], searxng["path"]) == ("GET", "/searxng/search")
    assert searxng["query"]["q"] == "solar prices" and searxng["query"]["format"] == "json"
    brave = standin.requests_for("brave")[0]
    assert (brave["method"], brave["path"]) == ("GET", "/brave/res/v1/web/search")
    assert brave["headers"]["x-subscription-token"] == BRAVE_KEY
    assert brave["query"] == {"q": "solar prices", "count": "4"}
    exa = standin.requests_for("exa")[0]
    assert (exa["method"], exa["path"]) == ("POST", "/exa/search")
    assert exa["headers"]["x-api-key"] == EXA_KEY
    assert exa["json"]["query"] == "solar prices" and exa["json"]["numResults"] == 4
    assert "highlights" in exa["json"]["contents"] and "text" not in exa["json"]["contents"]
    serper = standin.requests_for("serper")[0]
    assert (serper["method"], serper["path"]) == ("POST", "/serper/search")
    assert serper["headers"]["x-api-key"] == SERPER_KEY
    assert serper["json"] == {"q": "solar prices", "num": 10}


@pytest.mark.parametrize("name", ["brave", "exa", "serper"])
def test_a_wrong_key_is_an_auth_error_naming_the_setting(
        name: str, services_env: dict[str, str]) -> None:
    var = f"{name.upper()}_API_KEY"
    wrong = "wrong-key-0123456789abcdef"
    with pytest.raises(AuthError) as caught:
        provider(name, services_env, **{var: wrong}).search("x", max_results=2, timeout=10)
    assert var in str(caught.value)
    assert wrong not in str(caught.value)


@pytest.mark.parametrize("name", ["brave", "exa", "serper"])
def test_a_missing_key_is_refused_before_any_request(
        name: str, standin: StandinServer, services_env: dict[str, str]) -> None:
    with pytest.raises(ConfigError, match=f"{name.upper()}_API_KEY"):
        provider(name, services_env, **{f"{name.upper()}_API_KEY": ""})
    assert standin.requests_for(name) == []


@pytest.mark.parametrize("name", ["searxng", "exa", "serper"])
def test_a_429_is_rate_limited_and_holds_the_service(
        name: str, standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.add_fault(name, "status", status=429, headers={"Retry-After": "7"})
    search = provider(name, services_env)
    with pytest.raises(RateLimited) as caught:
        search.search("x", max_results=2, timeout=10)
    assert caught.value.retry_after == 7
    assert "HTTP 429" in str(caught.value) or "limiting" in str(caught.value)
    pace = pacing.pacer_of(search)
    assert pace is not None
    with pytest.raises(ProviderError, match="turn did not come"):
        search.search("x", max_results=2, timeout=0.5)  # held: never sent
    assert len(standin.requests_for(name)) == 1


@pytest.mark.parametrize("name", ["searxng", "exa", "serper"])
def test_over_the_services_own_rate_the_next_search_waits_instead_of_being_refused_again(
        name: str, standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.services.per_second(name, 1)
    search = provider(name, services_env)
    assert search.search("one", max_results=2, timeout=10)
    with pytest.raises(RateLimited):  # no header says how long: held for a second
        search.search("two", max_results=2, timeout=10)
    assert search.search("three", max_results=2, timeout=10)  # sent after the hold
    assert standin.rate_limited(name) == 1 and len(standin.requests_for(name)) == 3


def test_server_errors_are_retryable_failures(standin: StandinServer,
                                              services_env: dict[str, str]) -> None:
    for name in SERVICES:
        standin.add_fault(name, "status", status=503)
        with pytest.raises(ProviderError) as caught:
            provider(name, services_env).search("x", max_results=2, timeout=10)
        assert caught.value.status == 503


@pytest.mark.parametrize("name", SERVICES)
def test_a_service_that_does_not_answer_in_time_is_a_timeout(
        name: str, standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.add_fault(name, "hang", seconds=10)
    with pytest.raises(ProviderTimeout):
        provider(name, services_env).search("x", max_results=2, timeout=0.5)


def test_searxng_with_json_off_says_how_to_turn_it_on(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.services.searxng_json = False
    with pytest.raises(ProviderError) as caught:
        provider("searxng", services_env).search("x", max_results=2, timeout=10)
    assert caught.value.status == 403
    assert "settings.yml" in str(caught.value) and "json" in str(caught.value)


def test_searxng_redirecting_elsewhere_is_not_followed(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    # The exception to the address rules covers the address the person set, not where an
    # answer points: a redirect (here to a page of the stand-in) is reported, never followed.
    standin.add_fault("searxng", "status", status=302, body="", headers={
        "Location": f"http://user:pw@127.0.0.1:{standin.port}/pages/article/elsewhere"})
    with pytest.raises(ProviderError, match="SEARXNG_BASE_URL") as caught:
        provider("searxng", services_env).search("x", max_results=2, timeout=10)
    assert f"http://127.0.0.1:{standin.port}" in str(caught.value) and "pw" not in str(caught.value)
    assert standin.count("pages") == 0


def test_searxng_whose_engines_all_failed_says_so(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.services.searxng_engines_down = True
    with pytest.raises(ProviderError, match="duckduckgo timeout"):
        provider("searxng", services_env).search("x", max_results=2, timeout=10)


def test_brave_keeps_to_the_plan_its_headers_announce(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    # One request a second, as on the free plan; our own pace is off (DEEP_RESEARCH_SEARCH_PACE=0),
    # so only the X-RateLimit-Remaining/-Reset headers keep the searches under the limit.
    standin.services.brave_plan(per_second=1, per_month=100)
    brave = provider("brave", services_env)
    assert isinstance(brave, BraveSearch) and pacing.pacer_of(brave).interval == 0  # type: ignore[union-attr]
    for query in ("one", "two", "three"):
        assert brave.search(query, max_results=2, timeout=10)
    assert standin.rate_limited("brave") == 0
    assert len(standin.requests_for("brave")) == 3


def test_brave_searches_at_once_keep_to_the_free_plan(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    # Three workers search Brave at the same moment on a free plan (one a second): the
    # process-wide pacer sends them one a second, so Brave refuses none.
    standin.services.brave_plan(per_second=1, per_month=100)
    brave = provider("brave", services_env, DEEP_RESEARCH_SEARCH_PACE="1")
    with ThreadPoolExecutor(3) as pool:
        found = list(pool.map(lambda q: brave.search(q, max_results=2, timeout=20),
                              ("one", "two", "three")))
    assert all(found)
    assert standin.rate_limited("brave") == 0 and len(standin.requests_for("brave")) == 3


def test_brave_follows_the_pace_of_the_plan_its_headers_announce(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.services.brave_plan(per_second=20, per_month=20_000)
    brave = provider("brave", services_env, DEEP_RESEARCH_SEARCH_PACE="1")
    pace = pacing.pacer_of(brave)
    assert pace is not None and pace.gap == 1.0  # the free plan's pace until Brave says more
    brave.search("one", max_results=2, timeout=10)
    assert pace.gap == pytest.approx(1 / 20)
    # A plan that allows fewer brings the pace back down (never below the documented one).
    standin.services.brave_plan(per_second=1, per_month=20_000)
    brave.search("two", max_results=2, timeout=10)
    assert pace.gap == 1.0


def test_brave_over_its_pace_is_rate_limited_with_the_reset_it_names(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.add_fault("brave", "status", status=429, headers={
        "X-RateLimit-Limit": "1, 2000", "X-RateLimit-Remaining": "0, 1500",
        "X-RateLimit-Reset": "3, 1000000"})
    with pytest.raises(RateLimited) as caught:
        provider("brave", services_env).search("x", max_results=2, timeout=10)
    assert caught.value.retry_after == 3


def test_brave_with_the_month_spent_is_a_used_up_quota(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    standin.services.brave_plan(per_second=50, per_month=1)
    brave = provider("brave", services_env)
    assert brave.search("first", max_results=2, timeout=10)
    with pytest.raises(QuotaExhausted, match="monthly"):
        brave.search("second", max_results=2, timeout=10)


def test_brave_snippets_lose_their_match_marks(services_env: dict[str, str]) -> None:
    results = provider("brave", services_env).search("wind power", max_results=2, timeout=10)
    assert all("<strong>" not in r.snippet and r.snippet for r in results)


def test_exa_without_credits_is_a_used_up_quota(standin: StandinServer,
                                                services_env: dict[str, str]) -> None:
    standin.add_fault("exa", "status", status=402, body={
        "requestId": "x", "error": "You have run out of credits", "tag": "NO_MORE_CREDITS"})
    with pytest.raises(QuotaExhausted):
        provider("exa", services_env).search("x", max_results=2, timeout=10)


def test_serper_without_credits_is_a_used_up_quota(standin: StandinServer,
                                                   services_env: dict[str, str]) -> None:
    standin.services.serper_credits = 1
    serper = provider("serper", services_env)
    assert serper.search("first", max_results=2, timeout=10)
    with pytest.raises(QuotaExhausted, match="credits"):
        serper.search("second", max_results=2, timeout=10)


def test_serper_asks_for_twenty_only_when_more_than_ten_are_wanted(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    provider("serper", services_env).search("x", max_results=15, timeout=10)
    assert standin.requests_for("serper")[0]["json"]["num"] == 20


def test_exa_and_serper_send_their_keys_only_in_headers_and_never_in_errors(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    for name, key in (("exa", EXA_KEY), ("serper", SERPER_KEY), ("brave", BRAVE_KEY)):
        standin.add_fault(name, "status", status=500, body=f"echo {key}")
        with pytest.raises(ProviderError) as caught:
            provider(name, services_env).search("x", max_results=2, timeout=10)
        assert key not in str(caught.value)
        sent = standin.requests_for(name)[-1]
        assert key not in str(sent["query"]) and key not in str(sent["json"])


# --- SearXNG's address: the person's own instance -------------------------------------------

def test_searxng_on_this_computer_works_without_allowing_private_hosts(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    # The common case: an instance on localhost. The base URL is the person's own choice, so
    # it is reached although private hosts are not allowed for pages...
    local_env = {**services_env, "DEEP_RESEARCH_ALLOW_PRIVATE_HOSTS": "0"}
    results = provider("searxng", local_env).search("tea", max_results=2, timeout=10)
    assert results
    # ...while the results it returns stay untrusted: their loopback pages are refused.
    with pytest.raises(FetchRefused, match="loopback"):
        check_url(results[0].url, allow_private=False, allowed_ports={standin.port})


@pytest.mark.parametrize("url", [
    "http://localhost:8888", "http://127.0.0.1:8080/", "http://192.168.1.20:8888",
    "http://10.0.0.5", "http://[::1]:8888", "https://searx.example.org", "http://100.101.1.2:8080",
])
def test_own_addresses_a_person_would_use_are_accepted(url: str) -> None:
    assert own_service_problem(url, resolver=lambda name: ["127.0.0.1"]) is None


@pytest.mark.parametrize(("url", "why"), [
    ("http://169.254.169.254/latest", "metadata"),
    ("http://metadata.google.internal", "metadata"),
    ("ftp://192.168.1.2/", "only http and https"),
    ("http://me:secret@192.168.1.2:8888", "user name"),
    ("http://0.0.0.0:8888", "unspecified"),
    ("http://224.0.0.1", "multicast"),
    ("file:///etc/passwd", "only http and https"),
])
def test_addresses_that_are_never_a_search_service_are_refused(url: str, why: str) -> None:
    problem = own_service_problem(url)
    assert problem is not None and why in problem


def test_a_refused_searxng_address_is_a_config_error_in_plain_words() -> None:
    with pytest.raises(ConfigError, match="cloud metadata") as caught:
        SearxngSearch("http://169.254.169.254:8888")
    assert "SEARXNG_BASE_URL" in str(caught.value)
    with pytest.raises(ConfigError, match="SEARXNG_BASE_URL"):
        provider("searxng", {}, DEEP_RESEARCH_SEARCH="searxng")


def test_a_host_that_resolves_to_a_metadata_address_is_refused_when_searched() -> None:
    with pytest.raises(FetchRefused, match="metadata"):
        check_own_service_url("http://searx.home:8888",
                              resolver=lambda name: ["169.254.169.254"])


def test_the_search_page_address_pasted_whole_still_works(
        standin: StandinServer, services_env: dict[str, str]) -> None:
    pasted = f"{services_env['SEARXNG_BASE_URL']}/search"
    assert SearxngSearch(pasted).search("tea", max_results=1, timeout=10)


def test_the_search_setting_takes_the_new_names() -> None:
    config = build_config(env={"DEEP_RESEARCH_SEARCH": "searxng, Brave,exa,serper",
                               "SEARXNG_BASE_URL": "http://localhost:8888"},
                          INCLUDE_ACADEMIC_SOURCES=False)
    assert config.active_search_providers() == ("searxng", "brave", "exa", "serper")
    assert {type(p) for p in build_search_providers(config, Credentials.from_env({
        "BRAVE_API_KEY": "k" * 20, "EXA_API_KEY": "k" * 20, "SERPER_API_KEY": "k" * 20}))} == {
        SearxngSearch, BraveSearch, ExaSearch, SerperSearch}


def test_keys_of_the_new_services_are_redacted_everywhere() -> None:
    creds = Credentials.from_env({"BRAVE_API_KEY": "b" * 20, "EXA_API_KEY": "e" * 20,
                                  "SERPER_API_KEY": "s" * 20})
    assert set(creds.secrets()) == {"b" * 20, "e" * 20, "s" * 20}
    assert "b" * 20 not in repr(creds)
