"""Crashes: SIGKILL in the middle of a run, then resume (issue 5, point 6).

A real process is killed with SIGKILL at a known point: `python -m research` (forked warm by
tests/warm_python.py: the same command, without importing everything again) while it plans,
researches, writes, reviews or verifies claims, and `streamlit run app.py` while its job
manager researches (a restarted dashboard picks its run up by itself). After each kill the database must pass SQLite's integrity checks and hold
only whole steps; resuming must finish the run without losing, duplicating or redoing
anything, and end with the same sources, queries, findings and drafts as an uninterrupted run
of the same question and configuration.

Where to kill is made deterministic with the stand-in server: a `hang` fault holds the one
model call of the phase we want to interrupt (plan, writer, review, audit), and a small delay
on every API answer keeps a research step in flight long enough to catch it. One research
worker at a time (MAX_PARALLEL_WORKERS=1) makes the set of sources reproducible.

On the command line one run is killed at every point in turn (killed while it plans, resumed
and killed while it researches, resumed and killed while it writes...), then resumed to its
end: each kill is checked as it happens, and the end against every kill, for one run's work
rather than one per kill point. On SQLite and on a PostgreSQL server too (`pg_url`; skipped
with the reason where PostgreSQL cannot start, failed under DEEP_RESEARCH_REQUIRE_POSTGRES=1):
a killed process's open transaction is rolled back by the server.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from research.core.config import build_config
from research.pipeline import create_run
from storage import Store
from tests.browser_helpers import ARTIFACTS, CHROMIUM, StreamlitServer, wait_idle
from tests.crash_helpers import (
    ONE_WORKER,
    WAIT_S,
    Db,
    Snapshot,
    Steps,
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
    wait_status,
)
from tests.standin import StandinServer
from tests.standin.server import _task_of
from tests.warm_python import WarmProcess, WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How do heat pumps perform in cold climates?"
CLI_ARGS = ["--preset", "quick", "--subtopics", "3", "--sources", "5", "--reviews", "1"]


def _spawn_cli(python: WarmPython, args: list[str], env: dict[str, str], cwd: Path,
               name: str) -> WarmProcess:
    """`python -m research ...` in a session (process group) of its own, output to files."""
    full_env = child_env({**env, "DEEP_RESEARCH_SECRETS_FILE": str(cwd / "no-secrets.toml")})
    return python.spawn(["-m", "research", *args], full_env, cwd, cwd / f"{name}.out",
                        cwd / f"{name}.err")


# --- 1 and 2. the command line, killed at several points -----------------------------------

def _running(key: str) -> Callable[[Steps], bool]:
    return lambda steps: key in steps and steps[key].status == "running"


def _wait_until_held(standin: StandinServer, task: str, died: Callable[[], str | None],
                     seen: int) -> None:
    """Until the model call we hold open has reached the stand-in (and used up the fault):
    read from the stand-in's request log (only its entries after the first `seen`), not from
    the database."""
    deadline = time.monotonic() + WAIT_S
    while time.monotonic() < deadline:
        requests = standin.requests_for("openai")
        if any(_task_of("openai", r["json"]) == task for r in requests[seen:]):
            return
        seen = len(requests)
        assert not (end := died()), f"the process ended before {task} was asked: {end}"
        time.sleep(0.02)
    raise AssertionError(f"timed out after {WAIT_S:.0f} s waiting for the held call {task}")


KILL_POINTS = {
    # name: (the model call held open (schema title, or "writer"), API delay, when to kill)
    "planning": ("ResearchPlan", 0.0, _running("plan")),
    "research": (None, 0.15, research_in_flight),
    "writing": ("writer", 0.0, _running("write")),
    "review": ("ReviewResult", 0.0, _running("review:1")),
    "verifying": ("AuditVerdicts", 0.0, _running("verify")),
}


def _killed_at(point: str, args: list[str], standin: StandinServer, env: dict[str, str],
               db: Db, cwd: Path, python: WarmPython) -> str:
    """Start `python -m research ARGS`, SIGKILL it at `point`; returns the run id."""
    hold, delay, ready = KILL_POINTS[point]
    seen = len(standin.requests_for("openai"))
    if hold:
        standin.add_fault("openai", "hang", times=1, seconds=60, task=hold)
    standin.set_delay(delay)
    proc = _spawn_cli(python, args, env, cwd, point)
    try:
        died = proc_died(proc, cwd / f"{point}.err")
        if hold:
            _wait_until_held(standin, hold, died, seen)
        run_id = wait_for(db, ready, f"the kill point {point!r}", died)
    finally:
        kill(proc)
    standin.set_delay(0.0)
    assert "Traceback" not in (cwd / f"{point}.err").read_text(errors="replace")
    return run_id


@pytest.mark.parametrize("database", ["sqlite", "postgresql"])
def test_cli_killed_at_every_stage_resumes_without_losing_or_redoing_anything(
    database: str, standin: StandinServer, standin_env: dict[str, str], tmp_path: Path,
    request: pytest.FixtureRequest, warm_python: WarmPython,  # noqa: F811
) -> None:
    """One run killed at every stage in turn: started, killed while it plans; resumed, killed
    while it researches; resumed, killed while it writes; and so on. After each kill the store
    holds only whole steps; at the end the run has lost and redone nothing that any kill left
    stored, and equals an uninterrupted run (one run's work instead of one per stage)."""
    db: Db = tmp_path / "crash.db" if database == "sqlite" else request.getfixturevalue("pg_url")
    env = {**standin_env, **ONE_WORKER, "DEEP_RESEARCH_DB": str(db)}
    Store(db).close()  # created up front, so the test can poll it from the first moment

    args = [QUESTION, *CLI_ARGS, "--out", str(tmp_path / "first.md")]
    kills: list[Snapshot] = []
    for point in KILL_POINTS:
        run_id = _killed_at(point, args, standin, env, db, tmp_path, warm_python)
        args = ["--resume", run_id, "--out", str(tmp_path / "resumed.md")]
        integrity(db)
        snap = snapshot(db, run_id)
        assert_whole_steps_only(db, run_id, snap)
        assert not kills or len(snap.done) > len(kills[-1].done), f"no progress before {point}"
        if point == "research":
            assert any(k.startswith("research:") for k in snap.done) and snap.sources
        print(f"{point}: killed with {len(snap.done)} steps done, {len(snap.sources)} sources")
        kills.append(snap)

    resumed = _spawn_cli(warm_python, args, env, tmp_path, "resumed")
    try:
        code = resumed.wait(60)
    finally:
        if resumed.poll() is None:
            kill(resumed)
    err = (tmp_path / "resumed.err").read_text(errors="replace")
    assert code == 0, err
    assert "Traceback" not in err and (tmp_path / "resumed.md").read_text().strip()

    with Store(db) as store:
        config = store.get_run(run_id).config  # type: ignore[union-attr]
    assert config["max_parallel_workers"] == 1
    assert_resumed_cleanly(db, run_id, kills, baseline(QUESTION, config, standin_env, tmp_path))


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
        # The page says the run goes on before it closes: closing it the moment after the
        # click (before the press reached the server) would end the session with the press.
        sync_api.expect(page.locator('[data-testid="stProgress"]')).not_to_contain_text(
            "Interrupted", timeout=20_000)
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
        wait_for(db, research_in_flight, "a research step in flight",
                  lambda: None if server_proc.poll() is None else "streamlit exited")
        kill(server_proc)  # the server and every thread in it, at once
    finally:
        first.stop()
    standin.set_delay(0.0)

    integrity(db)
    snap = snapshot(db, run_id)
    assert_whole_steps_only(db, run_id, snap)
    assert any(k.startswith("research:") for k in snap.done) and snap.sources

    # A fresh dashboard picks the run up by itself once opened (its embedded worker
    # recovers the job the killed one left unfinished): nobody presses Resume.
    with StreamlitServer(env=env, log_path=ARTIFACTS / "crash-second-streamlit.log") as second:
        page = browser.new_page()  # its own context, closed with it (the browser is shared)
        try:
            page.goto(f"{second.url}/run?run={run_id}")
            wait_idle(page)  # the page has run: the job manager exists, and the run is its
            # Nobody watches while it finishes (a live page would redraw all along for nothing).
            page.goto("about:blank")
            wait_status(db, run_id, "completed", timeout=60)
            page.goto(f"{second.url}/run?run={run_id}")
            wait_idle(page)
            sync_api.expect(page.locator('[data-testid="stProgress"]')).to_contain_text(
                "Completed · 100%", timeout=20_000)
        finally:
            page.close()

    with Store(db) as store:
        stored = store.get_run(run_id).config  # type: ignore[union-attr]
    assert_resumed_cleanly(db, run_id, snap, baseline(DASHBOARD_QUESTION, stored, standin_env, tmp_path))
