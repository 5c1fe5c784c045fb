"""Runs as durable jobs (issue 18, point 2): a killed dashboard's run is picked up again.

A real process runs the dashboard's job manager (research/durable.py, DBOS on SQLite files),
executing a real run against the stand-in; it is killed with SIGKILL while a research step is
in flight. A fresh process that only creates the job manager, as a restarted dashboard does,
must carry the run on by itself, with no Resume pressed: only the step in flight runs again,
nothing stored before the kill is lost or redone, and the result equals an uninterrupted run.
"""

from __future__ import annotations

import base64
import os
import pickle
import sqlite3
import subprocess
import sys
from pathlib import Path

from research.config import build_config
from research.pipeline import create_run
from storage import Store
from tests.standin import StandinServer
from tests.test_crash import (
    ONE_WORKER,
    ROOT,
    _assert_resumed_cleanly,
    _assert_whole_steps_only,
    _baseline,
    _integrity,
    _kill,
    _proc_died,
    _research_in_flight,
    _snapshot,
    _wait_for,
)

QUESTION = "How fast is wind power growing in Europe, and what holds it back?"

# The dashboard's side, in a process of its own: create the job manager (which launches the
# embedded worker and recovers this machine's unfinished runs), optionally resume one run as
# the Run page's button does, then wait until no run is left queued or executing.
DASHBOARD = """
import sys, time
from dashboard.jobs import JobManager
from research.config import Credentials
from dashboard.settings_files import current_env
jobs = JobManager(sys.argv[1])
if len(sys.argv) > 2:
    jobs.resume(sys.argv[2], Credentials.from_env(current_env()))
time.sleep(1.0)
while jobs.alive():
    time.sleep(0.2)
"""


def _dashboard(db: Path, env: dict[str, str], cwd: Path, name: str, *args: str) -> subprocess.Popen[bytes]:
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    full_env.update(env)
    full_env["PYTHONPATH"] = str(ROOT)
    with (cwd / f"{name}.out").open("wb") as out, (cwd / f"{name}.err").open("wb") as err:
        return subprocess.Popen([sys.executable, "-c", DASHBOARD, str(db), *args], cwd=cwd,
                                env=full_env, stdout=out, stderr=err, start_new_session=True)


def test_a_killed_dashboards_run_is_picked_up_by_the_engine_on_restart(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path
) -> None:
    db = tmp_path / "data" / "research.db"
    db.parent.mkdir()
    env = {**standin_env, **ONE_WORKER, "DEEP_RESEARCH_DB": str(db),
           "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "secrets.toml"),
           "DEEP_RESEARCH_SEARCH": "tavily"}
    config = build_config(env=env, SUBTOPIC_COUNT=3, SOURCES_PER_SUBTOPIC=5, SEARCHES_PER_SUBTOPIC=2,
                          REVIEW_CYCLES=0, MAX_ROUNDS=1, REPORT_MAX_WORDS=1500,
                          INCLUDE_ACADEMIC_SOURCES=False)
    with Store(db) as store:
        run_id = create_run(store, QUESTION, config)
    standin.set_delay(0.3)

    first = _dashboard(db, env, tmp_path, "first", run_id)
    try:
        _wait_for(db, _research_in_flight, "a research step in flight",
                  _proc_died(first, tmp_path / "first.err"))
    finally:
        _kill(first)
    standin.set_delay(0.0)

    _integrity(db)
    snap = _snapshot(db, run_id)
    _assert_whole_steps_only(db, run_id, snap)
    assert any(k.startswith("research:") for k in snap.done) and snap.sources

    second = _dashboard(db, env, tmp_path, "second")  # a restart: nobody presses Resume
    try:
        code = second.wait(90)
    finally:
        if second.poll() is None:
            _kill(second)
    err = (tmp_path / "second.err").read_text(errors="replace")
    assert code == 0 and "Traceback" not in err, err

    with Store(db) as store:
        stored = store.get_run(run_id).config  # type: ignore[union-attr]
    _assert_resumed_cleanly(db, run_id, snap, _baseline(QUESTION, stored, standin_env, tmp_path))
    # The engine stores what it is given: each job's only input is the run id, never a key.
    assert _job_inputs(db.parent / "research-jobs.sqlite") == [{"args": (run_id,), "kwargs": {}}]


def _job_inputs(jobs_db: Path) -> list[dict[str, object]]:
    """The inputs DBOS stored for each workflow (base64 of a pickle), decoded."""
    conn = sqlite3.connect(jobs_db)
    try:
        rows = conn.execute("SELECT inputs FROM workflow_input").fetchall()
    finally:
        conn.close()
    return [pickle.loads(base64.b64decode(raw)) for (raw,) in rows]  # noqa: S301 - our own file
