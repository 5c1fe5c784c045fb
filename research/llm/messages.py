"""What a model is sent and what it answers: the words every layer of the model seam shares.

A `Request` is one call's messages, the JSON Schema its answer must match (if any) and the
step's deadline; a layer of the seam (research.llm.base) takes one and hands it, maybe changed,
to the next layer with `send`. A `Completion` is the provider's answer. `strip_think` and
`extract_json` read an answer's text: a reasoning model's scratchpad dropped, a JSON object
found inside fences or prose.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from research.llm.limits import RateReport


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


@dataclass(frozen=True)
class Completion:
    text: str
    usage: Usage
    provider: str
    model: str
    rate: RateReport | None = None  # what the answer said about the account's limits


@dataclass(frozen=True)
class Request:
    """One model call as it passes through the seam's layers."""

    messages: Sequence[Message]
    schema: JsonSchema | None = None    # the answer's JSON Schema, for a structured answer
    schema_name: str | None = None
    deadline: float | None = None       # the step's, as time.monotonic(); None: no step limit


# The rest of the seam below a layer: it sends the request on and returns the answer.
Send = Callable[[Request], Completion]


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
