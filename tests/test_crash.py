"""Crashes: SIGKILL in the middle of a run, then resume (issue 5, point 6).

A real process is killed with SIGKILL at a known point: `python -m research` while it plans,
researches, writes, reviews or verifies claims, and `streamlit run app.py` while its job
manager researches (a restarted dashboard picks its run up by itself). After each kill the database must pass SQLite's integrity checks and hold
only whole steps; resuming must finish the run without losing, duplicating or redoing
anything, and end with the same sources, queries, findings and drafts as an uninterrupted run
of the same question and configuration.

Where to kill is made deterministic with the stand-in server: a `hang` fault holds the one
model call of the phase we want to interrupt (plan, writer, review, audit), and a small delay
on every API answer keeps a research step in flight long enough to catch it. One research
worker at a time (MAX_PARALLEL_WORKERS=1) makes the set of sources reproducible.

The command-line crashes run at every kill point on SQLite and on a PostgreSQL server too
(`pg_url`; skipped with the reason where PostgreSQL cannot start, failed under
DEEP_RESEARCH_REQUIRE_POSTGRES=1): a killed process's open transaction is rolled back by the
server.
"""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
import time
from collections import Counter
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from research.config import Credentials, ResearchConfig, build_config
from research.pipeline import create_run, execute
from research.records import Step
from storage import Store
from tests.browser_helpers import ARTIFACTS, CHROMIUM, StreamlitServer, wait_idle
from tests.standin import StandinServer
from tests.standin.server import _task_of

ROOT = Path(__file__).resolve().parent.parent
QUESTION = "How do heat pumps perform in cold climates?"
CLI_ARGS = ["--preset", "quick", "--subtopics", "3", "--sources", "5", "--reviews", "1"]
ONE_WORKER = {"DEEP_RESEARCH_MAX_PARALLEL_WORKERS": "1"}
WAIT_S = 45.0
Steps = dict[str, Step]
Db = Path | str  # a SQLite file, or a PostgreSQL URL


# --- helpers: processes ------------------------------------------------------------------

def _spawn_cli(args: list[str], env: dict[str, str], cwd: Path, name: str) -> subprocess.Popen[bytes]:
    """`python -m research ...` in its own process group, output to files (never a full pipe)."""
    full_env = {k: v for k, v in os.environ.items()
                if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    full_env.update(env)
    full_env["PYTHONPATH"] = str(ROOT)
    full_env["DEEP_RESEARCH_SECRETS_FILE"] = str(cwd / "no-secrets.toml")
    with (cwd / f"{name}.out").open("wb") as out, (cwd / f"{name}.err").open("wb") as err:
        return subprocess.Popen([sys.executable, "-m", "research", *args], cwd=cwd, env=full_env,
                                stdout=out, stderr=err, start_new_session=True)


def _kill(proc: subprocess.Popen[Any]) -> None:
    """SIGKILL the whole process group: no handler, no cleanup, no final commit."""
    os.killpg(proc.pid, signal.SIGKILL)
    proc.wait(15)
    assert proc.returncode == -signal.SIGKILL


def _wait_for(db: Db, ready: Callable[[Steps], bool], what: str,
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


def _wait_status(db: Db, run_id: str, status: str, *, timeout: float) -> None:
    deadline = time.monotonic() + timeout
    with Store(db) as store:
        while (run := store.get_run(run_id)) is not None and run.status != status:
            assert time.monotonic() < deadline, f"the run is {run.status}, not {status}: {run.error}"
            time.sleep(0.1)


def _proc_died(proc: subprocess.Popen[bytes], err: Path) -> Callable[[], str | None]:
    def check() -> str | None:
        if proc.poll() is None:
            return None
        return f"exit {proc.returncode}: {err.read_text(errors='replace')[-2000:]}"
    return check


# --- helpers: what the database holds -----------------------------------------------------

def _integrity(db: Db) -> None:
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


def _snapshot(db: Db, run_id: str) -> Snapshot:
    with Store(db) as store:
        steps = {s.key: s for s in store.get_steps(run_id)}
        sources = {s.id: (s.canonical_url, s.step_key, s.subtopic_id)
                   for s in store.get_sources(run_id, with_text=False)}
        events = store.get_events(run_id)
    return Snapshot(steps, sources, max((e.id for e in events), default=0))


def _assert_whole_steps_only(db: Db, run_id: str, snap: Snapshot) -> None:
    """After the kill: every stored source belongs to a finished step, none twice."""
    assert len(snap.sources) == len({url for url, _, _ in snap.sources.values()})
    half_done = {key for _, key, _ in snap.sources.values()} - set(snap.done)
    assert not half_done, f"sources of unfinished steps were stored: {half_done}"
    in_flight = [k for k, s in snap.steps.items() if s.status in ("running", "retrying")]
    with Store(db) as store:
        assert store.get_run(run_id).status == "running"  # type: ignore[union-attr]
        for table in ("findings", "queries"):
            rows = store._rows(  # noqa: SLF001 - test-only read of raw rows
                f"SELECT DISTINCT step_key FROM {table} WHERE run_id = :run", {"run": run_id})
            keys = {r["step_key"] for r in rows}
            assert not keys & set(in_flight), f"{table} of an unfinished step were stored"


def _duplicates(db: Db, run_id: str) -> list[Any]:
    with Store(db) as store:
        return store._rows(  # noqa: SLF001 - test-only query
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


_BASELINES: dict[str, dict[str, Any]] = {}


def _baseline(question: str, config: dict[str, Any], env: dict[str, str], tmp_path: Path) -> dict[str, Any]:
    """The same question and configuration, run once without interruption (cached)."""
    key = json.dumps([question, config], sort_keys=True)
    if key not in _BASELINES:
        with Store(tmp_path / "baseline.db") as store:
            run_id = create_run(store, question, ResearchConfig(**config))
            run = execute(run_id, store=store, credentials=Credentials.from_env(env))
            assert run.status == "completed", run.error
            _BASELINES[key] = _outcome(store, run_id)
    return _BASELINES[key]


def _assert_resumed_cleanly(db: Db, run_id: str, snap: Snapshot, baseline: dict[str, Any]) -> None:
    """Completed; nothing lost, duplicated or redone; the same result as no crash at all."""
    _integrity(db)
    assert _duplicates(db, run_id) == []
    with Store(db) as store:
        run = store.get_run(run_id)
        assert run is not None and run.status == "completed", run and run.error
        assert store.get_report(run_id) is not None
        steps = {s.key: s for s in store.get_steps(run_id)}
        sources = {s.id: (s.canonical_url, s.step_key, s.subtopic_id)
                   for s in store.get_sources(run_id, with_text=False)}
        restarted = {e.step for e in store.get_events(run_id, after_id=snap.last_event_id)
                     if e.type == "step_started"}
        outcome = _outcome(store, run_id)

    # No source lost: everything stored before the kill is still there, unchanged.
    lost = {sid: row for sid, row in snap.sources.items() if sources.get(sid) != row}
    assert not lost, f"sources lost or changed by the resume: {lost}"
    # No step done twice: a step finished before the kill kept its one attempt and times,
    # and the resumed process did not start it again.
    assert all(s.status == "done" for s in steps.values()), steps
    for key, before in snap.done.items():
        after = steps[key]
        assert (after.attempts, after.started_at, after.finished_at) == (
            before.attempts, before.started_at, before.finished_at), key
        assert before.attempts == 1, key
    assert not restarted & set(snap.done), f"finished steps ran again: {restarted & set(snap.done)}"
    for key, after in steps.items():
        if key not in snap.steps:
            assert after.attempts == 1, key
        elif key not in snap.done:  # in flight at the kill: exactly one more attempt
            assert after.attempts == snap.steps[key].attempts + 1, key
    # The same end result as a run that was never interrupted.
    assert outcome["urls"] == baseline["urls"]
    assert outcome == baseline


# --- 1 and 2. the command line, killed at several points -----------------------------------

def _research_in_flight(steps: Steps) -> bool:
    research = {k: s.status for k, s in steps.items() if k.startswith("research:")}
    return "done" in research.values() and "running" in research.values()


def _running(key: str) -> Callable[[Steps], bool]:
    return lambda steps: key in steps and steps[key].status == "running"


def _held(standin: StandinServer, task: str) -> bool:
    """The model call we hold open has reached the stand-in (and used up the fault)."""
    return any(_task_of("openai", r["json"]) == task for r in standin.requests_for("openai"))


KILL_POINTS = {
    # name: (the model call held open (schema title, or "writer"), API delay, when to kill)
    "planning": ("ResearchPlan", 0.0, _running("plan")),
    "research": (None, 0.3, _research_in_flight),
    "writing": ("writer", 0.0, _running("write")),
    "review": ("ReviewResult", 0.0, _running("review:1")),
    "verifying": ("AuditVerdicts", 0.0, _running("verify")),
}


# Every kill point on both databases (the uninterrupted baseline is run once per
# configuration and shared by the cases).
CASES = [(point, database) for database in ("sqlite", "postgresql") for point in KILL_POINTS]


@pytest.mark.parametrize(("point", "database"), CASES)
def test_cli_killed_mid_run_resumes_without_losing_or_redoing_anything(
    point: str, database: str, standin: StandinServer, standin_env: dict[str, str],
    tmp_path: Path, request: pytest.FixtureRequest,
) -> None:
    hold, delay, ready = KILL_POINTS[point]
    db: Db = tmp_path / "crash.db" if database == "sqlite" else request.getfixturevalue("pg_url")
    env = {**standin_env, **ONE_WORKER, "DEEP_RESEARCH_DB": str(db)}
    Store(db).close()  # created up front, so the test can poll it from the first moment
    if hold:
        standin.add_fault("openai", "hang", times=1, seconds=60, task=hold)
    standin.set_delay(delay)

    proc = _spawn_cli([QUESTION, *CLI_ARGS, "--out", str(tmp_path / "first.md")], env, tmp_path, "first")
    try:
        run_id = _wait_for(db, lambda steps: ready(steps) and (not hold or _held(standin, hold)),
                           f"the kill point {point!r}", _proc_died(proc, tmp_path / "first.err"))
    finally:
        _kill(proc)
    standin.set_delay(0.0)

    _integrity(db)
    snap = _snapshot(db, run_id)
    _assert_whole_steps_only(db, run_id, snap)
    if point == "research":
        assert any(k.startswith("research:") for k in snap.done) and snap.sources

    started = time.monotonic()
    resumed = _spawn_cli(["--resume", run_id, "--out", str(tmp_path / "resumed.md")], env, tmp_path,
                         "resumed")
    try:
        code = resumed.wait(60)
    finally:
        if resumed.poll() is None:
            _kill(resumed)
    err = (tmp_path / "resumed.err").read_text(errors="replace")
    assert code == 0, err
    assert "Traceback" not in err and (tmp_path / "resumed.md").read_text().strip()
    print(f"{point}: killed with {len(snap.done)} steps done, {len(snap.sources)} sources; "
          f"resumed in {time.monotonic() - started:.1f} s")

    with Store(db) as store:
        config = store.get_run(run_id).config  # type: ignore[union-attr]
    assert config["max_parallel_workers"] == 1
    _assert_resumed_cleanly(db, run_id, snap, _baseline(QUESTION, config, standin_env, tmp_path))


# --- 3. the dashboard, killed mid-run -------------------------------------------------------

DASHBOARD_QUESTION = "How fast is wind power growing in Europe, and what holds it back?"


def _resume_in_browser(browser: Any, server: StreamlitServer, run_id: str, sync_api: Any) -> None:
    """Open the run's page, check it offers Resume for a run nobody executes, and press it."""
    page = browser.new_page()
    page.set_default_timeout(30_000)
    try:
        page.goto(f"{server.url}/run?run={run_id}")
        wait_idle(page)
        sync_api.expect(page.locator('[data-testid="stProgress"]')).to_contain_text(
            "Interrupted", timeout=20_000)
        page.get_by_role("button", name="Resume").click()
        wait_idle(page)
    finally:
        page.close()


@pytest.mark.browser
@pytest.mark.skipif(not os.path.exists(CHROMIUM), reason=f"{CHROMIUM} is missing")
def test_dashboard_killed_mid_run_is_picked_up_again_on_restart(
    browser: Any, standin: StandinServer, standin_env: dict[str, str], tmp_path: Path
) -> None:
    sync_api = pytest.importorskip("playwright.sync_api")
    db = tmp_path / "data" / "research.db"
    env = {**standin_env, **ONE_WORKER, "DEEP_RESEARCH_DB": str(db),
           "DEEP_RESEARCH_SECRETS_FILE": str(tmp_path / "secrets.toml"), "DEEP_RESEARCH_SEARCH": "tavily"}
    config = build_config(env=env, SUBTOPIC_COUNT=3, SOURCES_PER_SUBTOPIC=5, SEARCHES_PER_SUBTOPIC=2,
                          REVIEW_CYCLES=0, MAX_ROUNDS=1, REPORT_MAX_WORDS=1500,
                          INCLUDE_ACADEMIC_SOURCES=False)
    # A stored run nobody executes shows as interrupted; pressing Resume on its page runs it in
    # the dashboard's job manager, inside the streamlit process (the same path as Start, without
    # depending on the New research form).
    with Store(db) as store:
        run_id = create_run(store, DASHBOARD_QUESTION, config)
    standin.set_delay(0.3)
    first = StreamlitServer(env=env, log_path=ARTIFACTS / "crash-first-streamlit.log").start()
    try:
        assert first.process is not None
        server_proc = first.process
        _resume_in_browser(browser, first, run_id, sync_api)
        _wait_for(db, _research_in_flight, "a research step in flight",
                  lambda: None if server_proc.poll() is None else "streamlit exited")
        _kill(server_proc)  # the server and every thread in it, at once
    finally:
        first.stop()
    standin.set_delay(0.0)

    _integrity(db)
    snap = _snapshot(db, run_id)
    _assert_whole_steps_only(db, run_id, snap)
    assert any(k.startswith("research:") for k in snap.done) and snap.sources

    # A fresh dashboard picks the run up by itself once opened (its embedded worker
    # recovers the job the killed one left unfinished): nobody presses Resume.
    with StreamlitServer(env=env, log_path=ARTIFACTS / "crash-second-streamlit.log") as second:
        page = browser.new_page()  # its own context, closed with it (the browser is shared)
        try:
            page.goto(f"{second.url}/run?run={run_id}")
            wait_idle(page)
            _wait_status(db, run_id, "completed", timeout=60)
            page.goto(f"{second.url}/run?run={run_id}")
            wait_idle(page)
            sync_api.expect(page.locator('[data-testid="stProgress"]')).to_contain_text(
                "Completed · 100%", timeout=20_000)
        finally:
            page.close()

    with Store(db) as store:
        stored = store.get_run(run_id).config  # type: ignore[union-attr]
    _assert_resumed_cleanly(db, run_id, snap, _baseline(DASHBOARD_QUESTION, stored, standin_env, tmp_path))
