"""The LLM seam: one Protocol with one method, plus what every provider shares.

A provider only translates one request into one SDK call and maps its errors onto
`research.errors`. Retries, wall-clock deadlines, usage accounting, `<think>` stripping,
schema validation with one repair and pacing to the account (`research.llm.pacing`) live
here, once, for all providers.

A model call passes through these layers, outermost first (`RoleLLM`):
`_once` (a spent quota stops the run; a cut-off or refused answer is asked for once more) ->
`_budgeted` (the run's cost and token caps) -> `_fitted` (the prompt fits the model's context
and the account's tokens a minute) -> `_attempts` (retries of failures) -> `_paced` (the
account's turn: a 429 is a wait, not an attempt) -> `_turn` (the run's requests in flight) ->
the provider's one request under its own time limit, counted from when it is sent.
"""

from __future__ import annotations

import copy
import functools
import json
import threading
from collections.abc import Callable, Mapping, Sequence
from concurrent.futures import Executor
from dataclasses import replace
from typing import TYPE_CHECKING, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from research.errors import (
    ProviderError,
    SchemaError,
)
from research.llm.answer_limits import check_answer_size, validate_capped
from research.llm.answer_stops import AnswerStops
from research.llm.budget import Budget, UsageMeter
from research.llm.deadline import Deadline
from research.llm.failures import Failures
from research.llm.fitting import DEFAULT_MAX_INPUT_CHARS, Fitting, PromptRoom
from research.llm.limits import Account
from research.llm.local_server import server_of
from research.llm.messages import Completion, JsonSchema, Message, Request, strip_think
from research.llm.pacing import Pacer, pacer_for
from research.llm.retries import Retries
from research.llm.turns import AccountTurn, RunTurn
from research.llm.waits import RunWaits
from research.retry import RetryPolicy
from research.textclean import strip_hidden_controls

if TYPE_CHECKING:
    from research.executor import RequestSlots

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


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
    """An LLM bound to a role: adds retries, deadline, usage accounting and JSON parsing."""

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
        self._slots = slots  # the run's model requests in flight (research.executor)
        self._on_failure = on_failure
        # The run's `calls` layer (research.executor), looked up at each call: the executor
        # renews its pools between phases. None (outside a run): a thread of the call's own.
        self._calls = calls
        self.role = role
        self.meter = meter
        self.policy = policy
        self.call_timeout = call_timeout
        self._on_retry = on_retry
        self._cancel = cancel
        # Lowered (for this model, for the rest of the run) when the provider says a prompt
        # was too long: the next prompts are trimmed before sending, not after failing.
        self.room = PromptRoom(max_input_chars, llm, self.pacer,
                               functools.partial(meter.expected_output, role))

    @property
    def label(self) -> str:
        return f"{self.llm.provider}/{self.llm.model}"

    def quiet(self) -> RoleLLM:
        """This model for a call made ahead of time, whose failure only means it is asked for
        again in its own step (see research.phases.plan.Ahead): one attempt, and nothing said
        about it (no retry events, no outage recorded), as the step that needs it has not
        started and may never. Its tokens are counted like any other call's."""
        twin = copy.copy(self)
        twin.policy = RetryPolicy(attempts=1)
        twin._on_retry = None
        twin._on_failure = None
        twin.room = copy.copy(self.room)
        return twin

    def _once(self, request: Request) -> Completion:
        """Every prompt is cleaned as the store cleans text (research.textclean): model text that
        comes back in a later prompt (a draft, a plan, a repair) carries no hidden controls."""
        request = replace(request, messages=[Message(m.role, strip_hidden_controls(m.content))
                                             for m in request.messages])
        return Failures(self.label, self._waits.bounded, self._on_failure)(
            request, self._stops_handled)

    def _stops_handled(self, request: Request) -> Completion:
        return AnswerStops(self.role, self.label, self._on_retry)(request, self._budgeted)

    def _budgeted(self, request: Request) -> Completion:
        return Budget(self.meter, self.role, self.llm.model, self.room)(request, self._fitted)

    def _fitted(self, request: Request) -> Completion:
        return Fitting(self.room, self.role, self.label, self._on_retry)(request, self._attempts)

    def _attempts(self, request: Request) -> Completion:
        return Retries(self.policy, self.meter, self.role, self.llm.provider, self.llm.model,
                       self._waits, self._on_retry, self._cancel)(request, self._paced)

    def _paced(self, request: Request) -> Completion:
        return AccountTurn(self.pacer, self._waits, self.room,
                           functools.partial(self.meter.expected_output, self.role))(
            request, self._in_turn)

    def _in_turn(self, request: Request) -> Completion:
        return RunTurn(self._slots, self._who, self.llm.model, server_of(self.llm), self._waits,
                       self._cancel)(
            request, Deadline(self._request, self._who, self.call_timeout, self._waits,
                              self._calls))

    def _request(self, request: Request, timeout: float) -> Completion:
        return self.llm.complete(request.messages, json_schema=request.schema,
                                 schema_name=request.schema_name, timeout=timeout)

    def text(self, messages: Sequence[Message], *, deadline: float | None = None) -> str:
        completion = self._once(Request(messages, deadline=deadline))
        check_answer_size(completion.text, self._who)
        text = strip_hidden_controls(strip_think(completion.text))
        if not text:
            raise ProviderError(f"The {self.role} model ({self.label}) returned an empty answer.")
        return text

    @property
    def _who(self) -> str:
        return f"The {self.role} model ({self.label})"

    def structured(
        self, messages: Sequence[Message], model: type[M], *, deadline: float | None = None,
        caps: Mapping[str, int] | None = None,
    ) -> M:
        """Ask for JSON matching `model`; one repair attempt, then SchemaError. `caps` gives,
        by field name, how many items the step asked for in a list (answer_limits.py)."""
        schema = schema_of(model)
        limits = caps or {}
        completion = self._once(Request(messages, schema, model.__name__, deadline))
        try:
            return validate_capped(model, completion.text, limits, self._who)
        except (ValidationError, ValueError) as first_error:
            problem = _short_error(first_error)
        repair = [
            *messages,
            Message("assistant", completion.text[:4000]),
            Message(
                "user",
                "Your previous answer could not be used: "
                f"{problem}. Reply again with only a JSON object that matches this schema, "
                f"no prose and no code fences:\n{json.dumps(schema)}",
            ),
        ]
        completion = self._once(Request(repair, schema, model.__name__, deadline))
        try:
            return validate_capped(model, completion.text, limits, self._who)
        except (ValidationError, ValueError) as second_error:
            raise SchemaError(
                f"The {self.role} model ({self.label}) did not return a valid "
                f"{model.__name__} after one repair attempt: {_short_error(second_error)}."
            ) from None


@functools.lru_cache(maxsize=64)
def _schema(model: type[BaseModel]) -> str:
    return json.dumps(model.model_json_schema())


def schema_of(model: type[BaseModel]) -> JsonSchema:
    """`model`'s JSON Schema, made once per class (pydantic builds it anew on every call, a
    few milliseconds a call under the run's busiest moments); each caller gets its own copy,
    which an SDK may change as it likes."""
    schema: JsonSchema = json.loads(_schema(model))
    return schema


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "answer"
        return f"{where}: {err.get('msg', 'invalid')}"
    return str(exc)[:200] or exc.__class__.__name__
