"""Alembic migrations that keep people's data, and moving a store to a team's server.

`tests/fixtures/legacy_main.db` was written by the code on main before the store moved to
SQLAlchemy and Alembic; `legacy_main.json` is what that code's Store returned for it.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
import time
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import inspect

from research.core.records import Source
from storage import Store
from storage.copy import CopyRefused, copy_store, count_rows
from storage.migrate import HEAD_REVISION, head_revision
from storage.schema import metadata
from tests.cli_helpers import RunCli
from tests.fixtures.snapshot_legacy import snapshot
from tests.pg_server import TEST_PASSWORD
from tests.warm_python import WarmPython, warm_python  # noqa: F401 - a fixture

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = Path(__file__).resolve().parent / "fixtures"


@pytest.fixture
def legacy_copy(tmp_path: Path) -> Path:
    path = tmp_path / "legacy.db"
    shutil.copy(FIXTURES / "legacy_main.db", path)
    return path


def _expected() -> dict[str, Any]:
    return dict(json.loads((FIXTURES / "legacy_main.json").read_text()))


def test_a_file_made_by_the_old_code_upgrades_in_place_with_every_row_intact(
        legacy_copy: Path) -> None:
    store = Store(legacy_copy)
    assert store.query("SELECT version_num FROM alembic_version") == [
        {"version_num": head_revision()}]
    assert snapshot(store) == _expected()
    expected_runs = [k for k in _expected() if not k.startswith("_")]
    assert len(expected_runs) == 2
    for run_id in expected_runs:  # sources, drafts, verdicts and events, one by one
        assert len(store.get_sources(run_id)) == 3
        assert store.get_drafts(run_id)[0].numbering == {1: "s0", 2: "s1"}
        assert [v.verdict for v in store.get_verifications(run_id)] == ["supported", "refuted"]
        [review] = store.get_reviews(run_id)  # an issue stored without a severity reads as low
        assert review.approved is True and review.issues[0].issue == "none"
        assert review.issues[0].severity == "low"
        assert len(store.get_events(run_id)) == 4
    # and it goes on working: a new run, its sources, an event, a search of the library
    run_id = store.create_run("After the upgrade", {})
    store.complete_research_step(run_id, "r", sources=[Source("n1", "https://n.org/1")])
    assert store.append_event({"run_id": run_id, "type": "progress"}) > 0
    assert store.count_runs() == 3 and store.count_sources(run_id) == 1
    store.close()
    assert snapshot(Store(legacy_copy))["_documents"] == _expected()["_documents"]


_ONLY_SQLITE = ("passages_fts", "ask_passages_fts", "schema_migrations", "alembic_version",
                "sqlite_sequence")
_ONLY_POSTGRES = {"runs.seq", "passages.tsv", "idx_runs_created_seq", "idx_passages_tsv",
                  "ask_passages.tsv", "idx_ask_passages_tsv", "alembic_version"}


def _ours(name: str | None, table: str = "") -> bool:
    """Tables, columns and indexes that are not the FTS machinery or bookkeeping."""
    return bool(name) and not str(name).startswith(_ONLY_SQLITE) and not (
        {str(name), f"{table}.{name}"} & _ONLY_POSTGRES)


def _shape(tables: dict[str, Any]) -> dict[str, Any]:
    return {name: ({c for c in cols if _ours(c, name)}, {i for i in idx if _ours(i)})
            for name, (cols, idx) in tables.items() if _ours(name)}


def _database_shape(url: str) -> tuple[dict[str, Any], list[Any]]:
    """Every table's columns and index names as the database has them, and (PostgreSQL)
    Alembic's full comparison with the metadata: types, nullability, keys, defaults."""
    from alembic.autogenerate import compare_metadata
    from alembic.runtime.migration import MigrationContext

    store = Store(url)
    with store._database.read() as conn:
        found = inspect(conn)
        shape = {t: ({c["name"] for c in found.get_columns(t)},
                     {i["name"] for i in found.get_indexes(t)
                      if not i.get("duplicates_constraint")})  # a UNIQUE constraint's own
                 for t in found.get_table_names()}
        diffs: list[Any] = []
        if store.dialect == "postgresql":
            context = MigrationContext.configure(conn, opts={
                "compare_type": True,
                "include_name": lambda name, kind, parent: kind == "schema" or _ours(
                    name, (parent or {}).get("table_name", ""))})
            diffs = list(compare_metadata(context, metadata))
    store.close()
    return _shape(shape), diffs


def _metadata_shape() -> dict[str, Any]:
    return {t.name: ({c.name for c in t.c}, {str(i.name) for i in t.indexes})
            for t in metadata.sorted_tables}


def test_the_cheap_current_check_knows_the_newest_revision() -> None:
    # A Store skips Alembic when alembic_version already holds HEAD_REVISION: a new revision
    # without HEAD_REVISION bumped would leave every existing database unmigrated.
    assert HEAD_REVISION == head_revision(), (
        f"storage/migrate.py HEAD_REVISION is {HEAD_REVISION!r}, the newest revision in "
        f"storage/alembic/versions is {head_revision()!r}: bump HEAD_REVISION")


def test_a_database_stamped_with_an_older_revision_is_still_upgraded(tmp_path: Path) -> None:
    path = tmp_path / "older.db"
    Store(path).close()
    with sqlite3.connect(path) as conn:  # as a file last opened by the code of revision 0001
        conn.execute("UPDATE alembic_version SET version_num = '0001'")
    conn.close()
    store = Store(path)
    assert store.query("SELECT version_num FROM alembic_version") == [
        {"version_num": head_revision()}]
    store.close()


def test_the_migrated_schema_is_the_one_the_queries_are_written_for(db_target: str) -> None:
    shape, diffs = _database_shape(db_target)
    assert shape == _metadata_shape()
    assert diffs == []


def test_the_legacy_file_has_the_same_schema_after_the_upgrade(legacy_copy: Path) -> None:
    assert _database_shape(str(legacy_copy))[0] == _metadata_shape()


_OPENER = """
import sys, time
from storage.base import open_database
from storage.migrate import upgrade
until = float(sys.argv[2])
database, _, _ = open_database(sys.argv[1])
time.sleep(max(0.0, until - time.time()))
before, after = upgrade(database)
print("migrated" if before != after else "current")
"""


def test_two_processes_starting_at_once_migrate_only_once(
    db_target: str, tmp_path: Path, warm_python: WarmPython,  # noqa: F811 - the fixture
) -> None:
    # Two processes forked warm (tests/warm_python.py): each is up in milliseconds, where a
    # cold interpreter took a second or more to import the store.
    start_at = f"{time.time() + 1.5:.3f}"  # both processes are up and waiting by then
    procs = [warm_python.spawn(["-c", _OPENER, db_target, start_at], dict(os.environ), tmp_path,
                               tmp_path / f"opener-{n}.out", tmp_path / f"opener-{n}.err")
             for n in range(2)]
    codes = [proc.wait(timeout=120) for proc in procs]
    outcomes = [((tmp_path / f"opener-{n}.out").read_text(), (tmp_path / f"opener-{n}.err").read_text())
                for n in range(2)]
    assert codes == [0, 0], [err for _, err in outcomes]
    assert sorted(out.strip() for out, _ in outcomes) == ["current", "migrated"]
    store = Store(db_target)
    assert store.query("SELECT version_num FROM alembic_version") == [
        {"version_num": head_revision()}]
    store.close()


def test_copy_to_postgres_moves_every_run_with_all_rows(legacy_copy: Path, pg_url: str) -> None:
    source, target = Store(legacy_copy), Store(pg_url)
    report = copy_store(source, target)
    assert report.runs == 2 and report.documents == 1
    assert count_rows(target) == count_rows(source)
    got, want = snapshot(target), _expected()
    # Ranking differs by design (BM25 against ts_rank); the passage found first does not.
    assert [h["passage_id"] for h in got["_documents"].pop("search")][:1] == [
        h["passage_id"] for h in want["_documents"].pop("search")][:1]
    assert got == want
    # The copy goes on working there: new rows get new ids after the copied ones.
    run_id = next(k for k in want if not k.startswith("_"))
    last = max(e["id"] for e in want[run_id]["events"])
    assert target.append_event({"run_id": run_id, "type": "progress"}) > last
    with pytest.raises(CopyRefused, match="already holds 2 runs"):
        copy_store(source, target)
    again = copy_store(source, target, append=True)
    assert (again.runs, again.skipped_runs) == (0, 2)
    assert count_rows(target)["events"] == count_rows(source)["events"] + 1


def _db_cli(run_cli: RunCli, cwd: Path, *args: str, env: dict[str, str] | None = None,
            ) -> subprocess.CompletedProcess[str]:
    """`python -m research db ARGS` in-process (the `-m` entry point is test_cli.py's job)."""
    return run_cli(["db", *args], env or {}, cwd)


def test_db_commands_say_what_they_did_and_never_print_the_password(
        legacy_copy: Path, pg_url: str, run_cli: RunCli) -> None:
    assert TEST_PASSWORD in pg_url
    up = _db_cli(run_cli, legacy_copy.parent, "upgrade", "--db", str(legacy_copy))
    assert up.returncode == 0, up.stderr
    assert "Upgraded the database" in up.stderr and "every row is kept" in up.stderr
    again = _db_cli(run_cli, legacy_copy.parent, "upgrade", env={"DEEP_RESEARCH_DB": str(legacy_copy)})
    assert again.returncode == 0 and "already up to date" in again.stderr

    copied = _db_cli(run_cli, legacy_copy.parent, "copy", "--to", pg_url, "--from", str(legacy_copy))
    assert copied.returncode == 0, copied.stderr
    assert "Copied 2 runs (6 sources, 2 drafts, 4 verdicts, 8 events) and 1 documents" in (
        copied.stderr)
    refused = _db_cli(run_cli, legacy_copy.parent, "copy", "--to", pg_url, "--from", str(legacy_copy))
    assert refused.returncode == 1 and "already holds 2 runs" in refused.stderr
    appended = _db_cli(run_cli, legacy_copy.parent, "copy", "--to", pg_url, "--from", str(legacy_copy), "--append")
    assert appended.returncode == 0 and "2 runs the target already had" in appended.stderr
    unreachable = pg_url.rsplit(":", 1)[0] + ":1/research"
    down = _db_cli(run_cli, legacy_copy.parent, "upgrade", "--db", unreachable)
    assert down.returncode == 1 and "Could not reach" in down.stderr
    for result in (up, again, copied, refused, appended, down):
        assert TEST_PASSWORD not in result.stdout + result.stderr
        assert "Traceback" not in result.stderr
    assert "postgresql://postgres:***@127.0.0.1" in copied.stderr
