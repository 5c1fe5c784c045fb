"""The Run page shows a queued run's place in the queue (issue 18, point 5).

With external workers and none running, runs stay queued on the real engine; the Run page,
opened through app.py, says where each one waits, and says nothing of a queue for a run
that is not in it.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from research.core.config import Credentials, build_config
from research.runs import Runs
from storage import Store
from tests.dashboard_fixtures import dash_env_fixture, finished_run, open_run_page  # noqa: F401 - fixture

CREDS = Credentials.from_env({})


def test_the_run_page_shows_a_queued_runs_place(dash_env: Store, monkeypatch: pytest.MonkeyPatch,
                                                 tmp_path: Path) -> None:
    monkeypatch.setenv("DEEP_RESEARCH_WORKERS", "external")  # no worker: runs stay queued
    jobs = Runs(tmp_path / "data" / "research.db")
    config = build_config(env={}, preset="quick")
    first = jobs.start("First question?", config, CREDS)
    second = jobs.start("Second question?", config, CREDS)
    someone_else = jobs.start("Another person's question?", config, CREDS, person="bob")
    done = finished_run(dash_env)

    def queue_notes(run_id: str) -> list[str]:
        at = open_run_page(run_id)
        assert not at.exception
        return [str(i.value) for i in at.info if "Waiting for a free worker" in str(i.value)]

    [note] = queue_notes(second)
    assert "number 2 among this person's queued runs" in note and "1 queued run of everyone" in note
    [note] = queue_notes(someone_else)
    assert "next of this person's runs to start" in note and "2 queued runs of everyone" in note
    # Nothing ahead of it (a person alone on a laptop): one small line, no talk of a queue
    # or of other people, and no empty steps and activity tables.
    assert queue_notes(first) == []
    at = open_run_page(first)
    captions = " ".join(str(c.value) for c in at.caption)
    assert "Starting: a worker picks this run up in a moment." in captions
    assert "appear here as soon as the first step starts" in captions
    assert not any(e.label.startswith(("Steps", "Activity log")) for e in at.expander)
    assert queue_notes(done) == []
