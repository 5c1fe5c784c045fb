"""The LLM seam: one Protocol with one method, plus what every provider shares.

A provider only translates one request into one SDK call and maps its errors onto
`research.core.errors`. Retries, wall-clock deadlines, usage accounting, `<think>` stripping,
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
import re
import threading
import time
from collections.abc import Callable, Iterator, Mapping, Sequence
from concurrent.futures import Executor, Future
from concurrent.futures import TimeoutError as FutureTimeout
from contextlib import AbstractContextManager, contextmanager, nullcontext
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from research.core.errors import (
    AnswerBlocked,
    AnswerCutOff,
    AuthError,
    ContextTooLong,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    QuotaSpent,
    RateLimited,
    RequestTooLarge,
    SchemaError,
    StepTimeLimit,
)
from research.core.retry import RetryPolicy, call_with_retries
from research.llm.answer_limits import check_answer_size, validate_capped
from research.llm.fitting import (  # noqa: F401 - re-exported: the seam's public names
    DEFAULT_MAX_INPUT_CHARS,
    HARDER_TRIM,
    MIN_SOURCE_CHARS,
    TRIM_NOTE,
    fit_prompt,
    harder_limit,
    prompt_chars,
    window_chars,
)
from research.llm.limits import Account, RateReport
from research.llm.local_server import server_of
from research.llm.pacing import Pacer, pacer_for
from research.llm.pricing import PriceTable
from research.llm.waits import RunWaits
from research.untrusted.textclean import strip_hidden_controls

if TYPE_CHECKING:
    from research.core.executor import RequestSlots

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


# A JSON Schema document (pydantic's `model_json_schema()`), as the provider SDKs take it: raw
# provider JSON, the edge where our typed answers meet the services, so it stays untyped.
JsonSchema = dict[str, Any]


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass
class Tally:
    """One (role, provider, model)'s use so far in this process, added to call by call."""

    calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    cost_usd: float = 0.0

    @property
    def tokens(self) -> int:
        return self.input_tokens + self.output_tokens


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    provider: str
    model: str
    rate: RateReport | None = None  # what the answer said about the account's limits


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


_THINK = re.compile(r"<think(?:ing)?>.*?</think(?:ing)?>", re.DOTALL | re.IGNORECASE)
_OPEN_THINK = re.compile(r"^\s*<think(?:ing)?>.*", re.DOTALL | re.IGNORECASE)
_FENCE = re.compile(r"^\s*```(?:json|JSON)?\s*\n?(.*?)\n?```\s*$", re.DOTALL)


def strip_think(text: str) -> str:
    """Drop reasoning-model scratchpad (`<think>...</think>`), even when left unclosed."""
    text = _THINK.sub("", text)
    if _OPEN_THINK.match(text):
        # An unterminated think block swallows everything after it: nothing usable.
        return ""
    return text.strip()


def extract_json(text: str) -> str:
    """The JSON object inside a model answer: fences removed, surrounding prose cut."""
    text = strip_think(text)
    fenced = _FENCE.match(text)
    if fenced:
        return fenced.group(1).strip()
    start, end = text.find("{"), text.rfind("}")
    if start != -1 and end > start:
        return text[start : end + 1]
    return text


_bounded = threading.local()  # set in a thread while it runs a call under a wall-clock limit


def run_with_deadline(fn: Callable[[], T], seconds: float, what: str,
                      pool: Executor | None = None) -> T:
    """Run `fn` with a wall-clock limit, so a trickling or hung socket cannot stall a step.

    Socket timeouts only bound each read; a server that sends a byte every few seconds
    never trips them (nor do the SDKs' own `timeout` options: openai's and google-genai's
    are httpx timeouts, per read). So the call runs in another thread: the run's `calls`
    layer (`pool`, see research.core.executor) or, outside a run, a daemon thread of its own. If
    the limit passes we stop waiting; the abandoned call ends when its socket times out.
    Already inside such a call (a provider bounding its own request), `fn` runs inline: the
    outer limit covers it, and a second thread would be a call waiting on a call.
    """
    if getattr(_bounded, "active", False):
        return fn()

    def target() -> T:
        _bounded.active = True
        try:
            return fn()
        finally:
            _bounded.active = False

    future: Future[T]
    if pool is not None:
        future = pool.submit(target)
    else:
        future = Future()
        threading.Thread(target=_settle, args=(future, target), name=f"deadline:{what}",
                         daemon=True).start()
    try:
        return future.result(timeout=max(0.0, seconds))
    except FutureTimeout:
        future.cancel()  # not started yet (a full layer): it never will be
        shown = f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"
        raise ProviderTimeout(f"{what} did not answer within {shown} s.") from None


def _settle(future: Future[T], fn: Callable[[], T]) -> None:
    """`fn`'s value or error into `future` (the thread of a call run outside a run); nothing
    if the caller gave up before the thread began."""
    if not future.set_running_or_notify_cancel():
        return
    try:
        future.set_result(fn())
    except BaseException as exc:  # noqa: BLE001 - re-raised by future.result in the caller
        future.set_exception(exc)


class UsageMeter:
    """Tokens and estimated cost per (role, provider, model); thread-safe.

    `on_record` is called after each call with the increment, so the store can persist
    usage as it happens.
    """

    def __init__(
        self,
        prices: PriceTable | None = None,
        on_record: Callable[[str, str, str, int, int, float], None] | None = None,
    ) -> None:
        self.prices = prices or PriceTable()
        self._on_record = on_record
        self._lock = threading.Lock()
        self.totals: dict[tuple[str, str, str], Tally] = {}  # by (role, provider, model)
        # Tokens and cost of the calls in flight, so parallel workers cannot all pass the
        # budget check at once and overshoot together.
        self._reserved_tokens = 0
        self._reserved_cost = 0.0
        # Called before each model call with (role, tokens, cost) the run would have used
        # once that call is done (estimate); it raises BudgetStop to refuse the call.
        self.guard: Callable[[str, int, float], None] | None = None

    def expected_output(self, role: str) -> int:
        """Output tokens to expect from one call of `role`: its average so far, else a guess."""
        with self._lock:
            rows = [r for (r_role, _, _), r in self.totals.items() if r_role == role]
            calls = sum(r.calls for r in rows)
            out = sum(r.output_tokens for r in rows)
        return max(EXPECTED_OUTPUT_MIN, int(out / calls)) if calls else EXPECTED_OUTPUT_FIRST

    @contextmanager
    def reserve(self, role: str, model: str, input_tokens: int, output_tokens: int) -> Iterator[None]:
        """Hold the estimate of one call while it runs; the guard may refuse it first."""
        tokens = input_tokens + output_tokens
        cost = self.prices.cost(model, input_tokens, output_tokens)
        with self._lock:
            if self.guard is not None:
                used_tokens = sum(r.tokens for r in self.totals.values())
                used_cost = sum(r.cost_usd for r in self.totals.values())
                self.guard(role, used_tokens + self._reserved_tokens + tokens,
                           used_cost + self._reserved_cost + cost)
            self._reserved_tokens += tokens
            self._reserved_cost += cost
        try:
            yield
        finally:
            with self._lock:
                self._reserved_tokens -= tokens
                self._reserved_cost -= cost

    def record(self, role: str, provider: str, model: str, usage: Usage) -> None:
        cost = self.prices.cost(model, usage.input_tokens, usage.output_tokens)
        with self._lock:
            row = self.totals.setdefault((role, provider, model), Tally())
            row.calls += 1
            row.input_tokens += usage.input_tokens
            row.output_tokens += usage.output_tokens
            row.cost_usd += cost
        if self._on_record is not None:
            self._on_record(role, provider, model, usage.input_tokens, usage.output_tokens, cost)

    def total_cost(self) -> float:
        with self._lock:
            return sum(r.cost_usd for r in self.totals.values())

    def total_tokens(self) -> int:
        with self._lock:
            return sum(r.tokens for r in self.totals.values())


CHARS_PER_TOKEN = 4            # the estimate used for the budget check before each call
EXPECTED_OUTPUT_FIRST = 800    # output tokens assumed for a role's first call
EXPECTED_OUTPUT_MIN = 100
RECONSIDER_NUDGE = ("Your previous answer was refused or withheld by a content filter. The "
                    "sources above are untrusted web text quoted for research; do only the "
                    "research task asked, leaving out anything you cannot help with.")
CONCISE_NUDGE = ("Your previous answer was cut off because it reached the output length "
                 "limit. Answer again, complete but more concise: shorter sentences, fewer "
                 "items, no repetition.")
# Failures that say the service could not be reached (as opposed to a refusal of this request).
_NOT_OUTAGES = (AuthError, QuotaExhausted, ContextTooLong, AnswerBlocked, AnswerCutOff,
                StepTimeLimit)


def is_outage(exc: ProviderError) -> bool:
    """True when `exc` means the service was down or unreachable, not that it said no."""
    if isinstance(exc, _NOT_OUTAGES):
        return False
    return exc.status is None or exc.status >= 500 or exc.status in (408, 429)


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
        self._pacer = pacer or (pacer_for(account) if isinstance(account, Account) else None)
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
        # Lowered (for this model, for the rest of the run) when the provider says a prompt
        # was too long: the next prompts are trimmed before sending, not after failing.
        self.max_input_chars = max_input_chars

    @property
    def label(self) -> str:
        return f"{self.llm.provider}/{self.llm.model}"

    def quiet(self) -> RoleLLM:
        """This model for a call made ahead of time, whose failure only means it is asked for
        again in its own step (see research.phases.start.plan.Ahead): one attempt, and nothing said
        about it (no retry events, no outage recorded), as the step that needs it has not
        started and may never. Its tokens are counted like any other call's."""
        twin = copy.copy(self)
        twin.policy = RetryPolicy(attempts=1)
        twin._on_retry = None
        twin._on_failure = None
        return twin

    def _once(
        self, messages: Sequence[Message], schema: JsonSchema | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        """One answer, checked against the budget first; an answer cut off at the length
        limit is asked for once more, shorter, because the same request would be cut again.
        Every prompt is cleaned as the store cleans text (research.untrusted.textclean): model text that
        comes back in a later prompt (a draft, a plan, a repair) carries no hidden controls."""
        messages = [Message(m.role, strip_hidden_controls(m.content)) for m in messages]
        try:
            try:
                return self._budgeted(messages, schema, name, deadline)
            except (AnswerCutOff, AnswerBlocked) as exc:
                return self._changed_request(exc, messages, schema, name, deadline)
        except QuotaExhausted as exc:
            if self._waits.bounded:  # inside a run: no wait would help, so the run stops
                raise QuotaSpent(
                    f"{exc} The run has stopped; everything gathered so far is kept, and it "
                    "continues where it stopped when resumed.") from None
            raise
        except ProviderError as exc:
            if self._on_failure is not None and is_outage(exc):
                self._on_failure(self.label, exc)
            raise

    def _changed_request(
        self, exc: AnswerCutOff | AnswerBlocked, messages: Sequence[Message],
        schema: JsonSchema | None, name: str | None, deadline: float | None,
    ) -> Completion:
        """The one retry that can help a cut-off or withheld answer: the same request with a
        nudge (be concise; do only the research task). A second refusal is final."""
        cut = isinstance(exc, AnswerCutOff)
        if self._on_retry is not None:
            what = ("was cut off at the output length limit" if cut else
                    f"was refused or blocked ({exc})")
            self._on_retry(f"{self.role} model: the answer {what}; asking once more with a "
                           "changed request")
        nudged = [*messages, Message("user", CONCISE_NUDGE if cut else RECONSIDER_NUDGE)]
        try:
            return self._budgeted(nudged, schema, name, deadline)
        except AnswerCutOff as again:
            raise AnswerCutOff(
                f"The {self.role} model ({self.label}) stopped at its output length limit "
                "twice, even when asked for a more concise answer, so its answer was "
                "incomplete and was not used.", provider=again.provider,
            ) from None
        except AnswerBlocked as again:
            raise AnswerBlocked(
                f"The {self.role} model ({self.label}) would not answer, even when asked "
                f"again: {again}", provider=again.provider, reason=again.reason,
            ) from None

    def _budgeted(
        self, messages: Sequence[Message], schema: JsonSchema | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        """Refuse the call (BudgetStop from the meter's guard) when its estimate would take
        the run past a cost or token cap; otherwise hold that estimate while it runs."""
        window = window_chars(self.llm)  # a local server's window, once known: for the run
        if window is not None and window < self.max_input_chars:
            self.max_input_chars = window
        chars = min(prompt_chars(messages), self.input_limit())
        with self.meter.reserve(self.role, self.llm.model, chars // CHARS_PER_TOKEN,
                                self.meter.expected_output(self.role)):
            return self._fitted(messages, schema, name, deadline)

    def input_limit(self) -> int:
        """The longest prompt to send, in characters: what the model's context takes and, under
        a tokens-a-minute limit, what one request may carry (a larger one would be refused
        however long it waited, so it is made smaller: fewer source characters)."""
        pacer = self._pacer
        most = pacer.max_request_tokens() if pacer is not None else None
        if pacer is None or most is None:
            return self.max_input_chars
        room = max(0, most - pacer.metered(0, self.meter.expected_output(self.role)))
        room *= CHARS_PER_TOKEN
        return max(MIN_SOURCE_CHARS, min(self.max_input_chars, room))

    def _fitted(
        self, messages: Sequence[Message], schema: JsonSchema | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        """One answer: the prompt trimmed to fit, retries, and one harder trim if the
        provider still says the prompt is too long."""
        fitted = fit_prompt(messages, self.input_limit())
        try:
            completion = self._attempts(fitted, schema, name, deadline)
        except ContextTooLong as exc:
            limit = harder_limit(min(prompt_chars(fitted), self.input_limit()), str(exc))
            if isinstance(exc, RequestTooLarge) and exc.report is not None:
                limit = self.input_limit()  # the account's minute, now learned, sets it
            try:
                harder = fit_prompt(messages, limit)
            except ContextTooLong:
                raise ContextTooLong(
                    f"The prompt for the {self.role} model is longer than {self.label} accepts, "
                    "and its sources cannot be trimmed further.",
                    provider=exc.provider, status=exc.status,
                ) from None
            if not isinstance(exc, RequestTooLarge):
                self.max_input_chars = min(self.max_input_chars, limit)
            if self._on_retry is not None:
                what = ("larger than the account allows in a minute" if
                        isinstance(exc, RequestTooLarge) else "too long")
                self._on_retry(
                    f"{self.role} model: the prompt was {what} for {self.label} ({exc}); "
                    f"sending it again with the sources trimmed to {limit} characters"
                )
            try:
                completion = self._attempts(harder, schema, name, deadline)
            except ContextTooLong as again:
                raise ContextTooLong(
                    f"The prompt for the {self.role} model is longer than {self.label} accepts, "
                    f"even with its sources trimmed to {limit} characters.",
                    provider=again.provider, status=again.status,
                ) from None
        self.meter.record(self.role, completion.provider, completion.model, completion.usage)
        return completion

    def _attempts(
        self, messages: Sequence[Message], schema: JsonSchema | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        def attempt() -> Completion:
            try:
                return send()
            except AnswerCutOff as exc:  # tokens were spent on the cut-off answer
                if exc.usage is not None:
                    self.meter.record(self.role, self.llm.provider, self.llm.model, exc.usage)
                raise

        def step_deadline() -> float | None:  # waits for the account do not use the step's time
            return self._waits.shifted(deadline)

        def send() -> Completion:
            what = f"The {self.role} model ({self.label})"
            return self._paced(messages, lambda: turn(what))

        def turn(what: str) -> Completion:
            with self._turn(what, step_deadline()):  # its time limit starts once it is its turn
                return ask(what)

        def ask(what: str) -> Completion:
            limit = self.call_timeout
            deadline = step_deadline()
            step_bound = deadline is not None and deadline - time.monotonic() < limit
            if deadline is not None:
                limit = min(limit, deadline - time.monotonic())
            if limit <= 0:
                raise StepTimeLimit(f"{what} could not be asked: the step's time limit "
                                    "(STEP_TIMEOUT_MS) had run out.")
            try:
                return run_with_deadline(
                    lambda: self.llm.complete(
                        messages, json_schema=schema, schema_name=name, timeout=limit
                    ),
                    limit,
                    what,
                    self._calls() if self._calls is not None else None,
                )
            except ProviderTimeout:
                if step_bound:  # the step's limit, not the model, cut the call short
                    raise StepTimeLimit(f"{what} did not answer before the step's time "
                                        "limit (STEP_TIMEOUT_MS) ran out.") from None
                raise

        def retried(n: int, exc: BaseException, delay: float) -> None:
            if self._on_retry is not None:
                self._on_retry(
                    f"{self.role} model call failed ({exc}); retry {n} in {delay:.1f} s"
                )

        return call_with_retries(
            attempt, policy=self.policy, deadline=step_deadline, on_retry=retried,
            cancel=self._cancel,
        )

    def _paced(self, messages: Sequence[Message], send: Callable[[], Completion]) -> Completion:
        """One request in its account's turn (research.llm.pacing). A 429 is a wait, sent
        again in a later turn without using one of the call's tries; inside a run only
        cancellation and the run's total time limit end such waits. Outside a run (nothing
        would end the wait), a 429 is one of the retry policy's tries, as before."""
        pacer = self._pacer
        if pacer is None:
            return send()
        if self._waits.books is not None:
            pacer.share(self._waits.books)
        tokens = pacer.metered(min(prompt_chars(messages), self.input_limit()) // CHARS_PER_TOKEN,
                               self.meter.expected_output(self.role))
        while True:
            with self._waits.holding():
                ticket = pacer.acquire(tokens, check=self._waits.check,
                                       on_wait=self._waits.notice)
            try:
                completion = send()
            except RateLimited as exc:
                pacer.refused(ticket, retry_after=exc.retry_after, report=exc.report,
                              limit=exc.limit)
                if not self._waits.bounded:  # a try of the retry policy, as before
                    raise
                continue
            except AnswerCutOff as exc:  # answered, cut off: its tokens were spent
                pacer.settle(ticket, _metered(pacer, exc.usage) or ticket.tokens)
                raise
            except BaseException as exc:
                pacer.release(ticket)
                report: RateReport | None = getattr(exc, "report", None)
                if isinstance(exc, RequestTooLarge) and report is not None:
                    pacer.learn(report.limits)  # the next prompts are fitted to it
                raise
            pacer.settle(ticket, _metered(pacer, completion.usage) or ticket.tokens,
                         completion.rate)
            return completion

    def _turn(self, what: str, deadline: float | None) -> AbstractContextManager[float | None]:
        """The run's limit on model requests in flight (none outside a run), and a local
        server's own (research/llm/local_server.py), whose queue is held time of the run: the
        step's deadline gets it back (`step_deadline` in `_attempts`)."""
        if self._slots is None:
            return nullcontext()
        return self._slots.hold(what, cancel=self._cancel, deadline=deadline,
                                server=server_of(self.llm), model=self.llm.model,
                                holding=self._waits.holding)

    def text(self, messages: Sequence[Message], *, deadline: float | None = None) -> str:
        completion = self._once(messages, None, None, deadline)
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
        completion = self._once(messages, schema, model.__name__, deadline)
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
        completion = self._once(repair, schema, model.__name__, deadline)
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


def _metered(pacer: Pacer, usage: Usage | None) -> int:
    return pacer.metered(usage.input_tokens, usage.output_tokens) if usage is not None else 0


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "answer"
        return f"{where}: {err.get('msg', 'invalid')}"
    return str(exc)[:200] or exc.__class__.__name__
