"""Pre-flight honours Retry-After like every other call, tells a rate limit from a bad key, and
names the real cause of a failure (issue 10.6)."""

from __future__ import annotations

from typing import Any

import pytest

from research.core.records import Run
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer

QUESTION = "How is heat pump adoption changing in Europe?"


def _run(runner: Runner, **overrides: Any) -> tuple[Store, Run]:
    runner.with_env(DEEP_RESEARCH_SEARCH="tavily", DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES="0")
    store, run_id = runner(preset="quick", **overrides)
    run = store.get_run(run_id)
    assert run is not None
    return store, run


def test_a_rate_limited_search_at_pre_flight_is_waited_out_not_dropped(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("tavily", "status", times=1, status=429, headers={"Retry-After": "1"})
    store, run = _run(http_runs)
    assert run.status == "completed", run.error
    step = store.get_step(run.id, "preflight")
    assert step is not None
    preflight = step.result
    assert preflight["search"] == ["tavily"] and not preflight["search_failed"]
    times = [r["time"] for r in standin.requests_for("tavily")[:2]]
    assert times[1] - times[0] >= 0.9  # Retry-After was honoured


def test_a_search_that_stays_rate_limited_is_not_blamed_on_the_key(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("tavily", "status", times=1000, status=429, headers={"Retry-After": "0"})
    _, run = _run(http_runs, max_retries=1)
    assert run.status == "failed"
    assert "rate limiting" in run.error and "not a key problem" in run.error
    assert "TAVILY_API_KEY" not in run.error


def test_a_refused_search_key_still_points_at_the_key(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("tavily", "status", times=1000, status=401)
    _, run = _run(http_runs)
    assert run.status == "failed" and "Check TAVILY_API_KEY" in run.error


@pytest.mark.parametrize(("fault", "params", "says"), [
    ("status", {"status": 429, "body": {"error": {"message": "You exceeded your current quota.",
                                                  "type": "insufficient_quota",
                                                  "code": "insufficient_quota"}}}, "quota"),
    ("invalid_json", {"times": 10, "mode": "text"}, "not with the JSON"),
    ("context_limit", {"times": 10, "max_chars": 10}, "too long"),
    ("status", {"status": 404}, "Check the model name"),
])
def test_a_model_failing_pre_flight_names_the_real_cause(
    standin: StandinServer, http_runs: Runner, fault: str,
    params: dict[str, Any], says: str,
) -> None:
    standin.add_fault("openai", fault, task="Ping", **params)
    _, run = _run(http_runs)
    assert run.status == "failed"
    assert says in run.error
    assert "Check OPENAI_API_KEY" not in run.error


def test_a_refused_model_key_points_at_the_key(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("openai", "status", times=10, status=401, task="Ping")
    _, run = _run(http_runs)
    assert run.status == "failed" and "Check OPENAI_API_KEY" in run.error
    # Plain words: the provider and the fix, not "openai/gpt-5-mini" or the SDK's (HTTP 401).
    assert run.error.startswith("OpenAI did not accept the API key")
    assert "openai/" not in run.error and "HTTP" not in run.error
