"""A server that answers one byte at a time (issue 40, point 1): every model, search and page
request ends at its own deadline, hangs up, and leaves no thread of ours reading on.

A read timeout restarts with every byte, so without an overall deadline the request (and the
thread that sends it) lasts as long as the trickle: minutes here, for ever from a hostile
server. Each test lets the stand-in trickle for minutes and asks, within a generous bound far
shorter than that, that the call has failed plainly, that the stand-in saw the client hang up,
and that every thread the call started has ended. The call itself gives up within the same
bound (its deadline is a second).
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable
from typing import Any

import pytest

from research.core.errors import FetchError, ProviderTimeout
from research.search.arxiv import ArxivSearch
from research.search.base import SearchProvider
from research.search.semanticscholar import SemanticScholarSearch
from research.search.tavily import TavilySearch
from research.untrusted.fetch import Fetcher, FetchLimits
from tests.standin import StandinServer
from tests.test_llm_providers import WRITER_MESSAGES, make_llm, role_llm

INTERVAL = 0.2  # seconds between bytes: every answer here would take minutes to arrive
# The body alone, or the status line and headers too (a read timeout restarts with each byte
# of either; an HTTP client reads the headers before it hands back a response at all).
HOW = pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
BOUND = 20.0    # far longer than any deadline below, far shorter than any trickle


def _search(api: str, env: dict[str, str]) -> SearchProvider:
    """The search client, unpaced: arXiv's 3 s pace would refuse the trickled request unsent."""
    if api == "tavily":
        return TavilySearch(env["TAVILY_API_KEY"], base_url=env["TAVILY_BASE_URL"])
    if api == "arxiv":
        return ArxivSearch(env["ARXIV_BASE_URL"], pace=0.0)
    return SemanticScholarSearch(env["SEMANTIC_SCHOLAR_BASE_URL"], pace=0.0)


def _ours() -> set[threading.Thread]:
    """Live threads, less the stand-in's own (its server and request threads)."""
    return {t for t in threading.enumerate()
            if t.name != "standin" and "process_request_thread" not in t.name}


def _eventually(check: Callable[[], Any], seconds: float = BOUND) -> Any:
    end = time.monotonic() + seconds
    while True:
        value = check()
        if value or time.monotonic() > end:
            return value
        time.sleep(0.05)


def _assert_hung_up_and_no_thread_left(standin: StandinServer, api: str, asked: int,
                                       before: set[threading.Thread], started: float) -> None:
    took = time.monotonic() - started
    assert took < BOUND, f"the call gave up only after {took:.0f} s"
    sent = standin.requests_for(api)
    assert len(sent) == asked + 1, "the trickled request was never sent"
    last = sent[-1]
    assert _eventually(lambda: "ended" in last), (
        f"the {api} connection was still open {BOUND:.0f} s after the call gave up")
    assert last.get("client_gone"), "the stand-in ended the answer, not the client"
    left = _eventually(lambda: not [t for t in _ours() - before if t.is_alive()])
    assert left, f"threads still running: {[t.name for t in _ours() - before]}"


@HOW
@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_trickling_model_answer_ends_at_its_deadline_and_hangs_up(
    provider: str, headers: bool, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    llm = role_llm(provider, standin_env, attempts=1, call_timeout=1.0)
    llm.text(WRITER_MESSAGES)  # the SDK's client and anything it starts lazily, before counting
    started, before, asked = time.monotonic(), _ours(), standin.count(provider)
    standin.add_fault(provider, "trickle", interval=INTERVAL, headers=headers)
    with pytest.raises(ProviderTimeout):
        llm.text(WRITER_MESSAGES)
    _assert_hung_up_and_no_thread_left(standin, provider, asked, before, started)


@HOW
@pytest.mark.parametrize("provider", ["openai", "gemini"])
def test_a_trickling_model_answer_ends_at_the_requests_own_deadline(
    provider: str, headers: bool, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    """The bare client, with no outer thread: the request itself ends and hangs up."""
    llm = make_llm(provider, standin_env)
    llm.complete(WRITER_MESSAGES, timeout=5.0)
    started, before, asked = time.monotonic(), _ours(), standin.count(provider)
    standin.add_fault(provider, "trickle", interval=INTERVAL, headers=headers)
    with pytest.raises(ProviderTimeout):
        llm.complete(WRITER_MESSAGES, timeout=1.0)
    _assert_hung_up_and_no_thread_left(standin, provider, asked, before, started)


@HOW
@pytest.mark.parametrize("api", ["tavily", "arxiv", "semanticscholar"])
def test_a_trickling_search_answer_ends_at_its_deadline_and_hangs_up(
    api: str, headers: bool, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    search = _search(api, standin_env)
    assert search.search("heat pumps in cold climates", max_results=3, timeout=5.0)
    started, before, asked = time.monotonic(), _ours(), standin.count(api)
    standin.add_fault(api, "trickle", interval=INTERVAL, headers=headers)
    with pytest.raises(ProviderTimeout):
        search.search("heat pumps in cold climates", max_results=3, timeout=1.0)
    _assert_hung_up_and_no_thread_left(standin, api, asked, before, started)


@HOW
def test_a_trickling_page_ends_at_its_deadline_and_hangs_up(
    headers: bool, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    url = _search("tavily", standin_env).search(
        "heat pumps in cold climates", max_results=1, timeout=5.0)[0].url
    limits = FetchLimits(timeout_s=1.0, allow_private_hosts=True, allowed_ports=(standin.port,))
    with Fetcher(limits) as fetcher:
        assert fetcher.fetch(url).text
        started, before, asked = time.monotonic(), _ours(), standin.count("pages")
        standin.add_fault("pages", "trickle", interval=INTERVAL, headers=headers)
        with pytest.raises(FetchError, match="took longer than 1 s"):
            fetcher.fetch(url)
        _assert_hung_up_and_no_thread_left(standin, "pages", asked, before, started)
