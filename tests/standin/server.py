"""A local, deterministic stand-in for every external service the engine talks to.

One `ThreadingHTTPServer` on 127.0.0.1 (free port) answers like OpenAI Chat Completions,
Gemini generateContent, Anthropic's Messages API (anthropic.py), Tavily search, arXiv, Semantic Scholar and the web pages their
results link to (what it answers, apart from HTTP, is in answers.py, shared with the in-process
fakes of tests/fakes.py), plus the hosted deep-research APIs (OpenAI Responses, Gemini Interactions:
see hosted.py; their faults take `task="create" | "retrieve" | "cancel"`). SearXNG, Brave
Search, Exa and Serper answer under /searxng/, /brave/, /exa/ and /serper/ (search_services.py;
`search_services.env(base)` points the app at them, `services` holds their settings). Tests point the
app at it with `server.env()` and inject failures with `add_fault(api, kind, times=1, **params)`:

  status        status=429/500/..., headers={...}, body=<json or str>   (any api)
  hang          seconds=30: wait before answering (the client should time out)
  trickle       interval=0.5: send the body one byte at a time (headers=True: the status
                line and headers too); a client that hangs up meanwhile ends it (its
                request's entry gets `client_gone`)
  invalid_json  mode="text" | "truncated": a structured LLM answer that is not valid JSON
  fenced_json   wrap a structured LLM answer in ```json fences
  think         prefix the LLM answer with "<think>secret reasoning</think>"
  cite_invented the writer also cites [99] and https://invented.example/fake-study
  refusal       (openai) message.refusal set, no content; (anthropic) stop_reason "refusal"
  blocked       (gemini) promptFeedback.blockReason = SAFETY, no candidates
  finish        reason=...: the answer stops for that reason. openai: "length" (the first half
                of the answer) or "content_filter" (empty); gemini: "MAX_TOKENS" (first half),
                "SAFETY" or "RECITATION" (no text); anthropic: "max_tokens" (first half)
  context_limit (openai, gemini, anthropic) max_chars=N: a request whose prompt text is longer than N
                characters gets the provider's context-length error (400); shorter requests
                pass and do not use up the fault
  tracking      the writer "obeys" a page: its report adds a tracking image, raw <img>, and
                links to a page that was never gathered
  hidden        every answer carries invisible controls (zero-width, bidi, tag characters);
                structured answers as JSON escapes (see hidden.py)

Faults are queued: each request takes at most one, the first pending one (in the order
added) that fits it, and `times` is how many requests it hits. Any fault accepts
`task="ResearchPlan"` (a schema title, or "writer") to hit only that kind of LLM call; a
fault waits for a call it can affect (JSON faults for structured calls, `cite_invented`
for the writer).

Model behaviours: `set_behaviour(name)` makes every LLM answer behave like a common real
model (citation styles, <think> blocks, fences, extra keys, fewer or more items, a truncated or
refused report, loosely quoted verdicts): see brain_behaviours.py for the list.

Other controls: `set_delay(seconds)`, `set_latency(model=, search=, page=, tokens_per_second=)`,
`set_answer_words(n)`, `set_off_topic(n)`, `set_extra_results(paths)`, `reset()`. `requests`
logs every request as {api, method, path, query, headers (names in lower case), json, time};
an answer sent gives its entry `status`, and `ended` (epoch seconds) is when the stand-in was
done with it; an LLM request's entry gains `completion_tokens` and `answered` once answered.

Limits, as the providers document them (limits.py, local.py; `reset()` clears them all):

  set_account(provider, requests_per_minute=, tokens_per_minute=, requests_per_day=,
              retry_after="none"|"seconds"|"ms", quota_requests=, free_tier=, model=)
                provider "openai": RPM/TPM/RPD per key and model, `x-ratelimit-*` headers on
                every answer, 429 with OpenAI's body ("... Please try again in 1.9s") and no
                Retry-After unless `retry_after` (Azure's `retry-after` / `retry-after-ms`);
                a request over the whole TPM gets "Request too large"; after `quota_requests`
                requests, `insufficient_quota`. A request costs its prompt (characters / 4) plus
                max_tokens, settled to prompt + completion once answered.
                provider "gemini": RPM, input TPM, RPD; 429 RESOURCE_EXHAUSTED with QuotaFailure
                (quotaId ...PerMinute... or ...PerDay..., "-FreeTier" with free_tier=True) and
                RetryInfo.retryDelay; no headers. With model=, the limits of that model only
                (a call later without it sets every other model's).
                provider "anthropic": RPM and input tokens a minute (tokens_per_minute), with
                `anthropic-ratelimit-*` headers and a 429 with retry-after (anthropic.py: also
                output tokens a minute and a monthly spend limit, via `standin.anthropic`).
                e.g. OpenAI tier 1, gpt-4.1: set_account("openai", requests_per_minute=500,
                tokens_per_minute=30_000); a free tier: requests_per_minute=10.
  set_search_limit(api, min_interval=, requests_per_minute=, connections=, status=429)
                tavily | arxiv | semanticscholar: a request sooner than `min_interval` s after
                the last one let through, or over the RPM, or while `connections` are under way,
                gets the API's own refusal (arXiv: status=503 "Rate exceeded." as it answers).
                e.g. set_search_limit("arxiv", min_interval=3.0, connections=1, status=503).
  set_local_server(kind="ollama"|"llamacpp"|"vllm", parallel=1, tokens_per_second=30,
                   context_tokens=8192, model="llama3.1:8b", max_queue=None)
                /v1/chat/completions answers `parallel` requests at a time, the rest wait on
                their open connection in arrival order (the entry's `started` says when its
                turn came; past `max_queue` waiting, 503 "server busy" as Ollama answers),
                writing at tokens_per_second; needs no key. Ollama cuts a longer
                prompt silently (usage.prompt_tokens is the cut count) and serves /api/version,
                /api/show (num_ctx), /api/ps; llama.cpp refuses it (400
                exceed_context_size_error) and serves /props (n_ctx, total_slots), /health;
                vLLM refuses prompt + max_tokens over max_model_len (400 "maximum context
                length") and serves /v1/models with max_model_len, /version.
  advance_limits(seconds)   move the limits' clock on (a minute's budget refills at once)
  rate_limited(api=None)    how many answers were rate-limit refusals (429, or a search API's
                            pacing refusal); such entries carry `rate_limited: True`
  gaps(api), most_at_once(api, start="time", end="ended")
                            seconds between successive requests; the most under way at once
"""

from __future__ import annotations

import json
import logging
import re
import sys
import threading
import time
from collections.abc import Callable, Mapping
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any
from urllib.parse import parse_qs, urlsplit
from xml.sax.saxutils import escape

from tests.standin import anthropic as claude_api
from tests.standin import brain, brain_behaviours, hosted, local, pages, protos, search_services
from tests.standin.answers import (  # noqa: F401 - re-exported: tests import them from here
    _CONTENT_FAULTS,
    TRACKING_TEXT,
    TRACKING_URL,
    Fault,
    article_meta,
    arxiv_terms,
    llm_answer,
    paper_meta,
    papers,
    s2_since,
    slug_for,
    tavily_results,
)
from tests.standin.gates import LimitGates
from tests.standin.limits import AccountRule, Admission, Limits, RetryAfter, SearchRule

log = logging.getLogger("standin.server")

APIS = ("openai", "gemini", "anthropic", "tavily", "arxiv", "semanticscholar", "pages", "local",
        *hosted.APIS, *search_services.APIS)
FAULT_KINDS = ("status", "hang", "trickle", "invalid_json", "fenced_json", "think",
               "cite_invented", "refusal", "blocked", "context_limit", "tracking",
               "hidden", "finish")
LATENCY_KINDS = {"openai": "model", "gemini": "model", "anthropic": "model", "tavily": "search",
                 "arxiv": "search", "semanticscholar": "search", "pages": "page",
                 **dict.fromkeys(search_services.APIS, "search")}
OPENAI_KEY = "sk-test-openai-0123456789abcdef"
GEMINI_KEY = "AIzaTestGemini0123456789abcdefghij"
TAVILY_KEY = "tvly-test-0123456789abcdef"

_GEMINI_PATH = re.compile(r"^/v1(?:beta|alpha)?/models/([^/:]+):generateContent$")


# --- canonical error bodies, for tests -------------------------------------------

def openai_error(message: str, *, type: str, code: str | None = None) -> dict[str, Any]:
    return {"error": {"message": message, "type": type, "param": None, "code": code}}


OPENAI_INSUFFICIENT_QUOTA = openai_error(
    "You exceeded your current quota, please check your plan and billing details. For more "
    "information on this error, read the docs: "
    "https://platform.openai.com/docs/guides/error-codes/api-errors.",
    type="insufficient_quota", code="insufficient_quota",
)
OPENAI_RATE_LIMIT = openai_error(
    "Rate limit reached for gpt-5-mini in organization org-standin on requests per min "
    "(RPM): Limit 3, Used 3, Requested 1. Please try again in 1s.",
    type="requests", code="rate_limit_exceeded",
)


def gemini_error(code: int, message: str, status: str,
                 details: list[dict[str, Any]] | None = None) -> dict[str, Any]:
    return {"error": {"code": code, "message": message, "status": status,
                      "details": details or []}}


def gemini_quota_error(*, per_day: bool, retry_delay: str = "7s") -> dict[str, Any]:
    """Google's RESOURCE_EXHAUSTED body: per-minute (rate limit) or per-day (quota)."""
    window = "PerDay" if per_day else "PerMinute"
    return gemini_error(
        429,
        "You exceeded your current quota, please check your plan and billing details. For "
        "more information on this error, head to: https://ai.google.dev/gemini-api/docs/"
        f"rate-limits. Please retry in {retry_delay}.",
        "RESOURCE_EXHAUSTED",
        [
            {"@type": "type.googleapis.com/google.rpc.QuotaFailure", "violations": [{
                "quotaMetric": "generativelanguage.googleapis.com/"
                               "generate_content_free_tier_requests",
                "quotaId": f"GenerateRequests{window}PerProjectPerModel-FreeTier",
                "quotaDimensions": {"location": "global", "model": "gemini-2.5-flash"},
                "quotaValue": "250" if per_day else "10",
            }]},
            {"@type": "type.googleapis.com/google.rpc.Help", "links": [{
                "description": "Learn more about Gemini API quotas",
                "url": "https://ai.google.dev/gemini-api/docs/rate-limits"}]},
            {"@type": "type.googleapis.com/google.rpc.RetryInfo", "retryDelay": retry_delay},
        ],
    )


def _default_error_body(api: str, status: int) -> Any:
    api = {"openai_responses": "openai", "gemini_interactions": "gemini"}.get(api, api)
    if api == "anthropic":
        return claude_api.error_body(status)
    if api == "openai":
        if status == 429:
            return OPENAI_RATE_LIMIT
        if status == 401:
            return openai_error("Incorrect API key provided.", type="invalid_request_error",
                                code="invalid_api_key")
        return openai_error("The server had an error while processing your request.",
                            type="server_error")
    if api == "gemini":
        names = {400: "INVALID_ARGUMENT", 401: "UNAUTHENTICATED", 403: "PERMISSION_DENIED",
                 429: "RESOURCE_EXHAUSTED", 500: "INTERNAL", 503: "UNAVAILABLE"}
        if status == 429:
            return gemini_quota_error(per_day=False, retry_delay="1s")
        return gemini_error(status, "An internal error has occurred.", names.get(status, "UNKNOWN"))
    if api == "tavily":
        messages = {429: "Your request has been blocked due to excessive requests. Please "
                         "reduce the rate of requests.",
                    401: "Unauthorized: missing or invalid API key.",
                    432: "This request exceeds your plan's set usage limit. Please upgrade "
                         "your plan or contact support@tavily.com"}
        return {"detail": {"error": messages.get(status, "Internal server error")}}
    if api in search_services.APIS:
        return search_services.error_body(api, status)
    if api == "semanticscholar":
        return {"message": "Too Many Requests" if status == 429 else "Internal Server Error"}
    return f"Error {status}"


# --- the server ----------------------------------------------------------------------

class StandinServer:
    """Start with `start()` (or as a context manager); `env()` points the app at it."""

    def __init__(self, host: str = "127.0.0.1", port: int = 0) -> None:
        self._host = host
        self._port = port
        self._lock = threading.Lock()
        self._faults: list[Fault] = []
        self._delay = 0.0
        self._latency: dict[str, float] = {}  # kind (see LATENCY_KINDS) -> seconds
        self._tokens_per_second = 0.0  # model generation rate; 0 = answers take no extra time
        self.answer_words = 0  # the writer's length for a whole report; 0 = its own short one
        self.off_topic_results = 0
        self._extra_results: list[str] = []
        self.behaviour = "house"  # see set_behaviour
        # A test's own answers: script(system, user, schema) -> text, or None for the brain's.
        self.script: Callable[[str, str, dict | None], str | None] | None = None
        self._stopping = threading.Event()
        self._generation = 0  # bumped by reset(): requests from before it are abandoned
        self._httpd: ThreadingHTTPServer | None = None
        self._thread: threading.Thread | None = None
        self.requests: list[dict[str, Any]] = []
        self.hosted = hosted.HostedState()  # deep-research jobs: see hosted.py
        self.limits = Limits()  # accounts' and search APIs' limits: see limits.py
        self.anthropic = claude_api.Accounts(self.limits)  # Claude's accounts: anthropic.py
        self.local_server: local.LocalServer | None = None  # see set_local_server
        self.slots = local.Slots()
        self.services = search_services.ServiceState()  # SearXNG, Brave, Exa, Serper

    # lifecycle
    def start(self) -> StandinServer:
        handler = _make_handler(self)
        self._httpd = _Server((self._host, self._port), handler)
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        self._thread = threading.Thread(target=self._httpd.serve_forever, name="standin",
                                        kwargs={"poll_interval": 0.1}, daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stopping.set()
        if self._httpd is not None:
            self._httpd.shutdown()
            self._httpd.server_close()
            self._httpd = None

    def __enter__(self) -> StandinServer:
        return self.start()

    def __exit__(self, *exc: object) -> None:
        self.stop()

    @property
    def port(self) -> int:
        """The random port the stand-in listens on (tests allow it for the fetcher)."""
        return int(self.base_url.rsplit(":", 1)[1])

    @property
    def base_url(self) -> str:
        if self._httpd is None:
            raise RuntimeError("The stand-in server is not running; call start().")
        host, port = self._httpd.server_address[:2]
        return f"http://{host!s}:{port}"

    def env(self) -> dict[str, str]:
        base = self.base_url
        return {
            "OPENAI_BASE_URL": f"{base}/v1",
            "GEMINI_BASE_URL": base,
            "TAVILY_BASE_URL": base,
            "ARXIV_BASE_URL": f"{base}/arxiv",
            "SEMANTIC_SCHOLAR_BASE_URL": f"{base}/s2",
            "DEEP_RESEARCH_ALLOW_PRIVATE_HOSTS": "1",
            "DEEP_RESEARCH_ALLOWED_PORTS": str(self.port),
            "OPENAI_API_KEY": OPENAI_KEY,
            "GEMINI_API_KEY": GEMINI_KEY,
            "ANTHROPIC_BASE_URL": base,
            "ANTHROPIC_API_KEY": claude_api.ANTHROPIC_KEY,
            "TAVILY_API_KEY": TAVILY_KEY,
            "DEEP_RESEARCH_SEARCH": "tavily,arxiv,semanticscholar",
        }

    # test controls
    def reset(self) -> None:
        """Forget faults, the delay, the latencies and the request log."""
        with self._lock:
            self._faults.clear()
            self._delay = 0.0
            self._latency.clear()
            self._tokens_per_second = 0.0
            self.answer_words = 0
            self.off_topic_results = 0
            self._extra_results.clear()
            pages.WORLD.reset()
            self.behaviour = "house"
            self.script = None
            self._generation += 1
            self.requests.clear()
            brain.UNKNOWN_TASKS.clear()
            self.local_server = None
        self.hosted.reset()
        self.limits.reset()
        self.anthropic.reset()
        self.slots.clear()
        self.services.reset()

    def set_account(self, provider: str, *, requests_per_minute: int | None = None,
                    tokens_per_minute: int | None = None, requests_per_day: int | None = None,
                    retry_after: RetryAfter = "none", quota_requests: int | None = None,
                    free_tier: bool = False, model: str | None = None) -> None:
        """Limit the "openai" or "gemini" account as the provider does (see the docstring)."""
        if provider == "anthropic":  # tokens_per_minute: input tokens (see anthropic.py)
            self.anthropic.set_account(claude_api.Rule(requests_per_minute, tokens_per_minute,
                                                       model=model))
            return
        if provider not in ("openai", "gemini"):
            raise ValueError(f"provider must be openai, gemini or anthropic, not {provider!r}")
        if retry_after not in ("none", "seconds", "ms"):
            raise ValueError(f"retry_after must be none, seconds or ms, not {retry_after!r}")
        self.limits.set_account(AccountRule(provider, requests_per_minute, tokens_per_minute,
                                            requests_per_day, retry_after, quota_requests,
                                            free_tier, model))

    def set_search_limit(self, api: str, *, min_interval: float = 0.0,
                         requests_per_minute: int | None = None, connections: int | None = None,
                         status: int = 429) -> None:
        """Refuse a search API's requests that come too fast (see the docstring)."""
        if api not in ("tavily", "arxiv", "semanticscholar"):
            raise ValueError(f"api must be tavily, arxiv or semanticscholar, not {api!r}")
        self.limits.set_search(SearchRule(api, min_interval, requests_per_minute, connections,
                                          status))

    def set_local_server(self, kind: local.Kind = "ollama", *, parallel: int = 1,
                         tokens_per_second: float = 30.0, context_tokens: int = 8192,
                         model: str = "llama3.1:8b", max_queue: int | None = None) -> None:
        """Answer as a model server on a workstation (see the docstring and local.py)."""
        if kind not in local.KINDS:
            raise ValueError(f"kind must be one of {local.KINDS}, not {kind!r}")
        with self._lock:
            self.local_server = local.LocalServer(kind, max(1, parallel), tokens_per_second,
                                                  context_tokens, model, max_queue)
            self._tokens_per_second = max(0.0, tokens_per_second)
        self.slots.configure(max(1, parallel), max_queue)

    def advance_limits(self, seconds: float) -> None:
        """Move the limits' clock on, as if `seconds` had passed (budgets refill)."""
        self.limits.advance(seconds)

    def gaps(self, api: str) -> list[float]:
        """Seconds between one request of this api and the next, in arrival order (pacing)."""
        times = sorted(float(r["time"]) for r in self.requests_for(api))
        return [b - a for a, b in zip(times, times[1:], strict=False)]

    def most_at_once(self, api: str, start: str = "time", end: str = "ended") -> int:
        """The most requests of this api under way at once, from the log's `start` and `end`
        times (a local server's answers: start="started", end="answered").

        A client has its answer a moment before the server's thread marks the request ended, so
        this first waits (up to 5 s) until every request of this api is marked."""
        deadline = time.monotonic() + 5.0
        while (any("ended" not in r for r in self.requests_for(api))
               and time.monotonic() < deadline):
            time.sleep(0.01)
        marks = sorted([(float(r[end]), -1) for r in self.requests_for(api) if start in r and end in r]
                       + [(float(r[start]), 1) for r in self.requests_for(api)
                          if start in r and end in r])
        most = now = 0
        for _, step in marks:
            now += step
            most = max(most, now)
        return most

    def rate_limited(self, api: str | None = None) -> int:
        """How many answers (of this api) were rate-limit refusals."""
        with self._lock:
            return sum(1 for r in self.requests if (api is None or r["api"] == api)
                       and (r.get("rate_limited") or r.get("status") == 429))

    def add_fault(self, api: str, kind: str, times: int = 1, **params: Any) -> None:
        if api not in APIS:
            raise ValueError(f"api must be one of {APIS}, not {api!r}")
        if kind not in FAULT_KINDS:
            raise ValueError(f"kind must be one of {FAULT_KINDS}, not {kind!r}")
        if kind in _CONTENT_FAULTS and api not in ("openai", "gemini", "anthropic"):
            raise ValueError(f"{kind!r} faults only apply to the LLM apis (openai, gemini)")
        if (kind, api) in (("refusal", "gemini"), ("blocked", "openai"), ("blocked", "anthropic")):
            raise ValueError(f"{kind!r} is not a fault of {api}")
        with self._lock:
            self._faults.append(Fault(api, kind, times, dict(params)))

    def set_behaviour(self, name: str) -> None:
        """Every LLM answer from now on behaves like this kind of real model
        (brain_behaviours.BEHAVIOURS); `reset()` goes back to "house"."""
        if name not in brain_behaviours.BEHAVIOURS:
            raise ValueError(f"behaviour must be one of {brain_behaviours.BEHAVIOURS}, not {name!r}")
        with self._lock:
            self.behaviour = name

    def set_delay(self, seconds: float) -> None:
        """Every API answer (not pages) waits this long first: slow but fine."""
        with self._lock:
            self._delay = max(0.0, seconds)

    def set_latency(self, *, model: float = 0.0, search: float = 0.0, page: float = 0.0,
                    tokens_per_second: float = 0.0) -> None:
        """Fixed latency per kind of answer, in seconds (for the benchmark): every LLM answer
        (OpenAI chat, Gemini) waits `model`, every search answer (Tavily, arXiv, Semantic
        Scholar) waits `search`, every /pages/ answer waits `page`. With `tokens_per_second`,
        an LLM answer also takes its completion tokens at that rate, as a real model writes
        (so a long answer takes longer). On top of `set_delay`; `reset()` clears it."""
        with self._lock:
            self._latency = {"model": max(0.0, model), "search": max(0.0, search),
                             "page": max(0.0, page)}
            self._tokens_per_second = max(0.0, tokens_per_second)

    def set_answer_words(self, words: int) -> None:
        """The writer answers with a report of about this many words (for the benchmark), or
        the share of it a section prompt asks for; 0 goes back to its own short report."""
        with self._lock:
            self.answer_words = max(0, int(words))

    def generation_time(self, completion_tokens: int) -> float:
        """How long writing this many tokens takes at the rate `set_latency` set."""
        with self._lock:
            rate = self._tokens_per_second
        return completion_tokens / rate if rate else 0.0

    def latency(self, api: str) -> float:
        """The fixed latency `set_latency` gave this api's answers (0 when none)."""
        kind = LATENCY_KINDS.get(api)
        with self._lock:
            return self._latency.get(kind, 0.0) if kind else 0.0

    def set_off_topic(self, n: int) -> None:
        """The last `n` Tavily results of every query link to OFF-TOPIC articles."""
        with self._lock:
            self.off_topic_results = max(0, n)

    def set_extra_results(self, paths: list[str]) -> None:
        """Serve each of these paths (e.g. "/pages/hostile/huge") once as a Tavily result.

        Each Tavily search asking for 2 or more results takes the next path and ranks it
        first (its last ordinary result makes room), so every path is handed out once,
        where a worker will fetch it. Searches for a single result (pre-flight) get none.
        """
        with self._lock:
            self._extra_results = list(paths)

    def _next_extra(self) -> str | None:
        with self._lock:
            return self._extra_results.pop(0) if self._extra_results else None

    def count(self, api: str) -> int:
        with self._lock:
            return sum(1 for r in self.requests if r["api"] == api)

    def requests_for(self, api: str) -> list[dict[str, Any]]:
        with self._lock:
            return [r for r in self.requests if r["api"] == api]

    @property
    def unknown_tasks(self) -> list[str]:
        return list(brain.UNKNOWN_TASKS)

    # used by the handler
    def _record(self, entry: dict[str, Any]) -> None:
        with self._lock:
            self.requests.append(entry)

    def _take(self, api: str, task: str | None, size: int = 0) -> Fault | None:
        """Consume one use of the first pending fault (in the order added) that fits.

        One fault per request: queued faults hit successive requests, so a test can
        script a sequence (429, then 500, then invalid JSON...). A fault that cannot
        affect this request (a JSON fault on the writer, a `task=` for another task)
        waits for one it can.
        """
        with self._lock:
            for fault in self._faults:
                if fault.api != api or fault.remaining <= 0:
                    continue
                wanted = fault.params.get("task")
                if wanted is not None and wanted != task:
                    continue
                if fault.kind in ("invalid_json", "fenced_json") and task in (None, "writer"):
                    continue
                if fault.kind in ("cite_invented", "tracking") and task != "writer":
                    continue
                if fault.kind == "context_limit" and size <= int(fault.params.get("max_chars", 0)):
                    continue
                fault.remaining -= 1
                return fault
        return None

    def _sleep(self, seconds: float, generation: int | None = None) -> bool:
        """Wait; False (early) when the server stops or a reset abandons this request."""
        end = time.monotonic() + seconds
        while True:
            if self._stopping.is_set() or (generation is not None and generation != self._generation):
                return False
            left = end - time.monotonic()
            if left <= 0:
                return True
            self._stopping.wait(min(left, 0.05))

    @property
    def delay(self) -> float:
        with self._lock:
            return self._delay


class _Server(ThreadingHTTPServer):
    # A run opens dozens of connections at once (40 fetch threads, pages close theirs): with
    # the default backlog of 5, the kernel drops the extra SYNs and clients retry a second
    # later, which slowed every run without testing anything.
    request_queue_size = 256

    def handle_error(self, request: Any, client_address: Any) -> None:
        # A client that hangs up (the SDK closing its pool after a refusal) is what real servers
        # see every day and do not print. socketserver prints it to `sys.stderr`, which an
        # in-process CLI test has redirected into the output it checks for tracebacks.
        if isinstance(sys.exc_info()[1], ConnectionError):
            log.debug("client %s hung up", client_address)
            return
        super().handle_error(request, client_address)


def _make_handler(server: StandinServer) -> type[BaseHTTPRequestHandler]:
    class Handler(_Handler):
        standin = server

    return Handler


class _Handler(search_services.ServiceRoutes, LimitGates, BaseHTTPRequestHandler):
    standin: StandinServer
    protocol_version = "HTTP/1.1"
    # Headers and body go out in separate writes: without this, Nagle plus the client's
    # delayed ACK holds every answer back about 40 ms.
    disable_nagle_algorithm = True
    server_version = "Standin/1.0"

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
        log.debug("%s " + format, self.address_string(), *args)

    # routing
    def do_GET(self) -> None:
        self._dispatch("GET")

    def do_POST(self) -> None:
        self._dispatch("POST")

    def _dispatch(self, method: str) -> None:
        split = urlsplit(self.path)
        path = split.path
        length = int(self.headers.get("Content-Length") or 0)
        raw = self.rfile.read(length) if length else b""
        try:
            body = json.loads(raw) if raw else None
        except ValueError:
            body = None
        api = _api_for(method, path)
        self._gen = self.standin._generation
        self._prompt_chars = _prompt_chars(api, body)
        self._entry: dict[str, Any] = {
            "api": api or "unknown", "method": method, "path": path,
            "query": {k: v[0] for k, v in parse_qs(split.query).items()},
            "headers": {k.lower(): v for k, v in self.headers.items()}, "json": body, "time": time.time(),
        }
        self.standin._record(self._entry)
        self._admission: Admission | None = None
        self._gates: list[str] = []  # what `_pass_limits` took, for `_after_limits` to give back
        if api is None:
            self._send_json(404, {"error": {"message": f"No route for {method} {path}"}})
            return
        try:
            if not self._pass_limits(api, method, path, body):
                return
            task = hosted.task_of(api, method, path) if api in hosted.APIS else _task_of(api, body)
            if not self._http_faults(api, task):
                return
            if api != "pages" and self.standin.delay:
                if not self.standin._sleep(self.standin.delay, self._gen):
                    self.close_connection = True
                    return
            latency = self.standin.latency(api)
            if latency and not self.standin._sleep(latency, self._gen):
                self.close_connection = True
                return
            if not self._local_turn(api, body):
                return
            handler = getattr(self, f"_api_{api}")
            handler(path, split.query, body)
        except (TimeoutError, BrokenPipeError, ConnectionResetError):
            pass  # the client gave up (timeouts in tests): nothing to do
        finally:
            self._after_limits(api)

    def _http_faults(self, api: str, task: str | None) -> bool:
        """Take this request's fault; False when the response has already been sent."""
        self._trickle = 0.0
        fault = self._fault = self.standin._take(api, task, getattr(self, "_prompt_chars", 0))
        if fault is None:
            return True
        if fault.kind == "context_limit":
            chars, limit = self._prompt_chars, int(fault.params.get("max_chars", 0))
            if api == "anthropic":
                body = claude_api.prompt_too_long(chars, limit)
            elif api == "openai":
                body = openai_error(
                    f"This model's maximum context length is {limit // 4} tokens. However, your "
                    f"messages resulted in {chars // 4} tokens. Please reduce the length of the "
                    "messages.", type="invalid_request_error", code="context_length_exceeded")
            else:
                body = gemini_error(
                    400, f"The input token count ({chars // 4}) exceeds the maximum number of "
                    f"tokens allowed ({limit // 4}).", "INVALID_ARGUMENT")
            self._send_json(400, body)
            return False
        if fault.kind == "hang":
            if not self.standin._sleep(float(fault.params.get("seconds", 30.0)), self._gen):
                self.close_connection = True  # reset or shutdown: abandon this request
                return False
        elif fault.kind == "status":
            code = int(fault.params.get("status", 500))
            body = fault.params.get("body")
            if body is None:
                body = _default_error_body(api, code)
            headers = dict(fault.params.get("headers") or {})
            if isinstance(body, (dict, list)):
                self._send_json(code, body, headers)
            else:
                self._send(code, str(body).encode(), "text/plain; charset=utf-8", headers)
            return False
        elif fault.kind == "trickle":
            self._trickle = float(fault.params.get("interval", 0.5))
        return True

    # senders
    def _send(self, status: int, data: bytes, content_type: str,
              headers: Mapping[str, str] | None = None) -> None:
        self._entry.setdefault("status", status)
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(data)))
        admission = getattr(self, "_admission", None)  # x-ratelimit-* on every answer (OpenAI)
        if self._entry.get("api") == "anthropic":  # request-id on every answer, errors too
            headers = {**claude_api.request_id(len(self.standin.requests)), **(headers or {})}
        for name, value in {**(admission.headers if admission else {}), **(headers or {})}.items():
            self.send_header(name, value)
        interval = getattr(self, "_trickle", 0.0)
        if interval:
            self._trickle_out(self._held_head() + data, interval)
        else:
            self.end_headers()
            self.wfile.write(data)

    def _held_head(self) -> bytes:
        """With a `trickle` fault's headers=True, the status line and headers not yet sent
        (they go out byte by byte with the body); otherwise they are sent now, whole."""
        fault = getattr(self, "_fault", None)
        if not (fault is not None and fault.params.get("headers")):
            self.end_headers()
            return b""
        head = b"".join(getattr(self, "_headers_buffer", [])) + b"\r\n"
        self._headers_buffer = []
        return head

    def _trickle_out(self, data: bytes, interval: float) -> None:
        """`data` one byte every `interval` s, until sent or the client hangs up."""
        for i in range(len(data)):
            if self._client_gone():  # logged as `client_gone`: the client hung up
                self.close_connection = True
                return
            self.wfile.write(data[i : i + 1])
            self.wfile.flush()
            if not self.standin._sleep(interval, self._gen):
                self.close_connection = True
                return

    def _send_json(self, status: int, payload: Any,
                   headers: Mapping[str, str] | None = None) -> None:
        self._send(status, json.dumps(payload).encode(), "application/json", headers)

    # --- LLMs ------------------------------------------------------------------------

    def _llm_answer(self, system: str, user: str,
                    schema: dict | None) -> tuple[str, Fault | None]:
        text, special, self._finish = llm_answer(self.standin, getattr(self, "_fault", None),
                                                 system, user, schema)
        return text, special

    def _generate(self, completion_tokens: int) -> bool:
        """Take the time writing the answer takes (see set_latency) and log its size; False
        when the server stops or a reset abandons the request meanwhile."""
        self._entry["completion_tokens"] = completion_tokens
        seconds = self.standin.generation_time(completion_tokens)
        if seconds and not self.standin._sleep(seconds, self._gen):
            self.close_connection = True
            return False
        self._entry["answered"] = time.time()
        if self.standin.local_server is not None and self._client_gone():
            self.close_connection = True
            return False
        return True

    def _api_openai(self, path: str, query: str, body: Any) -> None:
        if path != "/v1/chat/completions" or not isinstance(body, dict):
            self._send_json(404, openai_error(f"Unknown path {path}", type="invalid_request_error"))
            return
        server = self.standin.local_server
        if server is None and not str(self.headers.get("Authorization", "")).startswith("Bearer "):
            self._send_json(401, _default_error_body("openai", 401))
            return
        messages = body.get("messages") or []
        system = "\n\n".join(_content(m) for m in messages if m.get("role") in ("system", "developer"))
        user = "\n\n".join(_content(m) for m in messages if m.get("role") == "user")
        if server is not None:
            user = local.fit(server, system, user)  # Ollama reads only what fits its window
        schema = _openai_schema(body)
        text, special = self._llm_answer(system, user, schema)
        model = str(body.get("model") or "gpt-standin")
        message: dict[str, Any] = {"role": "assistant", "content": text, "refusal": None,
                                   "annotations": []}
        if special is not None and special.kind == "refusal":
            message = {"role": "assistant", "content": None,
                       "refusal": "I'm sorry, I can't help with that.", "annotations": []}
        finish = getattr(self, "_finish", "stop")
        if special is not None and special.kind == "finish":
            finish = str(special.params.get("reason", "length"))
            message["content"] = text[: len(text) // 2] if finish == "length" else ""
        prompt_tokens = _tokens(system + user)
        completion_tokens = _tokens(text)
        if not self._generate(completion_tokens):
            return
        n = len(self.standin.requests)
        self._send_json(200, {
            "id": f"chatcmpl-standin{n:06d}",
            "object": "chat.completion",
            "created": int(time.time()),
            "model": model,
            "choices": [{"index": 0, "message": message, "logprobs": None,
                         "finish_reason": finish}],
            "usage": {"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                      "total_tokens": prompt_tokens + completion_tokens},
            "service_tier": "default",
            "system_fingerprint": "fp_standin",
        })

    def _api_gemini(self, path: str, query: str, body: Any) -> None:
        match = _GEMINI_PATH.match(path)
        if match is None or not isinstance(body, dict):
            self._send_json(404, gemini_error(404, f"Unknown path {path}", "NOT_FOUND"))
            return
        if not self.headers.get("x-goog-api-key") and "key=" not in query:
            self._send_json(403, gemini_error(403, "Method doesn't allow unregistered callers.",
                                              "PERMISSION_DENIED"))
            return
        contract = protos.contract(path.split("/")[1])  # a key its version lacks: refused
        unknown = contract.unknown_names("GenerateContentRequest", body) if contract else []
        if unknown:
            self._send_json(400, protos.unknown_name_error(unknown))
            return
        model = match.group(1)
        system = _parts_text((body.get("systemInstruction") or {}).get("parts"))
        user = "\n\n".join(_parts_text(c.get("parts")) for c in body.get("contents") or []
                           if c.get("role", "user") == "user")
        schema = _gemini_schema(body)
        text, special = self._llm_answer(system, user, schema)
        prompt_tokens = _tokens(system + user)
        completion_tokens = _tokens(text)
        if not self._generate(completion_tokens):
            return
        usage = {"promptTokenCount": prompt_tokens, "candidatesTokenCount": completion_tokens,
                 "totalTokenCount": prompt_tokens + completion_tokens}
        if special is not None and special.kind == "blocked":
            self._send_json(200, {"promptFeedback": {"blockReason": "SAFETY"},
                                  "usageMetadata": usage, "modelVersion": model})
            return
        finish = "MAX_TOKENS" if getattr(self, "_finish", "") == "length" else "STOP"
        if special is not None and special.kind == "finish":
            finish = str(special.params.get("reason", "MAX_TOKENS"))
            text = text[: len(text) // 2] if finish == "MAX_TOKENS" else ""
        self._send_json(200, {
            "candidates": [{"content": {"parts": [{"text": text}] if text else [], "role": "model"},
                            "finishReason": finish, "index": 0}],
            "usageMetadata": usage,
            "modelVersion": model,
            "responseId": f"standin-{len(self.standin.requests)}",
        })

    def _api_anthropic(self, path: str, query: str, body: Any) -> None:
        claude_api.handle(self, path, body)

    # --- hosted deep research (tests/standin/hosted.py) --------------------------------

    def _api_openai_responses(self, path: str, query: str, body: Any) -> None:
        self._send_json(*self.standin.hosted.handle(
            "openai_responses", self.command, path, body, dict(self.headers), self._base()))

    def _api_gemini_interactions(self, path: str, query: str, body: Any) -> None:
        self._send_json(*self.standin.hosted.handle(
            "gemini_interactions", self.command, path, body, dict(self.headers), self._base()))

    # --- search ----------------------------------------------------------------------

    def _api_tavily(self, path: str, query: str, body: Any) -> None:
        if not str(self.headers.get("Authorization", "")).startswith("Bearer tvly-"):
            self._send_json(401, _default_error_body("tavily", 401))
            return
        body = body if isinstance(body, dict) else {}
        q = str(body.get("query") or "")
        count = max(1, min(20, int(body.get("max_results") or 4)))
        base = self._base()
        results = tavily_results(self.standin, q, count, base,
                                 since=str(body.get("start_date") or "") or None)
        self._send_json(200, {"query": q, "follow_up_questions": None, "answer": None,
                              "images": [], "results": results, "response_time": 0.42,
                              "request_id": f"standin-{brain.stable_hash(q)[:12]}"})

    def _api_arxiv(self, path: str, query: str, body: Any) -> None:
        if path != "/arxiv/api/query":
            self._send(404, b"Not found", "text/plain")
            return
        params = {k: v[0] for k, v in parse_qs(query).items()}
        q, since = arxiv_terms(params.get("search_query", ""))
        base = self._base()
        limit = max(0, int(params.get("max_results", "2") or 2))
        entries = []
        for paper_id, meta in [p for p in papers(q, 1)
                               if pages.published_since(p[1]["published"], since)][:limit]:
            url = f"{base}/pages/paper/{paper_id}"
            published = meta["published"] or "2024-01-01"
            entries.append(
                "<entry>"
                f"<id>{escape(url)}</id>"
                f"<updated>{published}T00:00:00Z</updated>"
                f"<published>{published}T00:00:00Z</published>"
                f"<title>{escape(meta['title'])}</title>"
                f"<summary>{escape(meta['snippet'])}</summary>"
                "<author><name>A. Standin</name></author>"
                f'<link href="{escape(url)}" rel="alternate" type="text/html"/>'
                f'<link title="pdf" href="{escape(url)}" rel="related" type="application/pdf"/>'
                '<arxiv:primary_category term="cs.CY" scheme="http://arxiv.org/schemas/atom"/>'
                "</entry>"
            )
        feed = (
            '<?xml version="1.0" encoding="UTF-8"?>\n'
            '<feed xmlns="http://www.w3.org/2005/Atom" '
            'xmlns:opensearch="http://a9.com/-/spec/opensearch/1.1/" '
            'xmlns:arxiv="http://arxiv.org/schemas/atom">'
            f'<title type="html">ArXiv Query: {escape(q)}</title>'
            f"<opensearch:totalResults>{len(entries)}</opensearch:totalResults>"
            "<opensearch:startIndex>0</opensearch:startIndex>"
            + "".join(entries) + "</feed>"
        )
        self._send(200, feed.encode(), "application/atom+xml; charset=utf-8")

    def _api_semanticscholar(self, path: str, query: str, body: Any) -> None:
        if path != "/s2/graph/v1/paper/search":
            self._send_json(404, {"error": "Not found"})
            return
        params = {k: v[0] for k, v in parse_qs(query).items()}
        q = params.get("query", "")
        limit = max(0, int(params.get("limit", "2") or 2))
        base = self._base()
        data = []
        since = s2_since(params.get("publicationDateOrYear"))
        for paper_id, meta in [p for p in papers(q, 3)
                               if pages.published_since(p[1]["published"], since)][:limit]:
            published = meta["published"] or None
            data.append({
                "paperId": paper_id,
                "title": meta["title"],
                "url": f"{base}/pages/paper/{paper_id}",
                "abstract": meta["snippet"],
                "year": int(published[:4]) if published else None,
                "publicationDate": published,
                "openAccessPdf": None,
            })
        self._send_json(200, {"total": len(data), "offset": 0, "data": data})

    # --- pages -----------------------------------------------------------------------

    def _api_pages(self, path: str, query: str, body: Any) -> None:
        page = pages.page_response(path + (f"?{query}" if query else ""), self._base())
        if page is None:
            self._send(404, b"<html><body>Not found</body></html>", "text/html")
            return
        self.send_response(int(page.status))
        for name, value in dict(page.headers).items():
            self.send_header(name, value)
        # Page bodies may lie about their length: never reuse the connection.
        self.send_header("Connection", "close")
        self.close_connection = True
        delay = float(getattr(page, "chunk_delay", 0.0) or 0.0)
        interval = getattr(self, "_trickle", 0.0)
        if interval:
            head = self._held_head()
            if head:
                self._trickle_out(head, interval)
        else:
            self.end_headers()
        for chunk in page.chunks:
            pieces = [chunk[i : i + 1] for i in range(len(chunk))] if interval else [chunk]
            for piece in pieces:
                if interval and self._client_gone():
                    return
                self.wfile.write(piece)
                self.wfile.flush()
                if interval and not self.standin._sleep(interval, self._gen):
                    return
            if delay and not self.standin._sleep(delay, self._gen):
                return

    def _base(self) -> str:
        return self.standin.base_url


def _api_for(method: str, path: str) -> str | None:
    if hosted.api_for(method, path):
        return hosted.api_for(method, path)
    if search_services.api_for(method, path):
        return search_services.api_for(method, path)
    if path.startswith("/v1/chat/"):
        return "openai"
    if path == claude_api.PATH:
        return "anthropic"
    if _GEMINI_PATH.match(path):
        return "gemini"
    if path == "/search" and method == "POST":
        return "tavily"
    if path.startswith("/arxiv/"):
        return "arxiv"
    if path.startswith("/s2/"):
        return "semanticscholar"
    if path.startswith("/pages/"):
        return "pages"
    if path in _LOCAL_PATHS:
        return "local"
    return None


_LOCAL_PATHS = frozenset({"/", "/api/version", "/api/show", "/api/ps", "/props", "/health",
                          "/v1/models", "/version"})


def _task_of(api: str, body: Any) -> str | None:
    """The brain's task for an LLM request (schema title, or "writer"); None otherwise."""
    if api == "anthropic":
        return brain.task_name(claude_api.schema_of(body)) if isinstance(body, dict) else None
    if api not in ("openai", "gemini") or not isinstance(body, dict):
        return None
    return brain.task_name(_openai_schema(body) if api == "openai" else _gemini_schema(body))


def _openai_schema(body: Mapping[str, Any]) -> dict | None:
    fmt = body.get("response_format") or {}
    if fmt.get("type") != "json_schema":
        return None
    spec = fmt.get("json_schema") or {}
    schema = dict(spec.get("schema") or {})
    schema.setdefault("title", spec.get("name") or "unknown")
    return schema


def _gemini_schema(body: Mapping[str, Any]) -> dict | None:
    config = body.get("generationConfig") or {}
    schema = config.get("responseJsonSchema") or config.get("responseSchema")
    return dict(schema) if isinstance(schema, dict) else None


def _prompt_chars(api: str | None, body: Any) -> int:
    """Characters of message text in an LLM request (what a context window counts)."""
    if not isinstance(body, dict):
        return 0
    if api == "anthropic":
        return claude_api.prompt_chars(body)
    if api == "openai":
        return sum(len(_content(m)) for m in body.get("messages") or [] if isinstance(m, dict))
    if api == "gemini":
        system = _parts_text((body.get("systemInstruction") or {}).get("parts"))
        return len(system) + sum(len(_parts_text(c.get("parts")))
                                 for c in body.get("contents") or [] if isinstance(c, dict))
    return 0


def _content(message: Mapping[str, Any]) -> str:
    content = message.get("content")
    if isinstance(content, list):
        return "".join(str(p.get("text", "")) for p in content if isinstance(p, dict))
    return str(content or "")


def _parts_text(parts: Any) -> str:
    if not isinstance(parts, list):
        return ""
    return "".join(str(p.get("text", "")) for p in parts
                   if isinstance(p, dict) and not p.get("thought"))


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)
