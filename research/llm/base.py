"""The LLM seam: one Protocol with one method, plus what every provider shares.

A provider only translates one request into one SDK call and maps its errors onto
`research.errors`. Retries, wall-clock deadlines, usage accounting, `<think>` stripping
and schema validation with one repair live here, once, for all providers.
"""

from __future__ import annotations

import json
import re
import threading
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Literal, Protocol, TypeVar

from pydantic import BaseModel, ValidationError

from research.errors import ContextTooLong, ProviderError, ProviderTimeout, SchemaError
from research.llm.answer_limits import check_answer_size, validate_capped
from research.llm.pricing import PriceTable
from research.retry import RetryPolicy, call_with_retries

T = TypeVar("T")
M = TypeVar("M", bound=BaseModel)


@dataclass(frozen=True)
class Message:
    role: Literal["system", "user", "assistant"]
    content: str


@dataclass(frozen=True)
class Usage:
    input_tokens: int = 0
    output_tokens: int = 0


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    provider: str
    model: str


class LLM(Protocol):
    """One chat model. `complete` makes exactly one attempt and raises ProviderError."""

    provider: str
    model: str

    def complete(
        self,
        messages: Sequence[Message],
        *,
        json_schema: dict | None = None,
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


# --- fitting a prompt into the model's context ---------------------------------------------

# About 4 characters per token: 400k characters is ~100k tokens, below every context window we
# use (gpt-5-mini 400k tokens, gemini-2.5 1M), with room for the answer.
DEFAULT_MAX_INPUT_CHARS = 400_000
MIN_SOURCE_CHARS = 200         # a trimmed source keeps at least this much
HARDER_TRIM = 0.6              # after a context-length error, retry at 60% of what was sent
                               # (or 90% of the share the provider says it accepts)
TRIM_NOTE = "\n[... trimmed to fit the model's context ...]"
# "maximum context length is 128000 tokens. However, your messages resulted in 130000 tokens"
# (OpenAI) and "The input token count (1200000) exceeds the maximum number of tokens allowed
# (1048576)" (Gemini): when a provider says both numbers, the harder trim aims below them.
_OPENAI_COUNTS = re.compile(r"maximum context length is (\d+).*?resulted in (\d+)", re.S)
_GEMINI_COUNTS = re.compile(r"input token count \((\d+)\) exceeds the maximum number of "
                            r"tokens allowed \((\d+)\)", re.S | re.I)
_BLOCK = re.compile(
    r'(<untrusted_source id="[^"\n]*"[^\n]*nonce="(?P<nonce>[0-9a-f]+)">\n)(?P<body>.*?)'
    r'(\n</untrusted_source nonce="(?P=nonce)">)',
    re.DOTALL,
)


def prompt_chars(messages: Sequence[Message]) -> int:
    return sum(len(m.content) for m in messages)


def fit_prompt(messages: Sequence[Message], max_chars: int) -> list[Message]:
    """Trim the longest fetched sources until the prompt fits in `max_chars` characters.

    Only the bodies of `<untrusted_source>` blocks are cut (their ends, longest first, each
    keeping at least MIN_SOURCE_CHARS): instructions, the question and the block tags are
    never touched. Returns the messages unchanged when they already fit; raises
    ContextTooLong when even fully trimmed sources leave the prompt too long.
    """
    total = prompt_chars(messages)
    if total <= max_chars:
        return list(messages)
    bodies = [len(m.group("body")) for msg in messages for m in _BLOCK.finditer(msg.content)]
    excess = total - max_chars
    cap = _water_level(bodies, excess + len(TRIM_NOTE) * len(bodies))
    if cap is None:
        raise ContextTooLong(
            f"The prompt ({total} characters) is too long for the model even with every "
            f"source cut to {MIN_SOURCE_CHARS} characters (limit {max_chars})."
        )

    def trim(match: re.Match[str]) -> str:
        body = match.group("body")
        if len(body) <= cap:
            return match.group(0)
        return match.group(1) + body[:cap].rstrip() + TRIM_NOTE + match.group(4)

    return [Message(m.role, _BLOCK.sub(trim, m.content)) for m in messages]


def _water_level(lengths: list[int], excess: int) -> int | None:
    """The largest cap such that cutting every length above it removes at least `excess`."""
    if sum(max(0, n - MIN_SOURCE_CHARS) for n in lengths) < excess:
        return None
    low, high = MIN_SOURCE_CHARS, max(lengths, default=MIN_SOURCE_CHARS)
    while low < high:
        mid = (low + high + 1) // 2
        if sum(max(0, n - mid) for n in lengths) >= excess:
            low = mid
        else:
            high = mid - 1
    return low


def harder_limit(sent_chars: int, message: str) -> int:
    """The character budget for the retry after a context-length error on `sent_chars`."""
    ratio = HARDER_TRIM
    counts = _OPENAI_COUNTS.search(message)
    if counts:
        allowed, used = int(counts.group(1)), int(counts.group(2))
    elif (counts := _GEMINI_COUNTS.search(message)) is not None:
        used, allowed = int(counts.group(1)), int(counts.group(2))
    if counts and used > allowed > 0:
        ratio = min(0.9, 0.9 * allowed / used)
    return int(sent_chars * ratio)


def run_with_deadline(fn: Callable[[], T], seconds: float, what: str) -> T:
    """Run `fn` with a wall-clock limit, so a trickling or hung socket cannot stall a step.

    Socket timeouts only bound each read; a server that sends a byte every few seconds
    never trips them. The call runs in a daemon thread; if the limit passes we stop
    waiting (the thread is abandoned and ends when its own socket timeout fires).
    """
    box: dict[str, object] = {}

    def target() -> None:
        try:
            box["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=target, name=f"deadline:{what}", daemon=True)
    thread.start()
    thread.join(max(0.0, seconds))
    if thread.is_alive():
        shown = f"{seconds:.0f}" if seconds >= 10 else f"{seconds:.1f}"
        raise ProviderTimeout(f"{what} did not answer within {shown} s.")
    if "error" in box:
        raise box["error"]  # type: ignore[misc]
    return box["value"]  # type: ignore[return-value]


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
        self.totals: dict[tuple[str, str, str], dict[str, float]] = {}

    def record(self, role: str, provider: str, model: str, usage: Usage) -> None:
        cost = self.prices.cost(model, usage.input_tokens, usage.output_tokens)
        with self._lock:
            row = self.totals.setdefault(
                (role, provider, model),
                {"calls": 0, "input_tokens": 0, "output_tokens": 0, "cost_usd": 0.0},
            )
            row["calls"] += 1
            row["input_tokens"] += usage.input_tokens
            row["output_tokens"] += usage.output_tokens
            row["cost_usd"] += cost
        if self._on_record is not None:
            self._on_record(role, provider, model, usage.input_tokens, usage.output_tokens, cost)

    def total_cost(self) -> float:
        with self._lock:
            return sum(r["cost_usd"] for r in self.totals.values())

    def total_tokens(self) -> int:
        with self._lock:
            return int(sum(r["input_tokens"] + r["output_tokens"] for r in self.totals.values()))


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
    ) -> None:
        self.llm = llm
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

    def _once(
        self, messages: Sequence[Message], schema: dict | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        """One answer: the prompt trimmed to fit, retries, and one harder trim if the
        provider still says the prompt is too long."""
        fitted = fit_prompt(messages, self.max_input_chars)
        try:
            completion = self._attempts(fitted, schema, name, deadline)
        except ContextTooLong as exc:
            limit = harder_limit(min(prompt_chars(fitted), self.max_input_chars), str(exc))
            try:
                harder = fit_prompt(messages, limit)
            except ContextTooLong:
                raise ContextTooLong(
                    f"The prompt for the {self.role} model is longer than {self.label} accepts, "
                    "and its sources cannot be trimmed further.",
                    provider=exc.provider, status=exc.status,
                ) from None
            self.max_input_chars = min(self.max_input_chars, limit)
            if self._on_retry is not None:
                self._on_retry(
                    f"{self.role} model: the prompt was too long for {self.label}; sending it "
                    f"again with the sources trimmed to {limit} characters"
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
        self, messages: Sequence[Message], schema: dict | None, name: str | None,
        deadline: float | None,
    ) -> Completion:
        def attempt() -> Completion:
            what = f"The {self.role} model ({self.label})"
            limit = self.call_timeout
            step_bound = deadline is not None and deadline - time.monotonic() < limit
            if deadline is not None:
                limit = min(limit, deadline - time.monotonic())
            if limit <= 0:
                raise ProviderTimeout(f"{what} could not be asked: the step's time limit "
                                      "(STEP_TIMEOUT_MS) had run out.")
            try:
                return run_with_deadline(
                    lambda: self.llm.complete(
                        messages, json_schema=schema, schema_name=name, timeout=limit
                    ),
                    limit,
                    what,
                )
            except ProviderTimeout:
                if step_bound:  # the step's limit, not the model, cut the call short
                    raise ProviderTimeout(f"{what} did not answer before the step's time "
                                          "limit (STEP_TIMEOUT_MS) ran out.") from None
                raise

        def retried(n: int, exc: BaseException, delay: float) -> None:
            if self._on_retry is not None:
                self._on_retry(
                    f"{self.role} model call failed ({exc}); retry {n} in {delay:.1f} s"
                )

        return call_with_retries(
            attempt, policy=self.policy, deadline=deadline, on_retry=retried,
            cancel=self._cancel,
        )

    def text(self, messages: Sequence[Message], *, deadline: float | None = None) -> str:
        completion = self._once(messages, None, None, deadline)
        check_answer_size(completion.text, self._who)
        text = strip_think(completion.text)
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
        schema = model.model_json_schema()
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


def _validate(model: type[M], text: str) -> M:
    payload = extract_json(text)
    if not payload:
        raise ValueError("the answer was empty")
    return model.model_validate_json(payload)


def _short_error(exc: Exception) -> str:
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "answer"
        return f"{where}: {err.get('msg', 'invalid')}"
    return str(exc)[:200] or exc.__class__.__name__
