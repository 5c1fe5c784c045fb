"""Watch a topic (issue 36, point 3): a finished run is updated daily, weekly or monthly by a
durable scheduled job on the job engine, on the watcher's own budget cap; its person is told
only when something changed beyond the watch's threshold, and an update that found nothing
is neither sent nor kept.

The schedule's clock is the test's: the engine's tick (research/runs/engine.py) hands its time
to `watches.look`, and the door to runs takes a `watch_clock` that stands in for it, so no test
waits a day. Here runs are executed by a small executor on the real engine, and the update and
its "how much changed" are stood in for (a run that builds on the watched one, a number the
test sets), so each rule is checked in a fraction of a second; tests/test_watch_e2e.py does
the same with real updates over HTTP to the stand-in."""

from __future__ import annotations

from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from pathlib import Path
from typing import Any

import pytest

from research.core.config import Credentials, build_config
from research.core.records import Run
from research.living import notify, watches
from research.runs import Runs
from storage import Store
from storage import watches as watchstore
from tests.notify_receiver import Receiver, receiver

CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
BASE = "https://studio.example.org"


def _complete(run_id: str, *, store: Store, **_: Any) -> Run | None:
    """Completes every run, except an update of a question about something flaky."""
    run = store.get_run(run_id)
    assert run is not None
    store.set_run_status(run_id, "running")
    if run.parent_run_id and "flaky" in run.question:
        store.set_run_status(run_id, "failed", error="the search service stopped answering")
    else:
        store.set_run_status(run_id, "completed")
    return store.get_run(run_id)


class World:
    """One door to runs for the module, its test clock, the updates it started and how much
    the next update will have changed."""

    def __init__(self, db: Path, box: Receiver) -> None:
        self.now = T0
        self.box = box
        self.env = {notify.NOTIFY_KEY: box.target(), notify.BASE_URL_KEY: BASE}
        self.jobs = Runs(db, executor=_complete, env=lambda: self.env,
                         watch_clock=lambda: self.now)
        self.store = self.jobs.store
        self.started: list[dict[str, Any]] = []
        self.updates: list[str] = []
        self.changed = 0.0

    def finished_run(self, question: str, person: str | None = None) -> str:
        run_id = self.jobs.start(question, build_config(env={}, preset="quick"), CREDS,
                                 person=person)
        assert self.jobs.wait(run_id, 20)
        self.box.received.clear()  # its own "Completed" (tests/test_notify.py)
        self.box.paths.clear()
        return run_id

    def start_update(self, runs: Runs, run_id: str, *, person: str | None,
                     cost_cap: float | None) -> str:
        base = runs.store.get_run(run_id)
        assert base is not None
        self.started.append({"of": run_id, "person": person, "cost_cap": cost_cap})
        update = runs.start(base.question, build_config(env={}, preset="quick"), CREDS,
                            parent_run_id=run_id, person=person)
        self.updates.append(update)
        return update

    def settled(self, watch_id: str) -> watchstore.Watch:
        """The watch once its last update has ended (it is settled where it executed, before
        the engine lets go of the run)."""
        assert self.jobs.wait(self.updates[-1], 20)
        after = watchstore.get_watch(self.store, watch_id)
        assert after is not None
        return after


@pytest.fixture(scope="module")
def world(tmp_path_factory: pytest.TempPathFactory) -> Iterator[World]:
    with receiver() as box:
        made = World(tmp_path_factory.mktemp("watch") / "r.db", box)
        yield made
        made.jobs.close()


@pytest.fixture
def fresh(world: World, monkeypatch: pytest.MonkeyPatch) -> World:
    world.now, world.started, world.updates, world.changed = T0, [], [], 0.0
    world.box.received.clear()
    world.box.paths.clear()
    for old in watchstore.list_watches(world.store):
        watchstore.remove_watch(world.store, old.id)
    monkeypatch.setattr(watches, "start_update", world.start_update)
    monkeypatch.setattr(watches, "how_much_changed",
                        lambda store, run_id: (world.changed / 10, int(world.changed)))
    return world


def test_the_engines_schedule_driven_by_the_test_clock_starts_the_update_once_a_day_has_passed(
        fresh: World) -> None:
    world = fresh
    base = world.finished_run("How is heat pump adoption changing?")
    watch = watches.watch(world.store, base, every="daily", now=T0, cost_cap=0.25)
    assert watch.next_at == watches.stamp(T0 + timedelta(days=1))

    world.now = T0 + timedelta(hours=23)
    world.jobs.tick_watches()  # the engine's scheduled workflow, run now
    assert world.started == []

    world.now = T0 + timedelta(days=1, minutes=5)
    world.changed = 2
    world.jobs.tick_watches()
    assert world.started == [{"of": base, "person": None, "cost_cap": 0.25}]
    after = world.settled(watch.id)
    assert after.pending_run_id is None
    assert after.next_at == watches.stamp(world.now + timedelta(days=1))
    assert after.run_id != base and after.updates_kept == 1  # the update is the watched version
    got = world.box.wait_for(1)
    assert len(got) == 1
    finished = world.store.get_run(base).finished_at  # type: ignore[union-attr]
    assert got[0]["message"].startswith(f"Your watched topic changed (2 claims since {finished[:10]})")
    assert got[0]["message"].endswith(f"{BASE}/run?run={after.run_id}")

    world.jobs.tick_watches()  # the same moment again: nothing more is due
    assert len(world.started) == 1


def test_a_watch_that_found_nothing_new_sends_nothing_and_keeps_nothing(fresh: World) -> None:
    world = fresh
    base = world.finished_run("What changed in EU battery rules?")
    watch = watches.watch(world.store, base, every="weekly", now=T0, threshold=0.0)
    world.now = T0 + timedelta(days=7)
    started = watches.look(world.jobs, world.now, world.env)
    assert len(started) == 1
    after = world.settled(watch.id)
    assert world.store.get_run(started[0]) is None  # the empty update is not kept
    assert after.run_id == base and after.updates_kept == 0
    assert after.last_result.startswith("Nothing new")
    assert world.box.received == []  # its run has ended and been settled: nothing was sent


def test_a_change_within_the_threshold_counts_as_nothing(fresh: World) -> None:
    world = fresh
    base = world.finished_run("How cheap is solar now?")
    watch = watches.watch(world.store, base, every="daily", now=T0, threshold=0.3)
    world.now, world.changed = T0 + timedelta(days=1), 3  # 3 claims of 10 changed: 0.3
    (update,) = watches.look(world.jobs, world.now, world.env)
    assert world.settled(watch.id).run_id == base
    assert world.store.get_run(update) is None and world.box.received == []


def test_a_paused_watch_is_skipped_and_resumes_one_period_later_and_a_stopped_one_is_gone(
        fresh: World) -> None:
    world = fresh
    base = world.finished_run("Where is hydrogen used?")
    watch = watches.watch(world.store, base, every="monthly", now=T0)
    assert watchstore.set_state(world.store, watch.id, "paused")
    world.now = T0 + timedelta(days=40)
    assert watches.look(world.jobs, world.now, world.env) == []
    assert watches.resume_watch(world.store, watch.id, now=world.now)
    resumed = watchstore.get_watch(world.store, watch.id)
    assert resumed is not None and resumed.state == "active"
    assert resumed.next_at == watches.stamp(datetime(2026, 5, 11, 9, 0, tzinfo=UTC))
    assert watchstore.remove_watch(world.store, watch.id)
    assert watchstore.list_watches(world.store) == []
    assert world.store.get_run(base) is not None  # stopping a watch keeps its runs


def test_a_teams_watches_belong_to_their_owners(fresh: World) -> None:
    world = fresh
    base = world.finished_run("Ada's topic?", person="ada@example.org")
    with pytest.raises(ValueError, match="no such run"):
        watches.watch(world.store, base, every="daily", now=T0, person="bob@example.org")
    watch = watches.watch(world.store, base, every="daily", now=T0, person="ada@example.org")
    assert watchstore.list_watches(world.store, person="bob@example.org") == []
    assert not watchstore.set_state(world.store, watch.id, "paused", person="bob@example.org")
    assert not watchstore.remove_watch(world.store, watch.id, person="bob@example.org")
    world.now, world.changed = T0 + timedelta(days=1), 1
    (update,) = watches.look(world.jobs, world.now, world.env)
    assert world.started[0]["person"] == "ada@example.org"
    world.settled(watch.id)
    run = world.store.get_run(update)
    assert run is not None and run.person == "ada@example.org"  # queued and kept as hers
    assert world.box.received == []  # she set no targets: the install's are not hers


def test_of_two_processes_looking_at_once_only_one_takes_a_due_watch(fresh: World) -> None:
    world = fresh
    base = world.finished_run("Who takes it?")
    watch = watches.watch(world.store, base, every="daily", now=T0)
    later = watches.stamp(T0 + timedelta(days=2))
    assert watchstore.claim_due(world.store, watch.id, seen_next_at=watch.next_at, next_at=later)
    assert not watchstore.claim_due(world.store, watch.id, seen_next_at=watch.next_at,
                                    next_at=later)


def test_only_a_finished_run_can_be_watched_and_months_end_on_their_last_day(
        fresh: World) -> None:
    world = fresh
    queued = world.store.create_run("Not yet?", build_config(env={}).model_dump(mode="json"))
    with pytest.raises(ValueError, match="finished"):
        watches.watch(world.store, queued, every="daily", now=T0)
    jan31 = datetime(2026, 1, 31, 8, 0, tzinfo=UTC)
    assert watches.next_time("monthly", jan31) == datetime(2026, 2, 28, 8, 0, tzinfo=UTC)
    assert watches.next_time("weekly", jan31) == datetime(2026, 2, 7, 8, 0, tzinfo=UTC)


def test_a_workers_tick_starts_updates_on_the_engine_it_launched_and_leaves_it_running(
        fresh: World) -> None:
    """`python -m research worker` looks at the watches through a door attached to its own
    engine (research/runs/worker.py): no second launch, and closing it stops nothing."""
    world = fresh
    base = world.finished_run("What do workers do?")
    watch = watches.watch(world.store, base, every="daily", now=T0)
    attached = Runs(world.jobs.db_path, attach=True)
    try:
        world.now, world.changed = T0 + timedelta(days=1), 1
        (update,) = watches.look(attached, world.now, world.env)
    finally:
        attached.close()
    assert world.settled(watch.id).run_id == update  # executed by the engine still running
    assert world.finished_run("And after?")  # the module's door still works


def test_a_failed_update_is_not_kept_and_its_watcher_is_told_why(fresh: World) -> None:
    world = fresh
    base = world.finished_run("Is this flaky service reliable?")
    watch = watches.watch(world.store, base, every="daily", now=T0)
    world.now = T0 + timedelta(days=1)
    (update,) = watches.look(world.jobs, world.now, world.env)
    after = world.settled(watch.id)
    assert after.run_id == base and world.store.get_run(update) is None
    assert after.last_result == "The last update failed: the search service stopped answering"
    got = world.box.wait_for(1)
    assert [g["message"] for g in got] == [
        f"The update of your watched topic failed: “Is this flaky service reliable?” "
        f"{BASE}/run?run={base}"]
    assert after.next_at == watches.stamp(world.now + timedelta(days=1))  # tried again tomorrow


def test_a_watch_that_could_never_update_is_refused_at_once(fresh: World) -> None:
    world = fresh
    base = world.finished_run("Too dear?")
    with pytest.raises(ValueError, match="cost cap must be between"):
        watches.watch(world.store, base, every="daily", now=T0, cost_cap=20000)
    assert watchstore.list_watches(world.store) == []
