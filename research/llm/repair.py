"""A structured answer: asked for as JSON matching a pydantic model, validated, repaired once.

The answer is read as real models write it and its lists are cut to what the step asked for
(research.llm.answer_limits.validate_capped). An answer that still does not match is shown to
the model once, with what is wrong and the schema; a second mismatch is a SchemaError.
"""

from __future__ import annotations

import functools
import json
from collections.abc import Mapping
from dataclasses import replace
from typing import TypeVar

from pydantic import BaseModel, ValidationError

from research.core.errors import SchemaError
from research.llm.answer_limits import validate_capped
from research.llm.messages import JsonSchema, Message, Request, Send

M = TypeVar("M", bound=BaseModel)

REPAIR_ECHO_CHARS = 4000  # of the unusable answer, shown back to the model


def structured_request(model: type[BaseModel], request: Request) -> Request:
    """`request` asking for an answer that matches `model`'s JSON Schema."""
    return replace(request, schema=schema_of(model), schema_name=model.__name__)


def answer_as(model: type[M], request: Request, send: Send, caps: Mapping[str, int],
              who: str) -> M:
    """The answer to `request` (see `structured_request`) as a `model`; one repair, then
    SchemaError. `caps` gives, by field name, how many items the step asked for in a list."""
    completion = send(request)
    try:
        return validate_capped(model, completion.text, caps, who)
    except (ValidationError, ValueError) as first_error:
        problem = short_error(first_error)
    repair = [
        *request.messages,
        Message("assistant", completion.text[:REPAIR_ECHO_CHARS]),
        Message(
            "user",
            "Your previous answer could not be used: "
            f"{problem}. Reply again with only a JSON object that matches this schema, "
            f"no prose and no code fences:\n{json.dumps(request.schema)}",
        ),
    ]
    completion = send(replace(request, messages=repair))
    try:
        return validate_capped(model, completion.text, caps, who)
    except (ValidationError, ValueError) as second_error:
        raise SchemaError(
            f"{who} did not return a valid {model.__name__} after one repair attempt: "
            f"{short_error(second_error)}."
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


def short_error(exc: Exception) -> str:
    """What was wrong with an answer, in one short line for the model."""
    if isinstance(exc, ValidationError):
        err = exc.errors()[0]
        where = ".".join(str(p) for p in err.get("loc", ())) or "answer"
        return f"{where}: {err.get('msg', 'invalid')}"
    return str(exc)[:200] or exc.__class__.__name__
