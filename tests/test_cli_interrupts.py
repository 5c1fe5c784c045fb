"""The CLI cut short: a disk that fills mid-run (a real, small tmpfs), a full disk while writing
the report, and Ctrl-C. Each ends with a plain message, no traceback, nothing half-written,
and everything already stored kept."""

from __future__ import annotations

import os
import signal
import sqlite3
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import pytest

from research import cli
from research.export import formats
from storage import Store
from tests.cli_helpers import warm_cli
from tests.dashboard_fixtures import finished_run
from tests.test_cli import ROOT
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

QUESTION = "How do heat pumps perform in cold climates?"


@pytest.fixture
def small_disk(tmp_path: Path, request: pytest.FixtureRequest) -> Iterator[Path]:
    """A tmpfs of the size given as the fixture's parameter (root only; skipped otherwise)."""
    size = request.param
    mount = tmp_path / "disk"
    mount.mkdir()
    done = subprocess.run(["mount", "-t", "tmpfs", "-o", f"size={size}", "tmpfs", str(mount)],
                          capture_output=True, text=True)
    if done.returncode != 0:
        pytest.skip(f"cannot mount a tmpfs here ({done.stderr.strip() or 'not permitted'})")
    try:
        yield mount
    finally:
        subprocess.run(["umount", "-l", str(mount)], check=False)


HEADROOM = 192 * 1024  # bytes beyond the empty store: the plan fits, the sources do not


def _integrity(db: Path) -> str:
    conn = sqlite3.connect(db)
    try:
        return str(conn.execute("PRAGMA integrity_check").fetchone()[0])
    finally:
        conn.close()


@pytest.mark.parametrize("small_disk", ["4m"], indirect=True)
def test_disk_full_mid_run_stops_plainly_and_keeps_what_was_stored(
    standin_env: dict[str, str], small_disk: Path, tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    db = small_disk / "research.db"
    # The disk holds the empty store (its schema grows with every migration) plus a fixed
    # headroom: enough for the plan, far too little for the sources that follow.
    Store(db).close()
    used = sum(f.stat().st_size for f in small_disk.iterdir())
    subprocess.run(["mount", "-o", f"remount,size={(used // 4096 + 1) * 4096 + HEADROOM}",
                    str(small_disk)], check=True)
    result = warm_cli(warm_python, [QUESTION, "--preset", "quick", "--sources", "5",
                                    "--out", str(tmp_path / "r.md")],
                      {**standin_env, "DEEP_RESEARCH_DB": str(db)}, tmp_path)
    assert result.returncode == 1, result.stderr
    assert "Traceback" not in result.stderr and "sqlite3" not in result.stderr
    last = result.stderr.strip().splitlines()[-1]
    assert "The disk is full; free space and Resume" in last
    assert not (tmp_path / "r.md").exists()
    # Free space (the disk grows), then the store opens cleanly with everything it had.
    subprocess.run(["mount", "-o", "remount,size=8m", str(small_disk)], check=True)
    assert _integrity(db) == "ok"
    store = Store(db)
    runs = store.list_runs()
    assert len(runs) == 1
    run = runs[0]
    assert run.status in ("interrupted", "failed", "running")
    if run.status == "running":  # the mark could not be written: reconciled on next open
        assert run.id in store.mark_interrupted(stale_after_s=0)
    assert store.get_plan(run.id)  # the plan stored before the disk filled is kept
    assert f"--resume {run.id}" in last or "RUN_ID" not in last


@pytest.mark.parametrize("small_disk", ["8k"], indirect=True)
def test_full_disk_while_writing_the_pdf_leaves_nothing_at_the_out_path(
    small_disk: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "r.db"
    run_id = finished_run(Store(db))
    out = small_disk / "report.pdf"
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "none.toml"))
    code = cli.main(["--resume", run_id, "--db", str(db), "--format", "pdf", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 1
    assert "the disk is full" in err and f"--resume {run_id}" in err and "Traceback" not in err
    assert list(small_disk.iterdir()) == []  # no partial PDF, no temporary file


def test_ctrl_c_while_writing_the_report_says_what_was_kept(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch,
) -> None:
    db = tmp_path / "r.db"
    run_id = finished_run(Store(db))
    out = tmp_path / "out" / "report.pdf"
    out.parent.mkdir()

    def interrupted(*args: object) -> bytes:
        raise KeyboardInterrupt

    monkeypatch.setitem(formats._BUILDERS, "pdf", interrupted)
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "none.toml"))
    code = cli.main(["--resume", run_id, "--db", str(db), "--format", "pdf", "--out", str(out)])
    err = capsys.readouterr().err
    assert code == 130
    assert "nothing was written there" in err and f"--resume {run_id}" in err
    assert list(out.parent.iterdir()) == []
    monkeypatch.undo()
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "none.toml"))
    assert cli.main(["--resume", run_id, "--db", str(db), "--out", str(out.with_suffix(".md"))]) == 0
    assert out.with_suffix(".md").read_text(encoding="utf-8").startswith("# ")


def test_ctrl_c_mid_run_prints_how_to_resume_without_a_traceback(
    standin_env: dict[str, str], tmp_path: Path,
    warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DEEP_RESEARCH_", "OPENAI_", "GEMINI_", "TAVILY_"))}
    env.update(standin_env, PYTHONPATH=str(ROOT), DEEP_RESEARCH_DB=str(tmp_path / "c.db"),
               DEEP_RESEARCH_SECRETS_FILE=str(tmp_path / "none.toml"))
    # `python -m research` forked warm (tests/warm_python.py): a process of its own, whose
    # Ctrl-C is a SIGINT as a terminal sends it.
    err_file = tmp_path / "run.err"
    proc = warm_python.spawn(["-m", "research", QUESTION, "--preset", "quick", "--sources", "5",
                              "--out", str(tmp_path / "r.md")], env, tmp_path,
                             tmp_path / "run.out", err_file)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and proc.poll() is None:
        if "%]" in err_file.read_text(errors="replace"):  # the first progress line
            break
        time.sleep(0.02)
    lines = err_file.read_text(errors="replace").splitlines(keepends=True)
    proc.send_signal(signal.SIGINT)
    assert proc.wait(120) == 130, err_file.read_text(errors="replace")
    err = err_file.read_text(errors="replace")
    assert "Traceback" not in err and "KeyboardInterrupt" not in err
    run_id = next(line.split(": ")[1].strip() for line in lines if line.startswith("Run id: "))
    assert f"--resume {run_id}" in err and "kept" in err
    run = Store(tmp_path / "c.db").get_run(run_id)
    assert run is not None and run.status == "interrupted"
