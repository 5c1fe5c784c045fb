"""Fair share (issue 18, point 5), on the real engine: DBOS's partitioned queue, with a fast
fake execute that records when each run executes.

At most MAX_RUNS_PER_PERSON of one person's runs execute at once, the worker never runs more
than its own concurrency, and one person's long queue does not hold another person's run back
beyond a free slot. A queued run knows its place in the queue.

The queue is polled every 0.1 s here (QUICK_POLL_S; 0.5 s in production), so that the runs,
and the test, do not wait out the polling.
"""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from dashboard.jobs import JobManager
from research import durable
from research.core.config import MAX_RUNS_PER_PERSON, Credentials, WorkerSettings, build_config
from research.core.records import Run
from storage import Store

CREDS = Credentials.from_env({"OPENAI_API_KEY": "sk-test-0123456789abcdef"})
QUICK_POLL_S = 0.1
# How long each fake run executes: several polls, so that the runs one poll starts overlap
# and a free slot is filled at a later poll before the first runs end, on a busy machine too.
RUN_S = 0.8


@pytest.fixture(autouse=True)
def _quick_queue(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(durable, "POLL_S", QUICK_POLL_S)


class Recorder:
    """A fake execute that records (run id, start, end) of each execution, each taking
    `run_s` seconds once the gate is open."""

    def __init__(self, run_s: float = RUN_S) -> None:
        self.run_s = run_s
        self.lock = threading.Lock()
        self.spans: dict[str, tuple[float, float]] = {}
        self.gate = threading.Event()
        self.gate.set()

    def __call__(self, run_id: str, *, store: Store, **_: Any) -> Run | None:
        self.gate.wait(30)
        start = time.monotonic()
        store.set_run_status(run_id, "running")
        time.sleep(self.run_s)
        store.set_run_status(run_id, "completed")
        with self.lock:
            self.spans[run_id] = (start, time.monotonic())
        return store.get_run(run_id)

    def most_at_once(self, run_ids: list[str]) -> int:
        """The largest number of these runs that executed at the same moment."""
        spans = [self.spans[r] for r in run_ids]
        return max(sum(1 for s, e in spans if s <= t < e) for t, _ in spans)


def test_one_persons_queue_neither_exceeds_their_share_nor_delays_another_person(tmp_path: Path) -> None:
    recorder = Recorder()
    recorder.gate.clear()  # the runs taken while the nine are queued wait for the last one
    concurrency = MAX_RUNS_PER_PERSON + 1
    jobs = JobManager(tmp_path / "r.db", executor=recorder,
                      workers=WorkerSettings(concurrency=concurrency))
    config = build_config(env={}, preset="quick")
    alice = [jobs.start(f"Alice question {i}?", config, CREDS, person="alice") for i in range(8)]
    bob = jobs.start("Bob's only question?", config, CREDS, person="bob")
    recorder.gate.set()
    for run_id in [*alice, bob]:
        assert jobs.wait(run_id, 60), f"run {run_id} did not finish"

    assert recorder.most_at_once(alice) == MAX_RUNS_PER_PERSON
    assert recorder.most_at_once([*alice, bob]) <= concurrency
    # Bob's run took the slot Alice's share left free: it started before any of Alice's
    # runs beyond her share, although all eight of hers were queued before it.
    bob_start = recorder.spans[bob][0]
    later_alice = sorted(recorder.spans[r][0] for r in alice)[MAX_RUNS_PER_PERSON:]
    # (Alice's later runs start only when her first ones end, so this also says Bob did not
    # wait for one of her runs to finish.)
    assert bob_start < min(later_alice)


def test_a_queued_run_knows_its_place_among_its_persons_runs(tmp_path: Path) -> None:
    recorder = Recorder(run_s=0.1)  # one at a time: how long each runs matters not
    recorder.gate.clear()  # the first runs hold their slots until the gate opens
    jobs = JobManager(tmp_path / "r.db", executor=recorder, workers=WorkerSettings(concurrency=1))
    config = build_config(env={}, preset="quick")
    first = jobs.start("Alice first?", config, CREDS, person="alice")
    deadline = time.monotonic() + 10
    while jobs.queue_place(first) is not None and time.monotonic() < deadline:
        time.sleep(0.05)  # the worker takes it: it is executing, no longer queued
    assert jobs.queue_place(first) is None and jobs.is_alive(first)
    second = jobs.start("Alice second?", config, CREDS, person="alice")
    other = jobs.start("Bob's?", config, CREDS, person="bob")
    third = jobs.start("Alice third?", config, CREDS, person="alice")

    assert jobs.queue_place(second) is not None
    assert (jobs.queue_place(second).place, jobs.queue_place(second).ahead) == (1, 0)  # type: ignore[union-attr]
    assert (jobs.queue_place(other).place, jobs.queue_place(other).ahead) == (1, 1)  # type: ignore[union-attr]
    assert (jobs.queue_place(third).place, jobs.queue_place(third).ahead) == (2, 2)  # type: ignore[union-attr]
    recorder.gate.set()
    for run_id in (first, second, other, third):
        assert jobs.wait(run_id, 60)
    assert jobs.queue_place(third) is None
