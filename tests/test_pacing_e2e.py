"""Complete runs on limited accounts, through the real openai and google-genai SDKs over HTTP
to the stand-in, which limits them as the providers document (tests/standin/limits.py).

The limits are scaled down from the real tiers so a run takes seconds, yet still bind: a quick
run sends about 100 requests and 65,000 tokens, more than a minute's worth of each below.
What is checked is what the person sees: the run completes with nothing failed, the waits are
a line or two (not a line per request), and a spent daily quota stops the run at once,
resumable. How fast is the benchmark's business (bench/limits.py), never asserted here.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from research import Credentials, build_config, resume
from research.core.executor import model_requests
from research.core.records import Run
from research.llm.limits import Account
from research.llm.pacing import known_limits
from storage import Store
from tests.runs import QUESTION, Runner
from tests.standin import GEMINI_KEY, OPENAI_KEY, StandinServer
from tests.store_files import migrated_copy

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
    # Tier 1 is 500 requests and 30,000 tokens a minute. A quick run here takes about 60,000
    # tokens, two minutes' worth: however slow the machine, the run must pace itself (at
    # 55,000 a minute a loaded machine could finish without ever reaching the limit).
    standin.set_account("openai", requests_per_minute=80, tokens_per_minute=30_000)
    store, run_id = http_runs(preset="quick")
    _completed(store, run_id)
    # Every answer carried the limits, the first one too: nothing was sent to be refused.
    assert standin.rate_limited("openai") == 0
    lines = _lines(store, run_id)
    assert 1 <= len(lines) <= 2, lines
    assert all("limit of 30,000 tokens a minute" in line or "limit of 80 requests a minute"
               in line for line in lines), lines


def test_a_run_on_a_gemini_account_learns_its_limit_from_the_first_refusal(
    standin: StandinServer, http_runs: Runner
) -> None:
    # Gemini sends no rate-limit headers: its 429 names the quota and its value.
    standin.set_account("gemini", requests_per_minute=80, tokens_per_minute=1_000_000,
                        free_tier=True)
    store, run_id = http_runs(preset="quick", provider="gemini")
    _completed(store, run_id)
    refused = standin.rate_limited("gemini")
    assert refused >= 1
    # Refused: only requests already in flight when the first refusal taught the limit.
    config = http_runs.config(preset="quick", provider="gemini")
    assert refused <= model_requests(config)
    account = Account.of("gemini", config.gemini_base_url, GEMINI_KEY, config.role("lead").model)
    assert known_limits(account).requests_per_minute == 80
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


_WORKER = """
import json, sys
from research import Credentials, build_config, run_research
from storage import Store
db, env, question = sys.argv[1], json.loads(sys.argv[2]), sys.argv[3]
credentials = Credentials.from_env(env)
with Store(db, secrets=credentials.secrets()) as store:
    config = build_config(env=env, preset="quick", fetch_timeout_s=5)
    print(run_research(question, store=store, config=config, credentials=credentials))
"""


def test_workers_on_one_key_share_its_limits_through_the_store(
    standin: StandinServer, standin_env: dict[str, str], tmp_db: Path
) -> None:
    # Three worker processes, one key, one store: together they need more than a minute of
    # the account, and they share it through the store's books (storage/accounts.py).
    standin.set_account("openai", requests_per_minute=240, tokens_per_minute=240_000)
    db = migrated_copy(tmp_db)
    workers = [subprocess.Popen(
        [sys.executable, "-c", _WORKER, str(db), json.dumps(standin_env), f"{QUESTION} ({n})"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
        env={**os.environ, "PYTHONPATH": str(Path(__file__).resolve().parent.parent)},
    ) for n in range(3)]
    outputs = [w.communicate(timeout=240) for w in workers]
    assert all(w.returncode == 0 for w in workers), [err[-2000:] for _, err in outputs]
    # The books hold each process back before the account refuses it: at most the few sent
    # by processes that had not read them yet.
    assert standin.rate_limited("openai") <= 6, standin.rate_limited("openai")
    with Store(db) as store:
        for out, _ in outputs:
            _completed(store, out.strip().splitlines()[-1])
        config = build_config(env=standin_env, preset="quick")
        account = Account.of("openai", config.openai_base_url, OPENAI_KEY,
                             config.role("lead").model)
        known = known_limits(account, store)
        assert known.tokens_per_minute == 240_000 and known.requests_per_minute == 240
