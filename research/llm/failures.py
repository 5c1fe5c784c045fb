"""What a failed model call means beyond the call: the seam's outermost layer, `Failures`.

A spent quota (QuotaExhausted) inside a run stops the run (QuotaSpent): no wait would help,
and everything gathered so far is kept for a resume. A failure that says the service could
not be reached (`is_outage`, as opposed to a refusal of this request) is reported, so the run
can tell the person which provider is down.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ContextTooLong,
    ProviderError,
    QuotaExhausted,
    QuotaSpent,
    StepTimeLimit,
)
from research.llm.messages import Completion, Request, Send

# Failures that say the service could not be reached (as opposed to a refusal of this request).
_NOT_OUTAGES = (AuthError, QuotaExhausted, ContextTooLong, AnswerBlocked, AnswerCutOff,
                StepTimeLimit)


def is_outage(exc: ProviderError) -> bool:
    """True when `exc` means the service was down or unreachable, not that it said no."""
    if isinstance(exc, _NOT_OUTAGES):
        return False
    return exc.status is None or exc.status >= 500 or exc.status in (408, 429)


@dataclass(frozen=True)
class Failures:
    """The request sent; a spent quota stops the run, an outage is reported."""

    label: str                 # "openai/gpt-5-mini", as the outage is reported
    in_run: bool               # inside a run (its waits are bounded): a spent quota stops it
    on_outage: Callable[[str, ProviderError], None] | None = None

    def __call__(self, request: Request, send: Send) -> Completion:
        try:
            return send(request)
        except QuotaExhausted as exc:
            if self.in_run:  # no wait would help, so the run stops
                raise QuotaSpent(
                    f"{exc} The run has stopped; everything gathered so far is kept, and it "
                    "continues where it stopped when resumed.") from None
            raise
        except ProviderError as exc:
            if self.on_outage is not None and is_outage(exc):
                self.on_outage(self.label, exc)
            raise
