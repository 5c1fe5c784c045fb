"""arXiv and Semantic Scholar are paced as their terms say, across every worker and run of the
process, and a search API's 429 that says how long is a wait, not a failure.

The documented pace (3 s, 1 s) is scaled down here (DEEP_RESEARCH_SEARCH_PACE) so the runs stay
short; the spacing is read from the stand-in's request log, over real HTTP through the real
providers.
"""

from __future__ import annotations

import gc
import threading
import time
from concurrent.futures import ThreadPoolExecutor

import pytest

from research import Credentials, build_config, run_research
from research.core.errors import RateLimited
from research.phases.gather import searching
from research.search import build_search_providers, pacing
from research.search.arxiv import ArxivSearch
from research.search.semanticscholar import SemanticScholarSearch
from research.search.tavily import TavilySearch
from tests.runs import QUESTION, Runner
from tests.standin import StandinServer
from tests.standin.server import TAVILY_KEY

SCALE = 0.5  # arXiv every 1.5 s, Semantic Scholar every 0.5 s
# The log's time is taken by the stand-in's thread when it gets to the request, in the same
# busy process as the run: a moment after the request left, and not always the same moment.
JITTER_S = 0.25
# What is paced is the searches: the pages they find are read, but fewer of them.
FEW_PAGES = {"sources_per_subtopic": 5}


def _gaps(standin: StandinServer, api: str) -> list[float]:
    times = sorted(r["time"] for r in standin.requests_for(api))
    return [b - a for a, b in zip(times, times[1:], strict=False)]


def _assert_paced(standin: StandinServer, api: str, least: int) -> None:
    """At most one request every interval: no two close together, and n requests span at
    least n - 1 intervals (the lateness of the log's times only counts at the two ends)."""
    interval = pacing.INTERVALS[api] * SCALE
    gaps = _gaps(standin, api)
    shown = (api, interval, [round(g, 3) for g in gaps])
    assert len(gaps) + 1 >= least, shown
    # One gap can look short when the request before it was logged late (a busy machine
    # delays the stand-in's handler: 1.12 s was seen for a 1.5 s pace); requests sent unpaced
    # arrive milliseconds apart, which this still refuses.
    assert min(gaps) >= 0.6 * interval, shown
    assert sum(gaps) >= len(gaps) * interval - 2 * JITTER_S, shown


def test_the_default_pace_is_the_documented_one() -> None:
    config = build_config(env={})
    assert config.search_pace == 1.0
    arxiv, s2 = (p for p in build_search_providers(config, Credentials())
                 if p.name in ("arxiv", "semanticscholar"))
    assert pacing.pacer_of(arxiv).interval == 3.0  # type: ignore[union-attr]
    assert pacing.pacer_of(s2).interval == 1.0  # type: ignore[union-attr]
    assert SemanticScholarSearch(api_key="k").pace.interval == 1.0  # with a key too
    assert TavilySearch(TAVILY_KEY).pace.interval == 0.0  # Tavily sets no pace; its 429s do
    # At arXiv's own address the pace can be made longer, never shorter.
    assert ArxivSearch(pace=0).pace.interval == 3.0
    assert ArxivSearch(pace=2).pace.interval == 6.0
    assert ArxivSearch("http://127.0.0.1:9/arxiv", pace=0.5).pace.interval == 1.5


def test_the_lowest_rank_goes_first_then_the_first_to_ask() -> None:
    pace = pacing.pacer("arxiv", "http://127.0.0.1:9", 0.1)  # every 0.3 s
    assert pace.wait_turn()  # the first turn is taken: the rest queue behind it
    order: list[str] = []
    threads = []
    for name, rank in (("late-1", 3), ("first", 0), ("late-2", 3), ("second", 1)):
        thread = threading.Thread(target=lambda n=name, r=rank: pace.wait_turn(rank=r)
                                  and order.append(n))
        thread.start()
        threads.append(thread)
        time.sleep(0.02)  # they ask in this order
    for thread in threads:
        thread.join(10)
    assert order == ["first", "second", "late-1", "late-2"]


def test_a_withdrawn_request_is_never_given_a_turn() -> None:
    pace = pacing.pacer("arxiv", "https://export.arxiv.org")  # every 3 s
    assert pace.wait_turn()
    withdrawn = threading.Event()
    threading.Timer(0.1, lambda: (withdrawn.set(), pace.wake())).start()
    assert pace.wait_turn(stop=withdrawn.is_set) is False


def test_a_unit_that_ends_early_withdraws_the_academic_searches_it_carried() -> None:
    arxiv = ArxivSearch()  # every 3 s
    assert arxiv.pace.wait_turn()  # the host's turn is taken: the next waits 3 s
    withdrawn = threading.Event()
    with ThreadPoolExecutor(1) as pool:
        future = pool.submit(arxiv.pace.wait_turn, stop=withdrawn.is_set)
        searching._WITHDRAW[future] = withdrawn
        out = searching.Outcome()
        out.carried.append(("heat pumps", arxiv, future))
        del out  # the unit failed before its last collect: nobody will collect it
        gc.collect()
        assert future.result(timeout=2) is False  # withdrawn: never given a turn


def test_a_429_holds_the_host_for_every_search_of_the_process(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault("arxiv", "status", status=429, headers={"Retry-After": "1"})
    with pytest.raises(RateLimited):
        ArxivSearch(standin_env["ARXIV_BASE_URL"], pace=0).search("heat pumps", max_results=2,
                                                          timeout=10)
    # Another provider object (another worker's, another run's): the same host, the same hold.
    ArxivSearch(standin_env["ARXIV_BASE_URL"], pace=0).search("heat pumps", max_results=2, timeout=10)
    [first, second] = [r["time"] for r in standin.requests_for("arxiv")]
    assert second - first >= 1.0 - JITTER_S


def test_arxiv_gets_one_connection_at_a_time(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    # A pace far shorter than an answer: only the one-connection rule can space them out.
    standin.set_latency(search=0.6)
    searches = [threading.Thread(target=ArxivSearch(standin_env["ARXIV_BASE_URL"], pace=0.01)
                                 .search, args=(f"heat pumps {i}",),
                                 kwargs={"max_results": 1, "timeout": 20}) for i in range(3)]
    for thread in searches:
        thread.start()
    for thread in searches:
        thread.join(30)
    gaps = _gaps(standin, "arxiv")
    assert len(gaps) == 2 and min(gaps) >= 0.6 - JITTER_S, gaps
    # Semantic Scholar sets no such rule: its requests may overlap.
    searches = [threading.Thread(target=SemanticScholarSearch(
        standin_env["SEMANTIC_SCHOLAR_BASE_URL"], pace=0.01).search, args=(f"heat pumps {i}",),
        kwargs={"max_results": 1, "timeout": 20}) for i in range(3)]
    for thread in searches:
        thread.start()
    for thread in searches:
        thread.join(30)
    assert len(_gaps(standin, "semanticscholar")) == 2
    assert min(_gaps(standin, "semanticscholar")) < 0.6 - JITTER_S


def test_a_runs_academic_searches_keep_to_the_pace(
    standin: StandinServer, http_runs: Runner
) -> None:
    # Units long enough for a few turns: at 0.3 s a unit sent one search (with the ping, the
    # two this needs), and under a busy suite it sometimes ended before its first turn.
    standin.set_latency(model=0.8, search=0.1)
    store, run_id = http_runs(preset="quick", search_pace=SCALE, **FEW_PAGES)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    _assert_paced(standin, "arxiv", least=2)
    _assert_paced(standin, "semanticscholar", least=2)
    # No academic search failed: those the run did not wait for were withdrawn, not sent.
    assert not [q for q in store.get_queries(run_id) if q.error]
    assert {q.provider for q in store.get_queries(run_id)} >= {"tavily", "arxiv"}


def test_two_runs_at_once_share_the_pace(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.set_latency(model=0.3, search=0.1)
    # The setting's way in for a process: its environment.
    config = http_runs.config({**http_runs.env, "DEEP_RESEARCH_SEARCH_PACE": str(SCALE)},
                              preset="quick", **FEW_PAGES)
    assert config.search_pace == SCALE
    run_ids: list[str] = []

    def one_run() -> None:
        run_ids.append(run_research(QUESTION, store=http_runs.store, config=config,
                                    credentials=http_runs.credentials))

    threads = [threading.Thread(target=one_run) for _ in range(2)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(300)
    assert len(run_ids) == 2
    for run_id in run_ids:
        run = http_runs.store.get_run(run_id)
        assert run is not None and run.status == "completed", run and run.error
    _assert_paced(standin, "arxiv", least=2)  # two pings at once, at least
    _assert_paced(standin, "semanticscholar", least=2)


def test_a_search_429_that_says_how_long_is_waited_out_not_failed(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("tavily", "hang", seconds=0)  # pre-flight's ping passes
    standin.add_fault("tavily", "status", times=2, status=429, headers={"Retry-After": "1"})
    store, run_id = http_runs(preset="quick", max_retries=0, **FEW_PAGES)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    tavily = [q for q in store.get_queries(run_id) if q.provider == "tavily"]
    assert tavily and not [q for q in tavily if q.error]  # with no retry left to use
    # Each search sent once, two of them twice (the 429, then the answer), and the ping.
    assert standin.count("tavily") == len(tavily) + 2 + 1
