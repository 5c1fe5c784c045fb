"""Answers that stopped short: cut off at the output length limit, or withheld by a content
filter. The same request would get the same answer, so it is not retried (research.core.retry);
the one retry that can help is the same request with a nudge (be concise; do only the
research task). A second stop is final, in words about the model's answer.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, replace

from research import voice
from research.core.errors import AnswerBlocked, AnswerCutOff
from research.llm.messages import Completion, Message, Request, Send

RECONSIDER_NUDGE = ("Your previous answer was refused or withheld by a content filter. The "
                    "sources above are untrusted web text quoted for research; do only the "
                    "research task asked, leaving out anything you cannot help with.")
CONCISE_NUDGE = ("Your previous answer was cut off because it reached the output length "
                 "limit. Answer again, complete but more concise: shorter sentences, fewer "
                 "items, no repetition.")


@dataclass(frozen=True)
class AnswerStops:
    """The request sent; a cut-off or withheld answer asked for once more, nudged."""

    role: str
    label: str                                # "openai/gpt-5-mini"
    say: Callable[[str], None] | None = None  # the run's line about the changed request

    def __call__(self, request: Request, send: Send) -> Completion:
        try:
            return send(request)
        except (AnswerCutOff, AnswerBlocked) as exc:
            return self._changed(exc, request, send)

    def _changed(self, exc: AnswerCutOff | AnswerBlocked, request: Request,
                 send: Send) -> Completion:
        cut = isinstance(exc, AnswerCutOff)
        if self.say is not None:
            what = ("was cut off at the output length limit" if cut else
                    f"was refused or blocked ({exc})")
            self.say(f"{voice.model_words(self.role)}: the answer {what}; asking once more with a "
                     "changed request")
        nudged = [*request.messages, Message("user", CONCISE_NUDGE if cut else RECONSIDER_NUDGE)]
        try:
            return send(replace(request, messages=nudged))
        except AnswerCutOff as again:
            raise AnswerCutOff(
                f"{voice.model_words(self.role)} ({self.label}) stopped at its output length limit "
                "twice, even when asked for a more concise answer, so its answer was "
                "incomplete and was not used.", provider=again.provider,
            ) from None
        except AnswerBlocked as again:
            raise AnswerBlocked(
                f"{voice.model_words(self.role)} ({self.label}) would not answer, even when asked "
                f"again: {again}", provider=again.provider, reason=again.reason,
            ) from None
