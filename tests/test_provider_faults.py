"""Provider faults: trickling answers, broken JSON, refusals and safety blocks, and prompts
longer than the model's context window (trimmed before sending, and once more after a
context-length error). Retry-After, quota and 5xx handling are in tests/test_llm_providers.py.
"""

from __future__ import annotations

import time
from typing import Any

import pytest
from pydantic import BaseModel

from research import Credentials, build_config
from research.core.errors import ContextTooLong, ProviderError, ProviderTimeout
from research.core.prompts import untrusted_block
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.fitting import MIN_SOURCE_CHARS, TRIM_NOTE, fit_prompt, prompt_chars
from research.llm.messages import Message
from storage import Store
from tests.runs import Runner
from tests.standin import StandinServer

MODELS = {"openai": "gpt-5-mini", "gemini": "gemini-2.5-flash"}
PROVIDERS = pytest.mark.parametrize("provider", ["openai", "gemini"])
INSTRUCTIONS = "Report what the sources below establish. Keep numbers exact. " * 5


def _messages(*sizes: int) -> list[Message]:
    blocks = "\n\n".join(
        untrusted_block(f"s_{i}", {"title": f"Source {i}"}, f"{i}" * size, "0a1b2c3d")
        for i, size in enumerate(sizes)
    )
    return [Message("system", "You are a research worker. " * 10),
            Message("user", f"{INSTRUCTIONS}\n\n{blocks}\n\nReturn the findings.")]


def _role_llm(provider: str, env: dict[str, str], **kwargs: Any) -> RoleLLM:
    config = build_config(env=env, provider=provider, request_timeout_s=10)
    llm = build_llm(provider, MODELS[provider], config, Credentials.from_env(env))
    return RoleLLM(llm, "worker", UsageMeter(),
                   policy=RetryPolicy(attempts=3, base_delay=0.01, max_delay=0.05),
                   call_timeout=kwargs.pop("call_timeout", 10.0), **kwargs)


# --- fitting a prompt -----------------------------------------------------------------------------

def test_a_prompt_that_fits_is_sent_unchanged() -> None:
    messages = _messages(1000, 2000)
    assert fit_prompt(messages, 100_000) == messages


def test_the_longest_sources_are_trimmed_first_and_instructions_never() -> None:
    messages = _messages(30_000, 8_000, 500)
    fitted = fit_prompt(messages, 25_000)
    assert prompt_chars(fitted) <= 25_000
    system, user = fitted
    assert system == messages[0]
    assert user.content.startswith(INSTRUCTIONS) and user.content.endswith("Return the findings.")
    assert user.content.count("<untrusted_source id=") == 3
    assert user.content.count('</untrusted_source nonce="0a1b2c3d">') == 3
    assert "0" * 8_000 in user.content or user.content.count(TRIM_NOTE) == 2
    assert "2" * 500 in user.content  # the short source is whole
    assert user.content.count(TRIM_NOTE) >= 1


def test_a_prompt_that_cannot_fit_by_trimming_sources_is_a_clear_error() -> None:
    with pytest.raises(ContextTooLong, match="too long for the model"):
        fit_prompt(_messages(5_000), len(INSTRUCTIONS) + MIN_SOURCE_CHARS)


# --- against the stand-in: a context window of max_chars characters ------------------------------

@PROVIDERS
def test_prompts_over_the_configured_size_are_trimmed_before_sending(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "context_limit", times=100, max_chars=30_000)
    llm = _role_llm(provider, standin_env, max_input_chars=30_000)
    assert llm.text(_messages(40_000, 20_000, 1_000))
    assert standin.count(provider) == 1  # accepted at the first try


@PROVIDERS
def test_a_context_length_error_retries_once_with_a_harder_trim_and_remembers_it(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "context_limit", times=100, max_chars=30_000)
    notes: list[str] = []
    llm = _role_llm(provider, standin_env, on_retry=notes.append)  # default: 400k characters
    assert llm.text(_messages(40_000, 20_000, 1_000))
    assert standin.count(provider) == 2
    assert llm.room.max_chars <= 30_000 and notes and "too long" in notes[0]
    llm.text(_messages(40_000, 20_000, 1_000))  # the next prompt is trimmed before sending
    assert standin.count(provider) == 3


@PROVIDERS
def test_a_prompt_too_long_even_after_trimming_fails_with_a_clear_reason(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "context_limit", times=100, max_chars=500)
    with pytest.raises(ContextTooLong, match="longer than .* accepts") as caught:
        _role_llm(provider, standin_env).text(_messages(40_000))
    assert "Traceback" not in str(caught.value)
    assert standin.count(provider) <= 2


class Answer(BaseModel):
    ok: bool


@PROVIDERS
def test_provider_context_errors_map_to_context_too_long(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "context_limit", times=1, max_chars=10)
    config = build_config(env=standin_env, provider=provider)
    llm = build_llm(provider, MODELS[provider], config, Credentials.from_env(standin_env))
    with pytest.raises(ContextTooLong, match="context window") as caught:
        llm.complete(_messages(100))
    assert caught.value.status == 400


# --- slow, broken and refused answers --------------------------------------------------------------

@PROVIDERS
def test_a_trickling_structured_answer_is_cut_by_the_wall_clock(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "trickle", times=5, interval=0.3)
    llm = _role_llm(provider, standin_env, call_timeout=1.0)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout, match="did not answer"):
        llm.structured(_messages(100), Answer, deadline=time.monotonic() + 2.5)
    assert time.monotonic() - started < 4


def _run(runner: Runner, **overrides: Any) -> tuple[Store, str]:
    return runner(preset="quick", **overrides)


def test_a_run_survives_fenced_truncated_and_trickling_answers_and_a_refusal(
    standin: StandinServer, http_runs: Runner
) -> None:
    standin.add_fault("openai", "fenced_json", times=2)
    standin.add_fault("openai", "invalid_json", times=1, mode="truncated")
    standin.add_fault("openai", "think", times=1)
    standin.add_fault("openai", "trickle", times=1, interval=0.5, task="SearchQueries")
    standin.add_fault("openai", "refusal", times=1, task="SubtopicFindings")
    store, run_id = _run(http_runs, request_timeout_s=2)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    report = store.get_report(run_id)
    assert report is not None and "## Executive summary" in report.markdown
    assert "secret reasoning" not in report.markdown
    retries = [e.message for e in store.get_events(run_id) if e.type == "retrying"]
    assert any("did not answer" in m for m in retries)
    assert any("refused" in m for m in retries)


@pytest.mark.parametrize("provider, kind, reason", [
    ("openai", "refusal", "refused to answer"),
    ("gemini", "blocked", "blocked by safety filters"),
])
def test_a_writer_that_keeps_refusing_fails_the_run_with_a_reason_and_no_empty_report(
    provider: str, kind: str, reason: str, standin: StandinServer, http_runs: Runner,
) -> None:
    standin.add_fault(provider, kind, times=100, task="writer")
    store, run_id = _run(http_runs.with_env(DEEP_RESEARCH_PROVIDER=provider), max_retries=1)
    run = store.get_run(run_id)
    assert run is not None and run.status == "failed"
    assert reason in run.error and "Traceback" not in run.error
    assert store.get_report(run_id) is None
    assert store.count_sources(run_id) > 0  # what was gathered is kept


def test_context_length_errors_during_a_run_are_trimmed_away(
    standin: StandinServer, http_runs: Runner
) -> None:
    # A window below the prompts of the call that names a unit's gaps (about 3,300 characters
    # with the quick preset: a passage of each kept source) and of most findings groups
    # (2,300-3,050), above the scoring prompts (about 2,400-2,500). A prompt whose sources can
    # be trimmed is trimmed; one of passages too short to trim goes with fewer sources; the
    # writer's prompt has no sources to trim and is left alone.
    limit = 2_600
    tasks = ("RelevanceScores", "SubtopicFindings", "OpenQuestions")
    for task in tasks:
        standin.add_fault("openai", "context_limit", times=1000, max_chars=limit, task=task)
    store, run_id = _run(http_runs)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", [
        (s.key, s.error) for s in store.get_steps(run_id)]
    worker_calls = [r for r in standin.requests_for("openai")
                    if (r["json"].get("response_format") or {}).get("json_schema", {}).get("name")
                    in tasks]
    rejected = [r for r in worker_calls if _chars(r) > limit]
    accepted = [r for r in worker_calls if _chars(r) <= limit]
    assert rejected and len(accepted) > len(rejected)
    assert all(s["findings"] for s in _research_results(store, run_id)), [(s.key, s.status, s.error) for s in store.get_steps(run_id)]
    events = [e.message for e in store.get_events(run_id) if e.type == "retrying"]
    assert any("too long" in m for m in events)


def _research_results(store: Store, run_id: str) -> list[dict[str, Any]]:
    steps = [s for s in store.get_steps(run_id) if s.kind == "research"]
    assert steps and all(s.status == "done" for s in steps), [(s.key, s.status, s.error) for s in steps]
    return [s.result for s in steps]


def _chars(request: dict[str, Any]) -> int:
    return sum(len(str(m.get("content") or "")) for m in request["json"].get("messages") or [])


def test_refusal_is_a_provider_error_that_names_the_model(
    standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault("openai", "refusal", times=10)
    with pytest.raises(ProviderError, match=r"OpenAI model gpt-5-mini refused to answer"):
        _role_llm("openai", standin_env).text(_messages(100))
