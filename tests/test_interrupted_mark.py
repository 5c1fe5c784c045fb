"""A full disk never leaves a run "running" (issue 40, point 4): the CLI's interrupted mark is
itself a write to the full disk, so it is tried again rather than once."""

from __future__ import annotations

import errno
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from research.cli import _Session, main
from storage import DISK_FULL_MESSAGE, Store
from tests.cli_helpers import RunCli


def test_the_interrupted_mark_is_tried_again_until_the_full_disk_lets_it_land(
    tmp_db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    store = Store(tmp_db)
    run_id = store.create_run("How do heat pumps perform in cold climates?", {})
    store.set_run_status(run_id, "running")
    real = store.set_run_status
    refusals = iter(range(3))

    def full_for_a_while(*args: Any, **kwargs: Any) -> None:
        if next(refusals, None) is not None:  # the first three writes find the disk full
            raise OSError(errno.ENOSPC, "No space left on device")
        real(*args, **kwargs)

    monkeypatch.setattr(store, "set_run_status", full_for_a_while)
    monkeypatch.setattr("research.cli.MARK_RETRY_S", 0.0)
    session = _Session()
    session.store, session.run_id = store, run_id
    session.mark_interrupted(DISK_FULL_MESSAGE)
    run = Store(tmp_db).get_run(run_id)
    assert run is not None and run.status == "interrupted" and run.error == DISK_FULL_MESSAGE


def test_a_run_left_running_by_a_gone_process_is_interrupted_with_its_reason_at_the_next_start(
    tmp_db: Path, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    # The process that ran it died with the disk full: its run is still "running".
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store = Store(tmp_db)
    run_id = store.create_run("How do heat pumps perform in cold climates?", {})
    store.set_run_status(run_id, "running")
    store.heartbeat(run_id, f"pid:{gone.pid}@{socket.gethostname()}")
    alive = store.create_run("A run this machine's live process runs", {})
    store.set_run_status(alive, "running")
    store.heartbeat(alive, f"pid:{os.getpid()}@{socket.gethostname()}")

    main(["--resume", "no-such-run", "--db", str(tmp_db)])  # any command: the start puts it right

    run = Store(tmp_db).get_run(run_id)
    assert run is not None and run.status == "interrupted"
    assert run.error and "stopped" in run.error and "Resume" in run.error
    assert Store(tmp_db).get_run(alive).status == "running"  # type: ignore[union-attr]


def test_resume_says_why_a_run_left_running_by_a_gone_process_stopped(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "r.db"
    env = {**standin_env, "DEEP_RESEARCH_DB": str(db)}
    first = run_cli(["Heat pump adoption in Europe", "--preset", "quick"], env, tmp_path)
    assert first.returncode == 0, first.stderr
    run_id = first.stdout.strip().splitlines()[-1]
    gone = subprocess.Popen([sys.executable, "-c", "pass"])
    gone.wait()
    store = Store(db)
    with store.transaction() as conn:  # test-only surgery: its process died mid-run
        conn.execute("DELETE FROM steps WHERE run_id = ? AND kind IN ('deliver')", [run_id])
        conn.execute("DELETE FROM reports WHERE run_id = ?", [run_id])
        conn.execute("UPDATE runs SET status = 'running', error = NULL WHERE id = ?", [run_id])
    store.heartbeat(run_id, f"pid:{gone.pid}@{socket.gethostname()}")
    resumed = run_cli(["--resume", run_id, "--out", str(tmp_path / "r.md")], env, tmp_path)
    assert resumed.returncode == 0, resumed.stderr
    assert "it was interrupted: The process running this research stopped" in resumed.stderr
