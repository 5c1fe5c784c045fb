"""The job manager: background runs, several at once, crash handling, interrupted runs."""

from __future__ import annotations

import os
import socket
import threading
from pathlib import Path
from typing import Any

from dashboard.estimate import estimate
from dashboard.jobs import JobManager, status_of
from dashboard.views import tail_events
from research.core.config import Credentials, build_config
from research.core.records import Run
from storage import Store

CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})


def _fake_execute(release: threading.Event):
    def execute(run_id: str, *, store: Store, **_: Any) -> Run | None:
        store.set_run_status(run_id, "running")
        release.wait(10)
        store.set_run_status(run_id, "completed")
        return store.get_run(run_id)
    return execute


def test_runs_execute_in_background_threads_several_at_once(tmp_path: Path) -> None:
    release = threading.Event()
    jobs = JobManager(tmp_path / "r.db", executor=_fake_execute(release))
    config = build_config(env={}, preset="quick")
    a = jobs.start("First question?", config, CREDS)
    b = jobs.start("Second question?", config, CREDS)
    assert jobs.is_alive(a) and jobs.is_alive(b)
    assert set(jobs.alive()) == {a, b}
    release.set()
    assert jobs.wait(a, 10) and jobs.wait(b, 10)
    store = Store(tmp_path / "r.db")
    assert {store.get_run(a).status, store.get_run(b).status} == {"completed"}  # type: ignore[union-attr]


def test_a_crashing_run_ends_failed_with_a_readable_message(tmp_path: Path) -> None:
    def boom(run_id: str, **_: Any) -> dict:
        raise RuntimeError("disk on fire sk-test-0123456789abcdef")

    jobs = JobManager(tmp_path / "r.db", executor=boom)
    run_id = jobs.start("Question?", build_config(env={}), CREDS)
    jobs.wait(run_id, 10)
    run = Store(tmp_path / "r.db").get_run(run_id)
    assert run.status == "failed"
    assert "disk on fire" in run.error and "sk-test-0123456789abcdef" not in run.error
    assert "disk on fire" in (jobs.crash(run_id) or "")


def test_runs_left_running_by_a_dead_server_become_interrupted_and_resumable(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    run_id = store.create_run("Question?", build_config(env={}).model_dump(mode="json"))
    store.set_run_status(run_id, "running")  # no heartbeat: its process is gone
    release = threading.Event()
    release.set()
    jobs = JobManager(tmp_path / "r.db", executor=_fake_execute(release))
    assert jobs.interrupted_at_start == [run_id]
    assert store.get_run(run_id).status == "interrupted"  # type: ignore[union-attr]
    jobs.resume(run_id, CREDS)
    jobs.wait(run_id, 10)
    assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]


def test_queued_run_nobody_executes_shows_as_interrupted() -> None:
    queued = Run(id="r1", question="q", status="queued")
    assert status_of(queued, alive=False) == "interrupted"
    assert status_of(queued, alive=True) == "queued"
    assert status_of(None, alive=False) == "missing"


def test_event_tail_reads_only_the_last_events_of_interleaved_runs(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    a = store.create_run("a", {})
    b = store.create_run("b", {})
    for i in range(900):
        store.append_event({"run_id": a if i % 3 else b, "type": "x", "message": str(i)})
    events = tail_events(store, b, n=200)
    assert len(events) == 200
    assert events[-1].message == "897" and events[-1].type == "x"


def test_estimate_grows_with_depth() -> None:
    quick = estimate(build_config(env={}, preset="quick"))
    deep = estimate(build_config(env={}, preset="exhaustive"))
    assert 0 < quick.searches < deep.searches
    assert quick.model_calls < deep.model_calls
    assert 0 < quick.cost_usd < deep.cost_usd
    assert quick.seconds < deep.seconds


def test_a_run_owned_by_a_dead_local_process_is_interrupted_at_once(tmp_path: Path) -> None:
    import subprocess
    import sys

    from dashboard.jobs import owner_is_dead

    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True)
    dead_owner = f"pid:{gone.stdout.strip()}@{socket.gethostname()}"
    assert owner_is_dead(dead_owner)
    assert not owner_is_dead(f"pid:{os.getpid()}@{socket.gethostname()}")
    assert not owner_is_dead("pid:1@another-host")
    store = Store(tmp_path / "j.db")
    run_id = store.create_run("q", {})
    store.set_run_status(run_id, "running")
    store.heartbeat(run_id, dead_owner)  # a fresh heartbeat, but its process is gone
    manager = JobManager(tmp_path / "j.db", stale_after_s=3600)
    assert manager.interrupted_at_start == [run_id]
    assert store.get_run(run_id).status == "interrupted"  # type: ignore[union-attr]
