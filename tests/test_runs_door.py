"""The one door to a run's life (issue 33, point 1): `research.runs`.

Nothing outside research/runs/engine.py imports the job engine (DBOS), and nothing outside
research/runs/ reaches past the door into the engine module; "is it alive?" has one answer
(the engine, or the run's one liveness record); `status` says what a person needs to see.
"""

from __future__ import annotations

import ast
import socket
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

import pytest

from research.core.config import Credentials, build_config
from research.core.errors import ConfigError
from research.core.records import Run
from research.runs import Runs, RunStatus, liveness
from storage import Store

ROOT = Path(__file__).resolve().parent.parent
SCANNED = ["research", "storage", "dashboard", "app_pages", "app.py", "bench"]
ENGINE = Path("research/runs/engine.py")
CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})


def _modules() -> list[Path]:
    found: list[Path] = []
    for name in SCANNED:
        path = ROOT / name
        found.extend(sorted(path.rglob("*.py")) if path.is_dir() else [path])
    return found


def _imported(tree: ast.AST) -> set[str]:
    """Every module an import statement names, at any depth (inside functions too)."""
    names: set[str] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module and node.level == 0:
            names.add(node.module)
            names.update(f"{node.module}.{alias.name}" for alias in node.names)
    return names


def _importers(wanted: str, *, allowed: str) -> list[str]:
    """The scanned modules outside `allowed` that import `wanted` or a module under it."""
    offenders = []
    for path in _modules():
        relative = path.relative_to(ROOT)
        if relative.as_posix().startswith(allowed):
            continue
        names = _imported(ast.parse(path.read_text(encoding="utf-8"), filename=str(path)))
        if any(n == wanted or n.startswith(f"{wanted}.") for n in names):
            offenders.append(relative.as_posix())
    return offenders


def test_only_the_engine_module_imports_dbos() -> None:
    assert (ROOT / ENGINE).exists()
    assert _importers("dbos", allowed=ENGINE.as_posix()) == []


def test_nothing_outside_the_runs_package_reaches_the_engine_past_the_door() -> None:
    assert _importers("research.runs.engine", allowed="research/runs/") == []


def test_the_scan_sees_an_import_inside_a_function() -> None:
    tree = ast.parse("def f():\n    from dbos import DBOS\n")
    assert "dbos" in _imported(tree)


def test_a_run_executed_in_a_terminal_is_alive_while_it_beats(tmp_path: Path) -> None:
    """The CLI's inline run has no job: its heartbeat is the answer, and a run whose
    heartbeat's process is gone is not alive (and is put right as interrupted)."""
    db = tmp_path / "r.db"
    store = Store(db)
    beating = store.create_run("Beating?", build_config(env={}).model_dump(mode="json"))
    store.set_run_status(beating, "running")
    store.heartbeat(beating, liveness.this_process())
    gone = subprocess.run([sys.executable, "-c", "import os; print(os.getpid())"],
                          capture_output=True, text=True, check=True).stdout.strip()
    orphan = store.create_run("Orphaned?", build_config(env={}).model_dump(mode="json"))
    store.set_run_status(orphan, "running")
    store.heartbeat(orphan, f"pid:{gone}@{socket.gethostname()}")
    runs = Runs(db, executor=_never)
    try:
        assert runs.interrupted_at_start == [orphan]
        assert runs.is_alive(beating) and not runs.is_alive(orphan)
        assert runs.status(beating).status == "running"
        assert runs.status(orphan).status == "interrupted"
        with pytest.raises(ConfigError, match="already running"):
            runs.resume(beating, CREDS)
        runs.pause(beating)  # the terminal's process reads it at its next checkpoint
        assert store.get_control(beating) == "pause"
        runs.unpause(beating)
        assert store.get_control(beating) is None
        with pytest.raises(ConfigError, match="There is no run"):
            runs.pause(beating, person="bob")  # not Bob's run: as if there were none
        assert store.get_control(beating) is None
        with pytest.raises(ConfigError, match="not paused"):
            runs.unpause(beating)
        runs.cancel(beating)  # alive: asked to stop, not marked
        assert store.get_control(beating) == "cancel"
        assert store.get_run(beating).status == "running"  # type: ignore[union-attr]
        with pytest.raises(ConfigError, match="Only a running run"):
            runs.pause(orphan)  # interrupted: nothing to pause
    finally:
        store.close()


def test_status_says_the_queue_place_and_cancel_of_a_run_nothing_executes_is_at_once(
        tmp_path: Path) -> None:
    release = threading.Event()
    runs = Runs(tmp_path / "r.db", executor=_held(release),
                workers=_one_at_a_time())
    config = build_config(env={}, preset="quick")
    try:
        a = runs.start("First?", config, CREDS, person="ada")
        b = runs.start("Second?", config, CREDS, person="ada")
        # One worker slot: one of them executes (the engine may take either first), the
        # other waits in the queue.
        _until(lambda: "running" in (runs.status(a).status, runs.status(b).status))
        first, second = (a, b) if runs.status(a).status == "running" else (b, a)
        waiting = runs.status(second, person="ada")
        assert isinstance(waiting, RunStatus) and waiting.alive
        assert waiting.status == "queued" and waiting.queue is not None
        assert waiting.queue.place == 1  # the next of Ada's runs (the other one executes)
        with pytest.raises(ConfigError, match="There is no run"):
            runs.status(second, person="bob")
        with pytest.raises(ConfigError, match="There is no run"):
            runs.cancel(second, person="bob")
        runs.cancel(second, person="ada")  # queued: the worker marks it cancelled on taking it
        release.set()
        assert runs.wait(first, 10) and runs.wait(second, 10)
        assert runs.status(second).status == "cancelled" and not runs.status(second).alive
        assert runs.status(first).status == "completed" and runs.status(first).progress == 100
        waiting_run = runs.store.create_run("Waiting?", config.model_dump(mode="json"))
        runs.store.set_run_status(waiting_run, "waiting")
        runs.cancel(waiting_run)  # nothing executes it: recorded at once
        assert runs.status(waiting_run).status == "cancelled"
        with pytest.raises(ConfigError, match="already cancelled"):
            runs.cancel(waiting_run)
    finally:
        release.set()


def test_the_sweep_spares_the_engines_runs_and_writes_no_heartbeat_for_them(
        tmp_path: Path) -> None:
    """The engine's run has no heartbeat here (its fake executor writes none), so only the
    engine says it is alive: the sweep must leave it running, and nobody but its executor
    writes its liveness record."""
    release = threading.Event()
    runs = Runs(tmp_path / "r.db", executor=_held(release), stale_after_s=0.0)
    try:
        run_id = runs.start("Held?", build_config(env={}, preset="quick"), CREDS)
        _until(lambda: runs.store.get_run(run_id).status == "running")  # type: ignore[union-attr]
        assert runs.sweep(force=True) == []
        run = runs.store.get_run(run_id)
        assert run is not None and run.status == "running" and run.heartbeat_at is None
        assert runs.is_alive(run_id)
    finally:
        release.set()
    assert runs.wait(run_id, 10)


def test_a_crash_is_recorded_once_on_the_run_and_read_back_from_there(tmp_path: Path) -> None:
    def boom(run_id: str, **_: Any) -> None:
        raise RuntimeError("the disk caught fire sk-test-0123456789abcdef")

    runs = Runs(tmp_path / "r.db", executor=boom)
    run_id = runs.start("Question?", build_config(env={}), CREDS)
    assert runs.wait(run_id, 10)
    other = Runs(tmp_path / "r.db", executor=_never, watch_only=True)  # another process's view
    try:
        status = other.status(run_id)
        assert status.status == "failed" and "caught fire" in (status.error or "")
        assert other.crash(run_id) == status.error
        assert "sk-test-0123456789abcdef" not in (status.error or "")
    finally:
        other.store.close()


def _never(run_id: str, **_: Any) -> None:
    raise AssertionError("nothing should execute here")


def _held(release: threading.Event):
    def execute(run_id: str, *, store: Store, **_: Any) -> Run | None:
        store.set_run_status(run_id, "running")
        release.wait(10)
        store.set_run_status(run_id, "completed")
        return store.get_run(run_id)
    return execute


def _one_at_a_time() -> Any:
    from research.core.config import WorkerSettings

    return WorkerSettings(concurrency=1)


def _until(condition: Any, wait_s: float = 60.0) -> None:
    import time

    deadline = time.monotonic() + wait_s
    while not condition():
        assert time.monotonic() < deadline, "the condition never held"
        time.sleep(0.05)
