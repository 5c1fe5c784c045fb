"""The engine's exceptions: two small hierarchies, so callers can catch by meaning.

Errors (something went wrong):

ResearchError
├── ConfigError          bad setting, unknown provider, missing key (user can fix it)
├── PreflightError       no working LLM or search provider: nothing is started
├── ProviderError        an external service failed after our retries
│   ├── RateLimited      429 we could not wait out (inside a run, a 429 is a wait: see
│   │                    research.llm.pacing; this reaches a caller only outside a run)
│   ├── QuotaExhausted   the account is out of credit: never retried
│   ├── ProviderTimeout  no answer before the deadline
│   │   └── StepTimeLimit    the step's own time limit (STEP_TIMEOUT_MS) cut the call short:
│   │                        not a sign that the service is down
│   ├── AuthError        key refused
│   ├── ContextTooLong   the prompt is longer than the model accepts (trimmed and retried once)
│   │   └── RequestTooLarge  one request is larger than the account's tokens a minute
│   │                        (made smaller the same way, never waited for)
│   ├── AnswerBlocked    the provider filtered or blocked the answer (safety, recitation,
│   │                    content filter) or the model refused: never retried as a network error
│   └── AnswerCutOff     the answer stopped at the output-token limit (retried once, asked
│                        to be shorter)
├── SchemaError          a model's structured answer stayed invalid after one repair
├── FetchError           a page could not be read
│   └── FetchRefused     a page we will not read (unsafe address, wrong type, too big)
└── DelegationError      an agent broke the rules of who may call whom

Stops (nothing went wrong; the run ends early on purpose). They do NOT derive from
ResearchError, so no `except ResearchError` (a fallback, a retry loop, a "warn and go on")
can swallow them or report them as failures:

RunStop
├── RunCancelled         the user cancelled the run
├── NeedsInput           the run waits for the person (clarifying answers, plan review)
└── BudgetExceeded       a run went over its total time limit (resumable)
    ├── BudgetStop       a cost, token or source cap was reached: research stops, the
    │                    report is still written from what was gathered
    └── QuotaSpent       the model account's daily quota or credit is spent: the run stops
                         at once, nothing lost, resumable once it is renewed

Every message is plain words meant for the person running the research, and never
contains an API key (see `redact`).

Anything else raised inside the engine is a programming error ("unexpected"). Inside one unit
of work (a section, a page's scoring, a claim's check) it costs that piece, not the run
(`RunContext.lose`), unless `raise_unexpected` is on: the test suite turns it on, so such an
error still fails the test that met it.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from research.llm.limits import RateReport

_KEYLIKE = re.compile(
    r"(?<![A-Za-z0-9])(sk-[A-Za-z0-9_\-]{16,}|tvly-[A-Za-z0-9_\-]{12,}|AIza[0-9A-Za-z_\-]{20,}|"
    r"(?i:bearer)\s+[A-Za-z0-9_\-.]{12,})"
)


class ResearchError(Exception):
    """Base of every error the engine raises on purpose."""


class ConfigError(ResearchError, ValueError):
    pass


class PreflightError(ResearchError):
    pass


class ProviderError(ResearchError):
    def __init__(self, message: str, *, provider: str = "", status: int | None = None) -> None:
        super().__init__(message)
        self.provider = provider
        self.status = status


class RateLimited(ProviderError):
    """A 429 for the account's rate limit: `retry_after` is how long the provider asked us to
    wait (None: it did not say), `report` what it said about the limits, `limit` which one
    it named ("tokens", "requests", or None)."""

    def __init__(
        self, message: str, *, provider: str = "", status: int | None = 429,
        retry_after: float | None = None, report: RateReport | None = None,
        limit: str | None = None,
    ) -> None:
        super().__init__(message, provider=provider, status=status)
        self.retry_after = retry_after
        self.report = report
        self.limit = limit


class QuotaExhausted(ProviderError):
    pass


class ProviderTimeout(ProviderError):
    pass


class StepTimeLimit(ProviderTimeout):
    pass


class AuthError(ProviderError):
    pass


class ContextTooLong(ProviderError):
    """The provider refused the prompt as longer than the model's context window."""


class RequestTooLarge(ContextTooLong):
    """One request asks for more tokens than the account allows in a minute (OpenAI's 429
    "Request too large ... on tokens per min"): it would be refused however long it waited,
    so its sources are trimmed instead. `report` carries the limit the provider named."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None,
                 report: RateReport | None = None) -> None:
        super().__init__(message, provider=provider, status=status)
        self.report = report


class AnswerBlocked(ProviderError):
    """A content filter, safety block, recitation stop or refusal: the same request would be
    refused again, so it is never retried as if the network had failed."""

    def __init__(self, message: str, *, provider: str = "", status: int | None = None,
                 reason: str = "") -> None:
        super().__init__(message, provider=provider, status=status)
        self.reason = reason


class AnswerCutOff(ProviderError):
    """The answer hit the output-token limit (OpenAI "length", Gemini MAX_TOKENS). `text` is
    the cut-off answer and `usage` the tokens it cost (a `research.llm.messages.Usage`); a
    retry asks for a shorter one."""

    def __init__(self, message: str, *, provider: str = "", text: str = "",
                 usage: Any = None) -> None:
        super().__init__(message, provider=provider)
        self.text = text
        self.usage = usage


class SchemaError(ResearchError):
    pass


class FetchError(ResearchError):
    pass


class FetchRefused(FetchError):
    pass


class DelegationError(ResearchError):
    pass


class RunStop(Exception):  # noqa: N818 - a stop, not an error: named for what happened
    """Base of the ways a run ends early on purpose (cancel, waiting, budget, time limit)."""


class RunCancelled(RunStop):
    pass


class NeedsInput(RunStop):
    pass


class BudgetExceeded(RunStop):
    pass


class BudgetStop(BudgetExceeded):
    pass


class QuotaSpent(BudgetExceeded):
    """The model account's daily quota or its credit is spent (Gemini's requests per day,
    OpenAI's insufficient_quota): no wait within the run would help, so the run stops at once,
    resumable when the quota renews or credit is added."""


_raise_unexpected = False


def raise_unexpected(on: bool = True) -> None:
    """The test suite's switch: an unexpected error inside a unit of work is raised (and fails
    the test) instead of costing only that piece."""
    global _raise_unexpected
    _raise_unexpected = on


def is_unexpected(exc: BaseException) -> bool:
    """A programming error, not a failure the engine raises on purpose nor a stop."""
    return not isinstance(exc, ResearchError | RunStop)


def contained(exc: BaseException) -> bool:
    """May a unit of work swallow `exc` (and lose its piece)? Never a stop; an unexpected
    error only when the test suite's switch is off."""
    if isinstance(exc, RunStop) or not isinstance(exc, Exception):
        return False
    return not (_raise_unexpected and is_unexpected(exc))


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """Remove API keys from text that may reach a user, a log or the database.

    Known secret values are removed exactly; anything shaped like a common key format
    is masked as well, for keys we were never told about (a provider echoing a key).
    """
    for secret in secrets:
        if secret and len(secret) >= 6:
            text = text.replace(secret, "[redacted]")
    return _KEYLIKE.sub("[redacted]", text)
