"""How much a model's answer may add: a size limit on any answer, a cap on every list.

Why: a model (or a page steering it) can answer with 100,000 findings or 20 MB of text; stored
whole, that is hundreds of thousands of rows and a database of tens of MB from one call. A
step asks for a known number of things, so each list is cut to that number plus a small
margin (the rest is dropped and counted in the log), and an answer far larger than any step
needs is refused, in words about the model's answer.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Mapping
from typing import Any, TypeVar

from pydantic import BaseModel

from research.core.errors import ProviderError
from research.llm.messages import extract_json

log = logging.getLogger(__name__)
M = TypeVar("M", bound=BaseModel)

MAX_ANSWER_CHARS = 2_000_000  # ~10x the longest report REPORT_MAX_WORDS allows
DEFAULT_LIST_CAP = 200        # for lists a step gives no count for; far above any step's need


def margin(asked: int) -> int:
    """What a list may hold when `asked` items were asked for: a model may give a few more."""
    return asked + max(2, asked // 5)


def check_answer_size(text: str, who: str) -> None:
    """Refuse an answer no step could have asked for, before it is parsed or stored."""
    if len(text) > MAX_ANSWER_CHARS:
        raise ProviderError(
            f"{who} returned an answer of {len(text) / 1_000_000:.1f} million characters, far "
            f"more than any step asks for (at most {MAX_ANSWER_CHARS // 1_000_000} million); "
            "the answer was not used."
        )


def cap_lists(value: Any, caps: Mapping[str, int], field: str = "") -> tuple[Any, int]:
    """`value` with every list cut to its cap (by field name, else DEFAULT_LIST_CAP), and
    how many items were dropped."""
    dropped = 0
    if isinstance(value, list):
        limit = margin(caps[field]) if field in caps else DEFAULT_LIST_CAP
        dropped += max(0, len(value) - limit)
        kept = []
        for item in value[:limit]:
            item, inner = cap_lists(item, caps, field)
            dropped += inner
            kept.append(item)
        return kept, dropped
    if isinstance(value, dict):
        out = {}
        for key, item in value.items():
            out[key], inner = cap_lists(item, caps, str(key))
            dropped += inner
        return out, dropped
    return value, 0


def without_nulls(value: Any) -> Any:
    """`value` with every null member of an object left out (a field with a default then
    takes it; a required one is still missing). Nulls inside lists stay."""
    if isinstance(value, dict):
        return {key: without_nulls(item) for key, item in value.items() if item is not None}
    if isinstance(value, list):
        return [without_nulls(item) for item in value]
    return value


def validate_capped(model: type[M], text: str, caps: Mapping[str, int], who: str) -> M:
    """Parse a structured answer, cap its lists, then validate it against `model`.

    Shapes real models return for a valid answer are read as meant: a fence inside a fence,
    raw control characters (a line break) inside a string, a null where a field has a default
    (as if left out), and the object wrapped in a one-item list. Numbers as strings and extra
    keys pydantic reads itself. Anything else stays a ValueError or ValidationError."""
    check_answer_size(text, who)
    payload = extract_json(text)
    for _ in range(3):  # ```json inside ```json
        if not payload.startswith("```"):
            break
        payload = extract_json(payload)
    if not payload:
        raise ValueError("the answer was empty")
    value = json.loads(payload, strict=False)
    if isinstance(value, list) and len(value) == 1 and isinstance(value[0], dict):
        value = value[0]
    capped, dropped = cap_lists(without_nulls(value), caps)
    if dropped:
        log.warning("%s: %d list items beyond what the step asked for were dropped (%s).",
                    who, dropped, model.__name__)
    return model.model_validate(capped)
