"""OpenAIChat and GeminiChat through the real SDKs against the local stand-in server."""

from __future__ import annotations

import threading
import time

import pytest
from pydantic import BaseModel

from research.core.config import Credentials, build_config
from research.core.errors import (
    AuthError,
    ConfigError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    SchemaError,
)
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.base import LLM, RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Message
from tests.standin import (
    GEMINI_KEY,
    OPENAI_INSUFFICIENT_QUOTA,
    OPENAI_KEY,
    OPENAI_RATE_LIMIT,
    StandinServer,
    gemini_error,
    gemini_quota_error,
    openai_error,
)

MODELS = {"openai": "gpt-5-mini", "gemini": "gemini-2.5-flash"}
PROVIDERS = pytest.mark.parametrize("provider", ["openai", "gemini"])


class Subtopic(BaseModel):
    title: str
    description: str
    questions: list[str]


class ResearchPlan(BaseModel):
    subtopics: list[Subtopic]


PLAN_MESSAGES = [
    Message("system", "You are the lead of a research team."),
    Message("user", "Split the question into exactly 3 subtopics.\n"
                    "<question>Is coffee good for you?</question>"),
]
WRITER_MESSAGES = [
    Message("system", "You are the writer of a research team."),
    Message("user", "<question>Is coffee good for you?</question>\n"
                    "### Subtopic: Health effects\n"
                    "SOURCES (cite by number):\n"
                    "[1] Coffee and the heart — https://example.org/a\n"
                    "[2] Coffee and sleep (published 2025-01-02) — https://example.org/b"),
]


def make_llm(provider: str, env: dict[str, str], timeout: float = 10.0) -> LLM:
    config = build_config(env=env, provider=provider, request_timeout_s=timeout)
    return build_llm(provider, MODELS[provider], config, Credentials.from_env(env))


def role_llm(
    provider: str, env: dict[str, str], *, attempts: int = 4, call_timeout: float = 10.0,
    meter: UsageMeter | None = None,
) -> RoleLLM:
    return RoleLLM(
        make_llm(provider, env, timeout=call_timeout), "lead", meter or UsageMeter(),
        policy=RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.05),
        call_timeout=call_timeout,
    )


@PROVIDERS
def test_plain_text_answer_comes_back(provider: str, standin: StandinServer,
                                      standin_env: dict[str, str]) -> None:
    text = role_llm(provider, standin_env).text(WRITER_MESSAGES)
    assert text.startswith("# ")
    assert "## Executive summary" in text
    assert standin.count(provider) == 1


@PROVIDERS
def test_structured_output_is_validated_against_the_schema(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    plan = role_llm(provider, standin_env).structured(PLAN_MESSAGES, ResearchPlan)
    assert len(plan.subtopics) == 3
    assert len({s.title for s in plan.subtopics}) == 3
    sent = standin.requests_for(provider)[0]["json"]
    if provider == "openai":
        fmt = sent["response_format"]
        assert fmt["type"] == "json_schema"
        assert fmt["json_schema"]["name"] == "ResearchPlan"
        assert fmt["json_schema"]["strict"] is False
    else:
        config = sent["generationConfig"]
        assert config["responseMimeType"] == "application/json"
        assert config["responseJsonSchema"]["title"] == "ResearchPlan"
        assert sent["systemInstruction"]["parts"][0]["text"].startswith("You are the lead")


@PROVIDERS
def test_think_block_is_stripped(provider: str, standin: StandinServer,
                                 standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "think", times=2)
    llm = role_llm(provider, standin_env)
    assert "secret reasoning" not in llm.text(WRITER_MESSAGES)
    assert len(llm.structured(PLAN_MESSAGES, ResearchPlan).subtopics) == 3


@PROVIDERS
def test_fenced_json_is_accepted_without_repair(provider: str, standin: StandinServer,
                                                standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "fenced_json")
    plan = role_llm(provider, standin_env).structured(PLAN_MESSAGES, ResearchPlan)
    assert len(plan.subtopics) == 3
    assert standin.count(provider) == 1


@PROVIDERS
@pytest.mark.parametrize("mode", ["text", "truncated"])
def test_invalid_json_is_repaired_once(provider: str, mode: str, standin: StandinServer,
                                       standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "invalid_json", times=1, mode=mode)
    plan = role_llm(provider, standin_env).structured(PLAN_MESSAGES, ResearchPlan)
    assert len(plan.subtopics) == 3
    assert standin.count(provider) == 2
    assert "could not be used" in str(standin.requests_for(provider)[1]["json"])


@PROVIDERS
def test_json_that_stays_invalid_raises_schema_error(provider: str, standin: StandinServer,
                                                     standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "invalid_json", times=2)
    with pytest.raises(SchemaError, match="ResearchPlan"):
        role_llm(provider, standin_env).structured(PLAN_MESSAGES, ResearchPlan)
    assert standin.count(provider) == 2


@PROVIDERS
def test_rate_limit_waits_for_retry_after(provider: str, standin: StandinServer,
                                          standin_env: dict[str, str]) -> None:
    if provider == "openai":
        standin.add_fault("openai", "status", status=429, headers={"Retry-After": "1"},
                          body=OPENAI_RATE_LIMIT)
    else:  # Gemini says how long to wait in the error details (RetryInfo)
        standin.add_fault("gemini", "status", status=429,
                          body=gemini_quota_error(per_day=False, retry_delay="1s"))
    started = time.monotonic()
    text = role_llm(provider, standin_env).text(WRITER_MESSAGES)
    assert time.monotonic() - started >= 1.0
    assert text.startswith("# ")
    assert standin.count(provider) == 2


def test_openai_rate_limit_reads_retry_after_ms(standin: StandinServer,
                                                standin_env: dict[str, str]) -> None:
    standin.add_fault("openai", "status", status=429, headers={"retry-after-ms": "1500"},
                      body=OPENAI_RATE_LIMIT)
    with pytest.raises(RateLimited) as caught:
        make_llm("openai", standin_env).complete(WRITER_MESSAGES)
    assert caught.value.retry_after == pytest.approx(1.5)


def test_gemini_rate_limit_reads_retry_after_header(standin: StandinServer,
                                                    standin_env: dict[str, str]) -> None:
    standin.add_fault("gemini", "status", status=429, headers={"Retry-After": "3"},
                      body=gemini_error(429, "Resource has been exhausted.", "RESOURCE_EXHAUSTED"))
    with pytest.raises(RateLimited) as caught:
        make_llm("gemini", standin_env).complete(WRITER_MESSAGES)
    assert caught.value.retry_after == 3.0


@PROVIDERS
def test_exhausted_quota_fails_fast_without_retry(provider: str, standin: StandinServer,
                                                  standin_env: dict[str, str]) -> None:
    body = OPENAI_INSUFFICIENT_QUOTA if provider == "openai" else gemini_quota_error(per_day=True)
    standin.add_fault(provider, "status", times=5, status=429, body=body)
    started = time.monotonic()
    with pytest.raises(QuotaExhausted):
        role_llm(provider, standin_env).text(WRITER_MESSAGES)
    assert time.monotonic() - started < 1.0
    assert standin.count(provider) == 1


@PROVIDERS
def test_server_error_burst_is_retried_then_succeeds(provider: str, standin: StandinServer,
                                                     standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "status", times=2, status=500)
    text = role_llm(provider, standin_env).text(WRITER_MESSAGES)
    assert text.startswith("# ")
    assert standin.count(provider) == 3


@PROVIDERS
def test_server_error_maps_to_provider_error_with_status(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, "status", status=503)
    with pytest.raises(ProviderError) as caught:
        make_llm(provider, standin_env).complete(WRITER_MESSAGES)
    assert caught.value.status == 503
    assert not isinstance(caught.value, (RateLimited, QuotaExhausted, AuthError))


@PROVIDERS
def test_sdk_timeout_becomes_provider_timeout(provider: str, standin: StandinServer,
                                              standin_env: dict[str, str]) -> None:
    standin.add_fault(provider, "hang", seconds=10)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        make_llm(provider, standin_env).complete(WRITER_MESSAGES, timeout=0.5)
    # Far below the 10 s hang (a loaded machine adds seconds, never the whole hang).
    assert time.monotonic() - started < 6.0


@PROVIDERS
@pytest.mark.parametrize("kind", ["hang", "trickle"])
def test_hang_or_trickle_beyond_call_timeout_stops_quickly(
    provider: str, kind: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    standin.add_fault(provider, kind, seconds=10, interval=0.2)
    started = time.monotonic()
    with pytest.raises(ProviderTimeout):
        role_llm(provider, standin_env, attempts=1, call_timeout=1.0).text(WRITER_MESSAGES)
    assert time.monotonic() - started < 6.0  # the fault lasts 10 s; load adds seconds at most


@PROVIDERS
def test_key_echoed_in_an_error_never_reaches_the_message(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    if provider == "openai":
        body = openai_error(f"Incorrect API key provided: {OPENAI_KEY}. Also sk-someoneelse12345.",
                            type="invalid_request_error", code="invalid_api_key")
        standin.add_fault("openai", "status", status=401, body=body)
        key = OPENAI_KEY
    else:
        body = gemini_error(400, f"API key not valid: {GEMINI_KEY}. Please pass a valid API key.",
                            "INVALID_ARGUMENT")
        standin.add_fault("gemini", "status", status=400, body=body)
        key = GEMINI_KEY
    with pytest.raises(AuthError) as caught:
        role_llm(provider, standin_env).text(WRITER_MESSAGES)
    message = str(caught.value)
    assert key not in message
    assert "sk-someoneelse" not in message
    assert "[redacted]" in message
    assert standin.count(provider) == 1  # auth errors are not retried


@PROVIDERS
def test_usage_tokens_are_counted(provider: str, standin: StandinServer,
                                  standin_env: dict[str, str]) -> None:
    meter = UsageMeter()
    llm = role_llm(provider, standin_env, meter=meter)
    llm.text(WRITER_MESSAGES)
    llm.structured(PLAN_MESSAGES, ResearchPlan)
    row = meter.totals[("lead", provider, MODELS[provider])]
    assert row.calls == 2
    assert row.input_tokens > 0
    assert row.output_tokens > 0
    assert meter.total_cost() > 0


def test_openai_refusal_is_a_provider_error(standin: StandinServer,
                                            standin_env: dict[str, str]) -> None:
    standin.add_fault("openai", "refusal")
    with pytest.raises(ProviderError, match="refused"):
        make_llm("openai", standin_env).complete(WRITER_MESSAGES)


def test_gemini_safety_block_is_a_provider_error(standin: StandinServer,
                                                 standin_env: dict[str, str]) -> None:
    standin.add_fault("gemini", "blocked")
    with pytest.raises(ProviderError, match="blocked by safety filters"):
        make_llm("gemini", standin_env).complete(WRITER_MESSAGES)


def test_gemini_sends_assistant_turns_as_model_role(standin: StandinServer,
                                                    standin_env: dict[str, str]) -> None:
    messages = [*WRITER_MESSAGES, Message("assistant", "Draft."), Message("user", "Again.")]
    make_llm("gemini", standin_env).complete(messages)
    contents = standin.requests_for("gemini")[0]["json"]["contents"]
    assert [c["role"] for c in contents] == ["user", "model", "user"]
    assert standin.requests_for("gemini")[0]["headers"].get("x-goog-api-key") == GEMINI_KEY


def test_openai_compatible_server_needs_no_key(standin: StandinServer,
                                               standin_env: dict[str, str]) -> None:
    env = {k: v for k, v in standin_env.items() if k != "OPENAI_API_KEY"}
    llm = make_llm("openai", env)
    assert llm.complete(WRITER_MESSAGES).text.startswith("# ")
    auth = standin.requests_for("openai")[0]["headers"]["authorization"]
    assert auth.startswith("Bearer ") and OPENAI_KEY not in auth


def test_unknown_provider_is_refused_with_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="openai, gemini, anthropic"):
        build_llm("mistral", "mistral-large", build_config(env={}), Credentials())


@pytest.mark.parametrize(("provider", "variable"),
                         [("openai", "OPENAI_API_KEY"), ("gemini", "GEMINI_API_KEY")])
def test_missing_key_names_the_variable_to_set(provider: str, variable: str) -> None:
    with pytest.raises(ConfigError, match=variable):
        build_llm(provider, MODELS[provider], build_config(env={}), Credentials())


@PROVIDERS
def test_a_trickling_answer_ends_at_the_calls_own_deadline_without_an_outer_thread(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    """Issue 40, point 1: the SDK's timeout restarts with every byte, so the request itself
    must end at its overall deadline (and close its connection); otherwise the thread an
    outer limit abandoned reads on, and the CLI cannot exit."""
    standin.add_fault(provider, "trickle", interval=0.05)
    with pytest.raises(ProviderTimeout):
        make_llm(provider, standin_env).complete(WRITER_MESSAGES, timeout=1.0)


@PROVIDERS
def test_no_thread_reads_on_after_a_trickling_call_was_given_up(
    provider: str, standin: StandinServer, standin_env: dict[str, str]
) -> None:
    """The call's thread ends with its deadline, not when the trickle ends (minutes later):
    a thread left reading is what kept the CLI from exiting (issue 40, point 1)."""
    standin.add_fault(provider, "trickle", interval=0.2)
    with pytest.raises(ProviderTimeout):
        role_llm(provider, standin_env, attempts=1, call_timeout=1.0).text(WRITER_MESSAGES)
    callers = [t for t in threading.enumerate() if t.name.startswith("deadline:")]
    for thread in callers:
        thread.join(timeout=30)  # far longer than the deadline, far shorter than the trickle
    assert not [t.name for t in callers if t.is_alive()]
