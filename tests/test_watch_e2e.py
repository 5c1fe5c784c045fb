"""Watch a topic, end to end (issue 36, point 5): a finished quick run over real HTTP to the
stand-in is watched daily; the job engine's schedule, driven by the test clock, starts real
updates (research/living/update.py) under the watcher's own keys and budget cap. While the
stand-in's world is unchanged the update finds nothing: nothing is sent and nothing is kept.
Once the world gained two pages and changed one figure, the update is kept as the watched
version and the watcher is told in one line with a link (Apprise's json:// to a local
receiver); the notification target never reaches the store or the exported report.
"""

from __future__ import annotations

import time
from collections.abc import Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from pathlib import Path

import pytest
from sqlalchemy import select

from research import Credentials, run_research
from research.core.config import build_config
from research.export.formats import export_run
from research.living import notify, watches
from research.living.changes import changes
from research.llm.pacing import forget_pacers
from research.runs import Runs
from storage import Store
from storage import watches as watchstore
from storage.schema import metadata
from tests.notify_receiver import Receiver, receiver
from tests.runs import QUESTION
from tests.standin import StandinServer
from tests.standin.pages import WORLD
from tests.store_files import migrated_copy

T0 = datetime(2026, 3, 2, 9, 0, tzinfo=UTC)
SECRET = "pw-watch-target-5e0c2a77"
BASE = "https://studio.example.org"
FILLER = ("The survey was carried out by independent assessors in towns and villages alike, and "
          "its method is set out in an appendix so that anyone can repeat it.")
NEW_PAGES = {
    "heat-pump-grant-uptake": ("Heat pump grant uptake", [
        "Applications for the national heat pump grant tripled in the last quarter, to 62,000 "
        "households.", FILLER, FILLER]),
    "heat-pump-noise-rules": ("Heat pump noise rules", [
        "New planning rules now allow outdoor heat pump units up to 42 decibels without a "
        "permit.", FILLER, FILLER]),
}


@dataclass
class Watched:
    store: Store
    runs: Runs
    first: str
    box: Receiver
    db: Path
    now: datetime = T0


@pytest.fixture(scope="module")
def watched(standin: StandinServer, tmp_path_factory: pytest.TempPathFactory
            ) -> Iterator[Watched]:
    standin.reset()
    forget_pacers()
    with receiver() as box, pytest.MonkeyPatch.context() as patch:
        env = {**standin.env(), "DEEP_RESEARCH_SEARCH_PACE": "0",
               notify.NOTIFY_KEY: box.target().replace("json://", f"json://me:{SECRET}@"),
               notify.BASE_URL_KEY: BASE}
        # The watcher's process settings: an update starts with this process's own keys,
        # as a worker's would (research/living/update.py).
        for name, value in env.items():
            patch.setenv(name, value)
        patch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path_factory.mktemp("secrets") / "s.toml"))
        db = migrated_copy(tmp_path_factory.mktemp("watch-e2e") / "research.sqlite3")
        credentials = Credentials.from_env(env)
        store = Store(db, secrets=credentials.secrets())
        first = run_research(QUESTION, store=store, config=build_config(
            env=env, preset="quick", fetch_timeout_s=5), credentials=credentials)
        assert store.get_run(first).status == "completed"  # type: ignore[union-attr]
        made = Watched(store, Runs(db, env=lambda: env, credentials=lambda: credentials,
                                   watch_clock=lambda: made.now), first, box, db)
        try:
            yield made
        finally:
            made.runs.close()
            store.close()
            WORLD.reset()
            standin.reset()


def _settled(world: Watched, watch_id: str, timeout: float = 180.0) -> watchstore.Watch:
    """The watch once the update the last tick started has ended and been settled (polled)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        found = watchstore.get_watch(world.store, watch_id)
        assert found is not None
        if found.pending_run_id is None:
            return found
        time.sleep(0.2)
    raise AssertionError("the watch's update did not end in time")


def test_a_watch_finds_nothing_then_the_changed_world_and_tells_only_then(
        watched: Watched, standin: StandinServer) -> None:
    world = watched
    watch = watches.watch(world.store, world.first, every="daily", now=T0, cost_cap=0.5)

    # The first tick a day later: an update runs, the world has not changed. Its model answers
    # come slowly, so the update is still running when it is looked at (on an idle machine a
    # quick update that finds nothing was settled before the next line read it).
    world.now = T0 + timedelta(days=1, minutes=1)
    standin.set_delay(0.5)
    try:
        world.runs.tick_watches()
        started = watchstore.get_watch(world.store, watch.id)
        assert started is not None and started.pending_run_id is not None
        update = world.store.get_run(started.pending_run_id)
        assert update is not None and update.config.get("max_cost_usd") == 0.5  # the watcher's cap
    finally:
        standin.set_delay(0.0)
    quiet = _settled(world, watch.id)
    assert quiet.run_id == world.first and quiet.updates_kept == 0
    assert quiet.last_result.startswith("Nothing new")
    assert world.store.get_run(started.pending_run_id) is None  # not kept
    assert [r.id for r in world.store.list_runs()] == [world.first]
    assert world.box.received == []  # not sent

    # The world gains two pages (what an update finds in them is tests/test_update_report.py's
    # concern); the next day's tick finds them.
    for page, (title, paragraphs) in NEW_PAGES.items():
        WORLD.publish(page, title, paragraphs)
    world.now = T0 + timedelta(days=2, minutes=2)
    world.runs.tick_watches()
    told = _settled(world, watch.id)
    assert told.run_id != world.first and told.updates_kept == 1
    found = changes(world.store, told.run_id)
    assert found is not None
    assert sorted({s.url.rsplit("/", 1)[-1] for c in found.added for s in c.sources}) == sorted(
        NEW_PAGES)
    got = world.box.wait_for(1)
    assert len(got) == 1
    message = got[0]["message"]
    assert message.startswith(f"Your watched topic changed ({found.count} claims since ")
    assert message.endswith(f"{BASE}/run?run={told.run_id}") and "\n" not in message
    assert told.next_at == watches.stamp(world.now + timedelta(days=1))

    # The target is a secret: not in any table, not in the exported report.
    for table in metadata.sorted_tables:
        assert SECRET not in repr(world.store.query(select(table))), table.name
    assert SECRET.encode() not in export_run(world.store, told.run_id, "md")
