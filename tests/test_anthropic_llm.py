"""AnthropicChat through the real `anthropic` SDK against the stand-in's Messages API: what we
send (checked against the SDK's published request types), how its errors, limits and stop
reasons become the seam's, and where Claude shows up (prices, settings, the form)."""

from __future__ import annotations

import typing
from collections.abc import Iterator
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel

from research.core.config import Credentials, build_config
from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ConfigError,
    ContextTooLong,
    ProviderError,
    QuotaExhausted,
    RateLimited,
)
from research.core.retry import RetryPolicy, is_retryable
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.failures import is_outage
from research.llm.messages import Message
from research.llm.pacing import forget_pacers
from research.llm.pricing import PriceTable
from tests.standin import ANTHROPIC_KEY, StandinServer, anthropic_error
from tests.standin.anthropic import Rule

if TYPE_CHECKING:
    from research.llm.anthropic_llm import AnthropicChat

# The `anthropic` SDK (about 2 CPU-s to import) is imported by the tests that use it, not at
# collection, which every xdist worker does for every test module.

MODEL = "claude-haiku-4-5"


class Subtopic(BaseModel):
    title: str
    description: str
    questions: list[str]


class ResearchPlan(BaseModel):
    subtopics: list[Subtopic]


PLAN = [Message("system", "You are the lead of a research team."),
        Message("user", "Split the question into exactly 3 subtopics.\n"
                        "<question>Is coffee good for you?</question>")]
WRITER = [Message("system", "You are the writer of a research team."),
          Message("user", "<question>Is coffee good for you?</question>\n"
                          "### Subtopic: Health effects\nSOURCES (cite by number):\n"
                          "[1] Coffee and the heart — https://example.org/a")]


@pytest.fixture
def env(standin: StandinServer) -> Iterator[dict[str, str]]:
    standin.reset()
    forget_pacers()
    yield standin.env()


def chat(env: dict[str, str], model: str = MODEL) -> AnthropicChat:
    from research.llm.anthropic_llm import AnthropicChat

    config = build_config(env=env, provider="anthropic", request_timeout_s=10)
    llm = build_llm("anthropic", model, config, Credentials.from_env(env))
    assert isinstance(llm, AnthropicChat)
    return llm


def role(env: dict[str, str], attempts: int = 3) -> RoleLLM:
    return RoleLLM(chat(env), "lead", UsageMeter(), call_timeout=10,
                   policy=RetryPolicy(attempts=attempts, base_delay=0.01, max_delay=0.05))


def sent(standin: StandinServer) -> list[dict[str, Any]]:
    return [r["json"] for r in standin.requests_for("anthropic")]


# --- what we send ------------------------------------------------------------------------

def _objects(schema: Any) -> Iterator[dict[str, Any]]:
    if isinstance(schema, dict):
        if schema.get("type") == "object":
            yield schema
        for value in schema.values():
            yield from _objects(value)
    elif isinstance(schema, list):
        for item in schema:
            yield from _objects(item)


def test_requests_follow_the_messages_api_contract(standin: StandinServer,
                                                   env: dict[str, str]) -> None:
    llm = role(env)
    assert "[1]" in llm.text(WRITER)
    plan = llm.structured(PLAN, ResearchPlan)
    assert len(plan.subtopics) == 3

    text_body, json_body = sent(standin)
    for body in (text_body, json_body):
        assert body["model"] == MODEL
        assert isinstance(body["max_tokens"], int) and body["max_tokens"] >= 1  # required
        assert body["system"].startswith("You are the")  # top-level, never a message
        assert [m["role"] for m in body["messages"]] == ["user"]
    assert "output_config" not in text_body
    fmt = json_body["output_config"]["format"]
    assert fmt["type"] == "json_schema"
    objects = list(_objects(fmt["schema"]))
    assert objects and all(o["additionalProperties"] is False for o in objects)
    # The stand-in refused nothing, and every request carried the API version header.
    entries = standin.requests_for("anthropic")
    assert all(r["status"] == 200 and "contract_error" not in r for r in entries)
    assert all(r["headers"].get("anthropic-version") for r in entries)


def test_requests_match_the_sdks_published_request_type(standin: StandinServer,
                                                        env: dict[str, str]) -> None:
    """anthropic/types/message_create_params.py is generated from Anthropic's OpenAPI spec:
    every key we send is one of its fields, every required one is there, and each value has
    the field's type (checked by pydantic against the TypedDict)."""
    from anthropic.types import MessageParam, OutputConfigParam, message_create_params
    from pydantic import TypeAdapter

    role(env).structured(PLAN, ResearchPlan)
    params = message_create_params.MessageCreateParamsNonStreaming
    hints = typing.get_type_hints(params)
    adapter = TypeAdapter(params)
    for body in sent(standin):
        assert set(body) <= set(hints)
        assert params.__required_keys__ <= set(body)
        adapter.validate_python(body)
        for message in body["messages"]:  # an Iterable field: pydantic checks it lazily
            TypeAdapter(MessageParam).validate_python(message)
        if "output_config" in body:
            TypeAdapter(OutputConfigParam).validate_python(body["output_config"])


def test_a_malformed_request_is_refused_by_the_stand_in_as_the_api_does(
        standin: StandinServer, env: dict[str, str]) -> None:
    """The stand-in's contract check can fail: an unknown role, max_tokens 0 or missing, an
    open object in the answer's schema."""
    import httpx

    url = f"{standin.base_url}/v1/messages"
    headers = {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}
    cases = [
        {"model": MODEL, "max_tokens": 5, "messages": [{"role": "tool", "content": "x"}]},
        {"model": MODEL, "max_tokens": 0, "messages": [{"role": "user", "content": "x"}]},
        {"model": MODEL, "messages": [{"role": "user", "content": "x"}]},
        {"model": MODEL, "max_tokens": 5, "messages": [{"role": "user", "content": "x"}],
         "output_config": {"format": {"type": "json_schema", "schema": {
             "type": "object", "properties": {"a": {"type": "string"}}}}}},
    ]
    for body in cases:
        answer = httpx.post(url, json=body, headers=headers, timeout=10)
        assert answer.status_code == 400
        assert answer.json()["error"]["type"] == "invalid_request_error"
        assert answer.headers["request-id"].startswith("req_")


def test_the_stand_ins_answers_are_messages_as_the_sdk_types_them(standin: StandinServer,
                                                                  env: dict[str, str]) -> None:
    """Its answers and error bodies use only fields the SDK's published types know."""
    import httpx
    from anthropic.types import Message as ApiMessage
    from anthropic.types import TextBlock, ThinkingBlock, Usage

    url = f"{standin.base_url}/v1/messages"
    headers = {"x-api-key": ANTHROPIC_KEY, "anthropic-version": "2023-06-01"}
    body = {"model": "claude-opus-5-5", "max_tokens": 50, "messages": [
        {"role": "user", "content": "Is coffee good for you?"}]}
    answer = httpx.post(url, json=body, headers=headers, timeout=10).json()
    assert set(answer) <= set(ApiMessage.model_fields)
    assert set(answer["usage"]) <= set(Usage.model_fields)
    thinking, text = answer["content"]
    assert set(thinking) <= set(ThinkingBlock.model_fields)
    assert set(text) <= set(TextBlock.model_fields)
    parsed = ApiMessage.model_validate(answer)
    assert parsed.stop_reason == "end_turn" and parsed.content[-1].type == "text"
    refused = httpx.post(url, json={**body, "max_tokens": 0}, headers=headers, timeout=10)
    error = refused.json()
    assert set(error) == {"type", "error", "request_id"} and error["type"] == "error"


# --- errors, limits and stops -------------------------------------------------------------

def test_a_429_says_how_long_to_wait_and_what_the_account_allows(
        standin: StandinServer, env: dict[str, str]) -> None:
    headers = {"retry-after": "7", "anthropic-ratelimit-requests-limit": "50",
               "anthropic-ratelimit-requests-remaining": "0",
               "anthropic-ratelimit-requests-reset": "2099-01-01T00:00:00Z",
               "anthropic-ratelimit-input-tokens-limit": "30000",
               "anthropic-ratelimit-input-tokens-remaining": "1200",
               "anthropic-ratelimit-input-tokens-reset": "2099-01-01T00:00:00Z"}
    body = anthropic_error("rate_limit_error", "This request would exceed the rate limit for "
                           "your organization of 50 requests per minute.")
    standin.add_fault("anthropic", "status", status=429, headers=headers, body=body)
    with pytest.raises(RateLimited) as caught:
        chat(env).complete(PLAN)
    exc = caught.value
    assert exc.retry_after == 7 and exc.limit == "requests"
    assert exc.report is not None
    assert exc.report.limits.requests_per_minute == 50
    assert exc.report.limits.tokens_per_minute == 30_000
    assert (exc.report.remaining_requests, exc.report.remaining_tokens) == (0, 1200)
    assert exc.report.reset_requests_s is not None and exc.report.reset_requests_s > 1e6
    assert ANTHROPIC_KEY not in str(exc)


def test_the_pacer_learns_the_account_from_the_stand_ins_limits(
        standin: StandinServer, env: dict[str, str]) -> None:
    standin.set_account("anthropic", requests_per_minute=40, tokens_per_minute=20_000)
    llm = role(env)
    llm.text(WRITER)
    assert llm.pacer is not None
    assert llm.pacer.limits.requests_per_minute == 40
    assert llm.pacer.limits.tokens_per_minute == 20_000  # input tokens a minute
    assert llm.pacer.metered(100, 900) == 100  # ITPM counts the prompt only


def test_an_account_over_its_rate_limit_is_refused_with_retry_after(
        standin: StandinServer, env: dict[str, str]) -> None:
    standin.set_account("anthropic", requests_per_minute=1)
    llm = chat(env)
    llm.complete(PLAN)
    with pytest.raises(RateLimited) as caught:
        llm.complete(PLAN)
    assert caught.value.retry_after is not None and caught.value.retry_after >= 1
    assert caught.value.limit == "requests"
    assert standin.rate_limited("anthropic") == 1


def test_max_tokens_keeps_within_the_accounts_output_tokens_a_minute(
        standin: StandinServer, env: dict[str, str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Anthropic counts max_tokens against the output tokens a minute when a request starts:
    one larger than the whole minute is refused; its answer's headers say the limit, and
    every later request of the account asks for no more."""
    from research.llm import anthropic_llm
    from research.llm.anthropic_llm import DEFAULT_MAX_TOKENS

    monkeypatch.setattr(anthropic_llm, "_OUTPUT_LIMITS", {})
    standin.anthropic.set_account(Rule(output_tokens_per_minute=8_000))
    with pytest.raises(RateLimited) as caught:
        chat(env).complete(PLAN)
    assert "8,000 output tokens per minute" in str(caught.value)
    assert caught.value.limit == "tokens"
    other = chat(env)  # another role's model on the same account
    assert other.max_tokens() == 8_000
    assert other.complete(PLAN).text
    asked = [b["max_tokens"] for b in sent(standin)]
    assert asked == [DEFAULT_MAX_TOKENS, 8_000]


def test_a_monthly_spend_limit_is_a_spent_quota_not_a_wait(
        standin: StandinServer, env: dict[str, str]) -> None:
    standin.anthropic.set_account(Rule(spend_limit=0))
    with pytest.raises(QuotaExhausted) as caught:
        chat(env).complete(PLAN)
    assert "ANTHROPIC_API_KEY" in str(caught.value)
    assert caught.value.status == 429 and "spend limit" in str(caught.value)
    standin.reset()  # a 400 for a spent credit balance is one too
    standin.add_fault("anthropic", "status", status=400, body=anthropic_error(
        "invalid_request_error", "Your credit balance is too low to access the Anthropic API. "
        "Please go to Plans & Billing to upgrade or purchase credits."))
    with pytest.raises(QuotaExhausted, match="credit"):
        chat(env).complete(PLAN)


def test_overloaded_529_is_an_outage_retried_like_a_5xx(
        standin: StandinServer, env: dict[str, str]) -> None:
    standin.add_fault("anthropic", "status", status=529)
    with pytest.raises(ProviderError) as caught:
        chat(env).complete(PLAN)
    exc = caught.value
    assert exc.status == 529 and "overloaded" in str(exc)
    assert "(request id req_standin" in str(exc)  # what Anthropic's support asks for
    assert is_retryable(exc) and is_outage(exc)
    standin.add_fault("anthropic", "status", status=529)
    assert "[1]" in role(env).text(WRITER)  # the second try is answered


def test_a_rejected_key_is_said_in_plain_words(standin: StandinServer,
                                               env: dict[str, str]) -> None:
    standin.add_fault("anthropic", "status", status=401)
    with pytest.raises(AuthError) as caught:
        chat(env).complete(PLAN)
    text = str(caught.value)
    assert "refused the API key" in text and "ANTHROPIC_API_KEY" in text
    assert ANTHROPIC_KEY not in text and "AuthenticationError" not in text


def test_a_prompt_too_long_is_trimmed_and_sent_again(standin: StandinServer,
                                                     env: dict[str, str]) -> None:
    source = "Coffee facts. " * 2000
    messages = [Message("system", "You are the writer."), Message(
        "user", "<question>Is coffee good?</question>\n"
                f'<untrusted_source id="s1" nonce="ab12">\n{source}\n</untrusted_source nonce="ab12">')]
    standin.add_fault("anthropic", "context_limit", max_chars=20_000)
    with pytest.raises(ContextTooLong) as caught:
        chat(env).complete(messages)
    assert "prompt is too long" in str(caught.value)
    standin.reset()
    standin.add_fault("anthropic", "context_limit", max_chars=20_000)
    assert role(env).text(messages)
    first, second = standin.requests_for("anthropic")
    assert first["status"] == 400 and second["status"] == 200
    # The harder trim aimed below what the API said it accepts.
    assert len(second["json"]["messages"][0]["content"]) < 20_000


def test_a_refusal_is_a_blocked_answer_asked_for_once_more(standin: StandinServer,
                                                          env: dict[str, str]) -> None:
    standin.add_fault("anthropic", "refusal")
    with pytest.raises(AnswerBlocked) as caught:
        chat(env).complete(PLAN)
    assert caught.value.reason == "refusal" and "declined" in str(caught.value)
    standin.add_fault("anthropic", "refusal")
    assert "[1]" in role(env).text(WRITER)
    nudged = sent(standin)[-1]["messages"]
    assert len(nudged) == 2 and nudged[-1]["role"] == "user"  # the nudge, as a user turn


def test_a_max_tokens_stop_is_a_cut_off_answer(standin: StandinServer,
                                               env: dict[str, str]) -> None:
    standin.add_fault("anthropic", "finish", reason="max_tokens")
    with pytest.raises(AnswerCutOff) as caught:
        chat(env).complete(WRITER)
    assert caught.value.text and caught.value.usage.output_tokens > 0
    standin.add_fault("anthropic", "finish", reason="max_tokens")
    assert "[1]" in role(env).text(WRITER)  # asked again, more concisely
    assert "more concise" in sent(standin)[-1]["messages"][-1]["content"]


def test_a_thinking_models_thoughts_are_not_its_answer(standin: StandinServer,
                                                       env: dict[str, str]) -> None:
    from tests.standin.anthropic import THINKING_TEXT

    answer = chat(env, "claude-sonnet-5-5").complete(WRITER)
    assert answer.text.startswith("# ") and THINKING_TEXT not in answer.text
    assert answer.model == "claude-sonnet-5-5"


@pytest.mark.parametrize("headers", [False, True], ids=["body", "headers"])
def test_a_trickling_answer_ends_at_the_requests_own_deadline(
        standin: StandinServer, env: dict[str, str], headers: bool) -> None:
    """The SDK's client sends through our DeadlineTransport: an answer sent a byte every 0.2 s
    (its headers too, or only its body) ends at the request's time limit, and hangs up."""
    import time

    from research.core.errors import ProviderTimeout

    llm = chat(env)
    llm.complete(WRITER, timeout=5.0)
    standin.add_fault("anthropic", "trickle", interval=0.2, headers=headers)
    with pytest.raises(ProviderTimeout):
        llm.complete(WRITER, timeout=1.0)
    end = time.monotonic() + 20
    while not standin.requests_for("anthropic")[-1].get("client_gone"):
        assert time.monotonic() < end, "the stand-in ended the answer, not the client"
        time.sleep(0.05)


def test_rate_report_reads_rfc_3339_resets_and_falls_back_to_the_tokens_headers() -> None:
    from research.llm.anthropic_llm import rate_report

    report = rate_report({"anthropic-ratelimit-tokens-limit": "8000",
                          "anthropic-ratelimit-tokens-remaining": "10",
                          "anthropic-ratelimit-tokens-reset": "2026-01-01T00:00:30Z"},
                         now=1767225600.0)  # 2026-01-01T00:00:00Z
    assert report is not None
    assert report.limits.tokens_per_minute == 8000 and report.remaining_tokens == 10
    assert report.reset_tokens_s == pytest.approx(30.0)
    assert rate_report({}) is None


# --- where Claude shows up ----------------------------------------------------------------

def test_claude_is_a_provider_for_the_lead_and_for_each_role() -> None:
    config = build_config(env={"DEEP_RESEARCH_PROVIDER": "anthropic",
                               "DEEP_RESEARCH_WRITER_MODEL": "claude-sonnet-5-5",
                               "DEEP_RESEARCH_VERIFIER_PROVIDER": "anthropic"})
    assert (config.provider, config.model) == ("anthropic", "claude-haiku-4-5")
    writer = config.role("writer")
    assert (writer.provider, writer.model) == ("anthropic", "claude-sonnet-5-5")
    mixed = build_config(env={"DEEP_RESEARCH_REVIEWER_PROVIDER": "anthropic"})
    assert (mixed.provider, mixed.role("reviewer").provider) == ("openai", "anthropic")
    with pytest.raises(ConfigError, match="ANTHROPIC_API_KEY"):
        build_llm("anthropic", MODEL, config, Credentials())


def test_claude_models_are_priced() -> None:
    prices = PriceTable()
    assert prices.cost("claude-haiku-4-5-20251001", 1_000_000, 1_000_000) == pytest.approx(6.0)
    assert prices.lookup("claude-sonnet-5-5") == (2.0, 10.0)
    assert prices.lookup("claude-opus-5-5") == (4.0, 20.0)


def test_settings_know_the_key_and_test_the_connection(standin: StandinServer,
                                                       env: dict[str, str]) -> None:
    from dashboard.connection import check_llm
    from dashboard.settings_files import KEYS, configured_llm_providers

    assert "ANTHROPIC_API_KEY" in KEYS
    assert "anthropic" in configured_llm_providers(env)
    assert "anthropic" not in configured_llm_providers({"OPENAI_API_KEY": "sk-x"})
    ok, message = check_llm("anthropic", MODEL, env)
    assert ok, message
    standin.add_fault("anthropic", "status", status=401)
    ok, message = check_llm("anthropic", MODEL, env)
    assert not ok and "ANTHROPIC_API_KEY" in message and ANTHROPIC_KEY not in message
