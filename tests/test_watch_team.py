"""A team's watches run on its workers and belong to their owners (issue 36, point 3).

A dashboard that only enqueues (`DEEP_RESEARCH_WORKERS=external`, no keys) holds Ada's watch
of her finished run; a real `python -m research worker` process, with its own keys and
notification settings, executes the schedule's tick, starts the update under Ada's name and
executes it against the stand-in, whose web gained two pages. The update is kept as Ada's
run, and Ada, not the install, is told at her own target, from the worker's settings.
"""

from __future__ import annotations

import sqlite3
from datetime import UTC, datetime
from pathlib import Path

from research import Credentials
from research.core.config import build_config
from research.living import notify, watches
from research.pipeline import create_run, execute
from research.runs import Runs
from storage import Store
from storage import watches as watchstore
from tests.crash_helpers import kill
from tests.notify_receiver import receiver
from tests.standin import StandinServer
from tests.standin.pages import WORLD
from tests.test_watch_e2e import NEW_PAGES
from tests.test_workers import KEY_NAMES, _setup, _wait_until, _worker
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

ADA = "ada@example.org"
QUESTION = "How are heat pump grants used?"


def _workflows(db: Path, name: str) -> list[tuple[str, str, str | None]]:
    """(status, executor id, partition) of the engine's workflows called `name`."""
    conn = sqlite3.connect(db.with_name(db.stem + "-jobs.sqlite"), timeout=30)
    try:
        return conn.execute("SELECT status, executor_id, queue_partition_key FROM "
                            "workflow_status WHERE name = ?", [name]).fetchall()
    finally:
        conn.close()


def test_a_teams_watch_is_updated_on_a_worker_as_its_owners_run_and_told_to_its_owner(
        standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
        warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    standin.reset()
    db, worker_env, dashboard_env = _setup(standin_env, tmp_path)
    credentials = Credentials.from_env(standin_env)
    with Store(db, secrets=credentials.secrets()) as store:  # Ada's finished run
        first = create_run(store, QUESTION, build_config(
            env={**standin_env, "DEEP_RESEARCH_SEARCH": "tavily"}, preset="quick",
            fetch_timeout_s=5), person=ADA)
        assert execute(first, store=store, credentials=credentials).status == "completed"
    with receiver() as box:
        worker_env = {**worker_env, notify.target_key(ADA): box.target("ada"),
                      notify.NOTIFY_KEY: box.target("install")}
        dashboard = Runs(db, env=lambda: dashboard_env)  # external workers: it only enqueues
        worker = None
        try:
            assert dashboard.external
            watch = watches.watch(dashboard.store, first, every="daily", person=ADA,
                                  now=datetime(2026, 1, 5, tzinfo=UTC))  # due long ago
            for page, (title, paragraphs) in NEW_PAGES.items():
                WORLD.publish(page, title, paragraphs)
            worker = _worker(warm_python, worker_env, tmp_path, "worker")
            dashboard.tick_watches()  # the schedule's tick, now: the worker executes it

            def settled() -> bool:  # and the worker has let go of the update
                found = watchstore.get_watch(dashboard.store, watch.id)
                return found is not None and found.updates_kept == 1 \
                    and found.pending_run_id is None and not dashboard.alive()
            _wait_until(settled, timeout=180)
            got = box.wait_for(1)
        finally:
            if worker is not None:
                kill(worker)
            dashboard.close()
            WORLD.reset()
            standin.reset()
    kept = watchstore.get_watch(Store(db), watch.id)
    assert kept is not None
    update = Store(db).get_run(kept.run_id)
    assert update is not None and update.person == ADA and update.parent_run_id == first
    [(status, executor, partition)] = [w for w in _workflows(db, "research_run")
                                       if w[2] == ADA]
    assert status == "SUCCESS" and executor.startswith("worker-")
    ticks = _workflows(db, "watch_tick")
    assert ticks and all(t[1].startswith("worker-") for t in ticks if t[0] == "SUCCESS")
    assert box.paths == ["/ada"] and got[0]["message"].startswith("Your watched topic changed")
    assert all(name in worker_env for name in KEY_NAMES)  # the keys were the worker's own
