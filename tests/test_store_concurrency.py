"""Many writers, nothing lost, on both databases: 8 runs writing events, sources and usage at
once while 4 dashboards poll what the Run page reads, each tailing one run's events."""

from __future__ import annotations

import threading
import time
from typing import Any

from research.core.records import Finding, Query, Source
from storage import Store

WRITERS, READERS, STEPS, EVENTS_PER_STEP, SOURCES_PER_STEP = 8, 4, 6, 10, 5


def _write_run(store: Store, run_id: str, n: int) -> None:
    """What a research run writes: step starts, events, usage, and whole research steps."""
    store.set_run_status(run_id, "running")
    for step in range(STEPS):
        key = f"research:t{step}"
        store.start_step(run_id, key, kind="research", label=key)
        for e in range(EVENTS_PER_STEP):
            store.append_event({"run_id": run_id, "type": "source_found", "step": key,
                                "message": f"w{n} s{step} e{e}", "data": {"e": e}})
        store.add_usage(run_id, "worker", "openai", "m", 100, 10, 0.001)
        store.heartbeat(run_id, f"writer-{n}")
        store.complete_research_step(
            run_id, key, sources=[Source(f"w{n}-{step}-{k}", f"https://w{n}.org/{step}/{k}",
                                         text="body " * 200) for k in range(SOURCES_PER_STEP)],
            findings=[Finding(None, f"claim {step}", (f"w{n}-{step}-0",))],
            queries=[Query(None, "q", "p", 5)])
    store.set_run_status(run_id, "completed")


def _poll(store: Store, run_id: str, done: threading.Event, seen: list[int],
          shown: list[tuple[list[int], int, int]]) -> int:
    """The Run page's live panel, back to back; `seen` collects the tailed event ids, `shown`
    each refresh's last events (ids) with the run's newest event id and event count."""
    polls = 0
    while True:
        finished = done.is_set()  # read before the poll: the last poll sees everything
        store.get_run(run_id)
        store.get_steps(run_id)
        store.latest_activity(run_id)
        seen += [e.id for e in store.get_events(run_id, after_id=seen[-1] if seen else 0)]
        view = store.live_view(run_id, events=20)  # what the panel reads now, in one go
        tail = [e.id for e in view.events if e.run_id == run_id]
        assert view.run is not None and len(tail) == len(view.events) and tail == sorted(tail)
        known = set(seen)  # an event the tail shows below the last one seen was not skipped
        assert [i for i in tail if seen and i <= seen[-1] and i not in known] == []
        assert view.activity is not None
        shown.append((tail, view.activity.last_event_id, view.activity.events))
        polls += 1
        if finished:
            return polls
        time.sleep(0.01)


def test_eight_writers_and_four_pollers_lose_nothing(db_target: str) -> None:
    store = Store(db_target)
    run_ids = [store.create_run(f"run {n}", {}) for n in range(WRITERS)]
    errors: list[BaseException] = []
    done = threading.Event()
    seen: list[list[int]] = [[] for _ in range(READERS)]
    shown: list[list[tuple[list[int], int, int]]] = [[] for _ in range(READERS)]
    polls: list[int] = []

    def guarded(target: Any, *args: Any) -> None:
        try:
            result = target(*args)
            if isinstance(result, int):
                polls.append(result)
        except BaseException as exc:  # noqa: BLE001 - collected and asserted below
            errors.append(exc)

    writers = [threading.Thread(target=guarded, args=(_write_run, store, rid, n))
               for n, rid in enumerate(run_ids)]
    readers = [threading.Thread(target=guarded, args=(_poll, store, run_ids[i], done, seen[i], shown[i]))
               for i in range(READERS)]
    for thread in readers + writers:
        thread.start()
    for thread in writers:
        thread.join(timeout=300)
    done.set()
    for thread in readers:
        thread.join(timeout=60)

    assert errors == []
    assert min(polls) > 3, "the pollers should have been polling while the runs wrote"
    for run_id in run_ids:
        assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
        assert store.count_sources(run_id) == STEPS * SOURCES_PER_STEP
        assert len(store.get_events(run_id)) == STEPS * EVENTS_PER_STEP
        assert store.usage_totals(run_id).calls == STEPS
        assert len(store.get_findings(run_id)) == STEPS
        assert [s.status for s in store.get_steps(run_id)] == ["done"] * STEPS
    for i in range(READERS):  # every tail saw every event of its run once, in order
        ids = [e.id for e in store.get_events(run_ids[i])]
        assert seen[i] == ids
        for tail, last_id, count in shown[i]:  # each refresh: the last 20 as its counts say
            upto = [n for n in ids if n <= last_id]
            assert (tail, count) == (upto[-20:], len(upto))
    store.close()
