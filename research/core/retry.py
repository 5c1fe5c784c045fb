"""Bounded retries with exponential backoff that honour Retry-After.

The SDKs' own retries are switched off (openai max_retries=0, no genai retry options,
tavily has none) so that there is exactly one retry layer, this one, with one policy:
quota exhaustion, auth errors and blocked or cut-off answers fail at once (the same request
would get the same answer; `RoleLLM` changes the request where that helps); rate limits wait
for Retry-After (if it fits in the remaining time); timeouts and 5xx back off and try again.
A model call inside a run meets no rate limit here: its 429s are waits in
`research.llm.pacing`, which use neither its tries nor its step's time.
A cancel during a back-off ends the wait at once with RunCancelled, which is a stop, not an
error (see `research.core.errors`), so no caller reports it as a failure.
"""

from __future__ import annotations

import random
import re
import threading
import time
from collections.abc import Callable
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TypeVar

from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    RunCancelled,
)

T = TypeVar("T")


@dataclass(frozen=True)
class RetryPolicy:
    attempts: int = 4          # total tries, first one included
    base_delay: float = 0.5    # seconds, doubled each retry
    max_delay: float = 20.0    # cap on one backoff
    max_retry_after: float = 60.0  # longest Retry-After we are willing to wait


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After (seconds or HTTP date) or retry-after-ms header."""
    if value is None:
        return None
    value = value.strip()
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, when.timestamp() - (now if now is not None else time.time()))


_DURATION_PART = re.compile(r"(\d+(?:\.\d+)?)(ms|h|m|s)")
_DURATION = re.compile(r"^(?:\d+(?:\.\d+)?(?:ms|h|m|s))+$")


def parse_duration(value: str | None) -> float | None:
    """Seconds from OpenAI's durations: "20ms", "1.9s", "6m0s", "1h2m3s" (the reset headers
    and the "Please try again in 1.9s" of a 429 body); a bare number is seconds."""
    if value is None:
        return None
    text = value.strip().lower()
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    if not _DURATION.match(text):
        return None
    scale = {"ms": 0.001, "s": 1.0, "m": 60.0, "h": 3600.0}
    return sum(float(n) * scale[unit] for n, unit in _DURATION_PART.findall(text))


def is_retryable(exc: BaseException) -> bool:
    if isinstance(exc, (QuotaExhausted, AuthError, AnswerBlocked, AnswerCutOff)):
        return False  # the same request would get the same answer
    if isinstance(exc, (RateLimited, ProviderTimeout)):
        return True
    if isinstance(exc, ProviderError):
        return exc.status is None or exc.status >= 500 or exc.status in (408, 409)
    return False


def call_with_retries(
    fn: Callable[[], T],
    *,
    policy: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen value object
    deadline: float | Callable[[], float | None] | None = None,
    on_retry: Callable[[int, BaseException, float], None] | None = None,
    cancel: threading.Event | None = None,
) -> T:
    """Run `fn`; retry retryable ProviderErrors within `policy` and before `deadline`.

    `deadline` is a time.monotonic() value, or a function giving it at each retry (a step's
    deadline that time spent waiting for an account pushes back). The last error is re-raised
    unchanged.
    """
    attempt = 0
    while True:
        attempt += 1
        try:
            return fn()
        except ProviderError as exc:
            if attempt >= policy.attempts or not is_retryable(exc):
                raise
            delay = min(policy.max_delay, policy.base_delay * 2 ** (attempt - 1))
            delay *= 0.8 + 0.4 * random.random()
            if isinstance(exc, RateLimited) and exc.retry_after is not None:
                if exc.retry_after > policy.max_retry_after:
                    raise
                delay = max(delay, exc.retry_after)
            until = deadline() if callable(deadline) else deadline
            if until is not None and time.monotonic() + delay >= until:
                raise
            if on_retry is not None:
                on_retry(attempt, exc, delay)
            if cancel is not None:
                if cancel.wait(delay):
                    raise RunCancelled("The run was cancelled.") from exc
            else:
                time.sleep(delay)
