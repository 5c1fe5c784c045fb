"""Brave Search's Web Search API: an independent web index, a key (`X-Subscription-Token`).

Request (https://api-dashboard.search.brave.com/documentation/quickstart):
`GET https://api.search.brave.com/res/v1/web/search?q=...&count=N` (count at most 20) with
the headers `Accept: application/json` and `X-Subscription-Token: <key>`. Results are under
`web.results`, each with `url`, `title`, `description` (the snippet, with <strong> marks),
`page_age` (ISO) or `age`, and sometimes `extra_snippets`.

Limits (https://api.search.brave.com/app/documentation/web-search/response-headers):
every answer carries `X-RateLimit-Limit: 1, 15000` (per second, per month),
`X-RateLimit-Remaining: 1, 1000` and `X-RateLimit-Reset: 1, 1419704` (seconds until each
window resets); only successful requests count. The free plan allows 1 request a second, so
every Brave search of the process waits its turn at one request a second
(research.search.pacing) until Brave's first answer announces the key's own plan (a paid plan
allows 20 or 50 a second: the pace follows it); when the second's budget is spent the pacer
holds until its reset, and a 429 holds it as long as the headers say. A 429 with the month's budget at 0 is a used-up
quota, not a pace problem. A key Brave does not know is refused with 401/403, or with 422 and
the error code SUBSCRIPTION_TOKEN_INVALID (as Brave's API answers it: its error body is
{"type": "ErrorResponse", "error": {"status", "code", "detail"}}).
"""

from __future__ import annotations

import html
import re
from collections.abc import Mapping
from typing import Any

from research.core.errors import AuthError, ProviderError, QuotaExhausted, RateLimited
from research.core.retry import parse_retry_after
from research.search import pacing
from research.search._http import http_get, json_answer, raise_for_status
from research.search.base import SearchResult
from research.search.dates import iso_date

DEFAULT_BASE_URL = "https://api.search.brave.com"
LABEL = "Brave Search"
_TAGS = re.compile(r"<[^>]{0,40}>")


class BraveSearch:
    name = "brave"
    academic = False

    def __init__(self, api_key: str, base_url: str | None = None, *, pace: float = 1.0) -> None:
        self._api_key = api_key
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.pace = pacing.pacer(self.name, self.base_url, pace, official=DEFAULT_BASE_URL)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        with pacing.turn(self.pace, timeout, LABEL):
            status, body, headers = http_get(
                f"{self.base_url}/res/v1/web/search",
                params={"q": query.strip()[:400], "count": max(1, min(20, max_results))},
                headers={"Accept": "application/json", "X-Subscription-Token": self._api_key},
                timeout=timeout, provider=self.name, label=LABEL, secrets=(self._api_key,),
                check=False,
            )
            self._keep_pace(status, headers)
        if status == 429:
            raise self._limited(headers)
        if status in (401, 403) or (status == 422 and b"TOKEN" in body.upper()):
            raise AuthError(f"Brave Search refused the API key in BRAVE_API_KEY (HTTP {status})",
                            provider=self.name, status=status)
        raise_for_status(status, headers, body, self.name, LABEL, (self._api_key,))
        payload = json_answer(body, provider=self.name, label=LABEL)
        web = payload.get("web")
        rows = web.get("results") if isinstance(web, dict) else None
        return [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]

    def _keep_pace(self, status: int, headers: Mapping[str, str]) -> None:
        """The plan's pace as its headers announce it (a paid plan allows more than the free
        plan's one a second); the second's budget spent (or a 429): no request before the
        window resets."""
        limit = _numbers(headers.get("x-ratelimit-limit"))
        if limit:
            self.pace.learn(limit[0])
        remaining = _numbers(headers.get("x-ratelimit-remaining"))
        reset = _numbers(headers.get("x-ratelimit-reset"))
        if status == 429 or (remaining and remaining[0] <= 0):
            wait = reset[0] if reset else parse_retry_after(headers.get("retry-after"))
            self.pace.hold(wait)

    def _limited(self, headers: Mapping[str, str]) -> ProviderError:
        remaining = _numbers(headers.get("x-ratelimit-remaining"))
        reset = _numbers(headers.get("x-ratelimit-reset"))
        if len(remaining) > 1 and remaining[-1] <= 0:
            days = reset[-1] / 86400 if len(reset) > 1 else 0
            return QuotaExhausted(
                "Brave Search's monthly request quota for this key is used up"
                + (f" (it resets in about {max(1, round(days))} days)." if days else ".")
                + " Raise the plan's limit in Brave's dashboard, or choose another service.",
                provider=self.name, status=429)
        wait = reset[0] if reset else parse_retry_after(headers.get("retry-after"))
        return RateLimited("Brave Search is limiting requests (HTTP 429: the plan's requests "
                           "per second are used up).", provider=self.name, retry_after=wait)


def _numbers(value: str | None) -> list[float]:
    """'1, 15000' -> [1.0, 15000.0]; the per-second window comes first, then the month."""
    out = []
    for part in (value or "").split(","):
        try:
            out.append(float(part.strip()))
        except ValueError:
            continue
    return out


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict) or not isinstance(row.get("url"), str):
        return None
    url = row["url"].strip()
    return SearchResult(
        url=url,
        title=_plain(row.get("title")) or url,
        snippet=_plain(row.get("description")),
        provider=provider,
        published=iso_date(row.get("page_age")) or iso_date(row.get("age")),
    )


def _plain(value: Any) -> str:
    """Brave marks matched words with <strong>; the snippet is kept as plain text."""
    return html.unescape(_TAGS.sub("", str(value or ""))).strip()
