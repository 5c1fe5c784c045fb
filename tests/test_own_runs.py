"""Each person's own runs (issue 18, point 6), below the browser: the store's queries, the job
manager, the comparison and the command line.

A run belongs to the person who started it (`runs.person`); a read on a person's behalf
(`person=`) finds only theirs, so another person's run id reads as no run at all. Without a
person (one person, no sign-in) every run is there, as before. The browser side, with a real
OpenID Connect sign-in, is tests/test_browser_sign_in.py.
"""

from __future__ import annotations

import threading
from pathlib import Path
from typing import Any

import pytest
from dbos import DBOS

from dashboard.compare_table import compare_frame
from research.core.config import DEFAULT_PERSON, Credentials, build_config
from research.core.errors import ConfigError
from research.core.records import Run
from research.runs import Runs
from storage import Store
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import finished_run

ALICE, BOB = "alice@example.org", "bob@example.org"
CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})


def test_a_persons_reads_find_only_their_runs_and_no_person_finds_every_run(db_target: str) -> None:
    store = Store(db_target)
    try:
        alice = store.create_run("Alice's question about tides?", {}, person=ALICE)
        bob = store.create_run("Bob's question about tides?", {}, person=BOB)
        nobodys = store.create_run("A question from before sign-in about tides?", {})
        assert store.get_run(alice, person=ALICE).person == ALICE  # type: ignore[union-attr]
        assert store.get_run(alice, person=BOB) is None
        assert store.get_run(nobodys, person=ALICE) is None
        assert store.get_run(nobodys).person is None  # one person: every run  # type: ignore[union-attr]
        assert [r.id for r in store.list_runs(person=ALICE)] == [alice]
        assert [r.id for r in store.list_runs(search="tides", status="queued", person=BOB)] == [bob]
        assert {r.id for r in store.list_runs()} == {alice, bob, nobodys}
        assert (store.count_runs(person=ALICE), store.count_runs("tides", person=BOB),
                store.count_runs()) == (1, 1, 3)
        assert store.count_runs(person="carol@example.org") == 0
    finally:
        store.close()


def test_a_comparison_leaves_out_another_persons_run(tmp_path: Path) -> None:
    store = Store(tmp_path / "r.db")
    mine = finished_run(store, "How fast is solar power growing?", person=ALICE)
    theirs = finished_run(store, "How fast is wind power growing?", person=BOB)
    assert list(compare_frame(store, [mine, theirs], person=ALICE)["Run id"]) == [mine]
    assert list(compare_frame(store, [mine, theirs])["Run id"]) == [mine, theirs]


def _held(release: threading.Event):
    def execute(run_id: str, *, store: Store, **_: Any) -> Run | None:
        store.set_run_status(run_id, "running")
        release.wait(10)
        store.set_run_status(run_id, "failed", error="stopped by the test")
        return store.get_run(run_id)
    return execute


def _partition(run_id: str) -> str | None:
    """The fair-share person the run's newest workflow was queued under."""
    found = DBOS.list_workflows(workflow_id_prefix=f"{run_id}:", load_input=False,
                                load_output=False, sort_desc=True, limit=1)
    return found[0].queue_partition_key if found else None


def test_a_run_belongs_to_who_started_it_and_queues_as_theirs(tmp_path: Path) -> None:
    release = threading.Event()
    jobs = Runs(tmp_path / "r.db", executor=_held(release))
    config = build_config(env={}, preset="quick")
    store = Store(tmp_path / "r.db")
    try:
        run_id = jobs.start("Alice's question?", config, CREDS, person=ALICE)
        one_persons = jobs.start("A question without sign-in?", config, CREDS)
        assert store.get_run(run_id).person == ALICE  # type: ignore[union-attr]
        assert store.get_run(one_persons).person is None  # type: ignore[union-attr]
        assert _partition(run_id) == ALICE and _partition(one_persons) == DEFAULT_PERSON
        with pytest.raises(ConfigError, match="no longer exists"):  # building on Alice's run
            jobs.start("Bob builds on it?", config, CREDS, parent_run_id=run_id, person=BOB)
        release.set()
        assert jobs.wait(run_id, 10) and jobs.wait(one_persons, 10)
        release.clear()
        with pytest.raises(ConfigError, match="There is no run"):  # Bob resumes Alice's run
            jobs.resume(run_id, CREDS, person=BOB)
        jobs.resume(run_id, CREDS)  # a resume by anyone (the engine, a worker) stays Alice's
        assert _partition(run_id) == ALICE
        release.set()
        assert jobs.wait(run_id, 10)
    finally:
        release.set()
        store.close()


def test_the_cli_owner_sees_only_their_runs(run_cli: RunCli, tmp_path: Path) -> None:
    db = tmp_path / "cli.db"
    store = Store(db)
    alices = finished_run(store, "How do heat pumps perform in cold climates?", person=ALICE)
    store.close()
    env = {"DEEP_RESEARCH_DB": str(db)}
    out = tmp_path / "again.md"
    refused = run_cli(["--resume", alices, "--owner", BOB, "--out", str(out)], env, tmp_path)
    assert refused.returncode == 2 and f"There is no run with id {alices!r}" in refused.stderr
    assert not out.exists()
    refused = run_cli(["--resume", alices, "--out", str(out)],
                      {**env, "DEEP_RESEARCH_OWNER": BOB}, tmp_path)
    assert refused.returncode == 2 and not out.exists()
    refused = run_cli(["Bob builds on it?", "--build-on", alices, "--owner", BOB], env, tmp_path)
    assert refused.returncode == 2 and "to build on" in refused.stderr
    for owner in (["--owner", ALICE], []):  # Alice, and one person without an owner
        written = run_cli(["--resume", alices, "--out", str(out), *owner], env, tmp_path)
        assert written.returncode == 0, written.stderr
        assert "heat pumps" in out.read_text().lower()
        out.unlink()
