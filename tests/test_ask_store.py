"""The store side of "Ask the report" (storage.conversations), on SQLite and PostgreSQL: the run's
own full-text index of its source passages, the kept questions and answers, and both dying
with the run."""

from __future__ import annotations

from storage import Store
from storage.conversations import add_turn, index_run, is_indexed, search_run, turns

PIECES = [
    ("s1", 0, "The average cost fell 12% between 2021 and 2023, reaching $300 per unit."),
    ("s1", 1, "Critics point out that the figures are self-reported by the installers."),
    ("s2", 0, "Spain accounted for 41% of new installations in 2023, up from 30%."),
]


def test_a_runs_passages_are_found_by_its_own_index_and_its_answers_are_kept(db_target: str) -> None:
    store = Store(db_target)
    try:
        run_id = store.create_run("How is heat pump adoption changing?", {})
        other = store.create_run("Another question?", {})
        assert not is_indexed(store, run_id)
        assert index_run(store, run_id, PIECES)
        assert not index_run(store, run_id, PIECES[:1])  # made once, even when asked twice
        assert index_run(store, other, [("x1", 0, "The average costs of another run's page.")])

        found = search_run(store, run_id, "What did the sources say about average costs?")
        assert [(p.source_id, p.seq) for p in found][:1] == [("s1", 0)]  # stemmed: costs ~ cost
        assert all(p.source_id != "x1" for p in found)  # only this run's passages
        assert [p.source_id for p in search_run(store, run_id, "What about Spain?")] == ["s2"]
        assert search_run(store, run_id, "What about the?") == []  # no searchable word
        assert search_run(store, run_id, 'NEAR("cost" OR) :* & | !') != None  # noqa: E711 - no syntax error

        first = add_turn(store, run_id, person="alice@example.org", question="Average cost?",
                         answer="It fell 12% [1].", status="answered",
                         details={"check": {"line": "1 of 1 claim checked"}}, cost_usd=0.001)
        add_turn(store, run_id, person="alice@example.org", question="Colour?",
                 answer="The sources of this report don't say.", status="not_in_sources",
                 details={})
        kept = turns(store, run_id)
        assert [t.id for t in kept][0] == first and [t.question for t in kept] == ["Average cost?", "Colour?"]
        assert kept[0].details["check"]["line"] == "1 of 1 claim checked"
        assert kept[0].person == "alice@example.org" and kept[1].status == "not_in_sources"
        assert turns(store, other) == []

        store.delete_run(run_id)  # the index and the conversation die with the run
        assert turns(store, run_id) == [] and not is_indexed(store, run_id)
        assert is_indexed(store, other)
    finally:
        store.close()
