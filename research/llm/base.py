"""The LLM seam: one Protocol with one method, and the one chain every model call goes through.

A provider (research.llm.openai_llm, gemini_llm) only translates one request into one SDK call
and maps its errors onto `research.core.errors`. Everything else a model call needs is done once,
for all providers, by `RoleLLM`: a chat model bound to a role, whose calls pass through these
layers, outermost first, each a module named by what it handles (`RoleLLM._send`):

1. failures      a spent quota stops the run; an outage is reported
2. answer_stops  an answer cut off or withheld is asked for once more, nudged
3. budget        the run's cost and token caps; what the call used is counted
4. fitting       the prompt fits the model's context and the account's tokens a minute
5. retries       failures worth another try are tried again, within the step's time
6. turns         the account's turn (a 429 is a wait, not a try), then the run's
7. deadline      the provider's one request, under its own time limit

`text` and `structured` read the answer: its size and lists kept to what a step asks for
(answer_limits), a structured answer validated and repaired once (repair).
"""

from __future__ import annotations

import copy
import functools
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from pydantic import BaseModel

from research import voice
from research.core.errors import ProviderError
from research.core.retry import RetryPolicy
from research.llm.answer_limits import check_answer_size
from research.llm.answer_stops import AnswerStops
from research.llm.budget import Budget, UsageMeter
from research.llm.deadline import Deadline
from research.llm.failures import Failures
from research.llm.fitting import DEFAULT_MAX_INPUT_CHARS, Fitting, PromptRoom
from research.llm.limits import Account
from research.llm.local_server import server_of
from research.llm.messages import Completion, JsonSchema, Message, Request, Send, strip_think
from research.llm.pacing import Pacer, pacer_for
from research.llm.repair import answer_as, structured_request
from research.llm.retries import Retries
from research.llm.turns import AccountTurn, RunTurn
from research.llm.waits import RunWaits
from research.untrusted.textclean import strip_hidden_controls

if TYPE_CHECKING:
    from research.core.executor import RequestSlots

M = TypeVar("M", bound=BaseModel)

# A layer of the chain: it takes the request and sends it on, maybe changed, with `send`.
Layer = Callable[[Request, Send], Completion]


class LLM(Protocol):
    """One chat model. `complete` makes exactly one attempt and raises ProviderError."""

    provider: str
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: JsonSchema | None = None,
        schema_name: str | None = None,
        timeout: float | None = None,
    ) -> Completion: ...


class RoleLLM:
    """An LLM bound to a role: its calls pass through the seam's layers (`_send`)."""

    def __init__(
        self,
        llm: LLM,
        role: str,
        meter: UsageMeter,
        *,
        policy: RetryPolicy = RetryPolicy(),  # noqa: B008 - frozen value object
        call_timeout: float = 60.0,
        on_retry: Callable[[str], None] | None = None,
        cancel: threading.Event | None = None,
        max_input_chars: int = DEFAULT_MAX_INPUT_CHARS,
        on_failure: Callable[[str, ProviderError], None] | None = None,
        calls: Callable[[], Executor] | None = None,
        slots: RequestSlots | None = None,
        waits: RunWaits | None = None,
        pacer: Pacer | None = None,
    ) -> None:
        self.llm = llm
        # The account's turn-taking, shared by every role and run on it (research.llm.pacing);
        # a model without an account (a test's fake) is not paced.
        account = getattr(llm, "account", None)
        self.pacer = pacer or (pacer_for(account) if isinstance(account, Account) else None)
        # The run's side of waiting (its line per wait, its stop check, the time it was held,
        # its store); outside a run, one of its own with no time limit, so a 429 stays a try.
        self._waits = waits or RunWaits()
        self._slots = slots  # the run's model requests in flight (research.core.executor)
        self._on_failure = on_failure
        # The run's `calls` layer (research.core.executor), looked up at each call: the executor
        # renews its pools between phases. None (outside a run): a thread of the call's own.
        self._calls = calls
        self.role = role
        self.meter = meter
        self.policy = policy
        self.call_timeout = call_timeout
        self._on_retry = on_retry
        self._cancel = cancel
        # How long a prompt may be, as the run learns it (lowered when the provider says a
        # prompt was too long: the next ones are trimmed before sending, not after failing).
        self.room = PromptRoom(max_input_chars, llm, self.pacer,
                               functools.partial(meter.expected_output, role))

    @property
    def label(self) -> str:
        return f"{self.llm.provider}/{self.llm.model}"

    @property
    def who(self) -> str:
        """The model as messages name it: "The writer model (openai/gpt-5-mini)", "The
        research model (...)" for the worker (research.voice.model_words)."""
        return f"{voice.model_words(self.role)} ({self.label})"

    def quiet(self) -> RoleLLM:
        """This model for a call made ahead of time, whose failure only means it is asked for
        again in its own step (see research.phases.start.plan.Ahead): one attempt, and nothing said
        about it (no retry events, no outage recorded), as the step that needs it has not
        started and may never. Its tokens are counted like any other call's."""
        twin = copy.copy(self)
        twin.policy = RetryPolicy(attempts=1)
        twin._on_retry = None
        twin._on_failure = None
        twin.room = copy.copy(self.room)
        return twin

    def text(self, messages: Sequence[Message], *, deadline: float | None = None) -> str:
        """A text answer, without a reasoning model's scratchpad or hidden controls; one far
        larger than any step asks for, or empty, is refused."""
        completion = self._send(Request(messages, deadline=deadline))
        check_answer_size(completion.text, self.who)
        text = strip_hidden_controls(strip_think(completion.text))
        if not text:
            raise ProviderError(f"{self.who} returned an empty answer.")
        return text

    def structured(
        self, messages: Sequence[Message], model: type[M], *, deadline: float | None = None,
        caps: Mapping[str, int] | None = None,
    ) -> M:
        """Ask for JSON matching `model`; one repair attempt, then SchemaError. `caps` gives,
        by field name, how many items the step asked for in a list (answer_limits.py)."""
        request = structured_request(model, Request(messages, deadline=deadline))
        return answer_as(model, request, self._send, caps or {}, self.who)

    def _send(self, request: Request) -> Completion:
        """One model call through the seam's layers, outermost first (see the module's
        docstring). They are made for each call from the role's settings, so a `quiet` copy
        of the role sends through its own. Every prompt is cleaned first, as the store cleans
        text (research.untrusted.textclean): model text that comes back in a later prompt (a draft, a
        plan, a repair) carries no hidden controls."""
        expected_output = functools.partial(self.meter.expected_output, self.role)
        layers: tuple[Layer, ...] = (
            Failures(self.label, self._waits.bounded, self._on_failure),
            AnswerStops(self.role, self.label, self._on_retry),
            Budget(self.meter, self.role, self.llm.model, self.room),
            Fitting(self.room, self.role, self.label, self._on_retry),
            Retries(self.policy, self.meter, self.role, self.llm.provider, self.llm.model,
                    self._waits, say=self._on_retry, cancel=self._cancel),
            AccountTurn(self.pacer, self._waits, self.room, expected_output),
            RunTurn(self._slots, self.who, self.llm.model, server_of(self.llm), self._waits,
                    cancel=self._cancel),
        )
        send: Send = Deadline(self._complete, self.who, self.call_timeout, self._waits,
                              calls=self._calls)
        for layer in reversed(layers):
            send = _behind(layer, send)
        cleaned = [Message(m.role, strip_hidden_controls(m.content)) for m in request.messages]
        return send(replace(request, messages=cleaned))

    def _complete(self, request: Request, timeout: float) -> Completion:
        return self.llm.complete(request.messages, json_schema=request.schema,
                                 schema_name=request.schema_name, timeout=timeout)


def _behind(layer: Layer, send: Send) -> Send:
    """`send` with `layer` in front of it."""
    return lambda request: layer(request, send)
