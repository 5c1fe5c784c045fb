"""A model call's failures tried again: the seam's `Retries` layer.

One policy for all providers (research.core.retry: which failures are worth another try, the
back-off, Retry-After), within the step's time limit, which the time the run was held by its
accounts pushes back (`RunWaits.shifted`: waits for the account do not use the step's time).
An answer cut off at the length limit is not tried again here (the same request would be cut
again; research.llm.answer_stops changes it), but the tokens it spent are counted.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass

from research import voice
from research.core.errors import AnswerCutOff
from research.core.retry import RetryPolicy, call_with_retries
from research.llm.budget import UsageMeter
from research.llm.messages import Completion, Request, Send
from research.llm.waits import RunWaits


@dataclass(frozen=True)
class Retries:
    """The request sent, and sent again after a failure worth another try."""

    policy: RetryPolicy
    meter: UsageMeter
    role: str
    provider: str
    model: str
    waits: RunWaits
    say: Callable[[str], None] | None = None  # the run's line about each retry
    cancel: threading.Event | None = None

    def __call__(self, request: Request, send: Send) -> Completion:
        def attempt() -> Completion:
            try:
                return send(request)
            except AnswerCutOff as exc:  # tokens were spent on the cut-off answer
                if exc.usage is not None:
                    self.meter.record(self.role, self.provider, self.model, exc.usage)
                raise

        def step_deadline() -> float | None:
            return self.waits.shifted(request.deadline)

        return call_with_retries(attempt, policy=self.policy, deadline=step_deadline,
                                 on_retry=self._retried, cancel=self.cancel)

    def _retried(self, n: int, exc: BaseException, delay: float) -> None:
        if self.say is not None:
            self.say(f"{voice.model_words(self.role)}: a call failed ({exc}); retry {n} in {delay:.1f} s")
