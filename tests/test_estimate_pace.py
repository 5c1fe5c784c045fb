"""The estimate knows the account (issue 31, point 3): the time under the account's known
limits, and which limit sets the pace; nothing about limits when none is known."""

from __future__ import annotations

from pathlib import Path

import pytest

import research.estimate as estimate_module
from research.core.config import Credentials, build_config
from research.estimate import (
    ModelLoad,
    account_of,
    account_pace,
    estimate,
    estimate_line,
    pace,
    paced,
    spoken_duration,
)
from research.llm import pacing
from research.llm.limits import Account, AccountLimits, key_hash
from tests.cli_helpers import RunCli
from tests.runs import Runner
from tests.standin import StandinServer

LOAD = ModelLoad("openai", "gpt-4.1", ("lead", "worker"), calls=300, input_tokens=270_000,
                 output_tokens=60_000)


def test_nothing_known_says_nothing_about_limits() -> None:
    assert paced(LOAD, 600, None) is None
    assert paced(LOAD, 600, AccountLimits(source="nothing learned yet")) is None
    guess = estimate(build_config(env={}, preset="quick"))
    assert pace(guess, lambda load: None) is None
    assert "limit" not in estimate_line(guess, None)


def test_tokens_a_minute_set_the_pace_of_a_tier_one_key() -> None:
    found = paced(LOAD, 240, AccountLimits(requests_per_minute=500, tokens_per_minute=30_000))
    assert found is not None and found.slowed
    assert found.seconds == pytest.approx(60 * 330_000 / 30_000)  # 11 minutes
    assert found.limit == "your account's limit of 30,000 tokens a minute"
    assert found.text == ("About 11 minutes with your account's limit of 30,000 tokens a "
                          "minute (gpt-4.1).")


def test_requests_a_minute_set_the_pace_of_a_free_tier() -> None:
    found = paced(LOAD, 240, AccountLimits(requests_per_minute=10, tokens_per_minute=250_000))
    assert found is not None and found.seconds == pytest.approx(60 * 300 / 10)
    assert "10 requests a minute" in found.limit and "30 minutes" in found.text


def test_a_local_server_writing_one_answer_at_a_time_sets_the_pace() -> None:
    found = paced(LOAD, 240, AccountLimits(parallel=1, tokens_per_second=30))
    assert found is not None and found.seconds == pytest.approx(60_000 / 30)
    assert "one answer at a time at 30 tokens a second" in found.text
    two = paced(LOAD, 240, AccountLimits(parallel=2, tokens_per_second=30))
    assert two is not None and two.seconds == pytest.approx(1_000)
    assert "2 answers at a time" in two.text


def test_limits_that_do_not_slow_the_run_leave_its_time_and_say_so() -> None:
    found = paced(LOAD, 900, AccountLimits(requests_per_minute=10_000, tokens_per_minute=2_000_000))
    assert found is not None and not found.slowed and found.seconds == 900
    assert "should not slow this run" in found.text


def test_a_daily_request_limit_the_run_would_spend_is_said_plainly() -> None:
    found = paced(LOAD, 900, AccountLimits(requests_per_day=250, requests_per_minute=10))
    assert found is not None and found.limit == "requests a day"
    assert "more than your account's limit of 250 requests a day" in found.text


def test_the_estimates_loads_split_its_calls_and_tokens_by_model() -> None:
    config = build_config(env={}, preset="standard", role_models={
        "writer": {"provider": "gemini", "model": "gemini-2.5-pro"}})
    guess = estimate(config)
    assert sum(x.calls for x in guess.loads) == guess.model_calls
    assert sum(x.input_tokens for x in guess.loads) == pytest.approx(guess.input_tokens, abs=2)
    writer = next(x for x in guess.loads if x.provider == "gemini")
    assert writer.roles == ("writer",) and 0 < writer.calls < guess.model_calls
    assert {"verifier", "auditor", "critic"} <= {r for x in guess.loads for r in x.roles}

    # The slowest account sets the pace: a tight limit on the writer's model only.
    def limits(load: ModelLoad) -> AccountLimits | None:
        return AccountLimits(tokens_per_minute=1_000) if load.provider == "gemini" else None
    found = pace(guess, limits)
    assert found is not None and "gemini-2.5-pro" in found.text
    assert found.seconds == pytest.approx(60 * (writer.input_tokens + writer.output_tokens) / 1_000)


def test_an_account_is_named_by_a_hash_of_its_key_never_the_key() -> None:
    config = build_config(env={"OPENAI_BASE_URL": "http://127.0.0.1:8080/v1"})
    account = account_of(config, Credentials(openai_api_key="sk-secret-value"), "openai", "m")
    assert account == Account("openai", "http://127.0.0.1:8080/v1", key_hash("sk-secret-value"), "m")
    assert "sk-secret-value" not in account.id


def test_the_estimate_uses_what_the_process_learned_of_the_account() -> None:
    config = build_config(env={})
    credentials = Credentials(openai_api_key="sk-tier-one")
    guess = estimate(config)
    pacing.forget_pacers()
    try:
        assert account_pace(guess, config, credentials) is None  # nothing learned yet
        account = account_of(config, credentials, "openai", config.role("lead").model)
        pacing.pacer_for(account).learn(AccountLimits(tokens_per_minute=30_000))
        found = account_pace(guess, config, credentials)
        assert found is not None and found.limit.endswith("30,000 tokens a minute")
        assert account_pace(guess, config, Credentials(openai_api_key="sk-other")) is None
    finally:
        pacing.forget_pacers()


def test_durations_are_spoken_in_words() -> None:
    assert spoken_duration(45) == "45 seconds"
    assert spoken_duration(660) == "11 minutes"
    assert spoken_duration(4_800) == "1 hour 20 minutes"
    assert spoken_duration(7_200) == "2 hours"


def test_the_cli_prints_the_estimate_with_the_accounts_pace(
    run_cli: RunCli, standin_env: dict[str, str], tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    seen: list[Account] = []

    def tier_one(account: Account, books: object = None) -> AccountLimits:
        seen.append(account)
        return AccountLimits(requests_per_minute=500, tokens_per_minute=30_000)

    monkeypatch.setattr(estimate_module, "known_limits", tier_one)
    env = {**standin_env, "DEEP_RESEARCH_DB": str(tmp_path / "x.db")}
    result = run_cli(["Heat pump adoption in Europe", "--preset", "quick", "--detach"], env,
                     tmp_path)
    assert result.returncode == 0, result.stderr
    line = next(x for x in result.stderr.splitlines() if x.startswith("Estimate: about"))
    assert "with your account's limit of 30,000 tokens a minute" in line and "~$" in line
    assert seen and all(a.key_hash == key_hash(standin_env["OPENAI_API_KEY"]) for a in seen)


def test_after_a_run_on_a_limited_key_the_next_estimate_knows_its_limits(
    standin: StandinServer, http_runs: Runner,
) -> None:
    # The stand-in answers as OpenAI does for a limited account: x-ratelimit-* headers on every
    # answer, which the run's pacer learns (research/llm/pacing.py). A small run, within one
    # minute's tokens (a new account's allowance is whole at first), is not held back.
    pacing.forget_pacers()
    try:
        standin.set_account("openai", requests_per_minute=500, tokens_per_minute=60_000)
        store, run_id = http_runs(preset="quick", SOURCES_PER_SUBTOPIC=5)
        assert store.get_run(run_id).status == "completed"  # type: ignore[union-attr]
        # Standard with every subtopic at once: its tokens take longer at 60,000 a minute
        # than the run would take unhindered.
        config = build_config(env=http_runs.env, preset="standard", MAX_PARALLEL_WORKERS=8)
        found = account_pace(estimate(config), config, http_runs.credentials)
        assert found is not None and found.limit == (
            "your account's limit of 60,000 tokens a minute")
        assert found.seconds > estimate(config).seconds
        # A new process (the dashboard restarted, the next CLI command) knows nothing of its
        # own, but the run wrote what it learned in the store's books (never the key).
        pacing.forget_pacers()
        assert account_pace(estimate(config), config, http_runs.credentials) is None
        again = account_pace(estimate(config), config, http_runs.credentials, store)
        assert again is not None and again.limit == found.limit
    finally:
        pacing.forget_pacers()
