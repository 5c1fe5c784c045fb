"""The other side (issue 14, point 4): each subtopic also searches for opposing evidence
(criticism, failures, contrary results); SEARCH_OTHER_SIDE turns it off."""

from __future__ import annotations

from research.phases.gather.searching import opposing_query
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer


def _run(runs: Runner, **overrides: object) -> tuple[Store, str]:
    store, run_id, _ = runs.completed(preset="quick", **overrides)
    return store, run_id


def test_the_opposing_query_names_the_subtopic_and_the_other_side() -> None:
    query = opposing_query("Running costs\nof heat pumps")
    assert query.startswith("Running costs of heat pumps ") and "criticism" in query
    assert opposing_query("  ") == ""


def test_every_subtopic_searches_the_other_side_on_every_provider(
    standin: StandinServer, runs: Runner
) -> None:
    before = len(standin.requests_for("tavily"))
    store, run_id = _run(runs)
    plan = store.get_plan(run_id) or []
    queries = store.get_queries(run_id)
    providers = {q.provider for q in queries}
    for sub in plan:
        opposing = [q for q in queries if q.subtopic_id == sub.id
                    and q.query == opposing_query(sub.title)]
        assert {q.provider for q in opposing} == providers, sub.title
        assert all(q.error is None for q in opposing)
    # The stand-in's search saw each of them once.
    sent = [str(r) for r in standin.requests_for("tavily")[before:]]
    assert all(sum(opposing_query(sub.title) in r for r in sent) == 1 for sub in plan)


def test_the_constant_turns_it_off(
    standin: StandinServer, runs: Runner
) -> None:
    store, run_id = _run(runs, SEARCH_OTHER_SIDE=False)
    assert store.get_queries(run_id)
    assert not any("criticism failures contrary" in q.query for q in store.get_queries(run_id))
