"""The stand-in's rate limits: what a provider account or a search API allows, and the answers
it gives past that, as each provider documents them (issue 31, point 7).

A real account refuses what it cannot take; the engine has to learn the limits from the answers.
So this module keeps the accounts' books and builds those answers; server.py only asks it before
answering (`admit`) and tells it the answer's size afterwards (`settle`).

OpenAI (https://platform.openai.com/docs/guides/rate-limits): limits per organization and model,
in requests and tokens per minute (some tiers also per day). Every answer, 2xx or 429, carries
`x-ratelimit-limit-requests|tokens`, `x-ratelimit-remaining-requests|tokens` and
`x-ratelimit-reset-requests|tokens` ("the time until the rate limit resets to its initial state",
written like `1s`, `6m0s`, `20ms`). A request counts, for the token limit, its prompt estimated
from its characters plus its `max_tokens` / `max_completion_tokens` (the guide: "your rate limit
is calculated as the maximum of max_tokens and the estimated number of tokens based on the
character count of your request"; its 429 messages' "Requested N" is the prompt plus
max_tokens, which is what this models). The budget refills continuously. Since the guide says
nothing of what a request without max_tokens costs once answered, the stand-in settles every
request to its prompt plus its actual completion when answered: over a run, exactly the tokens
the run used pass through the minute (the floor the benchmark works out). A 429 has OpenAI's
error body ("Rate limit reached for gpt-4.1 in organization org-standin on tokens per min (TPM):
Limit 30000, Used 29000, Requested 1200. Please try again in 1.9s. ...") and no Retry-After;
`retry_after="seconds"` or `"ms"` adds `retry-after` (and `retry-after-ms`) as Azure OpenAI
sends them (https://learn.microsoft.com/azure/ai-foundry/openai/quotas-limits). A request larger
than the whole minute's token limit gets "Request too large ...": it can never pass. With
`quota_requests=N` the account's credit runs out after N requests: every later request
gets `insufficient_quota` (the same 429 status, a different body: it does not come back).

Gemini (https://ai.google.dev/gemini-api/docs/rate-limits): requests per minute, input tokens
per minute and requests per day, per project (here: per key) and model; no rate-limit headers;
a 429 `RESOURCE_EXHAUSTED` whose details hold a `QuotaFailure` (which quota: its `quotaId` says
PerMinute or PerDay) and a `RetryInfo.retryDelay`.

Search APIs: arXiv asks for "no more than one request every three seconds" on "a single
connection at a time" (https://info.arxiv.org/help/api/tou.html) and answers 503 (lately 429)
past that; Semantic Scholar's keyless requests share one throttled pool, one request a second
with a key (https://www.semanticscholar.org/product/api), 429 past it; Tavily answers 429 past
its plan's requests per minute (https://docs.tavily.com/documentation/rate-limits).

Every budget is a bucket refilled continuously at limit/window (the daily ones over 24 hours,
not up to midnight Pacific: deterministic, whatever the hour). The clock is `time.monotonic`
plus an offset that `advance(seconds)` moves, so tests can pass a minute in no time.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Literal

RetryAfter = Literal["none", "seconds", "ms"]
DAY = 86_400.0
RATE_LIMITS_URL = "https://platform.openai.com/account/rate-limits"


def duration(seconds: float) -> str:
    """A duration as OpenAI writes it in headers and messages: `20ms`, `1.9s`, `6m0s`."""
    seconds = max(0.0, seconds)
    if seconds < 1:
        return f"{math.ceil(seconds * 1000)}ms"
    if seconds < 60:
        return f"{round(seconds, 3):g}s"
    minutes, rest = divmod(seconds, 60)
    hours, minutes = divmod(int(minutes), 60)
    head = f"{hours}h" if hours else ""
    return f"{head}{minutes}m{round(rest, 3):g}s"


@dataclass
class Bucket:
    """`limit` units per `window` seconds, refilled continuously, full at first."""
    limit: int
    window: float
    level: float = 0.0  # may go below 0: an answer longer than its request reserved
    at: float | None = None

    def fill(self, now: float) -> float:
        if self.at is None:
            self.level, self.at = float(self.limit), now
        self.level = min(float(self.limit), self.level + (now - self.at) * self.limit / self.window)
        self.at = now
        return self.level

    def wait(self, cost: float) -> float:
        """Seconds until `cost` fits (after `fill`)."""
        return max(0.0, (cost - self.level) * self.window / self.limit)

    def reset_in(self) -> float:
        """Seconds until the bucket is full again (after `fill`)."""
        return (self.limit - self.level) * self.window / self.limit

    @property
    def remaining(self) -> int:
        return max(0, math.floor(self.level))


@dataclass(frozen=True)
class AccountRule:
    provider: str                       # "openai" | "gemini"
    requests_per_minute: int | None = None
    tokens_per_minute: int | None = None
    requests_per_day: int | None = None
    retry_after: RetryAfter = "none"    # openai: add Azure's retry-after headers to a 429
    quota_requests: int | None = None   # openai: requests let through before insufficient_quota
    free_tier: bool = False             # gemini: the free tier's quota ids
    model: str | None = None            # this model's limits (None: every other model, each apart)


@dataclass
class Admission:
    """The stand-in's verdict on one request: refused (status, body) or let through; `headers`
    go on the answer either way."""
    status: int = 0
    body: Any = None
    headers: dict[str, str] = field(default_factory=dict)
    key: tuple[str, str, str] | None = None
    charged: int = 0                     # tokens taken from the minute's budget
    prompt: int = 0                      # of those, the prompt's estimate

    @property
    def refused(self) -> bool:
        return self.status != 0


@dataclass
class _Books:
    rule: AccountRule
    rpm: Bucket | None
    tpm: Bucket | None
    rpd: Bucket | None
    admitted: int = 0


@dataclass(frozen=True)
class SearchRule:
    api: str
    min_interval: float = 0.0           # seconds between accepted requests
    requests_per_minute: int | None = None
    connections: int | None = None      # requests under way at once
    status: int = 429


class Limits:
    """The books of every account and search API the stand-in limits (one per server)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._offset = 0.0
        self._rules: dict[tuple[str, str | None], AccountRule] = {}  # (provider, model or None)
        self._books: dict[tuple[str, str, str], _Books] = {}
        self._search: dict[str, SearchRule] = {}
        self._last: dict[str, float] = {}
        self._open: dict[str, int] = {}
        self._search_buckets: dict[str, Bucket] = {}

    def now(self) -> float:
        return time.monotonic() + self._offset

    def advance(self, seconds: float) -> None:
        with self._lock:
            self._offset += seconds

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self._books.clear()
            self._search.clear()
            self._last.clear()
            self._open.clear()
            self._search_buckets.clear()

    def set_account(self, rule: AccountRule) -> None:
        with self._lock:
            self._rules[(rule.provider, rule.model)] = rule
            self._books = {k: b for k, b in self._books.items()
                           if k[0] != rule.provider or rule.model not in (None, k[2])}

    def set_search(self, rule: SearchRule) -> None:
        with self._lock:
            self._search[rule.api] = rule
            self._search_buckets.pop(rule.api, None)
            self._last.pop(rule.api, None)

    def limited(self, provider: str) -> bool:
        with self._lock:
            return any(p == provider for p, _ in self._rules) or provider in self._search

    # --- model APIs ----------------------------------------------------------------------

    def admit(self, provider: str, key: str, model: str, prompt_tokens: int,
              max_tokens: int = 0) -> Admission:
        """Take one request off the account's books, or refuse it as the provider would."""
        with self._lock:
            rule = self._rules.get((provider, model)) or self._rules.get((provider, None))
            if rule is None:
                return Admission()
            books_key = (provider, key, model)
            books = self._books.get(books_key)
            if books is None:
                books = self._books[books_key] = _Books(
                    rule,
                    Bucket(rule.requests_per_minute, 60.0) if rule.requests_per_minute else None,
                    Bucket(rule.tokens_per_minute, 60.0) if rule.tokens_per_minute else None,
                    Bucket(rule.requests_per_day, DAY) if rule.requests_per_day else None)
            now = self.now()
            for bucket in (books.rpm, books.tpm, books.rpd):
                if bucket is not None:
                    bucket.fill(now)
            if provider == "openai":
                admission = self._admit_openai(books, model, prompt_tokens + max_tokens, books_key)
            else:
                admission = self._admit_gemini(books, model, prompt_tokens, books_key)
            if not admission.refused:
                books.admitted += 1
                admission.prompt = prompt_tokens
            return admission

    def settle(self, admission: Admission, completion_tokens: int) -> None:
        """An OpenAI request was answered with `completion_tokens`: its cost becomes its prompt
        plus those (Gemini counts input tokens only: nothing to settle)."""
        if admission.key is None or admission.refused or admission.key[0] != "openai":
            return
        with self._lock:
            books = self._books.get(admission.key)
            if books is None or books.tpm is None:
                return
            books.tpm.fill(self.now())
            books.tpm.level -= admission.prompt + completion_tokens - admission.charged

    def _admit_openai(self, books: _Books, model: str, cost: int,
                      key: tuple[str, str, str]) -> Admission:
        rule = books.rule
        if rule.quota_requests is not None and books.admitted >= rule.quota_requests:
            from tests.standin.server import OPENAI_INSUFFICIENT_QUOTA

            return Admission(429, OPENAI_INSUFFICIENT_QUOTA, _openai_headers(books), key)
        if books.tpm is not None and cost > books.tpm.limit:
            body = _openai_body(
                f"Request too large for {model} in organization org-standin on tokens per min "
                f"(TPM): Limit {books.tpm.limit}, Requested {cost}. The input or output tokens "
                f"must be reduced in order to run successfully. Visit {RATE_LIMITS_URL} to learn "
                "more.", "tokens")
            return Admission(429, body, _openai_headers(books), key)
        checks = [(books.rpd, 1, "requests per day (RPD)", "requests"),
                  (books.rpm, 1, "requests per min (RPM)", "requests"),
                  (books.tpm, cost, "tokens per min (TPM)", "tokens")]
        for bucket, need, name, kind in checks:
            if bucket is None or bucket.level >= need:
                continue
            wait = bucket.wait(need)
            body = _openai_body(
                f"Rate limit reached for {model} in organization org-standin on {name}: "
                f"Limit {bucket.limit}, Used {bucket.limit - bucket.remaining}, Requested {need}. "
                f"Please try again in {duration(wait)}. Visit {RATE_LIMITS_URL} to learn more.",
                kind)
            headers = _openai_headers(books)
            if rule.retry_after == "seconds":
                headers["retry-after"] = str(max(1, math.ceil(wait)))
            elif rule.retry_after == "ms":
                headers["retry-after-ms"] = str(max(1, math.ceil(wait * 1000)))
                headers["retry-after"] = str(max(1, math.ceil(wait)))
            return Admission(429, body, headers, key)
        for bucket, need in ((books.rpd, 1), (books.rpm, 1), (books.tpm, cost)):
            if bucket is not None:
                bucket.level -= need
        return Admission(headers=_openai_headers(books), key=key, charged=cost)

    def _admit_gemini(self, books: _Books, model: str, tokens: int,
                      key: tuple[str, str, str]) -> Admission:
        rule = books.rule
        tier = "-FreeTier" if rule.free_tier else ""
        metric = "generate_content_free_tier" if rule.free_tier else "generate_content_paid_tier"
        checks = [(books.rpd, 1, f"GenerateRequestsPerDayPerProjectPerModel{tier}",
                   f"{metric}_requests"),
                  (books.rpm, 1, f"GenerateRequestsPerMinutePerProjectPerModel{tier}",
                   f"{metric}_requests"),
                  (books.tpm, tokens, f"GenerateContentInputTokensPerModelPerMinute{tier}",
                   f"{metric}_input_token_count")]
        for bucket, need, quota_id, quota_metric in checks:
            if bucket is None or bucket.level >= need:
                continue
            wait = bucket.wait(need) if need <= bucket.limit else 60.0
            body = gemini_rate_limit_body(model, quota_id, quota_metric, bucket.limit, wait)
            return Admission(429, body, {}, key)
        for bucket, need in ((books.rpd, 1), (books.rpm, 1), (books.tpm, tokens)):
            if bucket is not None:
                bucket.level -= need
        return Admission(key=key, charged=tokens)

    # --- search APIs ---------------------------------------------------------------------

    def admit_search(self, api: str) -> SearchRule | None:
        """None when the request may go on (call `search_done` after answering it); the rule
        it broke otherwise."""
        with self._lock:
            rule = self._search.get(api)
            if rule is None:
                return None
            now = self.now()
            last = self._last.get(api)
            if rule.min_interval and last is not None and now - last < rule.min_interval:
                return rule
            if rule.connections is not None and self._open.get(api, 0) >= rule.connections:
                return rule
            if rule.requests_per_minute:
                bucket = self._search_buckets.setdefault(
                    api, Bucket(rule.requests_per_minute, 60.0))
                if bucket.fill(now) < 1:
                    return rule
                bucket.level -= 1
            self._last[api] = now
            self._open[api] = self._open.get(api, 0) + 1
            return None

    def search_done(self, api: str) -> None:
        with self._lock:
            if self._open.get(api, 0) > 0:
                self._open[api] -= 1


def _openai_body(message: str, kind: str) -> dict[str, Any]:
    return {"error": {"message": message, "type": kind, "param": None,
                      "code": "rate_limit_exceeded"}}


def _openai_headers(books: _Books) -> dict[str, str]:
    """The x-ratelimit-* headers, as after this request (OpenAI sends them on every answer)."""
    headers: dict[str, str] = {}
    for name, bucket in (("requests", books.rpm), ("tokens", books.tpm)):
        if bucket is None:
            continue
        headers[f"x-ratelimit-limit-{name}"] = str(bucket.limit)
        headers[f"x-ratelimit-remaining-{name}"] = str(bucket.remaining)
        headers[f"x-ratelimit-reset-{name}"] = duration(bucket.reset_in())
    return headers


def gemini_rate_limit_body(model: str, quota_id: str, quota_metric: str, limit: int,
                           wait: float) -> dict[str, Any]:
    """Google's 429 RESOURCE_EXHAUSTED with QuotaFailure and RetryInfo (retryDelay in whole
    seconds, the message with the exact figure, as the live API writes them)."""
    return {"error": {
        "code": 429,
        "message": "You exceeded your current quota, please check your plan and billing details. "
                   "For more information on this error, head to: https://ai.google.dev/gemini-api/"
                   f"docs/rate-limits. Please retry in {max(wait, 0.001):.6f}s.",
        "status": "RESOURCE_EXHAUSTED",
        "details": [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": f"generativelanguage.googleapis.com/{quota_metric}",
                "quotaId": quota_id,
                "quotaDimensions": {"location": "global", "model": model},
                "quotaValue": str(limit),
            }]},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo",
             "retryDelay": f"{max(1, math.ceil(wait))}s"},
        ],
    }}


def search_refusal(api: str, rule: SearchRule) -> tuple[int, Any, dict[str, str]]:
    """What a search API answers to a request that came too fast: (status, body, headers); a
    str body goes out as text."""
    if api == "arxiv":
        return rule.status, "Rate exceeded.", {}
    if api == "semanticscholar":
        return rule.status, {
            "message": "Too Many Requests. Please wait and try again or apply for a key for "
                       "higher rate limits. https://www.semanticscholar.org/product/api#api-key-form",
            "code": str(rule.status)}, {}
    if api == "tavily":
        return rule.status, {"detail": {"error": "Your request has been blocked due to excessive "
                                                 "requests. Please reduce the rate of requests."}}, {}
    return rule.status, {"error": "Too Many Requests"}, {}
