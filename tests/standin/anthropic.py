"""The stand-in's Anthropic Messages API (`POST /v1/messages`), as Anthropic documents it.

Contract (https://platform.claude.com/docs/en/api/messages): the key (in `x-api-key`, or
`Authorization: Bearer` as the SDK sends it) and an `anthropic-version` header; `model`, `max_tokens` (an integer of at least 1) and `messages`
are required; a message's role is "user", "assistant" or "system" (the SDK's MessageParam;
the documented place of the system prompt is the top-level `system`, which is what
tests/test_anthropic_llm.py checks we use); a key the API does not know is refused. A structured answer is
asked for with `output_config.format` `{"type": "json_schema", "schema": ...}`, whose every
object must say `additionalProperties: false`
(https://platform.claude.com/docs/en/build-with-claude/structured-outputs). A request that
breaks any of these gets the API's own 400 `invalid_request_error`.

Answers: `{"id": "msg_...", "type": "message", "role": "assistant", "content": [{"type":
"text", "text": ...}], "stop_reason": ..., "usage": {...}}` with a `request-id` header. The
text is the stand-in brain's (answers.llm_answer), so every fault of the LLM apis applies:
`refusal` answers stop_reason "refusal" (with `stop_details`), `finish` reason="max_tokens"
the first half with stop_reason "max_tokens", `context_limit` the 400 "prompt is too long:
N tokens > M maximum", `status` any error with Anthropic's body (`error_body`): 529 is
`overloaded_error`.

Errors (https://platform.claude.com/docs/en/api/errors): `{"type": "error", "error": {"type",
"message"}, "request_id"}`.

Limits (https://platform.claude.com/docs/en/api/rate-limits): requests, input tokens and
output tokens a minute per organization and model, each a bucket refilled continuously (the
token bucket algorithm the page describes). Every answer carries the
`anthropic-ratelimit-{requests,input-tokens,output-tokens,tokens}-{limit,remaining,reset}`
headers (reset: an RFC 3339 time); a 429 `rate_limit_error` carries `retry-after` in seconds
and says which limit was met. The input tokens are the prompt's (characters / 4), counted
when admitted; the output tokens are counted as `max_tokens` when admitted ("OTPM rate limits
are estimated based on max_tokens at the beginning of each request") and as the answer's own
when answered, so a request whose max_tokens is over the whole minute's is always refused. `spend_limit=N` answers the N+1st request
with the 429 of a usage tier's monthly spend limit, which has no retry-after.
"""

from __future__ import annotations

import math
import threading
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import TYPE_CHECKING, Any

from tests.standin.limits import Bucket

if TYPE_CHECKING:
    from tests.standin.limits import Limits

ANTHROPIC_KEY = "sk-ant-api03-test-0123456789abcdef"
PATH = "/v1/messages"
# The top-level fields of MessageCreateParams in the SDK's published types
# (anthropic/types/message_create_params.py).
KNOWN_FIELDS = frozenset({
    "model", "max_tokens", "messages", "system", "metadata", "stop_sequences", "stream",
    "temperature", "top_p", "top_k", "tools", "tool_choice", "thinking", "output_config",
    "service_tier", "container", "inference_geo", "cache_control", "speed", "diagnostics",
})
ERROR_TYPES = {400: "invalid_request_error", 401: "authentication_error", 402: "billing_error",
               403: "permission_error", 404: "not_found_error", 409: "conflict_error",
               413: "request_too_large", 429: "rate_limit_error", 500: "api_error",
               504: "timeout_error", 529: "overloaded_error"}
_MESSAGES = {401: "invalid x-api-key", 403: "Your API key does not have permission to use the "
             "specified resource.", 429: "Number of request tokens has exceeded your per-minute "
             "rate limit", 500: "Internal server error", 529: "Overloaded"}


# Models that think before answering unless told not to (Claude Sonnet 5 and later, Opus 5 and
# later, Fable: "adaptive thinking is on by default"); their answers start with a thinking block.
THINKING_MODELS = ("claude-sonnet-5", "claude-opus-5", "claude-fable")
THINKING_TEXT = "Let me think about which subtopics matter here."


def request_id(n: int) -> dict[str, str]:
    return {"request-id": f"req_standin{n:06d}"}


def anthropic_error(kind: str, message: str, request_id: str = "req_standin") -> dict[str, Any]:
    return {"type": "error", "error": {"type": kind, "message": message},
            "request_id": request_id}


def error_body(status: int) -> dict[str, Any]:
    """The API's body for an error of this status (its documented error type)."""
    kind = ERROR_TYPES.get(status, "api_error")
    return anthropic_error(kind, _MESSAGES.get(status, kind.replace("_", " ")))


def prompt_too_long(chars: int, max_chars: int) -> dict[str, Any]:
    return anthropic_error("invalid_request_error",
                           f"prompt is too long: {chars // 4} tokens > {max_chars // 4} maximum")


def schema_of(body: Any) -> dict | None:
    """The JSON Schema a request asks its answer to match, or None for text."""
    if not isinstance(body, dict):
        return None
    fmt = (body.get("output_config") or {}).get("format") or {}
    schema = fmt.get("schema") if isinstance(fmt, dict) else None
    return dict(schema) if isinstance(schema, dict) else None


def text_of(content: Any) -> str:
    """A message's or the system prompt's text: a string, or a list of text blocks."""
    if isinstance(content, list):
        return "".join(str(b.get("text", "")) for b in content if isinstance(b, dict))
    return str(content or "")


def prompt_chars(body: Any) -> int:
    if not isinstance(body, dict):
        return 0
    return len(text_of(body.get("system"))) + sum(
        len(text_of(m.get("content"))) for m in body.get("messages") or [] if isinstance(m, dict))


def api_key(headers: Any) -> str:
    """The key a request carries: `x-api-key`, or `Authorization: Bearer` as the SDK (2.x)
    sends it."""
    bearer = str(headers.get("Authorization") or "")
    return str(headers.get("x-api-key") or "") or bearer.removeprefix("Bearer ").strip()


def contract_problem(headers: Any, body: Any) -> tuple[int, dict[str, Any]] | None:
    """What the API refuses in this request, as it answers it; None when it is well formed."""
    if not api_key(headers):
        return 401, error_body(401)
    if not headers.get("anthropic-version"):
        return 400, anthropic_error("invalid_request_error",
                                    "anthropic-version: header is required")
    if not isinstance(body, dict):
        return 400, anthropic_error("invalid_request_error", "The request body is not valid JSON.")
    extra = sorted(set(body) - KNOWN_FIELDS)
    if extra:
        return 400, _invalid(f"{extra[0]}: Extra inputs are not permitted")
    for name in ("model", "max_tokens", "messages"):
        if name not in body:
            return 400, _invalid(f"{name}: Field required")
    max_tokens = body["max_tokens"]
    if not isinstance(max_tokens, int) or isinstance(max_tokens, bool) or max_tokens < 1:
        return 400, _invalid("max_tokens: Input should be a valid integer greater than 0")
    messages = body["messages"]
    if not isinstance(messages, list) or not messages:
        return 400, _invalid("messages: at least one message is required")
    for i, message in enumerate(messages):
        role = message.get("role") if isinstance(message, dict) else None
        if role not in ("user", "assistant", "system"):  # SystemMessageParam, in the types
            return 400, _invalid(f'messages.{i}.role: Input should be "user", "assistant" or '
                                 '"system"')
    fmt = (body.get("output_config") or {}).get("format")
    if fmt is not None:
        if not isinstance(fmt, dict) or fmt.get("type") != "json_schema" or not isinstance(
                fmt.get("schema"), dict):
            return 400, _invalid("output_config.format: expected a json_schema format with a schema")
        where = _open_object(fmt["schema"], "output_config.format.schema")
        if where:
            return 400, _invalid(f"{where}: For 'object' type, 'additionalProperties' must be "
                                 "explicitly set to false")
    return None


def _invalid(message: str) -> dict[str, Any]:
    return anthropic_error("invalid_request_error", message)


def _open_object(schema: Any, where: str) -> str | None:
    """Where in `schema` an object does not close itself (additionalProperties: false)."""
    if isinstance(schema, list):
        for i, item in enumerate(schema):
            found = _open_object(item, f"{where}.{i}")
            if found:
                return found
        return None
    if not isinstance(schema, dict):
        return None
    if schema.get("type") == "object" and schema.get("additionalProperties") is not False:
        return where
    for key, value in schema.items():
        if key in ("properties", "$defs"):
            for name, sub in (value or {}).items():
                found = _open_object(sub, f"{where}.{key}.{name}")
                if found:
                    return found
        elif key in ("items", "anyOf", "allOf", "oneOf"):
            found = _open_object(value, f"{where}.{key}")
            if found:
                return found
    return None


def message(model: str, text: str, stop_reason: str, input_tokens: int, output_tokens: int,
            n: int, refusal: bool = False) -> dict[str, Any]:
    """A Message object as the API returns it."""
    body: dict[str, Any] = {
        "id": f"msg_standin{n:06d}", "type": "message", "role": "assistant", "model": model,
        "content": [{"type": "text", "text": text, "citations": None}] if text else [],
        "stop_reason": stop_reason, "stop_sequence": None,
        "usage": {"input_tokens": input_tokens, "output_tokens": output_tokens,
                  "cache_creation_input_tokens": 0, "cache_read_input_tokens": 0,
                  "service_tier": "standard"},
    }
    if model.startswith(THINKING_MODELS):  # adaptive thinking on by default: its block first
        body["content"].insert(0, {"type": "thinking", "thinking": THINKING_TEXT,
                                   "signature": "c3RhbmRpbg=="})
    if refusal:
        body["stop_details"] = {"type": "refusal", "category": None,
                                "explanation": "This request was declined by the model."}
    return body


# --- limits ----------------------------------------------------------------------------------

@dataclass(frozen=True)
class Rule:
    requests_per_minute: int | None = None
    input_tokens_per_minute: int | None = None
    output_tokens_per_minute: int | None = None
    spend_limit: int | None = None       # requests let through before the monthly spend limit
    model: str | None = None


@dataclass
class _Books:
    rule: Rule
    buckets: dict[str, Bucket] = field(default_factory=dict)
    admitted: int = 0


@dataclass
class Ticket:
    """One admitted request: the headers its answer carries, and its books to settle."""
    headers: dict[str, str]
    books: _Books | None = None
    reserved: int = 0                    # output tokens counted when it started (max_tokens)


class Accounts:
    """The Anthropic accounts' books (per key and model), on the stand-in's limits clock."""

    def __init__(self, limits: Limits) -> None:
        self._clock = limits
        self._lock = threading.Lock()
        self._rules: dict[str | None, Rule] = {}
        self._books: dict[tuple[str, str], _Books] = {}

    def reset(self) -> None:
        with self._lock:
            self._rules.clear()
            self._books.clear()

    def set_account(self, rule: Rule) -> None:
        with self._lock:
            self._rules[rule.model] = rule
            self._books = {k: b for k, b in self._books.items()
                           if rule.model not in (None, k[1])}

    def admit(self, key: str, model: str, input_tokens: int, max_tokens: int = 1
              ) -> Ticket | tuple[int, dict[str, Any], dict[str, str]]:
        """A ticket, or the refusal (status, body, headers) the API answers."""
        with self._lock:
            rule = self._rules.get(model) or self._rules.get(None)
            if rule is None:
                return Ticket({})
            books = self._books.get((key, model))
            if books is None:
                books = self._books[(key, model)] = _Books(rule, {
                    name: Bucket(limit, 60.0) for name, limit in (
                        ("requests", rule.requests_per_minute),
                        ("input-tokens", rule.input_tokens_per_minute),
                        ("output-tokens", rule.output_tokens_per_minute)) if limit})
            now = self._clock.now()
            for bucket in books.buckets.values():
                bucket.fill(now)
            if rule.spend_limit is not None and books.admitted >= rule.spend_limit:
                return 429, anthropic_error(
                    "rate_limit_error", "You have reached your usage tier's monthly spend "
                    "limit. Your limit resets at the start of next month."), _headers(books)
            needs = {"requests": 1, "input-tokens": input_tokens, "output-tokens": max_tokens}
            for name, bucket in books.buckets.items():
                need = needs[name]
                if bucket.level >= need:
                    continue
                wait = bucket.wait(need) if need <= bucket.limit else 60.0
                words = name.replace("-", " ")
                body = anthropic_error(
                    "rate_limit_error",
                    f"This request would exceed the rate limit for your organization "
                    f"(org-standin) of {bucket.limit:,} {words} per minute. For details, refer "
                    "to: https://docs.claude.com/en/api/rate-limits. You can see the response "
                    "headers for current usage. Please reduce the prompt length or the maximum "
                    "tokens requested, or try again later.")
                headers = _headers(books)
                headers["retry-after"] = str(max(1, math.ceil(wait)))
                return 429, body, headers
            for name, need in needs.items():
                if name in books.buckets:
                    books.buckets[name].level -= need
            books.admitted += 1
            return Ticket(_headers(books), books, max_tokens)

    def settle(self, ticket: Ticket, output_tokens: int) -> None:
        """The answer's output tokens replace its max_tokens in the minute's output budget."""
        if ticket.books is None:
            return
        with self._lock:
            bucket = ticket.books.buckets.get("output-tokens")
            if bucket is not None:
                bucket.fill(self._clock.now())
                bucket.level -= output_tokens - ticket.reserved


def _headers(books: _Books) -> dict[str, str]:
    """The anthropic-ratelimit-* headers as after this request; `tokens-*` is the most
    restrictive of the token limits."""
    now = datetime.now(UTC)
    headers: dict[str, str] = {}
    for name, bucket in books.buckets.items():
        headers[f"anthropic-ratelimit-{name}-limit"] = str(bucket.limit)
        headers[f"anthropic-ratelimit-{name}-remaining"] = str(bucket.remaining)
        headers[f"anthropic-ratelimit-{name}-reset"] = _stamp(now, bucket.reset_in())
    tokens = [b for n, b in books.buckets.items() if n.endswith("tokens")]
    if tokens:
        tight = min(tokens, key=lambda b: b.remaining)
        headers["anthropic-ratelimit-tokens-limit"] = str(tight.limit)
        headers["anthropic-ratelimit-tokens-remaining"] = str(tight.remaining)
        headers["anthropic-ratelimit-tokens-reset"] = _stamp(now, tight.reset_in())
    return headers


def _stamp(now: datetime, seconds: float) -> str:
    return (now + timedelta(seconds=max(0.0, seconds))).strftime("%Y-%m-%dT%H:%M:%SZ")


# --- the route -------------------------------------------------------------------------------

def handle(handler: Any, path: str, body: Any) -> None:
    """Answer `POST /v1/messages` on the stand-in's request `handler` (server.py's)."""
    standin = handler.standin
    n = len(standin.requests)
    if path != PATH:
        handler._send_json(404, anthropic_error("not_found_error", f"Not found: {path}"))
        return
    problem = contract_problem(handler.headers, body)
    if problem is not None:
        handler._entry["contract_error"] = problem[1]["error"]["message"]
        handler._send_json(*problem)
        return
    model = str(body["model"])
    system = text_of(body.get("system"))
    user = "\n\n".join(text_of(m.get("content")) for m in body["messages"]
                       if m.get("role") == "user")
    input_tokens = max(1, (len(system) + len(user)) // 4)
    admitted = standin.anthropic.admit(api_key(handler.headers), model, input_tokens,
                                       int(body["max_tokens"]))
    if not isinstance(admitted, Ticket):
        status, payload, headers = admitted
        handler._entry["rate_limited"] = True
        handler._send_json(status, payload, headers)
        return
    text, special = handler._llm_answer(system, user, schema_of(body))
    stop = "max_tokens" if getattr(handler, "_finish", "stop") == "length" else "end_turn"
    refusal = special is not None and special.kind == "refusal"
    if refusal:
        text, stop = "", "refusal"
    elif special is not None and special.kind == "finish":
        stop = str(special.params.get("reason", "max_tokens"))
        text = text[: len(text) // 2] if stop == "max_tokens" else ""
    output_tokens = max(1, len(text) // 4)
    if not handler._generate(output_tokens):
        return
    standin.anthropic.settle(admitted, output_tokens)
    handler._send_json(200, message(model, text, stop, input_tokens, output_tokens, n, refusal),
                       admitted.headers)
