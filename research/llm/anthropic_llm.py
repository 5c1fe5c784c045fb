"""Anthropic's Claude through the official `anthropic` SDK: one Messages API request per call.

The SDK's own retries are off (`max_retries=0`): `RoleLLM` owns the retry policy. What the
Messages API wants, as documented (https://platform.claude.com/docs/en/api/messages):
`max_tokens` is required, and the system prompt goes in the top-level `system` parameter,
where the documentation puts it (not in a message). A structured answer is asked for with structured
outputs, `output_config.format` of type `json_schema`
(https://platform.claude.com/docs/en/build-with-claude/structured-outputs): its schema is the
step's JSON Schema as the SDK's own `transform_schema` rewrites it (every object closed with
`additionalProperties: false`, constraints the decoder does not take moved into descriptions).
Not forced tool use: the newest models (Sonnet 5.5, Opus 5.5) refuse a forced `tool_choice`.

Every answer and every refusal says what the account allows in the `anthropic-ratelimit-*`
headers (https://platform.claude.com/docs/en/api/rate-limits#response-headers): requests,
input tokens and output tokens a minute, what is left of each and when it is whole again (an
RFC 3339 time); a 429 also says `retry-after` in seconds. `research.llm.pacing` paces the
account by them: its token bucket is the input tokens a minute (ITPM), as for Gemini; the
output tokens a minute (OTPM) bound each request's `max_tokens` (`AnthropicChat.max_tokens`),
and a 429 for them is waited out by its retry-after.
Errors (https://platform.claude.com/docs/en/api/errors) become `research.core.errors` errors
with plain messages that never contain the key: 529 `overloaded_error` is an outage retried
like a 5xx, a 400 "prompt is too long" is a context-length refusal the fitting layer trims
for, and the `refusal` and `max_tokens` stop reasons are the answer stops of
research.llm.answer_stops.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from datetime import datetime
from typing import Any

import anthropic
from anthropic._constants import DEFAULT_CONNECTION_LIMITS

from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ContextTooLong,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    redact,
)
from research.core.retry import parse_retry_after
from research.llm.base import LLM
from research.llm.deadline import DeadlineTransport
from research.llm.limits import Account, AccountLimits, RateReport
from research.llm.messages import Completion, JsonSchema, Message, Usage
from research.llm.tls import ClosedWhenDropped, shared_tls_context

# The longest answer asked for. Required by the API; 16k tokens is ~12,000 words, above the
# longest report REPORT_MAX_WORDS allows a section at once, and within every current model's
# output limit (Haiku 4.5: 64k). A longer answer stops with `max_tokens` (answer_stops).
DEFAULT_MAX_TOKENS = 16_384


class _HttpClient(ClosedWhenDropped, anthropic.DefaultHttpxClient):
    """The SDK's default client with the shared TLS context (research/llm/tls.py)."""


class AnthropicChat(LLM):
    """A Claude model on the Claude API (or a compatible proxy); one attempt per call."""

    provider = "anthropic"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
        max_tokens: int = DEFAULT_MAX_TOKENS,
    ) -> None:
        self.model = model
        self._api_key = api_key
        self._timeout = timeout
        self._max_tokens = max_tokens
        self.account = Account.of("anthropic", base_url, api_key, model)
        self._client = anthropic.Anthropic(
            api_key=api_key,
            base_url=base_url,
            max_retries=0,
            timeout=timeout,
            http_client=_HttpClient(verify=shared_tls_context(), timeout=timeout,
                                    transport=DeadlineTransport(limits=DEFAULT_CONNECTION_LIMITS)),
        )

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        kwargs = request_body(self.model, messages, json_schema, self.max_tokens())
        try:
            raw = self._client.messages.with_raw_response.create(
                **kwargs, timeout=timeout if timeout is not None else self._timeout)
            response = raw.parse()
        except anthropic.APIStatusError as exc:
            _learn_output_limit(self.account, exc.response.headers)
            raise self._map_error(exc) from None
        except anthropic.AnthropicError as exc:
            raise self._map_error(exc) from None
        _learn_output_limit(self.account, raw.headers)
        return self._completion(response, rate_report(raw.headers), kwargs["max_tokens"])

    def max_tokens(self) -> int:
        """The answer's length to ask for: DEFAULT_MAX_TOKENS, or the account's output tokens
        a minute when fewer. Anthropic counts a request's `max_tokens` against that limit
        when it starts (https://platform.claude.com/docs/en/api/rate-limits: "OTPM rate limits
        are estimated based on max_tokens at the beginning of each request"), so a larger one
        would be refused however long it waited (8,000 a minute for Sonnet on the first tier)."""
        limit = _OUTPUT_LIMITS.get(self.account.id)
        return min(self._max_tokens, limit) if limit else self._max_tokens

    def _completion(self, response: Any, rate: RateReport | None, asked: int) -> Completion:
        where = f"Anthropic ({self.model})"
        text = "".join(getattr(b, "text", "") for b in response.content or []
                       if getattr(b, "type", "") == "text")
        usage = response.usage
        spent = Usage(
            input_tokens=int(usage.input_tokens or 0)
            + int(getattr(usage, "cache_creation_input_tokens", 0) or 0)
            + int(getattr(usage, "cache_read_input_tokens", 0) or 0),
            output_tokens=int(usage.output_tokens or 0),
        )
        reason = str(response.stop_reason or "")
        # https://platform.claude.com/docs/en/build-with-claude/handling-stop-reasons
        if reason == "refusal":
            details = getattr(response, "stop_details", None)
            why = getattr(details, "explanation", None) or getattr(details, "category", None)
            raise AnswerBlocked(
                f"{where} declined to answer (stop reason refusal)"
                + (f": {self._clean(str(why))[:300]}" if why else "."),
                provider=self.provider, reason="refusal",
            )
        if reason == "max_tokens":
            raise AnswerCutOff(
                f"{where}: the answer was cut off at the output length limit "
                f"(stop reason max_tokens, {asked} tokens).",
                provider=self.provider, text=text, usage=spent,
            )
        if reason == "model_context_window_exceeded":  # the prompt left too little room
            raise ContextTooLong(
                f"{where}: the prompt left too little of the model's context window for the "
                "answer (stop reason model_context_window_exceeded).", provider=self.provider)
        return Completion(text=text, usage=spent, provider=self.provider,
                          model=response.model or self.model, rate=rate)

    def _clean(self, text: str) -> str:
        return redact(text, [self._api_key])

    def _map_error(self, exc: anthropic.AnthropicError) -> ProviderError:
        where = f"Anthropic ({self.model})"
        if isinstance(exc, anthropic.APITimeoutError):
            return ProviderTimeout(f"{where} did not answer in time.", provider=self.provider)
        if isinstance(exc, anthropic.APIConnectionError):
            return ProviderError(f"Could not connect to {where}.", provider=self.provider)
        if not isinstance(exc, anthropic.APIStatusError):
            return ProviderError(f"{where} failed: {self._clean(str(exc))[:300]}",
                                 provider=self.provider)
        status = exc.status_code
        kind, detail = error_of(exc.body)
        detail = self._clean(detail)
        suffix = f": {detail}" if detail else "."
        lowered = detail.lower()
        if status == 402 or kind == "billing_error" or any(w in lowered for w in _SPENT_WORDS):
            return QuotaExhausted(
                f"{where}: the account cannot be used until its credit or spend limit allows "
                f"(HTTP {status}){suffix} Add credit or raise the limit in the Claude Console, "
                "or set a key of another account in ANTHROPIC_API_KEY.",
                provider=self.provider, status=status)
        if status == 429:
            return RateLimited(
                f"{where} is rate limiting requests{suffix}", provider=self.provider,
                retry_after=parse_retry_after(exc.response.headers.get("retry-after")),
                report=rate_report(exc.response.headers), limit=_limit_kind(lowered),
            )
        if status in (401, 403):
            return AuthError(
                f"{where} refused the API key (HTTP {status}){suffix} Check ANTHROPIC_API_KEY.",
                provider=self.provider, status=status)
        if status in (400, 413) and (status == 413 or any(w in lowered for w in _CONTEXT_WORDS)):
            return ContextTooLong(
                f"{where}: the prompt is longer than the model's context window{suffix}",
                provider=self.provider, status=status)
        # Anthropic asks for the request's id when a failure on its side is reported to it.
        rid = str(exc.response.headers.get("request-id") or "")[:60]
        asked = f" (request id {rid})" if rid else ""
        if status == 529 or kind == "overloaded_error":
            return ProviderError(
                f"{where} is overloaded at the moment (HTTP {status}){suffix}{asked}",
                provider=self.provider, status=status if status >= 500 else 529)
        if status in (408, 504):
            return ProviderTimeout(f"{where} timed out on the server side{suffix}",
                                   provider=self.provider, status=status)
        return ProviderError(f"{where} failed with HTTP {status}{suffix}{asked}",
                             provider=self.provider, status=status)


# The output tokens a minute each account allows, by `Account.id`, as its answers said: shared by
# every role and run of the process on that account, as its pacer is (research.llm.pacing).
_OUTPUT_LIMITS: dict[str, int] = {}


def _learn_output_limit(account: Account, headers: Mapping[str, str]) -> None:
    raw = headers.get(_HEADER + "output-tokens-limit")
    try:
        limit = int(float(raw)) if raw is not None else 0
    except ValueError:
        return
    if limit > 0:
        _OUTPUT_LIMITS[account.id] = limit


def request_body(model: str, messages: Sequence[Message], json_schema: JsonSchema | None,
                 max_tokens: int) -> dict[str, Any]:
    """The Messages API request for `messages`: raw provider JSON, checked against the SDK's
    published types by tests/test_anthropic_llm.py."""
    system = "\n\n".join(m.content for m in messages if m.role == "system")
    turns = [{"role": m.role, "content": m.content} for m in messages if m.role != "system"]
    if not turns:  # the API needs one message at least
        turns, system = [{"role": "user", "content": system}], ""
    body: dict[str, Any] = {"model": model, "max_tokens": max_tokens, "messages": turns}
    if system:
        body["system"] = system
    if json_schema is not None:
        body["output_config"] = {"format": {"type": "json_schema",
                                            "schema": closed_schema(json_schema)}}
    return body


def closed_schema(schema: JsonSchema) -> JsonSchema:
    """`schema` as structured outputs take it (the SDK's transform_schema); a schema it cannot
    rewrite goes as it is, and the API says what it refuses."""
    try:
        return dict(anthropic.transform_schema(schema))
    except (ValueError, TypeError, KeyError):
        return schema


def error_of(body: object) -> tuple[str, str]:
    """(error type, message) of the API's error body `{"type": "error", "error": {"type",
    "message"}, "request_id"}`; the SDK hands it parsed."""
    if isinstance(body, Mapping):
        inner = body.get("error", body)
        if isinstance(inner, Mapping):
            return str(inner.get("type") or ""), str(inner.get("message") or "")[:300]
    if isinstance(body, str):
        return "", body[:300]
    return "", ""


# "prompt is too long: 208765 tokens > 200000 maximum"; 413 request_too_large is the bytes.
_CONTEXT_WORDS = ("prompt is too long", "context window", "too many tokens",
                  "input length and `max_tokens` exceed context limit")
# The 400 "Your credit balance is too low", a spend limit the organization set, and the 429 of
# a usage tier's monthly spend limit (no retry-after: it comes back next month).
_SPENT_WORDS = ("credit balance", "spend limit", "spend cap", "usage limits")
_HEADER = "anthropic-ratelimit-"
# "... the rate limit for your organization (...) of 50,000 input tokens per minute."
_NAMED_LIMIT = re.compile(r"\b(requests|input tokens|output tokens|tokens) per minute")


def _limit_kind(message: str) -> str | None:
    """Which limit a 429 says was met: "requests" or "tokens" (input or output)."""
    named = _NAMED_LIMIT.search(message)
    if named is not None:
        return "requests" if named.group(1) == "requests" else "tokens"
    return None


def rate_report(headers: Mapping[str, str], now: float | None = None) -> RateReport | None:
    """What the `anthropic-ratelimit-*` headers say about the account; None when nothing.

    The token bucket is the input tokens a minute (the `-input-tokens-*` headers), else the
    most restrictive token limit in effect (`-tokens-*`)."""
    def count(name: str) -> int | None:
        raw = headers.get(_HEADER + name)
        try:
            n = int(float(raw)) if raw is not None else None
        except ValueError:
            return None
        return n if n is not None and n >= 0 else None

    tokens = "input-tokens" if count("input-tokens-limit") is not None else "tokens"
    rpm, tpm = count("requests-limit"), count(f"{tokens}-limit")
    known = {k: v for k, v in (("requests_per_minute", rpm), ("tokens_per_minute", tpm))
             if v is not None and v > 0}
    report = RateReport(
        limits=AccountLimits(**known, source="Anthropic's rate-limit headers") if known
        else AccountLimits(),
        remaining_requests=count("requests-remaining"),
        remaining_tokens=count(f"{tokens}-remaining"),
        reset_requests_s=_seconds_until(headers.get(_HEADER + "requests-reset"), now),
        reset_tokens_s=_seconds_until(headers.get(_HEADER + f"{tokens}-reset"), now),
    )
    return None if report.empty else report


def _seconds_until(stamp: str | None, now: float | None) -> float | None:
    """Seconds from now to an RFC 3339 time ("2026-11-27T18:00:30Z"); None when unreadable."""
    if not stamp:
        return None
    try:
        when = datetime.fromisoformat(_ZULU.sub("+00:00", stamp.strip()))
    except ValueError:
        return None
    if when.tzinfo is None:
        return None
    return max(0.0, when.timestamp() - (time.time() if now is None else now))


_ZULU = re.compile(r"[Zz]$")
