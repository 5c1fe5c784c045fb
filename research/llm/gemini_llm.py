"""Gemini through `google-genai`: one `generate_content` request per `complete` call.

No `retry_options` are given, so the SDK makes one attempt and `RoleLLM` owns retries.
Errors become `research.core.errors` errors with plain messages that never contain the key; a 429
also says how long to wait (RetryInfo) and which quota was met (QuotaFailure: per minute or
per day, https://ai.google.dev/gemini-api/docs/rate-limits), which `research.llm.pacing` reads.

The API version is chosen here, not left to the SDK: google-genai 3.x sends to `v1` by
default, whose published contract (googleapis `google/ai/generativelanguage/v1`) has no
`systemInstruction` or `generationConfig.responseMimeType`, and Google refuses a body with
a field its version lacks (400 "Unknown name ... Cannot find field"). `v1beta` has every
field we send; tests/test_gemini_contract.py checks the bodies against both versions' protos.
"""

from __future__ import annotations

import importlib
import re
from collections.abc import Sequence
from typing import Any

import httpx
from google import genai
from google.genai import errors as genai_errors
from google.genai import types

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
from research.llm.tls import shared_tls_context


def _httpx_families() -> list[Any]:
    # google-genai may run on httpx or on its fork httpx2; catch the errors of both.
    modules: list[Any] = [httpx]
    try:
        modules.append(importlib.import_module("httpx2"))
    except ImportError:
        pass
    return modules


# The HTTP clients' timeouts and connection failures (also caught by research.engines.gemini_deep).
HTTP_TIMEOUTS: tuple[type[BaseException], ...] = tuple(m.TimeoutException for m in _httpx_families())
HTTP_TRANSPORT_ERRORS: tuple[type[BaseException], ...] = tuple(m.TransportError for m in _httpx_families())
_SAFETY_REASONS = {"SAFETY", "PROHIBITED_CONTENT", "BLOCKLIST", "SPII", "IMAGE_SAFETY"}
# A stop that withholds the answer (or its rest): retrying the same request gets the same stop.
_BLOCK_REASONS = _SAFETY_REASONS | {"RECITATION", "LANGUAGE", "IMAGE_PROHIBITED_CONTENT",
                                    "IMAGE_RECITATION"}
# "The input token count (1200000) exceeds the maximum number of tokens allowed (1048576)."
_CONTEXT_WORDS = ("exceeds the maximum number of tokens", "input token count",
                  "context window", "too many tokens")
_DURATION = re.compile(r"^\s*([0-9]+(?:\.[0-9]+)?)s\s*$")
_RETRY_IN = re.compile(r"retry in ([0-9]+(?:\.[0-9]+)?)s\b", re.I)
# The Gemini API version every request goes to (see the module docstring); the Interactions
# API of the deep-research engine is documented under it too
# (https://ai.google.dev/api/interactions-api: POST /v1beta/interactions).
API_VERSION = "v1beta"


class GeminiChat(LLM):
    """A Gemini model on the Gemini Developer API; one attempt per call."""

    provider = "gemini"

    def __init__(
        self,
        model: str,
        *,
        api_key: str,
        base_url: str | None = None,
        timeout: float = 60.0,
    ) -> None:
        self.model = model
        self._api_key = api_key
        self.account = Account.of("gemini", base_url, api_key, model)
        self._timeout = timeout
        tls = shared_tls_context()  # "ssl": the SDK's websocket context, read from the async args
        options = types.HttpOptions(base_url=base_url, api_version=API_VERSION,
                                    timeout=_millis(timeout),
                                    client_args={"verify": tls, "transport": DeadlineTransport()},
                                    async_client_args={"verify": tls, "ssl": tls})
        self._client = genai.Client(vertexai=False, api_key=api_key, http_options=options)

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        timeout: float | None = None,
    ) -> Completion:
        system = "\n\n".join(m.content for m in messages if m.role == "system")
        contents = [
            types.Content(
                role="model" if m.role == "assistant" else "user",
                parts=[types.Part(text=m.content)],
            )
            for m in messages
            if m.role != "system"
        ]
        config = types.GenerateContentConfig(
            system_instruction=system or None,
            http_options=types.HttpOptions(
                timeout=_millis(timeout if timeout is not None else self._timeout)
            ),
        )
        if json_schema is not None:
            config.response_mime_type = "application/json"
            config.response_json_schema = json_schema
        try:
            response = self._client.models.generate_content(
                model=self.model, contents=contents, config=config
            )
        except genai_errors.APIError as exc:
            raise self._map_api_error(exc) from None
        except HTTP_TIMEOUTS:
            raise ProviderTimeout(
                f"Gemini ({self.model}) did not answer in time.", provider=self.provider
            ) from None
        except HTTP_TRANSPORT_ERRORS as exc:
            raise ProviderError(
                f"Could not connect to Gemini ({self.model}): "
                f"{self._clean(str(exc) or exc.__class__.__name__)}",
                provider=self.provider,
            ) from None
        return self._completion(response)

    def _completion(self, response: types.GenerateContentResponse) -> Completion:
        where = f"Gemini ({self.model})"
        feedback = response.prompt_feedback
        if feedback is not None and feedback.block_reason:
            reason = _enum_name(feedback.block_reason)
            raise AnswerBlocked(
                f"{where}: the request was blocked by safety filters ({reason}).",
                provider=self.provider, reason=reason,
            )
        candidates = response.candidates or []
        if not candidates:
            raise ProviderError(f"{where} returned no answer (no candidates).",
                                provider=self.provider)
        candidate = candidates[0]
        parts = candidate.content.parts if candidate.content and candidate.content.parts else []
        text = "".join(p.text for p in parts if p.text and not p.thought)
        reason = _enum_name(candidate.finish_reason)
        meta = response.usage_metadata
        usage = Usage(
            input_tokens=int(meta.prompt_token_count or 0) if meta else 0,
            output_tokens=(
                int(meta.candidates_token_count or 0) + int(meta.thoughts_token_count or 0)
                if meta else 0
            ),
        )
        if reason in _BLOCK_REASONS:
            kind = "stopped by the recitation check" if "RECITATION" in reason else (
                "blocked by safety filters")
            raise AnswerBlocked(
                f"{where}: the answer was {kind} ({reason}).",
                provider=self.provider, reason=reason,
            )
        if reason == "MAX_TOKENS":
            raise AnswerCutOff(
                f"{where}: the answer was cut off at the output length limit (MAX_TOKENS).",
                provider=self.provider, text=text, usage=usage,
            )
        return Completion(
            text=text, usage=usage, provider=self.provider,
            model=response.model_version or self.model,
        )

    def _clean(self, text: str) -> str:
        return redact(text, [self._api_key])

    def _map_api_error(self, exc: genai_errors.APIError) -> ProviderError:
        where = f"Gemini ({self.model})"
        status = int(exc.code) if exc.code else None
        detail = self._clean(str(exc.message or exc.status or ""))[:300]
        suffix = f": {detail}" if detail else "."
        if status == 429:
            if _is_quota_exhausted(exc):
                return QuotaExhausted(
                    f"{where}: the quota of this key is used up{suffix} "
                    "Wait for the quota to reset, enable billing, or use another key.",
                    provider=self.provider, status=status,
                )
            limits, limit = _minute_quota(exc)
            return RateLimited(
                f"{where} is rate limiting requests{suffix}",
                provider=self.provider, retry_after=_retry_delay(exc),
                report=RateReport(limits=limits) if limits.known else None, limit=limit,
            )
        if status in (401, 403) or (status == 400 and "API key" in detail):
            return AuthError(
                f"{where} refused the API key (HTTP {status}){suffix} Check GEMINI_API_KEY.",
                provider=self.provider, status=status,
            )
        if status in (400, 413) and any(w in detail.lower() for w in _CONTEXT_WORDS):
            return ContextTooLong(
                f"{where}: the prompt is longer than the model's context window{suffix}",
                provider=self.provider, status=status,
            )
        if status in (408, 504):
            return ProviderTimeout(f"{where} timed out on the server side{suffix}",
                                   provider=self.provider, status=status)
        return ProviderError(f"{where} failed with HTTP {status}{suffix}",
                             provider=self.provider, status=status)


def _millis(seconds: float) -> int:
    return max(1, int(seconds * 1000))


def _enum_name(value: Any) -> str:
    if value is None:
        return ""
    return str(getattr(value, "value", value) or getattr(value, "name", "")).upper()


def _error_details(exc: genai_errors.APIError) -> list[dict[str, Any]]:  # raw provider JSON
    body = exc.details
    if isinstance(body, dict):
        inner = body.get("error", body)
        details = inner.get("details") if isinstance(inner, dict) else None
        if isinstance(details, list):
            return [d for d in details if isinstance(d, dict)]
    return []


def _is_quota_exhausted(exc: genai_errors.APIError) -> bool:
    """A daily or billing quota (waiting minutes will not help) versus a per-minute limit.

    Google sends the same "exceeded your current quota, check your plan and billing" text
    for both, so the quota ids decide when present; the text only decides without them.
    """
    quota_ids: list[str] = []
    for detail in _error_details(exc):
        for violation in detail.get("violations") or []:
            if isinstance(violation, dict):
                quota_ids.append(str(violation.get("quotaId") or ""))
                quota_ids.append(str(violation.get("quotaMetric") or ""))
    if any("perday" in q.lower() for q in quota_ids):
        return True
    if any("perminute" in q.lower() for q in quota_ids):
        return False
    message = str(exc.message or "").lower()
    return (
        "billing" in message
        or "credit" in message
        or ("exceeded your current quota" in message and "check your plan" in message)
    )


def _minute_quota(exc: genai_errors.APIError) -> tuple[AccountLimits, str | None]:
    """The per-minute quotas a 429 names (QuotaFailure violations), with their values where
    Google gives them (`quotaValue`), and which kind was met ("tokens", "requests")."""
    learned: dict[str, int] = {}
    kinds: set[str] = set()
    for detail in _error_details(exc):
        for violation in detail.get("violations") or []:
            if not isinstance(violation, dict):
                continue
            quota = f"{violation.get('quotaId') or ''} {violation.get('quotaMetric') or ''}".lower()
            if "perminute" not in quota:
                continue
            kind = "tokens" if "token" in quota else "requests"
            kinds.add(kind)
            try:
                value = int(str(violation.get("quotaValue") or ""))
            except ValueError:
                continue
            field = f"{kind}_per_minute"
            learned[field] = min(value, learned.get(field, value))
    limits = AccountLimits(
        requests_per_minute=learned.get("requests_per_minute"),
        tokens_per_minute=learned.get("tokens_per_minute"),
        source="Gemini's quota details" if learned else "",
    )
    return limits, (kinds.pop() if len(kinds) == 1 else None)


def _retry_delay(exc: genai_errors.APIError) -> float | None:
    response = getattr(exc, "response", None)
    headers = getattr(response, "headers", None)
    if headers is not None:
        try:
            value = parse_retry_after(headers.get("retry-after"))
        except (AttributeError, TypeError):
            value = None
        if value is not None:
            return value
    # "... Please retry in 12.345678s.": the exact figure RetryInfo rounds up to whole seconds.
    exact = _RETRY_IN.search(str(exc.message or ""))
    if exact:
        return float(exact.group(1))
    for detail in _error_details(exc):
        if str(detail.get("@type", "")).endswith("RetryInfo"):
            match = _DURATION.match(str(detail.get("retryDelay", "")))
            if match:
                return float(match.group(1))
    return None
