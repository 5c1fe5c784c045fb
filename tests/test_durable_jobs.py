"""Runs as durable jobs (issue 18, point 2): a killed dashboard's run is picked up again.

A real process runs the dashboard's door to runs (research/runs/; DBOS on SQLite files),
executing a real run against the stand-in; it is killed with SIGKILL while a research step is
in flight. A fresh process that only creates the door to runs, as a restarted dashboard does,
must carry the run on by itself, with no Resume pressed: only the step in flight runs again,
nothing stored before the kill is lost or redone, and the result equals an uninterrupted run.
"""

from __future__ import annotations

import base64
import pickle
import sqlite3
from datetime import datetime
from pathlib import Path
from typing import Any

from research.core.config import build_config
from research.pipeline import create_run
from storage import Store
from tests.crash_helpers import (
    ONE_WORKER,
    assert_resumed_cleanly,
    assert_whole_steps_only,
    baseline,
    child_env,
    integrity,
    kill,
    proc_died,
    research_in_flight,
    snapshot,
    wait_for,
)
from tests.standin import StandinServer
from tests.warm_python import WarmProcess, WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How fast is wind power growing in Europe, and what holds it back?"

# The dashboard's side, in a process of its own: create the door to runs (which launches the
# embedded worker and recovers this machine's unfinished runs), optionally resume one run as
# the Run page's button does, then wait until no run is left queued or executing. It looks at
# the queue every 0.1 s rather than a dashboard's 0.5 s, so that the test waits less.
DASHBOARD = """
import sys, time
from research.runs import engine as durable
durable.POLL_S = 0.1
from research.runs import Runs
from research.core.config import Credentials
from dashboard.settings_files import current_env
jobs = Runs(sys.argv[1])
if len(sys.argv) > 2:
    jobs.resume(sys.argv[2], Credentials.from_env(current_env()))
deadline = time.monotonic() + 1.0  # an interrupted run is still PENDING: alive at once
while not jobs.alive() and time.monotonic() < deadline:
    time.sleep(0.05)
while jobs.alive():
    time.sleep(0.05)
"""


def _dashboard(python: WarmPython, db: Path, env: dict[str, str], cwd: Path, name: str,
               *args: str) -> WarmProcess:
    """The dashboard's side in a process (a session) of its own, output to files."""
    return python.spawn(["-c", DASHBOARD, str(db), *args], child_env(env), cwd,
                        cwd / f"{name}.out", cwd / f"{name}.err")


def test_a_killed_dashboards_run_is_picked_up_by_the_engine_on_restart(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
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
    standin.set_delay(0.15)  # slow enough to kill the process with a research step in flight

    first = _dashboard(warm_python, db, env, tmp_path, "first", run_id)
    try:
        wait_for(db, research_in_flight, "a research step in flight",
                  proc_died(first, tmp_path / "first.err"))
    finally:
        kill(first)
    standin.set_delay(0.0)

    integrity(db)
    snap = snapshot(db, run_id)
    assert_whole_steps_only(db, run_id, snap)
    assert any(k.startswith("research:") for k in snap.done) and snap.sources

    second = _dashboard(warm_python, db, env, tmp_path, "second")  # a restart: nobody presses Resume
    try:
        code = second.wait(90)
    finally:
        if second.poll() is None:
            kill(second)
    err = (tmp_path / "second.err").read_text(errors="replace")
    assert code == 0 and "Traceback" not in err, err

    with Store(db) as store:
        stored = store.get_run(run_id).config  # type: ignore[union-attr]
    assert_resumed_cleanly(db, run_id, snap, baseline(QUESTION, stored, standin_env, tmp_path))
    # The engine stores what it is given: each job's only input is the run id, never a key
    # (the watches' hourly tick, if the hour turned during the test, gets only its time).
    inputs = _job_inputs(db.parent / "research-jobs.sqlite")
    assert inputs.pop(WORKFLOW, None) == [{"args": (run_id,), "kwargs": {}}]
    assert set(inputs) <= {WATCH_WORKFLOW}
    assert all(len(i["args"]) == 2 and isinstance(i["args"][0], datetime) and i["args"][1] is None
               and not i["kwargs"] for i in inputs.get(WATCH_WORKFLOW, []))


# The engine's workflow names (research/runs/engine.py; not imported: it would start DBOS's imports).
WORKFLOW, WATCH_WORKFLOW = "research_run", "watch_tick"


def _job_inputs(jobs_db: Path) -> dict[str, list[dict[str, Any]]]:
    """The inputs DBOS stored for each workflow (base64 of a pickle), decoded, by workflow name."""
    conn = sqlite3.connect(jobs_db)
    try:
        rows = conn.execute("SELECT s.name, i.inputs FROM workflow_input i JOIN workflow_status s "
                            "ON s.workflow_uuid = i.workflow_uuid").fetchall()
    finally:
        conn.close()
    named: dict[str, list[dict[str, Any]]] = {}
    for name, raw in rows:
        named.setdefault(name, []).append(pickle.loads(base64.b64decode(raw)))  # noqa: S301 - ours
    return named
