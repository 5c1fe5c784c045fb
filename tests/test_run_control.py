"""Pause, resume and cancel between units of work; the step and total time limits."""

from __future__ import annotations

import threading
import time
from dataclasses import replace
from pathlib import Path
from typing import Any

import pytest

from research import Credentials, build_config, cancel, create_run, execute, pause, unpause
from research.core.constants import CONSTANTS
from research.core.errors import ConfigError
from research.runs import control
from storage import Store
from tests.standin import StandinServer

QUESTION = "How is heat pump adoption changing in Europe?"
# What is controlled is the run between its units, not how much each unit searches: one search
# a subtopic, no academic or other-side searches.
SMALL: dict[str, Any] = {"SEARCHES_PER_SUBTOPIC": 1, "INCLUDE_ACADEMIC_SOURCES": False,
                         "SEARCH_OTHER_SIDE": False}


def _start(env: dict[str, str], db: Path, on_event: Any = None, **overrides: Any) -> tuple[Store, str, threading.Thread]:
    credentials = Credentials.from_env(env)
    store = Store(db)
    config = build_config(env=env, fetch_timeout_s=3, **overrides)
    run_id = create_run(store, QUESTION, config)
    thread = threading.Thread(target=execute, args=(run_id,), daemon=True,
                              kwargs={"store": Store(db), "credentials": credentials, "on_event": on_event})
    thread.start()
    return store, run_id, thread


def _wait_for(predicate: Any, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if predicate():
            return
        time.sleep(0.05)
    raise AssertionError("condition not reached in time")


def test_pause_holds_the_run_between_units_and_resume_finishes_it(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(control, "POLL_S", 0.1)  # a paused run looks for Resume more often
    standin.set_delay(0.05)
    store = Store(tmp_db)
    holder: dict[str, str] = {}

    def on_event(event: Any) -> None:
        if event.type == "plan_created":
            pause(store, event.run_id)
            holder["run"] = event.run_id

    # Quick as it is: with one search a subtopic a unit already sent could start its step after
    # the pause was seen (a CI counted 6 steps where 5 were).
    store, run_id, thread = _start(standin_env, tmp_db, on_event, preset="quick")
    _wait_for(lambda: store.get_run(run_id).status == "paused")  # type: ignore[union-attr]
    before = len(store.get_steps(run_id))
    calls = standin.count("openai")
    time.sleep(1.0)  # unpaused, the run would have started several steps by now
    assert len(store.get_steps(run_id)) == before
    assert standin.count("openai") - calls <= 3  # at most the units already in flight
    unpause(store, run_id)
    thread.join(120)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    types = [e.type for e in store.get_events(run_id)]
    assert types.index("paused") < types.index("resumed") < types.index("completed")


def test_cancel_stops_the_run_and_keeps_what_was_gathered(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    store = Store(tmp_db)

    def on_event(event: Any) -> None:
        if event.type == "step_completed" and (event.step or "").startswith("research:"):
            cancel(store, event.run_id)

    store, run_id, thread = _start(standin_env, tmp_db, on_event, preset="quick",
                                   MAX_PARALLEL_WORKERS=1, **SMALL)
    thread.join(120)
    run = store.get_run(run_id)
    assert run is not None and run.status == "cancelled"
    assert store.count_sources(run_id) > 0 and store.get_report(run_id) is None
    assert "cancelled" in [e.type for e in store.get_events(run_id)]


def test_write_up_now_stops_research_and_writes_a_verified_report_from_what_was_gathered(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Instead of cancelling, the person asks for the report now ("Write the report from
    what was gathered"): research ends at its next checkpoint, no further round or review
    cycle runs, and the report is written from the sources kept and verified as usual."""
    monkeypatch.setattr(control, "POLL_S", 0.05)  # the next checkpoint hears it at once
    store = Store(tmp_db)

    def on_event(event: Any) -> None:
        if event.type == "step_completed" and (event.step or "").startswith("research:"):
            control.wrap_up(store, event.run_id)

    store, run_id, thread = _start(standin_env, tmp_db, on_event, preset="quick",
                                   SUBTOPIC_COUNT=3, MAX_ROUNDS=2, REVIEW_CYCLES=1,
                                   MAX_PARALLEL_WORKERS=1, **SMALL)
    thread.join(120)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    steps = {s.key: s for s in store.get_steps(run_id)}
    assert not any(k.startswith(("triage:", "review:")) for k in steps), sorted(steps)
    research = [s for k, s in steps.items() if k.startswith("research:")]
    # The first unit finished whole; the others stopped at a checkpoint or never started.
    whole = [s for s in research if "you asked to write the report" not in str(s.result)]
    assert [s.key for s in whole] == ["research:t1"], [(s.key, s.result) for s in research]
    report = store.get_report(run_id)
    assert report is not None and report.meta["cited_sources"] > 0
    assert steps["verify"].status == "done"  # verified like any report
    assert any("ended early at your request" in w for w in run.warnings)
    assert "ended early at your request" in " ".join(report.meta["notes"])
    assert "you asked to write the report" in run.totals.stop_reason
    assert not any("budget" in w.lower() for w in run.warnings)


def test_total_time_limit_stops_the_run_with_a_clear_message(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A person's shortest limit is 10 s; what is tested here is the limit itself, so this
    # run may have a 3 s one rather than wait out 10.
    with pytest.raises(ConfigError, match="TOTAL_TIMEOUT_MS"):
        build_config(env=standin_env, TOTAL_TIMEOUT_MS=3_000)
    monkeypatch.setitem(CONSTANTS, "TOTAL_TIMEOUT_MS",
                        replace(CONSTANTS["TOTAL_TIMEOUT_MS"], minimum=1_000))
    standin.set_delay(0.5)
    store, run_id, thread = _start(standin_env, tmp_db, TOTAL_TIMEOUT_MS=3_000,
                                   MAX_PARALLEL_WORKERS=1)
    thread.join(120)
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "total time limit" in run.error and "resume" in run.error
    assert run.duration_s < 40


def test_step_time_limit_fails_slow_subtopics(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    # Only the research steps' query writing is slow, longer than the limit (1 s, the
    # shortest a person may set); pre-flight and the plan answer at once.
    for api in ("openai", "gemini"):
        standin.add_fault(api, "hang", times=1000, seconds=1.3, task="SearchQueries")
    store, run_id, thread = _start(standin_env, tmp_db, preset="quick", STEP_TIMEOUT_MS=1_000,
                                       **SMALL)
    thread.join(180)
    research = [s for s in store.get_steps(run_id) if s.kind == "research"]
    assert research and all(s.status == "failed" and s.attempts == 3 for s in research)
    assert any("STEP_TIMEOUT_MS" in (s.error or "") for s in research)
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "No usable sources" in run.error
