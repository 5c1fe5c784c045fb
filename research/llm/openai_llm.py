"""OpenAI Chat Completions, also for OpenAI-compatible servers (Ollama, vLLM, LM Studio).

One request per `complete` call: the SDK's own retries are off (`max_retries=0`) because
`RoleLLM` owns the retry policy. Every SDK error becomes a `research.core.errors` error with a
plain message that never contains the key. Every answer and every refusal also says what the
account allows (the `x-ratelimit-*` headers, read through the SDK's raw response; the text of
a 429), which `research.llm.pacing` paces the account by.
"""

from __future__ import annotations

import re
import time
from collections.abc import Mapping, Sequence
from typing import Any

import openai
from openai._constants import DEFAULT_CONNECTION_LIMITS

from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ContextTooLong,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    RequestTooLarge,
    redact,
)
from research.core.retry import parse_duration, parse_retry_after
from research.llm.base import LLM
from research.llm.deadline import DeadlineTransport
from research.llm.fitting import prompt_chars
from research.llm.limits import Account, AccountLimits, RateReport
from research.llm.local_server import LocalServer, local_server
from research.llm.messages import Completion, JsonSchema, Message, Usage
from research.llm.tls import ClosedWhenDropped, shared_tls_context

DEFAULT_BASE_URL = "https://api.openai.com/v1"
# OpenAI-compatible local servers want *some* bearer token, and the SDK refuses to start
# without one; the value is never checked by them.
LOCAL_PLACEHOLDER_KEY = "not-needed"


class _HttpClient(ClosedWhenDropped, openai.DefaultHttpxClient):
    """The SDK's default client with the shared TLS context (research/llm/tls.py)."""


class OpenAIChat(LLM):
    """An OpenAI (or compatible) chat model; one attempt per call."""

    provider = "openai"

    def __init__(
        self,
        model: str,
        *,
        api_key: str | None = None,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self._api_key = api_key or ""
        self._base_url = base_url or DEFAULT_BASE_URL
        self._client = openai.OpenAI(
            api_key=api_key or LOCAL_PLACEHOLDER_KEY,
            base_url=self._base_url,
            max_retries=0,
            timeout=timeout,
            http_client=_HttpClient(verify=shared_tls_context(), timeout=timeout,
                                    transport=DeadlineTransport(limits=DEFAULT_CONNECTION_LIMITS)),
        )
        self._timeout = timeout
        self.account = Account.of("openai", base_url, api_key, model)
        self._server: LocalServer | None = None
        self._looked = False  # for a local server: on first use
        self._built = time.monotonic()

    def local_server(self) -> LocalServer | None:
        """The model server of one's own behind the base URL (research/llm/local_server.py),
        looked at on first use, not when the model is built (that needs no network)."""
        if not self._looked:
            self._server = local_server(self._base_url if self._base_url != DEFAULT_BASE_URL
                                        else None, api_key=self._api_key)
            if self._server is not None:  # asked again for each run's models
                self._server.discovery(self.model, since=self._built)
            self._looked = True
        return self._server

    def context_window(self) -> int | None:
        """The model's context window in tokens, when its server told or showed it."""
        server = self.local_server()
        return server.context_tokens(self.model) if server else None

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        kwargs: dict[str, Any] = {  # the SDK's request: raw provider JSON
            "model": self.model,
            "messages": [{"role": m.role, "content": m.content} for m in messages],
            "timeout": timeout if timeout is not None else self._timeout,
        }
        if json_schema is not None:
            kwargs["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(schema_name or str(json_schema.get("title") or "answer")),
                    "schema": json_schema,
                    "strict": False,
                },
            }
        try:
            raw = self._client.chat.completions.with_raw_response.create(**kwargs)
            response = raw.parse()
        except openai.OpenAIError as exc:
            raise self._map_error(exc) from None
        rate = rate_report(raw.headers)
        self._observe(messages, response)
        if not response.choices:
            raise ProviderError(
                f"OpenAI model {self.model} returned no answer (empty choices).",
                provider=self.provider,
            )
        choice = response.choices[0]
        message = choice.message
        usage = response.usage
        spent = Usage(
            input_tokens=int(usage.prompt_tokens or 0) if usage else 0,
            output_tokens=int(usage.completion_tokens or 0) if usage else 0,
        )
        if getattr(message, "refusal", None):
            raise AnswerBlocked(
                f"OpenAI model {self.model} refused to answer: "
                f"{self._clean(str(message.refusal))[:300]}",
                provider=self.provider, reason="refusal",
            )
        reason = str(choice.finish_reason or "")
        if reason == "content_filter":
            raise AnswerBlocked(
                f"OpenAI model {self.model}: the answer was withheld by the provider's content "
                "filter (finish_reason content_filter).", provider=self.provider, reason=reason,
            )
        if reason == "length":
            raise AnswerCutOff(
                f"OpenAI model {self.model}: the answer was cut off at the output length limit "
                "(finish_reason length).", provider=self.provider, text=message.content or "",
                usage=spent,
            )
        return Completion(
            text=message.content or "", usage=spent, provider=self.provider,
            model=response.model or self.model, rate=rate,
        )

    def _observe(self, messages: Sequence[Message], response: Any) -> None:
        """A local server's answer: its size (how many it gives at once) and whether it read
        the whole prompt (Ollama cuts a longer one silently: then it is sent again, shorter)."""
        server = self.local_server()
        usage = response.usage
        if server is None or usage is None:
            return
        prompt, answer = int(usage.prompt_tokens or 0), int(usage.completion_tokens or 0)
        server.record_answer(prompt, answer)
        sent = prompt_chars(messages)
        cut = server.silent_cut(self.model, sent, prompt)
        if cut is not None:  # a refusal, as llama.cpp's and vLLM's (400), not an outage to retry;
            # the counts below are read by research.llm.fitting.harder_limit
            raise ContextTooLong(
                f"{cut} (The maximum context length is {prompt} tokens; the prompt resulted in "
                f"{sent // 4} tokens, by our count.)", provider=self.provider, status=400)

    def _clean(self, text: str) -> str:
        return redact(text, [self._api_key])

    def _map_error(self, exc: openai.OpenAIError) -> ProviderError:
        where = f"OpenAI ({self.model})"
        if isinstance(exc, openai.APITimeoutError):
            return ProviderTimeout(f"{where} did not answer in time.", provider=self.provider)
        if isinstance(exc, openai.APIConnectionError):
            return ProviderError(
                f"Could not connect to {where} at {self._base_url}.", provider=self.provider
            )
        if isinstance(exc, openai.APIStatusError):
            status = exc.status_code
            detail = self._clean(_error_message(exc))
            suffix = f": {detail}" if detail else "."
            if status == 429:
                return self._rate_error(exc, where, detail, suffix)
            if status in (401, 403):
                return AuthError(
                    f"{where} refused the API key (HTTP {status}){suffix} "
                    "Check OPENAI_API_KEY.",
                    provider=self.provider, status=status,
                )
            if status == 408:
                return ProviderTimeout(
                    f"{where} timed out on the server side.", provider=self.provider, status=408
                )
            if status in (400, 413) and _is_context_length(exc, detail):
                server = self.local_server()
                if server is not None:  # the window it refused beyond, for the whole run
                    server.learn_from_refusal(self.model, detail, exc.body)
                return ContextTooLong(
                    f"{where}: the prompt is longer than the model's context window{suffix}",
                    provider=self.provider, status=status,
                )
            return ProviderError(
                f"{where} failed with HTTP {status}{suffix}", provider=self.provider, status=status
            )
        return ProviderError(
            f"{where} failed: {self._clean(str(exc))[:300]}", provider=self.provider
        )

    def _rate_error(self, exc: openai.APIStatusError, where: str, detail: str,
                    suffix: str) -> ProviderError:
        """A 429: a spent quota or credit, a request larger than a minute's tokens, or the
        account's rate limit, with what it said about the wait and the limits."""
        text = f"{exc.code} {exc.type} {detail}"
        named = _NAMED_LIMIT.search(detail)
        kind = named.group("kind").lower() if named else None
        per_day = named is not None and named.group("per").lower() == "day"
        field = _NAMED_FIELDS.get((kind, per_day)) if kind is not None else None
        limits = (AccountLimits(**{field: int(named.group("limit"))}, source="a 429's text")
                  if named and field else AccountLimits())
        headers = exc.response.headers
        report = rate_report(headers, limits)
        retry_after = parse_retry_after(headers.get("retry-after"))
        if retry_after is None:
            millis = parse_retry_after(headers.get("retry-after-ms"))  # Azure OpenAI
            retry_after = millis / 1000 if millis is not None else None
        if retry_after is None and (again := _TRY_AGAIN.search(detail)) is not None:
            retry_after = parse_duration(again.group(1))
        if "insufficient_quota" in text or (
                per_day and (retry_after is None or retry_after > DAILY_WAIT_S)):
            what = ("has run out of credit (insufficient quota)" if not per_day else
                    "has used up its daily limit")
            return QuotaExhausted(
                f"{where}: the account {what}{suffix} Add credit, or set a key of another "
                "account in OPENAI_API_KEY.", provider=self.provider, status=429,
            )
        if _TOO_LARGE in detail.lower():
            return RequestTooLarge(
                f"{where}: one request is larger than the account's tokens a minute{suffix}",
                provider=self.provider, status=429, report=report,
            )
        return RateLimited(
            f"{where} is rate limiting requests{suffix}", provider=self.provider,
            retry_after=retry_after, report=report,
            limit=kind,
        )


# https://platform.openai.com/docs/guides/rate-limits ("Rate limits in headers"): sent with
# every answer; the reset values are durations such as "1s", "6m0s" or "20ms". Azure OpenAI
# sends -1 where it does not count (ignored).
_HEADER_LIMITS = (("x-ratelimit-limit-requests", "requests_per_minute"),
                  ("x-ratelimit-limit-tokens", "tokens_per_minute"))
# "Rate limit reached for gpt-4.1 in organization org-x on tokens per min (TPM): Limit 30000,
# Used 29000, Requested 2000. Please try again in 1.9s." and "Request too large for gpt-4.1
# ... on tokens per min (TPM): Limit 30000, Requested 45000."
_NAMED_LIMIT = re.compile(r"on (?P<kind>tokens|requests) per (?P<per>min|day)\b[^:]*:\s*"
                          r"Limit (?P<limit>\d+)", re.I)
_NAMED_FIELDS = {("requests", False): "requests_per_minute", ("tokens", False): "tokens_per_minute",
                 ("requests", True): "requests_per_day"}
_TRY_AGAIN = re.compile(r"try again in ((?:\d+(?:\.\d+)?(?:ms|h|m|s))+)", re.I)
_TOO_LARGE = "request too large"
DAILY_WAIT_S = 600.0  # a daily limit whose reset is further off than this stops the run


def rate_report(headers: Mapping[str, str], limits: AccountLimits = AccountLimits(),  # noqa: B008
                ) -> RateReport | None:
    """What OpenAI's `x-ratelimit-*` headers (and a 429's text: `limits`) say about the
    account; None when they say nothing."""
    known = {field: n for name, field in _HEADER_LIMITS
             if (n := _count(headers.get(name))) is not None and n > 0}
    report = RateReport(
        limits=limits.merged(AccountLimits(**known, source="the provider's rate-limit headers")
                             if known else AccountLimits()),
        remaining_requests=_count(headers.get("x-ratelimit-remaining-requests")),
        remaining_tokens=_count(headers.get("x-ratelimit-remaining-tokens")),
        reset_requests_s=parse_duration(headers.get("x-ratelimit-reset-requests")),
        reset_tokens_s=parse_duration(headers.get("x-ratelimit-reset-tokens")),
    )
    return None if report.empty else report


def _count(value: str | None) -> int | None:
    try:
        n = int(float(value)) if value is not None else None
    except ValueError:
        return None
    return n if n is not None and n >= 0 else None


def _error_message(exc: openai.APIStatusError) -> str:
    body = exc.body
    if isinstance(body, dict) and isinstance(body.get("message"), str):
        return str(body["message"])[:300]
    if isinstance(body, str):
        return body[:300]
    return ""


def _schema_name(name: str) -> str:
    """OpenAI accepts names of letters, digits, '_' and '-' up to 64 characters."""
    cleaned = "".join(c if c.isalnum() or c in "_-" else "_" for c in name)
    return cleaned[:64] or "answer"


# llama.cpp says type "exceed_context_size_error", "... exceeds the available context size"
# (tools/server/README.md); vLLM "This model's maximum context length is N tokens".
_CONTEXT_WORDS = ("context_length_exceeded", "maximum context length", "context window",
                  "too many tokens", "prompt is too long", "exceed_context_size",
                  "available context size")


def _is_context_length(exc: openai.APIStatusError, detail: str) -> bool:
    """OpenAI says code "context_length_exceeded"; compatible servers (vLLM...) only say it in words."""
    text = f"{exc.code} {exc.type} {detail}".lower()
    return any(word in text for word in _CONTEXT_WORDS)
