"""Fitting a prompt into the model's context window: only fetched sources are trimmed.

The model seam's `Fitting` layer sends each prompt trimmed to the role's `PromptRoom` (what
the model's context takes and, under a tokens-a-minute limit, what one request may carry) and,
when the provider still says it is too long, once more trimmed harder.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from research import voice
from research.core.errors import ContextTooLong, RequestTooLarge
from research.llm.messages import Completion, Message, Request, Send
from research.llm.pacing import Pacer

CHARS_PER_TOKEN = 4            # the estimate of a prompt's tokens before each call (budget, pace)
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
# Anthropic: "prompt is too long: 208765 tokens > 200000 maximum"
_ANTHROPIC_COUNTS = re.compile(r"prompt is too long: (\d+) tokens > (\d+) maximum", re.I)
_BLOCK = re.compile(
    r'(<untrusted_source id="[^"\n]*"[^\n]*nonce="(?P<nonce>[0-9a-f]+)">\n)(?P<body>.*?)'
    r'(\n</untrusted_source nonce="(?P=nonce)">)',
    re.DOTALL,
)


# A model server's own window (research/llm/local_server.py), in tokens, becomes a character
# budget for the prompt: a quarter of the window (at least 1,024 tokens, at most 8,192) is left
# for the answer, and a token is counted as 3.5 characters, not 4, because the prompts' URLs,
# JSON and numbers take more tokens than prose.
ANSWER_SHARE = 0.25
ANSWER_MIN_TOKENS, ANSWER_MAX_TOKENS = 512, 8192
WINDOW_CHARS_PER_TOKEN = 3.5
DROP_NOTE = "[sources left out to fit the model's context: {n}]"


@dataclass(frozen=True)
class Fitting:
    """The prompt trimmed to fit the role's room, then sent; if the provider still says it is
    too long, trimmed harder and sent once more (a second refusal is final)."""

    room: PromptRoom
    role: str
    label: str                                # "openai/gpt-5-mini"
    say: Callable[[str], None] | None = None  # the run's line about the harder trim

    def __call__(self, request: Request, send: Send) -> Completion:
        messages = request.messages
        fitted = fit_prompt(messages, self.room.limit())
        try:
            return send(replace(request, messages=fitted))
        except ContextTooLong as exc:
            limit = harder_limit(min(prompt_chars(fitted), self.room.limit()), str(exc))
            if isinstance(exc, RequestTooLarge) and exc.report is not None:
                limit = self.room.limit()  # the account's minute, now learned, sets it
            harder = self._trimmed(messages, limit, exc)
            if not isinstance(exc, RequestTooLarge):
                self.room.lower(limit)
            if self.say is not None:
                what = ("larger than the account allows in a minute" if
                        isinstance(exc, RequestTooLarge) else "too long")
                self.say(
                    f"{voice.model_words(self.role)}: the prompt was {what} for {self.label} ({exc}); "
                    f"sending it again with the sources trimmed to {limit} characters"
                )
            try:
                return send(replace(request, messages=harder))
            except ContextTooLong as again:
                raise ContextTooLong(
                    f"The prompt for {voice.model_words(self.role).lower()} is longer than {self.label} accepts, "
                    f"even with its sources trimmed to {limit} characters.",
                    provider=again.provider, status=again.status,
                ) from None

    def _trimmed(self, messages: Sequence[Message], limit: int,
                 exc: ContextTooLong) -> list[Message]:
        try:
            return fit_prompt(messages, limit)
        except ContextTooLong:
            raise ContextTooLong(
                f"The prompt for {voice.model_words(self.role).lower()} is longer than {self.label} accepts, "
                "and its sources cannot be trimmed further.",
                provider=exc.provider, status=exc.status,
            ) from None


class PromptRoom:
    """How long a prompt one role may send, in characters, as the run learns it: what the
    model's context takes (lowered for the rest of the run when the provider says a prompt was
    too long, or once a local server's window is known), and, under a tokens-a-minute limit,
    what one request may carry (a larger one would be refused however long it waited, so it
    is made smaller: fewer source characters)."""

    def __init__(self, max_chars: int, llm: object, pacer: Pacer | None,
                 expected_output: Callable[[], int]) -> None:
        self.max_chars = max_chars
        self._llm = llm  # the chat model, whose server may tell its window
        self._pacer = pacer
        self._expected_output = expected_output  # the answer's tokens, as the meter expects

    def limit(self) -> int:
        """The longest prompt to send now, in characters."""
        pacer = self._pacer
        most = pacer.max_request_tokens() if pacer is not None else None
        if pacer is None or most is None:
            return self.max_chars
        room = max(0, most - pacer.metered(0, self._expected_output()))
        room *= CHARS_PER_TOKEN
        return max(MIN_SOURCE_CHARS, min(self.max_chars, room))

    def tokens(self, messages: Sequence[Message]) -> int:
        """The prompt's tokens as estimated before it is sent (fitted to the room)."""
        return min(prompt_chars(messages), self.limit()) // CHARS_PER_TOKEN

    def learn_window(self) -> None:
        """A local server's window, once known, is the room for the rest of the run."""
        window = window_chars(self._llm)
        if window is not None and window < self.max_chars:
            self.max_chars = window

    def lower(self, chars: int) -> None:
        self.max_chars = min(self.max_chars, chars)


def window_chars(llm: object) -> int | None:
    """The prompt budget, in characters, that `llm`'s context window leaves once room is kept
    for the answer; None when the window is not known (cloud models: DEFAULT_MAX_INPUT_CHARS)."""
    find = getattr(llm, "context_window", None)
    window = find() if callable(find) else None
    if not isinstance(window, int) or window <= 0:
        return None
    answer = min(ANSWER_MAX_TOKENS, max(ANSWER_MIN_TOKENS, int(window * ANSWER_SHARE)),
                 window // 2)
    return max(MIN_SOURCE_CHARS * 4, int((window - answer) * WINDOW_CHARS_PER_TOKEN))


def prompt_chars(messages: Sequence[Message]) -> int:
    return sum(len(m.content) for m in messages)


def fit_prompt(messages: Sequence[Message], max_chars: int) -> list[Message]:
    """Trim the longest fetched sources until the prompt fits in `max_chars` characters.

    Only the bodies of `<untrusted_source>` blocks are cut (their ends, longest first, each
    keeping at least MIN_SOURCE_CHARS): instructions, the question and the block tags are
    never touched. When even that is not enough (a small local model's window), whole sources
    are left out, the last ones first, rather than fail the step. Returns the messages unchanged
    when they already fit; raises ContextTooLong when the prompt is too long without any source.
    """
    total = prompt_chars(messages)
    if total <= max_chars:
        return list(messages)
    bodies = [len(m.group("body")) for msg in messages for m in _BLOCK.finditer(msg.content)]
    excess = total - max_chars
    cap = _water_level(bodies, excess + len(TRIM_NOTE) * len(bodies))
    if cap is None:
        return _drop_sources(messages, max_chars, total)

    def trim(match: re.Match[str]) -> str:
        body = match.group("body")
        if len(body) <= cap:
            return match.group(0)
        return match.group(1) + body[:cap].rstrip() + TRIM_NOTE + match.group(4)

    return [replace(m, content=_BLOCK.sub(trim, m.content)) for m in messages]


def _drop_sources(messages: Sequence[Message], max_chars: int, total: int) -> list[Message]:
    """The prompt with its last sources left out (and the rest trimmed) until it fits."""
    blocks = [(i, m) for i, msg in enumerate(messages) for m in _BLOCK.finditer(msg.content)]
    for keep in range(len(blocks) - 1, -1, -1):
        dropped = blocks[keep:]
        gone = {(i, m.start()) for i, m in dropped}

        note = DROP_NOTE.format(n=len(dropped))
        last = max(i for i, _ in dropped)
        shorter = [replace(m, content=_without(m.content, i, gone)
                           + ("\n" + note if i == last else ""))
                   for i, m in enumerate(messages)]
        if prompt_chars(shorter) <= max_chars:
            return shorter
        kept = [len(m.group("body")) for msg in shorter for m in _BLOCK.finditer(msg.content)]
        excess = prompt_chars(shorter) - max_chars
        if _water_level(kept, excess + len(TRIM_NOTE) * len(kept)) is not None:
            return fit_prompt(shorter, max_chars)
    raise ContextTooLong(
        f"The prompt ({total} characters) is too long for the model even without its sources "
        f"(limit {max_chars})."
    )


def _without(text: str, index: int, gone: set[tuple[int, int]]) -> str:
    """Message `index`'s text without its source blocks that start where `gone` says."""
    return _BLOCK.sub(lambda m: "" if (index, m.start()) in gone else m.group(0), text)


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
    elif (counts := _GEMINI_COUNTS.search(message) or _ANTHROPIC_COUNTS.search(message)):
        used, allowed = int(counts.group(1)), int(counts.group(2))
    if counts and used > allowed > 0:
        ratio = min(0.9, 0.9 * allowed / used)
    return int(sent_chars * ratio)
