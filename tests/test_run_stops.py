"""The run tells the truth about itself (issue 9.5): cancel, pause, waiting and budget stops are
not errors, a completed run with a weak report says so everywhere, and a failure names its
real cause."""

from __future__ import annotations

import threading
import time
from pathlib import Path
from typing import Any

import pytest

from research import Credentials, ResearchError, build_config, cancel, create_run, execute, resume
from research.core.errors import BudgetExceeded, BudgetStop, NeedsInput, RateLimited, RunCancelled, RunStop
from research.core.records import Report
from research.core.retry import RetryPolicy, call_with_retries
from storage import Store
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import dash_env_fixture  # noqa: F401 - fixture
from tests.standin import StandinServer

QUESTION = "How is heat pump adoption changing in Europe?"


def _start(env: dict[str, str], db: Path, **overrides: Any) -> tuple[Store, str, threading.Thread]:
    store = Store(db)
    config = build_config(env=env, fetch_timeout_s=3, **overrides)
    run_id = create_run(store, QUESTION, config)
    thread = threading.Thread(target=execute, args=(run_id,), daemon=True, kwargs={
        "store": Store(db), "credentials": Credentials.from_env(env)})
    thread.start()
    return store, run_id, thread


def _wait_for_retry(store: Store, run_id: str, timeout: float = 30.0) -> None:
    end = time.monotonic() + timeout
    while time.monotonic() < end:
        if any(e.type in ("retrying", "limit_wait") for e in store.get_events(run_id)):
            return
        time.sleep(0.05)
    raise AssertionError("no retry happened")


@pytest.mark.parametrize("stop", [RunCancelled, NeedsInput, BudgetExceeded, BudgetStop])
def test_no_except_research_error_can_swallow_a_stop(stop: type[RunStop]) -> None:
    def layer_that_warns_and_goes_on() -> str:
        try:
            raise stop("stopped")
        except ResearchError:
            return "swallowed"

    with pytest.raises(stop):
        layer_that_warns_and_goes_on()


def test_a_cancel_ends_a_retry_back_off_at_once() -> None:
    cancelled = threading.Event()
    threading.Timer(0.2, cancelled.set).start()
    started = time.monotonic()

    def limited() -> None:
        raise RateLimited("busy", retry_after=30)

    with pytest.raises(RunCancelled):
        call_with_retries(limited, policy=RetryPolicy(attempts=3), cancel=cancelled)
    assert time.monotonic() - started < 5


@pytest.mark.parametrize(("task", "overrides"), [
    ("Ping", {}),                                       # pre-flight
    ("ReportLabels", {"report_language": "German"}),    # deliver's fallback to English labels
])
def test_a_cancel_during_a_retry_back_off_ends_the_run_as_cancelled(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path, task: str,
    overrides: dict[str, Any],
) -> None:
    standin.add_fault("openai", "status", times=20, status=429, headers={"Retry-After": "20"},
                      task=task)
    store, run_id, thread = _start(standin_env, tmp_db, preset="quick", **overrides)
    _wait_for_retry(store, run_id, timeout=120)
    cancel(store, run_id)
    thread.join(15)
    assert not thread.is_alive()  # the 20 s back-off did not have to run out
    run = store.get_run(run_id) or {}
    assert run.status == "cancelled" and not run.error
    events = store.get_events(run_id)
    assert not [e for e in events if e.type in ("error", "warning")], events[-3:]
    assert not any("could not be reached" in e.message for e in events)


def test_a_model_outage_names_the_service_and_resume_carries_on(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    # The model answers pre-flight and the plan, then goes down for every worker call.
    for task in ("SearchQueries", "RelevanceScores", "SubtopicFindings", "OpenQuestions"):
        standin.add_fault("openai", "status", times=10_000, status=503, task=task)
    store, run_id, thread = _start(standin_env, tmp_db, preset="quick", max_retries=0)
    thread.join(120)
    run = store.get_run(run_id) or {}
    assert run.status == "failed"
    error = run.error
    assert "could not be reached" in error and "openai/gpt-5-mini" in error
    assert "Resume" in error and "nothing gathered is lost" in error
    assert "broader question" not in error and "Try a" not in error
    standin.reset()  # the service is back
    resumed = resume(run_id, store=store, credentials=Credentials.from_env(standin_env))
    assert resumed.status == "completed", resumed.error
    assert store.get_plan(run_id) and store.count_sources(run_id) > 0


def test_a_completed_run_with_warnings_says_so_in_store_library_and_cli(
    standin: StandinServer, standin_env: dict[str, str], tmp_path: Path, run_cli: RunCli
) -> None:
    from dashboard.views import library_frame, run_status_text

    db = tmp_path / "cli.db"
    out = tmp_path / "report.md"
    env = {**standin_env, "DEEP_RESEARCH_DB": str(db), "DEEP_RESEARCH_MAX_TOKENS": "6000"}
    proc = run_cli([QUESTION, "--preset", "quick", "--out", str(out)], env, tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "Completed with warnings" in proc.stderr and "stopped by the budget" in proc.stderr
    store = Store(db)
    run = store.list_runs()[0]
    assert run.status == "completed"
    assert any("stopped by the budget" in w for w in run.warnings)
    assert run_status_text(run) == "Completed with warnings"  # not the plain success check
    assert library_frame([run])["Status"].tolist() == [run_status_text(run)]
    events = [e for e in store.get_events(run.id) if e.type == "warning"]
    assert any("stopped by the budget" in e.message for e in events)


def test_incomplete_verification_or_no_verified_citation_is_a_warning(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from research.core.context import Losses
    from research.report import outcome

    class Ctx:
        run_id = "r1"
        losses = Losses()  # no piece lost

        def budget_reason(self) -> None:
            return None

        def stored_result(self, key: str) -> dict[str, Any]:
            return {}

        class store:  # noqa: N801 - a stand-in for the Store's two methods used here
            @staticmethod
            def get_report(run_id: str) -> Report:
                return Report(run_id, "# Report", {"cited_sources": 4})

            @staticmethod
            def get_events(run_id: str) -> list[Any]:
                return []  # no model answered short

    summaries = iter([
        outcome.verify.VerifySummary(claims=5, supported=1, incomplete=True, unchecked=3),
        outcome.verify.VerifySummary(claims=5, supported=0),
        outcome.verify.VerifySummary(claims=5, supported=4),
    ])
    monkeypatch.setattr(outcome.verify, "summary", lambda ctx, run_id: next(summaries))
    first = outcome.completion_warnings(Ctx())  # type: ignore[arg-type]
    assert any("Verification could not be completed (3 claims" in w for w in first)
    assert outcome.completion_warnings(Ctx()) == [  # type: ignore[arg-type]
        "No claim in the report is backed by a verified citation."]
    assert outcome.completion_warnings(Ctx()) == []  # type: ignore[arg-type]


def test_the_run_page_header_shows_a_completed_runs_warnings(dash_env: Store) -> None:
    from tests.dashboard_fixtures import finished_run, open_run_page

    run_id = finished_run(dash_env)
    dash_env.set_run_warnings(run_id, ["No claim in the report is backed by a verified citation."])
    at = open_run_page(run_id)
    assert any("verified citation" in w.value for w in at.warning)
    assert not at.exception
