"""What the crash, durable-jobs and worker tests share: killing a process, watching the store
from outside it, and checking what a resume left behind against an uninterrupted run
(`baseline`: the same for every kill point and database, so it runs once per configuration
and test process).
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import time
from collections import Counter
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from research.core.config import Credentials, ResearchConfig
from research.core.records import Step
from research.pipeline import create_run, execute
from storage import Store

ROOT = Path(__file__).resolve().parent.parent
ONE_WORKER = {"DEEP_RESEARCH_MAX_PARALLEL_WORKERS": "1"}
WAIT_S = 45.0
SETTINGS_PREFIXES = ("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_")
Steps = dict[str, Step]
Db = Path | str  # a SQLite file, or a PostgreSQL URL


class Process(Protocol):
    """A `subprocess.Popen`, or a child of the warm fork server (tests/warm_python.py)."""

    pid: int
    returncode: int | None

    def poll(self) -> int | None: ...

    def wait(self, timeout: float | None = None) -> int: ...


# --- processes ------------------------------------------------------------------------------

def child_env(env: dict[str, str]) -> dict[str, str]:
    """This process's environment without any of the app's settings or keys, plus `env`."""
    full = {k: v for k, v in os.environ.items() if not k.startswith(SETTINGS_PREFIXES)}
    full.update(env)
    full["PYTHONPATH"] = str(ROOT)
    return full


def kill(proc: Process) -> None:
    """SIGKILL the whole process group: no handler, no cleanup, no final commit."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(15)
    assert proc.returncode == -signal.SIGKILL


def proc_died(proc: Process, err: Path) -> Callable[[], str | None]:
    """A check for `wait_for`: how the process ended, or None while it runs."""
    def check() -> str | None:
        if proc.poll() is None:
            return None
        return f"exit {proc.returncode}: {err.read_text(errors='replace')[-2000:]}"
    return check


def wait_for(db: Db, ready: Callable[[Steps], bool], what: str,
             alive: Callable[[], str | None], timeout: float = WAIT_S) -> str:
    """Poll the database (as another process would) until `ready(steps)`; returns the run id.

    `alive()` returns a description of the process's death (then we stop waiting), or None.
    """
    store = Store(db)
    deadline = time.monotonic() + timeout
    try:
        while time.monotonic() < deadline:
            died = alive()
            if died:
                raise AssertionError(f"the process ended before {what}: {died}")
            runs = store.list_runs(limit=2)
            if runs:
                assert len(runs) == 1, "one run per database in these tests"
                steps = {s.key: s for s in store.get_steps(runs[0].id)}
                if ready(steps):
                    return str(runs[0].id)
            time.sleep(0.02)
    finally:
        store.close()
    raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}")


def wait_status(db: Db, run_id: str, status: str, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with Store(db) as store:
        while (run := store.get_run(run_id)) is not None and run.status != status:
            assert time.monotonic() < deadline, f"the run is {run.status}, not {status}: {run.error}"
            time.sleep(0.1)


def research_in_flight(steps: Steps) -> bool:
    research = {k: s.status for k, s in steps.items() if k.startswith("research:")}
    return "done" in research.values() and "running" in research.values()


# --- what the database holds ----------------------------------------------------------------

def integrity(db: Db) -> None:
    """SQLite's own checks on the file as the killed process left it (WAL and all).
    (PostgreSQL rolls a dead connection's transaction back and enforces its keys itself.)"""
    if isinstance(db, str) and db.startswith("postgresql://"):
        return
    conn = sqlite3.connect(db)
    try:
        assert conn.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA quick_check").fetchall() == [("ok",)]
        assert conn.execute("PRAGMA foreign_key_check").fetchall() == []
    finally:
        conn.close()


@dataclass(frozen=True)
class Snapshot:
    """What was durably stored at the moment of the kill."""

    steps: Steps
    sources: dict[str, tuple[str, str, str]]  # id -> (canonical url, step key, subtopic)
    last_event_id: int

    @property
    def done(self) -> Steps:
        return {k: s for k, s in self.steps.items() if s.status == "done"}


def snapshot(db: Db, run_id: str) -> Snapshot:
    with Store(db) as store:
        steps = {s.key: s for s in store.get_steps(run_id)}
        sources = {s.id: (s.canonical_url, s.step_key, s.subtopic_id)
                   for s in store.get_sources(run_id, with_text=False)}
        events = store.get_events(run_id)
    return Snapshot(steps, sources, max((e.id for e in events), default=0))


def assert_whole_steps_only(db: Db, run_id: str, snap: Snapshot) -> None:
    """After the kill: every stored source belongs to a finished step, none twice."""
    assert len(snap.sources) == len({url for url, _, _ in snap.sources.values()})
    half_done = {key for _, key, _ in snap.sources.values()} - set(snap.done)
    assert not half_done, f"sources of unfinished steps were stored: {half_done}"
    in_flight = [k for k, s in snap.steps.items() if s.status in ("running", "retrying")]
    with Store(db) as store:
        assert store.get_run(run_id).status == "running"  # type: ignore[union-attr]
        for table in ("findings", "queries"):
            rows = store.query(  # test-only read of raw rows
                f"SELECT DISTINCT step_key FROM {table} WHERE run_id = :run", {"run": run_id})
            keys = {r["step_key"] for r in rows}
            assert not keys & set(in_flight), f"{table} of an unfinished step were stored"


def _duplicates(db: Db, run_id: str) -> list[Any]:
    with Store(db) as store:
        return store.query(  # test-only query
            "SELECT canonical_url, count(*) AS n FROM sources WHERE run_id = :run"
            " GROUP BY canonical_url HAVING count(*) > 1", {"run": run_id})


def _outcome(store: Store, run_id: str) -> dict[str, Any]:
    """The parts of a finished run that must not depend on whether it was interrupted."""
    sources = store.get_sources(run_id, with_text=False)
    return {
        "urls": {s.canonical_url for s in sources},
        "placed": {(s.id, s.subtopic_id) for s in sources},
        "queries": Counter((q.step_key, q.query, q.provider) for q in store.get_queries(run_id)),
        "findings": Counter((f.step_key, f.kind) for f in store.get_findings(run_id)),
        "drafts": [d.version for d in store.get_drafts(run_id)],
        "reviews": [r.cycle for r in store.get_reviews(run_id)],
        "steps": sorted(s.key for s in store.get_steps(run_id)),
    }


# --- the uninterrupted run ------------------------------------------------------------------

_BASELINES: dict[str, dict[str, Any]] = {}


def baseline(question: str, config: dict[str, Any], env: dict[str, str],
             tmp_path: Path) -> dict[str, Any]:
    """The same question and configuration, run once without interruption (once per test
    process: the configuration holds the stand-in's address, which is the process's own)."""
    key = json.dumps([question, config], sort_keys=True)
    if key not in _BASELINES:
        with Store(tmp_path / "baseline.db") as store:
            run_id = create_run(store, question, ResearchConfig(**config))
            run = execute(run_id, store=store, credentials=Credentials.from_env(env))
            assert run.status == "completed", run.error
            _BASELINES[key] = _outcome(store, run_id)
    return _BASELINES[key]


def _attempts_after(key: str, kills: Sequence[Snapshot]) -> int:
    """How many attempts a step has once run again after `kills`: one more than it had at the
    last kill that caught it in flight (each resume starts it again, once), else one."""
    in_flight = [s.steps[key].attempts for s in kills if key in s.steps and key not in s.done]
    return in_flight[-1] + 1 if in_flight else 1


def assert_resumed_cleanly(db: Db, run_id: str, kills: Snapshot | Sequence[Snapshot],
                           expected: dict[str, Any]) -> None:
    """Completed; nothing lost, duplicated or redone; the same result as no crash at all.
    `kills`: what was stored at each kill, in order (a run killed, resumed, killed again...)."""
    kills = [kills] if isinstance(kills, Snapshot) else list(kills)
    integrity(db)
    assert _duplicates(db, run_id) == []
    with Store(db) as store:
        run = store.get_run(run_id)
        assert run is not None and run.status == "completed", run and run.error
        assert store.get_report(run_id) is not None
        steps = {s.key: s for s in store.get_steps(run_id)}
        sources = {s.id: (s.canonical_url, s.step_key, s.subtopic_id)
                   for s in store.get_sources(run_id, with_text=False)}
        started = [(e.id, e.step) for e in store.get_events(run_id) if e.type == "step_started"]
        outcome = _outcome(store, run_id)

    assert all(s.status == "done" for s in steps.values()), steps
    for n, snap in enumerate(kills):
        # No source lost: everything stored before the kill is still there, unchanged.
        lost = {sid: row for sid, row in snap.sources.items() if sources.get(sid) != row}
        assert not lost, f"sources lost or changed after kill {n + 1}: {lost}"
        # No step done twice: a step finished before the kill kept its attempts and times,
        # and no later process started it again.
        for key, before in snap.done.items():
            after = steps[key]
            assert (after.attempts, after.started_at, after.finished_at) == (
                before.attempts, before.started_at, before.finished_at), key
            assert before.attempts == _attempts_after(key, kills[:n]), key
        restarted = {step for event_id, step in started if event_id > snap.last_event_id}
        assert not restarted & set(snap.done), f"finished steps ran again: {restarted & set(snap.done)}"
    # A step in flight at a kill ran exactly once more; every other step once.
    for key, after in steps.items():
        assert after.attempts == _attempts_after(key, kills), key
    # The same end result as a run that was never interrupted.
    assert outcome["urls"] == expected["urls"]
    assert outcome == expected
