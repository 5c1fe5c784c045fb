"""The Run page's live panel reads the run in one go (`Store.live_view`), on both databases:
the same rows, in the same shapes, as the single-query methods it replaces."""

from __future__ import annotations

from research.core.records import Source
from storage import Store


def _busy_run(store: Store) -> str:
    other = store.create_run("another run", {})
    run_id = store.create_run("q", {"depth": 2})
    store.start_step(run_id, "plan", kind="plan", label="Plan")
    store.complete_research_step(
        run_id, "plan", sources=[Source("s1", "https://a.example.org/1", text="x")])
    store.start_step(run_id, "research:t1", kind="research", label="t1")
    for i in range(30):  # interleaved with another run's events, as runs write at once
        store.append_event({"run_id": run_id if i % 3 else other, "type": "source_found",
                            "message": f"event {i}", "data": {"i": i}})
    store.add_usage(run_id, "worker", "openai", "m", 100, 10, 0.25)
    store.add_usage(run_id, "writer", "openai", "m", 50, 5, 0.5)
    return run_id


def test_the_live_view_is_what_the_single_reads_return(db_target: str) -> None:
    store = Store(db_target)
    run_id = _busy_run(store)
    view = store.live_view(run_id, events=5)
    assert view.run == store.get_run(run_id) and view.run is not None
    assert view.run.config == {"depth": 2}  # JSON decoded on both databases
    assert view.steps == store.get_steps(run_id) and len(view.steps) == 2
    assert view.activity == store.latest_activity(run_id)
    assert view.activity.events == 20 and view.activity.sources == 1
    assert view.usage == store.usage_totals(run_id) and view.usage.calls == 2
    assert view.events == store.get_events(run_id)[-5:] == store.last_events(run_id, 5)
    assert [e.message for e in view.events] == [f"event {i}" for i in (23, 25, 26, 28, 29)]
    assert view.events[-1].data == {"i": 29}
    store.close()


def test_the_live_view_of_a_missing_run_is_empty(db_target: str) -> None:
    store = Store(db_target)
    view = store.live_view("no-such-run", events=200)
    assert view.run is None and view.steps == [] and view.events == []
    assert view.activity is None and view.usage.calls == 0
    store.close()


def test_an_event_written_inside_a_transaction_joins_it(db_target: str) -> None:
    """On PostgreSQL an event outside a transaction is one autocommit statement; inside one it
    must join it (and vanish with it on rollback), as every nested write does."""
    store = Store(db_target)
    run_id = store.create_run("q", {})
    try:
        with store._write():
            store.append_event({"run_id": run_id, "type": "x", "message": "rolled back"})
            store.heartbeat(run_id, "me")
            raise RuntimeError("undo")
    except RuntimeError:
        pass
    first = store.append_event({"run_id": run_id, "type": "x", "message": "kept"})
    assert [e.message for e in store.get_events(run_id)] == ["kept"]
    assert store.get_run(run_id).owner is None  # type: ignore[union-attr]
    assert store.live_view(run_id, events=10).events[-1].id == first
    store.close()
