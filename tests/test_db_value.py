"""Database values that cannot work are refused at the edges with a reason, before anything opens.

The CLI runs as a real subprocess; the dashboard through AppTest. Every refused file is
compared byte for byte before and after.
"""

from __future__ import annotations

import os
import re
import sqlite3
import stat
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from storage import DatabaseValueError, Store, redact_url, resolve_db, resolve_db_path
from storage.db_value import postgres_url
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import APP, KEY_VARS
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

# A PostgreSQL URL nothing answers at (port 1 on this machine): refused plainly, at once.
PG_URL = "postgresql://alice:S3cretPassw0rd@127.0.0.1:1/research"


def _files(root: Path) -> set[Path]:
    return {p for p in root.rglob("*")}


def test_unreachable_postgres_is_said_plainly_without_the_password_or_a_folder(run_cli: RunCli, tmp_path: Path) -> None:
    before = _files(tmp_path)
    result = run_cli(["How do heat pumps work?"], {"DEEP_RESEARCH_DB": PG_URL}, tmp_path)
    assert result.returncode == 1
    assert "Could not reach the PostgreSQL database at postgresql://alice:***@127.0.0.1:1/research" in (
        result.stderr)
    assert "S3cretPassw0rd" not in result.stderr + result.stdout
    assert "Traceback" not in result.stderr
    assert _files(tmp_path) == before  # no postgresql:/... folder, no database


def _sqlite_file(path: Path) -> Path:
    conn = sqlite3.connect(path)
    conn.execute("CREATE TABLE t (x)")
    conn.execute("INSERT INTO t VALUES ('kept')")
    conn.commit()
    conn.close()
    return path


def _unusable(tmp_path: Path, kind: str) -> tuple[Path, str]:
    """A database value of `kind` and a word the refusal must contain."""
    if kind == "folder":
        folder = tmp_path / "a-folder"
        folder.mkdir()
        return folder, "is a folder"
    if kind == "not sqlite":
        path = tmp_path / "notes.db"
        path.write_text("my precious notes, not a database\n" * 50)
        return path, "not a SQLite database"
    if kind == "read-only":
        path = _sqlite_file(tmp_path / "ro.db")
        path.chmod(stat.S_IRUSR | stat.S_IRGRP)
        return path, "read-only"
    return tmp_path / "missing" / "research.db", "does not exist"


@pytest.mark.parametrize("kind", ["folder", "not sqlite", "read-only", "missing parent"])
@pytest.mark.parametrize("how", ["env", "flag"])
def test_unusable_database_value_says_why_starts_nothing_and_keeps_the_file(
    run_cli: RunCli, tmp_path: Path, kind: str, how: str
) -> None:
    path, why = _unusable(tmp_path, kind)
    before = path.read_bytes() if path.is_file() else None
    listing = _files(tmp_path)
    env = {"DEEP_RESEARCH_DB": str(path)} if how == "env" else {}
    args = ["How do heat pumps work?"] + ([] if how == "env" else ["--db", str(path)])
    result = run_cli(args, env, tmp_path)
    assert result.returncode == 2, result.stderr
    assert why in result.stderr and "Traceback" not in result.stderr
    assert "unable to open database file" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1
    assert _files(tmp_path) == listing  # no -wal/-shm, no folder, no report
    if before is not None:
        assert path.read_bytes() == before


def test_the_one_check_accepts_usable_values(tmp_path: Path) -> None:
    default = tmp_path / "data" / "research.db"
    assert resolve_db_path(None, default) == default
    assert resolve_db_path("  ", default) == default
    fresh = tmp_path / "new.db"
    assert resolve_db_path(str(fresh), default) == fresh
    existing = _sqlite_file(tmp_path / "old.db")
    assert resolve_db_path(existing, default) == existing
    empty = tmp_path / "empty.db"
    empty.touch()
    assert resolve_db_path(empty, default) == empty
    with pytest.raises(DatabaseValueError, match="only a SQLite file path or a postgresql"):
        resolve_db_path("mysql://u:p@h/d", default)
    # A team server's URL, also as a Path folds it (the dashboard's job manager does that).
    assert resolve_db(PG_URL, default) == PG_URL
    assert postgres_url(Path(PG_URL)) == PG_URL
    assert redact_url(PG_URL) == "postgresql://alice:***@127.0.0.1:1/research"


def test_checking_an_open_database_keeps_this_process_seeing_other_processes_runs(
    tmp_path: Path, warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    """The dashboard checks its database on every page while its own connections stay open.
    Reading the file with Python there dropped those connections' locks (closing any
    descriptor of a file drops all of a process's POSIX locks on it): the next process to
    close a Store took itself for the last user, removed the WAL, and the dashboard never saw
    another process's runs again ("There is no such run")."""
    db = tmp_path / "research.db"
    reader = Store(db)
    writer = ("import sys; from storage import Store; from research.core.config import build_config; "
              "s = Store(sys.argv[1]); "
              "print(s.create_run('q', build_config(env={}, preset='quick').model_dump(mode='json'))); "
              "s.close()")
    try:
        for _ in range(3):
            assert resolve_db_path(db, db) == db  # what each page does first
            # Another process (forked warm: tests/warm_python.py) makes a run and closes.
            made = warm_python.spawn(["-c", writer, str(db)], dict(os.environ), tmp_path,
                                     tmp_path / "writer.out", tmp_path / "writer.err")
            assert made.wait(timeout=60) == 0, (tmp_path / "writer.err").read_text()
            run_id = (tmp_path / "writer.out").read_text().strip()
            assert reader.get_run(run_id) is not None, "a run another process made is not seen"
    finally:
        reader.close()


def test_dashboard_says_plainly_when_postgres_cannot_be_reached(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEP_RESEARCH_DB", PG_URL)
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "secrets.toml"))
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    before = _files(tmp_path)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert "Could not reach the PostgreSQL database at postgresql://alice:***@" in errors
    assert "S3cretPassw0rd" not in errors
    assert _files(tmp_path) == before
    assert not os.path.exists("postgresql:")


def _broken_sqlite_file(path: Path) -> Path:
    """A SQLite file by its header (so the check at the edge lets it through) whose pages are
    broken: SQLite itself refuses it when the store opens it."""
    _sqlite_file(path)
    data = bytearray(path.read_bytes())
    data[100:] = b"\xff" * (len(data) - 100)
    path.write_bytes(bytes(data))
    return path


# The library's wrapping of the database's reason: an exception class, a driver name, a help link.
WRAPPING = re.compile(r"[A-Z][a-z]+Error|sqlite3\.|sqlalche\.me|Background on")


def test_dashboard_says_plainly_when_a_sqlite_file_cannot_be_opened(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = _broken_sqlite_file(tmp_path / "broken.db")
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("DEEP_RESEARCH_DB", str(path))
    monkeypatch.setenv("DEEP_RESEARCH_SECRETS_FILE", str(tmp_path / "secrets.toml"))
    for name in KEY_VARS:
        monkeypatch.delenv(name, raising=False)
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    errors = " ".join(e.value for e in at.error)
    assert f"Could not open the database at {path} (database disk image is malformed)" in errors
    assert not WRAPPING.search(errors), errors


@pytest.mark.parametrize("command", [["How do heat pumps work?"], ["status", "0123456789ab"],
                                     ["list"], ["watch", "list"]])
def test_every_command_says_plainly_when_a_sqlite_file_cannot_be_opened(
    run_cli: RunCli, tmp_path: Path, command: list[str]
) -> None:
    path = _broken_sqlite_file(tmp_path / "broken.db")
    before = path.read_bytes()
    result = run_cli([*command, "--db", str(path)], {}, tmp_path)
    assert result.returncode in (1, 2), result.stderr
    said = result.stderr.strip()
    assert len(said.splitlines()) == 1 and "Traceback" not in said, said
    assert f"Could not open the database at {path} (database disk image is malformed)" in said
    assert not WRAPPING.search(said), said
    assert path.read_bytes() == before
