"""A model request waits its turn: first its account's, then its run's.

`AccountTurn` takes the account's turn (research.llm.pacing), shared by every role and run on
that account. A 429 is a wait: the request is sent again in a later turn without using one of
the call's tries; inside a run only cancellation and the run's total time limit end such
waits. Outside a run (nothing would end the wait), a 429 is one of the retry policy's tries.

`RunTurn` keeps to the run's limit on model requests in flight (none outside a run) and to a
local server's own (research/llm/local_server.py), whose queue is held time of the run: the
step's deadline gets it back (`RunWaits.shifted`). The request's own time limit (the next
layer, research.llm.deadline) starts once it is its turn.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING

from research.core.errors import AnswerCutOff, RateLimited, RequestTooLarge
from research.llm.fitting import PromptRoom
from research.llm.limits import RateReport
from research.llm.local_server import LocalServer
from research.llm.messages import Completion, Request, Send, Usage
from research.llm.pacing import Pacer
from research.llm.waits import RunWaits

if TYPE_CHECKING:
    from research.core.executor import RequestSlots


@dataclass(frozen=True)
class AccountTurn:
    """The request sent in its account's turn, and the pacer told how it went."""

    pacer: Pacer | None                  # None: a model without an account (a test's fake)
    waits: RunWaits
    room: PromptRoom
    expected_output: Callable[[], int]   # the answer's tokens, as the meter expects them

    def __call__(self, request: Request, send: Send) -> Completion:
        pacer = self.pacer
        if pacer is None:
            return send(request)
        if self.waits.books is not None:
            pacer.share(self.waits.books)
        tokens = pacer.metered(self.room.tokens(request.messages), self.expected_output())
        while True:
            with self.waits.holding():
                ticket = pacer.acquire(tokens, check=self.waits.check,
                                       on_wait=self.waits.notice)
            try:
                completion = send(request)
            except RateLimited as exc:
                pacer.refused(ticket, retry_after=exc.retry_after, report=exc.report,
                              limit=exc.limit)
                if not self.waits.bounded:  # a try of the retry policy, as before
                    raise
                continue
            except AnswerCutOff as exc:  # answered, cut off: its tokens were spent
                pacer.settle(ticket, metered(pacer, exc.usage) or ticket.tokens)
                raise
            except BaseException as exc:
                pacer.release(ticket)
                report: RateReport | None = getattr(exc, "report", None)
                if isinstance(exc, RequestTooLarge) and report is not None:
                    pacer.learn(report.limits)  # the next prompts are fitted to it
                raise
            pacer.settle(ticket, metered(pacer, completion.usage) or ticket.tokens,
                         completion.rate)
            return completion


def metered(pacer: Pacer, usage: Usage | None) -> int:
    """The tokens an answer used, as its account counts them (0: not said)."""
    return pacer.metered(usage.input_tokens, usage.output_tokens) if usage is not None else 0


@dataclass(frozen=True)
class RunTurn:
    """The request sent once the run (and a local server) has room for it."""

    slots: RequestSlots | None           # the run's requests in flight; None outside a run
    who: str                             # "The writer model (openai/gpt-5-mini)"
    model: str
    server: LocalServer | None           # a local server's own queue, if the model has one
    waits: RunWaits
    cancel: threading.Event | None = None

    def __call__(self, request: Request, send: Send) -> Completion:
        if self.slots is None:
            return send(request)
        with self.slots.hold(self.who, cancel=self.cancel,
                             deadline=self.waits.shifted(request.deadline), server=self.server,
                             model=self.model, holding=self.waits.holding):
            return send(request)
