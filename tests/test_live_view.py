"""The Run page's live panel reads the run in one go (`Store.live_view`), on both databases:
the same rows, in the same shapes, as the single-query methods it replaces."""

from __future__ import annotations

from sqlalchemy import delete

from research.core.records import Source
from storage import Store
from storage.schema import events


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
        with store.transaction():
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


def _event(store: Store, run_id: str, message: str) -> int:
    return store.append_event({"run_id": run_id, "type": "note", "message": message,
                               "data": {"m": message}})


def test_each_refresh_shows_the_last_events_as_a_fresh_read_does(db_target: str) -> None:
    """A refresh reads only the events written since the last one (the store keeps the tail
    each run showed): whatever was written in between, it shows what the single reads show."""
    store = Store(db_target)
    run_id = _busy_run(store)
    other = store.create_run("a third run", {})
    for written in (0, 1, 0, 3, 4, 5, 12, 2):  # nothing, a few, fewer than 5, more than 5
        for i in range(written):
            _event(store, run_id, f"new {written}.{i}")
            _event(store, other, "not this run's")
        view = store.live_view(run_id, events=5)
        assert view.events == store.last_events(run_id, 5)
        assert view.activity == store.latest_activity(run_id)
        assert view.activity is not None and view.events[-1].id == view.activity.last_event_id
        assert store.live_view(run_id, events=3).events == store.last_events(run_id, 3)
    assert [e.message for e in store.live_view(run_id, events=2).events] == ["new 2.0", "new 2.1"]
    store.close()


def test_a_tail_that_no_longer_matches_the_run_is_read_again(db_target: str) -> None:
    """Events are only ever appended; if some went missing all the same (a repair by hand),
    the run's count no longer adds up and the refresh reads the whole tail afresh."""
    store = Store(db_target)
    run_id = store.create_run("q", {})
    ids = [_event(store, run_id, f"e{i}") for i in range(6)]
    assert [e.id for e in store.live_view(run_id, events=4).events] == ids[2:]
    with store.transaction() as tx:
        tx.execute(delete(events).where(events.c.id.in_(ids[3:5])))
    ids.append(_event(store, run_id, "e6"))
    shown = [e.id for e in store.live_view(run_id, events=4).events]
    assert shown == [ids[1], ids[2], ids[5], ids[6]] == [e.id for e in store.last_events(run_id, 4)]
    store.delete_run(run_id)
    assert store.live_view(run_id, events=4) == store.live_view("no-such-run", events=4)
    store.close()


def test_a_refresh_inside_a_transaction_leaves_no_tail_behind(db_target: str) -> None:
    """Read inside a write, the tail holds rows that may be rolled back: it is not kept."""
    store = Store(db_target)
    run_id = store.create_run("q", {})
    kept = _event(store, run_id, "kept")
    assert [e.id for e in store.live_view(run_id, events=5).events] == [kept]
    try:
        with store.transaction():
            _event(store, run_id, "rolled back")
            assert len(store.live_view(run_id, events=5).events) == 2
            raise RuntimeError("undo")
    except RuntimeError:
        pass
    later = _event(store, run_id, "later")
    assert [e.message for e in store.live_view(run_id, events=5).events] == ["kept", "later"]
    assert store.live_view(run_id, events=5).events[-1].id == later
    store.close()
