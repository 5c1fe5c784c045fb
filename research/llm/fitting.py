"""Fitting a prompt into the model's context window: only fetched sources are trimmed.

Kept apart from `research.llm.base` (which re-exports these names) because it is one job:
character budgets, the water-level trim, and the harder trim after a context-length error.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import replace
from typing import TYPE_CHECKING

from research.errors import ContextTooLong

if TYPE_CHECKING:
    from research.llm.base import Message

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

    return [replace(m, content=_BLOCK.sub(trim, m.content)) for m in messages]


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
