"""Workers anywhere (issue 18, points 3 and 4): `python -m research worker` processes execute
queued runs; the CLI only enqueues (`--detach`) and watches (`--wait RUN_ID`).

Real processes, sharing the store and the engine's SQLite system database on this machine,
run real research against the stand-in. The CLI never holds a key: only the workers' own
settings do, and the engine's database stores none. A worker killed with SIGKILL mid-run
has its run carried on by the other live worker within CARRY_ON_WITHIN_S, from its last
finished step, with the same result as an uninterrupted run.

The processes run on a shorter clock than a deployment's (QUICK_CLOCK): the same code, with
the liveness beat, the time after which a silent worker is dead, the queue's polling and the
CLI's watching all shorter, so that the tests do not sit out the real intervals (a dead
worker is noticed after 15 s in production). The relation between them is kept.
"""

from __future__ import annotations

import signal
import sqlite3
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from research.runs.worker import CARRY_ON_WITHIN_S as REAL_CARRY_ON_WITHIN_S
from research.runs.worker import DEAD_AFTER_S as REAL_DEAD_AFTER_S
from storage import Store
from tests.crash_helpers import (
    ONE_WORKER,
    assert_resumed_cleanly,
    assert_whole_steps_only,
    baseline,
    child_env,
    kill,
    proc_died,
    research_in_flight,
    snapshot,
    wait_for,
)
from tests.standin import StandinServer
from tests.test_crash import CLI_ARGS
from tests.test_durable_jobs import _job_inputs
from tests.warm_python import WarmProcess, WarmPython, patched_module, warm_python  # noqa: F401 - a fixture

QUESTION = "How do heat pumps perform in cold climates?"
KEY_NAMES = ("OPENAI_API_KEY", "GEMINI_API_KEY", "TAVILY_API_KEY")
# About a quarter of the production intervals, with more beats per dead-worker limit than
# there (10 rather than 7.5: a live worker on a busy two-core machine must never be taken for
# dead, which the test would see as a fenced survivor).
DEAD_AFTER_S = 4.0
QUICK_CLOCK = {
    "research.runs.worker.BEAT_S": 0.4,
    "research.runs.worker.DEAD_AFTER_S": DEAD_AFTER_S,
    "research.runs.engine.POLL_S": 0.2,
    "research.runs.jobs.WATCH_S": 0.2,
}
# Carried on within the same share of the dead-worker limit as in production.
CARRY_ON_WITHIN_S = REAL_CARRY_ON_WITHIN_S * DEAD_AFTER_S / REAL_DEAD_AFTER_S


def _env(base: dict[str, str], extra: dict[str, str]) -> dict[str, str]:
    return child_env({**base, **extra})


def _spawn(python: WarmPython, args: list[str], env: dict[str, str], cwd: Path,
           name: str) -> WarmProcess:
    """`python -m research ARGS` on the QUICK_CLOCK, in a session of its own; output in
    NAME.out and NAME.err."""
    return python.spawn(patched_module("research", args, QUICK_CLOCK), env, cwd,
                        cwd / f"{name}.out", cwd / f"{name}.err")


def _worker(python: WarmPython, env: dict[str, str], cwd: Path, name: str) -> WarmProcess:
    return _spawn(python, ["worker", "--concurrency", "2"], env, cwd, name)


@dataclass(frozen=True)
class Finished:
    """A command that ran to its end: its exit code and output."""

    returncode: int
    stdout: str
    stderr: str


def _cli(python: WarmPython, args: list[str], env: dict[str, str], cwd: Path,
         name: str) -> Finished:
    proc = _spawn(python, args, env, cwd, name)
    try:
        code = proc.wait(240)
    finally:
        if proc.poll() is None:
            kill(proc)
    return Finished(code, (cwd / f"{name}.out").read_text(), (cwd / f"{name}.err").read_text())


def _setup(standin_env: dict[str, str], tmp_path: Path) -> tuple[Path, dict[str, str], dict[str, str]]:
    """The store, a worker's environment (with keys) and the CLI's (external workers, no key)."""
    db = tmp_path / "data" / "research.db"
    db.parent.mkdir()
    shared = {**ONE_WORKER, "DEEP_RESEARCH_DB": str(db), "DEEP_RESEARCH_SEARCH": "tavily",
              "DEEP_RESEARCH_WORKERS": "external",
              "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "no-secrets.toml")}
    worker_env = _env(standin_env, shared)
    cli_env = _env({k: v for k, v in standin_env.items() if k not in KEY_NAMES}, shared)
    return db, worker_env, cli_env


def _wait_until(ready: Callable[[], bool], timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert time.monotonic() < deadline, "timed out"
        time.sleep(0.05)


def _jobs_db(db: Path) -> Path:
    return db.with_name(db.stem + "-jobs.sqlite")


def _workflows(db: Path) -> list[tuple[str, str, str]]:
    """(workflow id, status, executor id) of every run's workflow, as the engine stored them."""
    conn = sqlite3.connect(_jobs_db(db), timeout=30)
    try:
        return conn.execute("SELECT workflow_uuid, status, executor_id FROM workflow_status "
                            "WHERE name = 'research_run'").fetchall()
    finally:
        conn.close()


def _system_database_text(db: Path) -> bytes:
    """Every byte of the engine's database files."""
    return b"".join(p.read_bytes() for p in db.parent.glob(_jobs_db(db).name + "*"))


def test_the_cli_enqueues_detached_and_waits_while_a_worker_with_its_own_keys_executes(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    db, worker_env, cli_env = _setup(standin_env, tmp_path)
    detached = _cli(warm_python, [QUESTION, *CLI_ARGS, "--detach"], cli_env, tmp_path, "detach")
    assert detached.returncode == 0, detached.stderr
    run_id = detached.stdout.strip().splitlines()[-1]
    assert f"--wait {run_id}" in detached.stderr
    out = tmp_path / "report.md"
    waiting = _spawn(warm_python, ["--wait", run_id, "--out", str(out)], cli_env, tmp_path, "wait")
    worker = None
    try:
        _wait_until(lambda: b"is queued: next of this person" in (tmp_path / "wait.err").read_bytes())
        worker = _worker(warm_python, worker_env, tmp_path, "worker")  # only now does anyone execute it
        code = waiting.wait(240)
        err_text = (tmp_path / "wait.err").read_text()
        assert code == 0, err_text + (tmp_path / "worker.err").read_text()
        assert (tmp_path / "wait.out").read_text().strip().splitlines()[-1] == run_id
        assert "Executive summary" in out.read_text() and "[1]" in out.read_text()
        assert "[worker]" in err_text  # progress came from the run's events
        missing = _cli(warm_python, ["--wait", "no-such-run"], cli_env, tmp_path, "missing")
        assert missing.returncode == 2 and "no-such-run" in missing.stderr
    finally:
        if waiting.poll() is None:
            waiting.kill()
        if worker is not None:
            kill(worker)
    [(workflow_id, status, executor)] = _workflows(db)
    assert workflow_id.startswith(f"{run_id}:") and status == "SUCCESS"
    assert executor.startswith("worker-")
    # The engine stores the job's inputs: the run id only, and no key anywhere in its files.
    assert _job_inputs(_jobs_db(db)).get("research_run") == [{"args": (run_id,), "kwargs": {}}]
    everything = _system_database_text(db)
    for name in KEY_NAMES:
        assert standin_env[name].encode() not in everything


def test_a_killed_workers_run_is_carried_on_by_another_worker_from_its_last_finished_step(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    # silent for DEAD_AFTER_S, noticed at a live worker's next beat, taken at the next poll
    assert DEAD_AFTER_S + 2 * QUICK_CLOCK["research.runs.worker.BEAT_S"] \
        + QUICK_CLOCK["research.runs.engine.POLL_S"] < CARRY_ON_WITHIN_S / 2
    db, worker_env, cli_env = _setup(standin_env, tmp_path)
    standin.set_delay(0.15)  # slow enough to kill a worker with a research step in flight
    workers = {name: _worker(warm_python, worker_env, tmp_path, name) for name in ("w1", "w2")}
    try:
        detached = _cli(warm_python, [QUESTION, *CLI_ARGS, "--detach"], cli_env, tmp_path, "detach")
        assert detached.returncode == 0, detached.stderr
        run_id = detached.stdout.strip().splitlines()[-1]
        wait_for(db, research_in_flight, "a research step in flight",
                 proc_died(workers["w1"], tmp_path / "w1.err"))
        [(_, status, executor)] = _workflows(db)
        assert status == "PENDING"
        doomed = next(n for n, p in workers.items() if f"-{p.pid}-" in executor)
        survivor = next(n for n in workers if n != doomed)
        kill(workers[doomed])
        killed_at = time.monotonic()
        snap = snapshot(db, run_id)
        assert_whole_steps_only(db, run_id, snap)
        standin.set_delay(0.0)

        carried_by = None
        while time.monotonic() - killed_at < CARRY_ON_WITHIN_S and carried_by is None:
            [(_, status, now_executor)] = _workflows(db)
            if now_executor != executor and status in ("PENDING", "SUCCESS"):
                carried_by = now_executor
                print(f"carried on {time.monotonic() - killed_at:.1f} s after the kill")
            time.sleep(0.1)
        assert carried_by is not None and f"-{workers[survivor].pid}-" in carried_by, \
            (tmp_path / f"{survivor}.err").read_text()

        out = tmp_path / "report.md"
        waited = _cli(warm_python, ["--wait", run_id, "--out", str(out)], cli_env, tmp_path, "wait")
        assert waited.returncode == 0, waited.stderr
        assert workers[survivor].poll() is None  # alive, not fenced off
    finally:
        for proc in workers.values():
            if proc.poll() is None:
                kill(proc)
    [(_, status, _)] = _workflows(db)
    assert status == "SUCCESS"
    with Store(db) as store:
        stored = store.get_run(run_id).config  # type: ignore[union-attr]
    assert_resumed_cleanly(db, run_id, snap, baseline(QUESTION, stored, standin_env, tmp_path))


def test_ctrl_c_while_waiting_stops_watching_and_leaves_the_queued_run_alone(
    standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    db, _, cli_env = _setup(standin_env, tmp_path)  # no worker: the run stays queued
    detached = _cli(warm_python, [QUESTION, *CLI_ARGS, "--detach"], cli_env, tmp_path, "detach")
    assert detached.returncode == 0, detached.stderr
    run_id = detached.stdout.strip().splitlines()[-1]
    waiting = _spawn(warm_python, ["--wait", run_id], cli_env, tmp_path, "wait")
    deadline = time.monotonic() + 60
    while b"is queued" not in (tmp_path / "wait.err").read_bytes() and time.monotonic() < deadline:
        time.sleep(0.2)
    waiting.send_signal(signal.SIGINT)
    assert waiting.wait(30) == 130
    err_text = (tmp_path / "wait.err").read_text()
    assert "Stopped watching" in err_text and f"--wait {run_id}" in err_text
    assert "Traceback" not in err_text
    with Store(db) as store:
        assert store.get_run(run_id).status == "queued"  # type: ignore[union-attr]
    [(_, status, _)] = _workflows(db)
    assert status == "ENQUEUED"
