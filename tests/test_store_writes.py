"""The store's hot writes (an event, a usage row, a research step with its sources) and the
one statement that inserts a step's sources, on both databases."""

from __future__ import annotations

from dataclasses import replace

from sqlalchemy import update

from storage import Store
from storage.records import Finding, Source
from storage.schema import steps


def test_hot_writes_round_trip_on_both_databases(db_target: str) -> None:
    """An event, usage and a research step and its rows read back intact."""
    with Store(db_target) as store:
        run_id = store.create_run("q", {})
        event_id = store.append_event({"run_id": run_id, "type": "note", "message": "m",
                                       "data": {"n": 1, "text": "ü"}})
        assert store.get_events(run_id)[0].id == event_id
        assert store.get_events(run_id)[0].data == {"n": 1, "text": "ü"}
        store.add_usage(run_id, "worker", "openai", "m", 10, 2, 0.5)
        store.add_usage(run_id, "worker", "openai", "m", 5, 1, 0.25)
        assert store.usage_totals(run_id).calls == 2 and store.usage_totals(run_id).tokens == 18
        store.start_step(run_id, "research:t1", kind="research", label="t1")
        source = Source("s1", "https://a.example/1", title="A", signals=("peer",))
        again = replace(source, id="s2")  # the same URL under another id: not stored twice
        inserted = store.complete_research_step(
            run_id, "research:t1", sources=[source, again],
            findings=[Finding(None, "c", ("s2", "s1"))], result={"kept": 1})
        assert inserted == ["s1"]
        assert [f.source_ids for f in store.get_findings(run_id)] == [("s1",)]
        [step] = store.get_steps(run_id)
        assert step.status == "done" and step.result == {"kept": 1} and step.source_count == 1
        assert store.get_sources(run_id)[0].signals == ("peer",)


def test_a_step_inserts_only_sources_the_run_lacks_each_once(db_target: str) -> None:
    """All of a step's sources go in one statement; which were stored is told per source:
    one the run has (by id or by URL) is not, nor a second one with the same id in the step."""
    with Store(db_target) as store:
        run_id = store.create_run("q", {})
        store.complete_research_step(run_id, "research:a", sources=[
            Source("old", "https://a.example/old")])
        twice = Source("new", "https://a.example/new")
        inserted = store.complete_research_step(run_id, "research:b", sources=[
            Source("old", "https://a.example/elsewhere"),    # a known id
            Source("moved", "https://a.example/old"),        # a known URL
            twice, replace(twice, url="https://a.example/other"),  # the same id twice
            Source("fresh", "https://a.example/fresh")])
        assert inserted == ["new", "fresh"]
        assert sorted(s.id for s in store.get_sources(run_id)) == ["fresh", "new", "old"]
        assert store.get_step(run_id, "research:b").source_count == 2  # type: ignore[union-attr]


def test_the_live_views_steps_keep_their_durations_as_floats(db_target: str) -> None:
    """On PostgreSQL the live panel's parts come back as JSON, where 2.0 reads as 2."""
    with Store(db_target) as store:
        run_id = store.create_run("q", {})
        store.start_step(run_id, "plan", kind="plan", label="Plan")
        store.finish_step(run_id, "plan")
        with store.transaction() as tx:  # test-only: a duration with no fraction
            tx.execute(update(steps).where(steps.c.run_id == run_id).values(duration_s=2.0))
        [step] = store.live_view(run_id, events=10).steps
        assert step.duration_s == 2.0 and isinstance(step.duration_s, float)
        assert store.get_steps(run_id) == [step]
