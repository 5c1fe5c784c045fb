"""Research units read each wave's pages as soon as the wave has found them (issue 11, point 5).

The first wave's pages are fetched while the worker writes its second wave of queries, and a
batch of pages is scored once it is read; the candidates chosen are the same as if every
search had finished first. The latency benchmark's lower bound follows the same schedule
(`bench.latency.unit_chain`).
"""

from __future__ import annotations

import time
from typing import Any

from bench.latency import Call, Latency, unit_chain
from research.phases.gather.searching import opposing_query
from tests.runs import Runner
from tests.standin import StandinServer
from tests.standin.server import _task_of


def test_first_wave_pages_are_read_while_the_second_wave_is_written(
    standin: StandinServer, runs: Runner
) -> None:
    # Writing queries takes the model half a second (the other calls answer at once: their
    # speed proves nothing here), so a page read while the second wave is written shows.
    for api in ("openai", "gemini"):
        standin.add_fault(api, "hang", times=100, seconds=0.5, task="SearchQueries")
    store, run_id = runs(preset="quick", MAX_PARALLEL_WORKERS=1, SUBTOPIC_COUNT=3)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    plan = store.get_plan(run_id) or []
    first = next(s for s in plan if s.id == "t1")
    tag = f"<subtopic>{first.title}</subtopic>"
    calls = [r for r in standin.requests
             if r["api"] in ("openai", "gemini") and _task_of(r["api"], r["json"]) == "SearchQueries"
             and tag in str(r["json"])]
    assert len(calls) >= 2  # the first wave's queries, then the refining wave's
    second = sorted(calls, key=lambda r: r["time"])[1]
    pages = [r["time"] for r in standin.requests_for("pages")]
    assert any(t < second["answered"] for t in pages), "no page was read before the second wave"
    # The other side's search was under way before the first wave's queries were written.
    opposing = opposing_query(first.title)
    searched = [r["time"] for r in standin.requests
                if r["api"] in ("tavily", "web") and opposing in str(r.get("json"))]
    first_call = min(r["time"] for r in calls)
    assert searched and min(searched) <= first_call + 0.5


def test_the_bench_bound_of_a_unit_follows_its_reading_schedule() -> None:
    lat = Latency(model=1.0, search=0.5, page=0.3, tokens_per_second=80)
    queries = [Call(0.0, 2.0, "SearchQueries", "", 2.0), Call(3.0, 5.0, "SearchQueries", "", 2.0)]
    searches = [(2.1, "a"), (5.1, "b")]  # each query call's wave
    scoring, findings = [1.5, 2.5], 5.0
    # Only the first wave found kept pages: the findings wait for the second query call
    # (2 + 0.5 + 2 + 0.5 + 5), not for a page read after it.
    assert unit_chain(queries, searches, scoring, findings, 1, lat, {"a"}) == (10.0, 3)
    # A kept page of the second wave: read and scored after it.
    chain, calls = unit_chain(queries, searches, scoring, findings, 1, lat, {"a", "b"})
    assert (round(chain, 6), calls) == (11.8, 4)
    # The slowest scoring batch after the quickest possible page (a search, a page).
    assert unit_chain([], [(0.0, "x")], [9.0], 1.0, 1, lat, set()) == (10.8, 2)


def test_a_budget_stop_in_the_second_wave_keeps_the_pages_the_first_wave_read(
    standin: StandinServer, runs: Runner
) -> None:
    """The first wave's pages are read and scored while the second wave's queries are
    written: when the budget refuses that call, those pages are kept, never lost."""
    from research.core.errors import BudgetStop
    from tests.fakes import FakeModel

    class StopsAtTheSecondWave(FakeModel):
        def complete(self, messages: Any, **kwargs: Any) -> Any:
            text = "\n".join(m.content for m in messages)
            if kwargs.get("schema_name") == "SearchQueries" and "Titles found so far" in text:
                deadline = time.monotonic() + 20  # let the first wave's scoring go first
                while time.monotonic() < deadline and not any(
                        "RelevanceScores" in str(r["json"]) for r in standin.requests
                        if r["api"] == "openai"):
                    time.sleep(0.02)
                raise BudgetStop("the token cap was reached (a test's stand-in for the meter)")
            return super().complete(messages, **kwargs)

    store, run_id = runs(preset="quick", MAX_PARALLEL_WORKERS=1, SUBTOPIC_COUNT=3,
                         model=StopsAtTheSecondWave(standin, "openai", "gpt-5-mini"))
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    first = [s for s in store.get_steps(run_id) if s.key == "research:t1"][0]
    assert first.status == "done" and first.result.get("stopped_by_budget")
    kept = [s for s in store.get_sources(run_id, with_text=False) if s.subtopic_id == "t1"]
    assert kept and any(s.relevance > 0 for s in kept)  # scored before the stop, and kept
