"""Get told, anywhere (issue 36, point 4): when a run finishes, fails or waits for its person,
one line with a link goes to every notification target they set, through Apprise; the targets
are secrets and never reach the database, the logs, events or exports.

The target is Apprise's `json://` service pointed at a local receiver (tests/notify_receiver.py),
so each message crosses real HTTP from the real library."""

from __future__ import annotations

import logging
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from sqlalchemy import select

from research.core.config import Credentials, build_config
from research.core.records import Run
from research.living import notify
from research.runs import Runs
from storage import Store
from storage.schema import metadata
from tests.cli_helpers import RunCli
from tests.notify_receiver import Receiver, receiver
from tests.standin import StandinServer

CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
SECRET = "hunter2-notify-pass-91f3"  # the target's password: a secret like a key
BASE = "https://studio.example.org"


def _ending(run_id: str, *, store: Store, **_: Any) -> Run | None:
    """An executor that ends the run as its question's first word says."""
    run = store.get_run(run_id)
    assert run is not None
    status = run.question.split(":")[0]
    store.set_run_status(run_id, "running")
    if status == "crash":
        raise RuntimeError("the program itself broke")
    if status == "failed":
        store.set_run_status(run_id, "failed", error="the model stopped answering")
    else:
        store.set_run_status(run_id, status)
    return store.get_run(run_id)


class Door:
    """One door to runs for the module (launching the engine costs seconds); each test sets
    the settings its runs end with."""

    def __init__(self, db: Path) -> None:
        self.env: dict[str, str] = {}
        self.jobs = Runs(db, executor=_ending, env=lambda: self.env)
        self.store = self.jobs.store

    def run(self, status: str, question: str, env: dict[str, str],
            person: str | None = None) -> str:
        self.env = env
        run_id = self.jobs.start(f"{status}: {question}", build_config(env={}, preset="quick"),
                                 CREDS, person=person)
        assert self.jobs.wait(run_id, 20)
        return run_id


@pytest.fixture(scope="module")
def door(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Door]:
    made = Door(tmp_path_factory.mktemp("notify") / "r.db")
    yield made
    made.jobs.close()


def _env(box: Receiver, **more: str) -> dict[str, str]:
    target = box.target().replace("json://", f"json://watcher:{SECRET}@")
    return {notify.NOTIFY_KEY: target, notify.BASE_URL_KEY: BASE, **more}


@pytest.mark.parametrize(("status", "words"), [
    ("completed", "Completed"),  # the words of every surface (research/voice.py)
    ("failed", "Failed"),
    ("crash", "Failed"),  # recorded by the engine, then told
    ("waiting", "Waiting for you"),
])
def test_a_run_that_ends_or_waits_tells_its_person_in_one_line_with_a_link(
        door: Door, status: str, words: str) -> None:
    with receiver() as box:
        run_id = door.run(status, "How is heat pump adoption changing?", _env(box))
        got = box.wait_for(1)
    assert len(got) == 1
    message = got[0]["message"]
    assert message.startswith(words + ":"), message
    assert "How is heat pump adoption changing?" in message
    assert message.endswith(f"{BASE}/run?run={run_id}")
    assert "\n" not in message
    assert got[0]["title"] == notify.TITLE


def test_a_run_without_targets_sends_nothing_and_a_bad_target_says_so_in_plain_words(
        door: Door) -> None:
    with receiver() as box:
        door.run("completed", "Nobody to tell?", {notify.BASE_URL_KEY: BASE})
        assert box.received == []  # the run has ended: whatever it sent has been sent
    sent = notify.send([f"nosuchservice://{SECRET}@x"], "hello")
    assert not sent.ok and sent.problem is not None
    assert "not addresses Apprise understands" in sent.problem and SECRET not in sent.problem


def test_send_a_test_reaches_the_target_and_an_unreachable_one_is_reported(tmp_path: Path) -> None:
    with receiver() as box:
        sent = notify.send_test(_env(box), None)
        assert sent.ok and sent.delivered == 1
        assert box.wait_for(1)[0]["message"].startswith("Test from Deep Research Studio")
        port = box.port
    gone = notify.send_test({notify.NOTIFY_KEY: f"json://watcher:{SECRET}@127.0.0.1:{port}/x"},
                            None)
    assert not gone.ok and gone.problem and "could not be reached" in gone.problem
    assert SECRET not in gone.problem


def test_each_signed_in_person_is_told_only_at_their_own_targets(door: Door) -> None:
    with receiver() as box:
        env = {notify.target_key("ada@example.org"): box.target("ada"),
               notify.target_key("bob@example.org"): box.target("bob"),
               notify.NOTIFY_KEY: box.target("nobody"), notify.BASE_URL_KEY: BASE}
        door.run("completed", "Ada's question?", env, person="ada@example.org")
    assert box.paths == ["/ada"]
    assert "ada" not in notify.target_key("ada@example.org").lower().replace("deep_research", "")


def test_notification_targets_never_reach_the_database_logs_or_events(
        door: Door, caplog: pytest.LogCaptureFixture) -> None:
    """Exports are made from the store alone, so a target kept out of it stays out of them
    (tests/test_watch.py exports a watched run's report and looks too)."""
    caplog.set_level(logging.DEBUG)
    with receiver() as box:
        env = _env(box)
        run_id = door.run("failed", "Where do the targets go?", env)
        assert len(box.wait_for(1)) == 1
        notify.send([env[notify.NOTIFY_KEY], f"nosuchservice://{SECRET}@x"], "second")
    store = door.store
    for table in metadata.sorted_tables:
        assert SECRET not in repr(store.query(select(table))), table.name
    assert all(SECRET not in (e.message or "") for e in store.get_events(run_id))
    folder = Path(str(door.jobs.db_path)).parent
    raw = b"".join(p.read_bytes() for p in folder.iterdir() if p.is_file())
    assert SECRET.encode() not in raw
    assert SECRET not in caplog.text


def test_a_run_in_the_terminal_tells_its_person_too(
        run_cli: RunCli, standin: StandinServer, standin_env: dict[str, str],
        tmp_path: Path) -> None:
    """`python -m research "..."` executes in the terminal's process, not on the engine: it
    tells the person the same way when the run ends (here: a model that refuses the key)."""
    standin.reset()
    standin.add_fault("openai", "status", times=50, status=401,
                      body={"error": {"message": "Incorrect API key provided",
                                      "type": "invalid_request_error"}})
    with receiver() as box:
        result = run_cli(["How loud are heat pumps?", "--preset", "quick"],
                         {**standin_env, **_env(box), "DEEP_RESEARCH_DB": str(tmp_path / "x.db")},
                         tmp_path)
        got = box.wait_for(1)
    standin.reset()
    assert result.returncode == 1
    assert len(got) == 1
    assert got[0]["message"].startswith("Failed: “How loud are heat pumps?” " + BASE)
