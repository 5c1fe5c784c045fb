"""The stand-in's SearXNG, Brave Search, Exa and Serper, shaped as their documentation shows.

Each answers under its own path prefix of the stand-in (`env(base)` points the app at them):

  searxng  GET  /searxng/search?q=...&format=json   no key. `state.searxng_json = False`: the
                instance has the JSON format off and answers 403 Forbidden, as SearXNG does
                (https://docs.searxng.org/dev/search_api); `state.searxng_engines_down = True`:
                no results and every engine in `unresponsive_engines`.
  brave    GET  /brave/res/v1/web/search?q=&count=  header X-Subscription-Token (a wrong one:
                422 SUBSCRIPTION_TOKEN_INVALID). Every answer carries X-RateLimit-Limit,
                -Policy, -Remaining and -Reset as "<per second>, <per month>"; over the plan
                (`state.brave_plan(per_second=1, per_month=2000)`): 429 RATE_LIMITED, or with the
                month spent, 429 with the month's remaining at 0. Only successful requests count.
  exa      POST /exa/search {"query", "numResults", "contents": {"highlights": ...}}  header
                x-api-key (wrong: 401). Results with highlights when asked, and `costDollars`.
  serper   POST /serper/search {"q", "num"}  header X-API-KEY (wrong: 403 "Unauthorized.").
                `state.serper_credits = n`: after n searches, 400 "Not enough credits".
  `state.per_second(api, n)` (exa, serper, searxng): more than n requests within a second get
                the service's own 429 (Exa's "Too many requests", Serper's, SearXNG's limiter),
                with no header saying how long, as they answer.

Every result links to the stand-in's own article pages (the same as Tavily's for a query,
answers.tavily_results), so a run can read them. Faults (`add_fault("brave", "status", ...)`)
apply as to every other API.
"""

from __future__ import annotations

import math
import threading
import time
from typing import TYPE_CHECKING, Any
from urllib.parse import parse_qs

from tests.standin.answers import tavily_results

if TYPE_CHECKING:
    from tests.standin.server import StandinServer

APIS = ("searxng", "brave", "exa", "serper")
BRAVE_KEY = "BSAtest0123456789abcdefghijklmn"
EXA_KEY = "exa-test-0123456789abcdef"
SERPER_KEY = "serper0123456789abcdef0123456789"
MONTH_S = 2_592_000


def env(base: str) -> dict[str, str]:
    """Settings pointing the app at these four services of the stand-in at `base`."""
    return {
        "SEARXNG_BASE_URL": f"{base}/searxng",
        "BRAVE_BASE_URL": f"{base}/brave",
        "EXA_BASE_URL": f"{base}/exa",
        "SERPER_BASE_URL": f"{base}/serper",
        "BRAVE_API_KEY": BRAVE_KEY,
        "EXA_API_KEY": EXA_KEY,
        "SERPER_API_KEY": SERPER_KEY,
    }


def api_for(method: str, path: str) -> str | None:
    for api in APIS:
        if path.startswith(f"/{api}/"):
            return api
    return None


def error_body(api: str, status: int) -> Any:
    """The service's own error body for a `status` fault."""
    if api == "brave":
        codes = {429: ("RATE_LIMITED", "Request rate limit exceeded for plan."),
                 401: ("SUBSCRIPTION_TOKEN_INVALID", "The provided subscription token is invalid.")}
        code, detail = codes.get(status, ("INTERNAL_ERROR", "Internal error."))
        return {"type": "ErrorResponse", "error": {"id": "standin", "status": status,
                                                   "code": code, "detail": detail}}
    if api == "exa":
        return {"requestId": "standin", "error": {429: "Too many requests",
                                                  402: "NO_MORE_CREDITS"}.get(status, "error")}
    if api == "serper":
        return {"message": {429: "Too many requests.", 403: "Unauthorized."}.get(
            status, "Internal error."), "statusCode": status}
    return "<html><body>Error</body></html>"


class ServiceState:
    """What a test can set for these services; `reset()` (the stand-in's) clears it."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self.reset()

    def reset(self) -> None:
        with self._lock:
            self.searxng_json = True
            self.searxng_engines_down = False
            self.serper_credits: int | None = None
            self._brave = (50, 20_000_000)
            self._brave_window: tuple[float, int] = (0.0, 0)  # (start, successful requests)
            self._brave_month = 0
            self._qps: dict[str, tuple[int, float, int]] = {}  # api -> (limit, start, used)

    def per_second(self, api: str, limit: int) -> None:
        with self._lock:
            self._qps[api] = (limit, 0.0, 0)

    def admit(self, api: str) -> bool:
        """False when `api` is over the requests a second `per_second` set."""
        with self._lock:
            if api not in self._qps:
                return True
            limit, start, used = self._qps[api]
            now = time.monotonic()
            if now - start >= 1.0:
                start, used = now, 0
            self._qps[api] = (limit, start, used + 1)
            return used < limit

    def brave_plan(self, *, per_second: int = 1, per_month: int = 2000) -> None:
        with self._lock:
            self._brave = (per_second, per_month)
            self._brave_window = (0.0, 0)
            self._brave_month = 0

    def brave_admit(self) -> tuple[bool, dict[str, str]]:
        """Whether a Brave request may be answered now, and the X-RateLimit headers."""
        with self._lock:
            per_second, per_month = self._brave
            now = time.monotonic()
            start, used = self._brave_window
            if now - start >= 1.0:
                start, used = now, 0
            ok = used < per_second and self._brave_month < per_month
            if ok:
                used += 1
                self._brave_month += 1
            self._brave_window = (start, used)
            reset_second = max(1, math.ceil(1.0 - (now - start)))
            headers = {
                "X-RateLimit-Limit": f"{per_second}, {per_month}",
                "X-RateLimit-Policy": f"{per_second};w=1, {per_month};w={MONTH_S}",
                "X-RateLimit-Remaining": f"{per_second - used}, {per_month - self._brave_month}",
                "X-RateLimit-Reset": f"{reset_second}, {MONTH_S // 2}",
            }
            return ok, headers

    def serper_spend(self) -> bool:
        with self._lock:
            if self.serper_credits is None:
                return True
            if self.serper_credits <= 0:
                return False
            self.serper_credits -= 1
            return True


class ServiceRoutes:
    """A mixin of the stand-in's request handler: one `_api_<name>` per service."""

    standin: StandinServer
    headers: Any
    _send: Any  # the handler's senders
    _send_json: Any

    def _rows(self, q: str, count: int) -> list[dict[str, Any]]:
        return tavily_results(self.standin, q, count, self.standin.base_url)

    def _api_searxng(self, path: str, query: str, body: Any) -> None:
        params = {k: v[0] for k, v in parse_qs(query).items()}
        if path.rstrip("/") not in ("/searxng/search", "/searxng"):
            self._send(404, b"<html><body>Not Found</body></html>", "text/html")
            return
        if not self.standin.services.admit("searxng"):
            self._send(429, b"<html><body>Too Many Requests</body></html>", "text/html")
            return
        if params.get("format") != "json" or not self.standin.services.searxng_json:
            self._send(403, b"<html><body><h1>403 Forbidden</h1></body></html>", "text/html")
            return
        q = params.get("q", "")
        down = self.standin.services.searxng_engines_down
        rows = [] if down else self._rows(q, 10)
        results = [{
            "url": r["url"], "title": r["title"], "content": r["content"],
            "engine": "duckduckgo", "engines": ["duckduckgo", "brave"], "positions": [k + 1],
            "score": round(2.0 - 0.1 * k, 3), "category": "general",
            "publishedDate": f"{r['published_date']}T00:00:00" if r["published_date"] else None,
            "parsed_url": ["http", "127.0.0.1", r["url"].split("/", 3)[-1], "", "", ""],
        } for k, r in enumerate(rows)]
        self._send_json(200, {
            "query": q, "number_of_results": 0, "results": results, "answers": [],
            "corrections": [], "infoboxes": [], "suggestions": [],
            "unresponsive_engines": [["duckduckgo", "timeout"], ["brave", "too many requests"]]
            if down else [],
        })

    def _api_brave(self, path: str, query: str, body: Any) -> None:
        if path != "/brave/res/v1/web/search":
            self._send_json(404, error_body("brave", 404))
            return
        if self.headers.get("X-Subscription-Token") != BRAVE_KEY:
            self._send_json(422, {"type": "ErrorResponse", "error": {
                "id": "standin", "status": 422, "code": "SUBSCRIPTION_TOKEN_INVALID",
                "detail": "The provided subscription token is invalid."}})
            return
        ok, limits = self.standin.services.brave_admit()
        if not ok:
            self._send_json(429, error_body("brave", 429), limits)
            return
        params = {k: v[0] for k, v in parse_qs(query).items()}
        q = params.get("q", "")
        count = max(1, min(20, int(params.get("count", "20") or 20)))
        results = [{
            "type": "search_result", "title": r["title"], "url": r["url"],
            "description": _marked(r["content"]), "is_source_local": False,
            "page_age": f"{r['published_date']}T00:00:00" if r["published_date"] else None,
            "language": "en", "family_friendly": True,
        } for r in self._rows(q, count)]
        self._send_json(200, {"type": "search", "query": {"original": q},
                              "mixed": {"type": "mixed", "main": []},
                              "web": {"type": "search", "results": results,
                                      "family_friendly": True}}, limits)

    def _api_exa(self, path: str, query: str, body: Any) -> None:
        if path != "/exa/search":
            self._send_json(404, error_body("exa", 404))
            return
        if self.headers.get("x-api-key") != EXA_KEY:
            self._send_json(401, {"requestId": "standin",
                                  "error": "Invalid API key", "tag": "INVALID_API_KEY"})
            return
        if not self.standin.services.admit("exa"):
            self._send_json(429, error_body("exa", 429))
            return
        body = body if isinstance(body, dict) else {}
        q = str(body.get("query") or "")
        count = max(1, min(100, int(body.get("numResults") or 10)))
        highlights = isinstance(body.get("contents"), dict) and "highlights" in body["contents"]
        results = []
        for k, r in enumerate(self._rows(q, count)):
            row = {"id": r["url"], "url": r["url"], "title": r["title"], "author": "A. Standin",
                   "publishedDate": f"{r['published_date']}T00:00:00.000Z"
                   if r["published_date"] else None, "score": round(0.9 - 0.05 * k, 3)}
            if highlights:
                row |= {"highlights": [r["content"]], "highlightScores": [0.5]}
            results.append(row)
        self._send_json(200, {"requestId": "standin", "resolvedSearchType": "neural",
                              "results": results, "costDollars": {"total": 0.005}})

    def _api_serper(self, path: str, query: str, body: Any) -> None:
        if path != "/serper/search":
            self._send_json(404, error_body("serper", 404))
            return
        if self.headers.get("X-API-KEY") != SERPER_KEY:
            self._send_json(403, error_body("serper", 403))
            return
        if not self.standin.services.admit("serper"):
            self._send_json(429, error_body("serper", 429))
            return
        if not self.standin.services.serper_spend():
            self._send_json(400, {"message": "Not enough credits", "statusCode": 400})
            return
        body = body if isinstance(body, dict) else {}
        q = str(body.get("q") or "")
        count = max(1, min(100, int(body.get("num") or 10)))
        organic = []
        for k, r in enumerate(self._rows(q, min(count, 10))):
            row = {"title": r["title"], "link": r["url"], "snippet": r["content"],
                   "position": k + 1}
            if r["published_date"]:
                row["date"] = time.strftime("%b %d, %Y", time.strptime(r["published_date"],
                                                                       "%Y-%m-%d"))
            organic.append(row)
        self._send_json(200, {"searchParameters": {"q": q, "type": "search", "num": count,
                                                   "engine": "google"},
                              "organic": organic, "peopleAlsoAsk": [], "relatedSearches": [],
                              "credits": 1 if count <= 10 else 2})


def _marked(snippet: str) -> str:
    """Brave marks the words that matched with <strong> in its snippets."""
    first, _, rest = snippet.partition(" ")
    return f"<strong>{first}</strong> {rest}" if rest else snippet
