"""Complete runs on limited accounts, through the real openai and google-genai SDKs over HTTP
to the stand-in, which limits them as the providers document (tests/standin/limits.py).

The limits are scaled down from the real tiers so a run takes seconds, yet still bind: a quick
run sends about 100 requests and 100,000 tokens, more than a minute's worth of each below.
What is checked is what the person sees: the run completes with nothing failed, the waits are
a line or two (not a line per request), and a spent daily quota stops the run at once,
resumable. How fast is the benchmark's business (bench/limits.py), never asserted here.
"""

from __future__ import annotations

from research import Credentials, resume
from research.executor import model_requests
from research.llm.limits import Account, key_hash
from research.llm.pacing import known_limits
from research.records import Run
from storage import Store
from tests.runs import Runner
from tests.standin import GEMINI_KEY, StandinServer

FAILED = ("error", "step_failed", "search_failed")


def _lines(store: Store, run_id: str) -> list[str]:
    return [e.message for e in store.get_events(run_id) if e.type == "limit_wait"]


def _completed(store: Store, run_id: str) -> Run:
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    failed = [e.message for e in store.get_events(run_id) if e.type in FAILED]
    assert not failed, failed
    assert not any(e.type == "retrying" and "rate" in e.message.lower()
                   for e in store.get_events(run_id))
    return run


def test_a_run_on_an_openai_account_paces_itself_by_its_headers(
    standin: StandinServer, http_runs: Runner
) -> None:
    # Tier 1 is 500 requests and 30,000 tokens a minute; a quick run here needs more than a
    # minute's worth of both of these.
    standin.set_account("openai", requests_per_minute=90, tokens_per_minute=80_000)
    store, run_id = http_runs(preset="quick")
    _completed(store, run_id)
    # Every answer carried the limits, the first one too: nothing was sent to be refused.
    assert standin.rate_limited("openai") == 0
    lines = _lines(store, run_id)
    assert 1 <= len(lines) <= 2, lines
    assert all("limit of 80,000 tokens a minute" in line or "limit of 90 requests a minute"
               in line for line in lines), lines


def test_a_run_on_a_gemini_account_learns_its_limit_from_the_first_refusal(
    standin: StandinServer, http_runs: Runner
) -> None:
    # Gemini sends no rate-limit headers: its 429 names the quota and its value.
    standin.set_account("gemini", requests_per_minute=90, tokens_per_minute=1_000_000,
                        free_tier=True)
    store, run_id = http_runs(preset="quick", provider="gemini")
    _completed(store, run_id)
    refused = standin.rate_limited("gemini")
    assert refused >= 1
    # Refused: only requests already in flight when the first refusal taught the limit.
    config = http_runs.config(preset="quick", provider="gemini")
    assert refused <= model_requests(config)
    account = Account("gemini", config.gemini_base_url or "", key_hash(GEMINI_KEY),
                      config.role("lead").model)
    assert known_limits(account).requests_per_minute == 90
    assert len(_lines(store, run_id)) <= 2


def test_a_spent_daily_quota_stops_the_run_at_once_and_resume_carries_on(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.set_account("gemini", requests_per_day=25, free_tier=True)
    store, run_id = http_runs(preset="quick", provider="gemini")
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert "quota" in run.error.lower() and "resumed" in run.error
    sent = standin.count("gemini")
    # No retries of a spent quota: what was in flight when it ran out, and nothing after.
    assert sent - 25 <= 16, sent
    kept = store.count_sources(run_id)
    standin.reset()  # the quota renews
    resumed = resume(run_id, store=store, credentials=http_runs.credentials)
    assert resumed.status == "completed", resumed.error
    assert store.count_sources(run_id) >= kept
    assert isinstance(http_runs.credentials, Credentials)
