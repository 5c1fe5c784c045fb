"""The one function of our own for a dead worker's runs (research/workers.py): a worker whose
beat stopped has its PENDING runs handed back to the queue by exactly one live worker, and a
worker taken for dead learns it at its next beat, so that it stops instead of executing a run
that another worker now has.

In-process, on the real engine: the dead worker's run is a real workflow, enqueued and then
left PENDING under the dead worker's executor id, as a SIGKILL leaves it (the SIGKILL itself
is tests/test_workers.py).
"""

from __future__ import annotations

import sqlite3
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from research import durable
from research.core.config import Credentials, WorkerSettings, build_config
from research.core.errors import ConfigError
from research.core.records import Run
from research.pipeline import create_run
from research.workers import DEAD_AFTER_S, beat, beats_engine, carry_on_dead_workers
from storage import Store


def _ran(log: list[str]) -> Any:
    def execute(run_id: str, *, store: Store, **_: Any) -> Run | None:
        log.append(run_id)
        store.set_run_status(run_id, "completed")
        return store.get_run(run_id)
    return execute


def _a_run_and_a_recording_worker(tmp_path: Path) -> tuple[str, list[str], durable.Worker]:
    """A new run, the list of runs executed, and a worker that records into it."""
    db = tmp_path / "r.db"
    with Store(db) as store:
        run_id = create_run(store, "Question?", build_config(env={}, preset="quick"))
    ran: list[str] = []
    return run_id, ran, durable.Worker(db, _ran(ran), lambda: Credentials.from_env({}), lambda: None)


def test_a_dead_workers_run_is_handed_back_once_and_the_dead_worker_is_fenced(tmp_path: Path) -> None:
    run_id, ran, worker = _a_run_and_a_recording_worker(tmp_path)
    durable.launch(worker, listen=False, executor_id="watcher")
    workflow_id = durable.enqueue(run_id, None, None, person="alice")
    jobs_db = tmp_path / "r-jobs.sqlite"
    conn = sqlite3.connect(jobs_db)
    with conn:  # what a worker killed mid-run leaves behind
        conn.execute("UPDATE workflow_status SET status = 'PENDING', executor_id = 'ghost' "
                     "WHERE workflow_uuid = ?", [workflow_id])
    conn.close()

    engine = beats_engine(durable.system_database_url(worker.db_path))
    beat(engine, "ghost", first=True)
    beat(engine, "alive", first=True)
    assert carry_on_dead_workers(engine) == []  # both beat just now: nobody is dead

    later = time.time() + DEAD_AFTER_S + 1
    results: list[list[str]] = []
    threads = [threading.Thread(
        target=lambda: results.append(carry_on_dead_workers(engine, now=later))) for _ in range(3)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(results) == 3
    assert [w for r in results for w in r] == [workflow_id]  # one claimant, once
    assert beat(engine, "ghost") is False  # the "dead" worker is told to stop
    [status] = durable.DBOS.list_workflows(workflow_ids=[workflow_id], load_input=False,
                                           load_output=False)
    assert status.status == "ENQUEUED" and status.queue_name == durable.QUEUE
    assert status.queue_partition_key == "alice"  # the person's limits still apply

    durable.launch(worker, listen=True, executor_id="alive")  # a live worker takes it
    deadline = time.monotonic() + 20
    while durable.is_active(run_id) and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ran == [run_id]
    with Store(worker.db_path) as store:
        assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]


def test_a_dead_workers_run_is_carried_on_well_within_the_promised_time() -> None:
    from research.workers import BEAT_S, CARRY_ON_WITHIN_S
    # silent for DEAD_AFTER_S, noticed at a live worker's next beat, taken at the next poll
    assert DEAD_AFTER_S + 2 * BEAT_S + durable.POLL_S < CARRY_ON_WITHIN_S / 2


def test_worker_settings_are_read_at_the_edge_with_plain_errors() -> None:
    assert WorkerSettings.from_env({}) == WorkerSettings()
    team = WorkerSettings.from_env({"DEEP_RESEARCH_WORKERS": "External",
                                    "DEEP_RESEARCH_WORKER_CONCURRENCY": "4",
                                    "DEEP_RESEARCH_JOBS_DB": "postgresql://db.example/research"})
    assert (team.mode, team.concurrency) == ("external", 4)
    assert durable.system_database_url(Path("x/r.db"), team.jobs_url) == "postgresql://db.example/research"
    assert durable.system_database_url("postgresql+psycopg://h/r") == "postgresql+psycopg://h/r"
    assert durable.system_database_url(Path("x/r.db")) == "sqlite:///x/r-jobs.sqlite"
    for env, named in (({"DEEP_RESEARCH_WORKERS": "cloud"}, "DEEP_RESEARCH_WORKERS"),
                       ({"DEEP_RESEARCH_WORKER_CONCURRENCY": "0"}, "DEEP_RESEARCH_WORKER_CONCURRENCY")):
        with pytest.raises(ConfigError, match=named):
            WorkerSettings.from_env(env)


def test_stop_ends_the_engines_threads_and_a_later_launch_takes_up_the_queue(tmp_path: Path) -> None:
    """`durable.stop()` (a test process moving on to tests without the queue calls it): the
    engine's polling threads end, and a run queued while it was stopped is executed once it
    is launched again."""
    run_id, ran, worker = _a_run_and_a_recording_worker(tmp_path)
    durable.launch(worker, listen=False, executor_id="watcher")
    durable.enqueue(run_id, None, None)
    durable.stop()
    deadline = time.monotonic() + 10
    while _engine_threads() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert _engine_threads() == []
    durable.stop()  # stopping a stopped engine is nothing
    durable.launch(worker, listen=True, executor_id="alive")
    deadline = time.monotonic() + 20
    while not ran and time.monotonic() < deadline:
        time.sleep(0.2)
    assert ran == [run_id]


def _engine_threads() -> list[str]:
    """The engine's queue and background threads alive in this process."""
    return [t.name for t in threading.enumerate() if t.is_alive()
            and ("queue" in t.name or t.name.startswith("dbos"))]
