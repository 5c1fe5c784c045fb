"""SearXNG: a metasearch engine a person or team runs themselves. No key; a base URL.

Its Search API (https://docs.searxng.org/dev/search_api): `GET /search?q=...&format=json`,
with `pageno`, `language`, `categories`, `safesearch` and `time_range` optional. It returns
one page of results (about 10 to 20, as many as its engines gave; there is no count
parameter), each with `url`, `title`, `content` (the snippet), `engine(s)`, `score` and, where
an engine knows it, `publishedDate`. Engines that failed are listed in `unresponsive_engines`.

The JSON format must be switched on in the instance's settings.yml (`search: formats: [html,
json]`); "Requesting an unset format will return a 403 Forbidden error. Be aware that many
public instances have these formats disabled." (same page). An instance's limiter
(https://docs.searxng.org/admin/searx.limiter; `server: limiter: true`, on for every listed
public instance) answers 429 to clients it takes for bots; a private instance needs none.

The base URL is the person's own setting, so it may be on their own machine or network: it is
checked with research.untrusted.own_service (loopback and private addresses and any port
allowed, cloud metadata and ambiguous addresses never). The results it sends are untrusted
like any other search results: the pages they point at go through the usual URL rules.
"""

from __future__ import annotations

import time
from typing import Any
from urllib.parse import urlsplit

from research.core.errors import (
    ConfigError,
    FetchError,
    FetchRefused,
    ProviderError,
    RateLimited,
)
from research.llm.deadline import run_with_deadline
from research.search import pacing
from research.search._http import http_get, json_answer, raise_for_status
from research.search.base import SearchResult
from research.search.dates import iso_date
from research.untrusted.own_service import check_own_service_url, own_service_problem

LABEL = "SearXNG"


class SearxngSearch:
    name = "searxng"
    academic = False

    def __init__(self, base_url: str) -> None:
        url = (base_url or "").strip().rstrip("/")
        if url.endswith("/search"):  # the search page's address pasted whole
            url = url.removesuffix("/search")
        if not url:
            raise ConfigError(
                "SearXNG needs the address of your instance: set SEARXNG_BASE_URL (e.g. "
                "http://localhost:8888), or remove 'searxng' from DEEP_RESEARCH_SEARCH.")
        problem = own_service_problem(url)
        if problem:
            raise ConfigError(
                f"The SearXNG address {url[:100]!r} cannot be used: {problem}. Set "
                "SEARXNG_BASE_URL to your instance's address, e.g. http://localhost:8888.")
        self.base_url = url
        self.pace = pacing.pacer(self.name, url)  # no pace of its own; a 429 holds it

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        deadline = time.monotonic() + timeout
        try:  # resolved now (a look-up has no time limit of its own: this one has the search's)
            run_with_deadline(lambda: check_own_service_url(self.base_url), timeout,
                              "Looking up the SearXNG host")
        except FetchRefused as exc:
            raise ProviderError(f"The SearXNG address cannot be used: "
                                f"{str(exc).removeprefix('refused: ')}.", provider=self.name,
                                status=400) from None
        except FetchError:
            raise ProviderError(f"Could not find the SearXNG host of {self.base_url}: check "
                                "the address and that the instance is running.",
                                provider=self.name) from None
        timeout = max(0.1, deadline - time.monotonic())
        with pacing.turn(self.pace, timeout, LABEL):
            try:
                # Redirects are not followed: the exception to the address rules covers the
                # address the person set, not wherever an answer points.
                status, body, headers = http_get(
                    f"{self.base_url}/search",
                    # Language, categories and safe search stay the instance's own settings.
                    params={"q": query.strip(), "format": "json", "pageno": 1},
                    headers={"Accept": "application/json"},
                    timeout=timeout, provider=self.name, label=LABEL, follow_redirects=False,
                    check=False,
                )
                if 300 <= status < 400:
                    raise ProviderError(
                        f"The SearXNG instance sent its answer elsewhere (HTTP {status}, to "
                        f"{_origin(headers.get('location', ''))}): set SEARXNG_BASE_URL to the "
                        "address it uses (often its https:// one).", provider=self.name,
                        status=400)
                raise_for_status(status, headers, body, self.name, LABEL)
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise RateLimited(
                    "The SearXNG instance is limiting requests (HTTP 429; its bot limiter may "
                    "be on: a private instance can turn it off).", provider=self.name,
                    retry_after=exc.retry_after) from None
            except ProviderError as exc:
                if exc.status == 403:
                    raise ProviderError(
                        "The SearXNG instance refused the JSON format (HTTP 403). Turn it on in "
                        "its settings.yml: under 'search:', 'formats:' must list 'json' as well "
                        "as 'html'.", provider=self.name, status=403) from None
                raise
        payload = json_answer(body, provider=self.name, label=LABEL)
        rows = payload.get("results")
        results = [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]
        if not results and _all_engines_failed(payload):
            raise ProviderError(
                "SearXNG answered, but its search engines did not: "
                f"{_failures(payload)}.", provider=self.name, status=503)
        return results


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict) or not isinstance(row.get("url"), str):
        return None
    url = row["url"].strip()
    if not url.startswith(("http://", "https://")):
        return None
    score = row.get("score")
    return SearchResult(
        url=url,
        title=str(row.get("title") or url).strip(),
        snippet=str(row.get("content") or "").strip(),
        provider=provider,
        published=iso_date(row.get("publishedDate")),
        score=float(score) if isinstance(score, (int, float)) else None,
    )


def _origin(location: str) -> str:
    """Only the scheme and host of a redirect's target (the rest is the instance's business)."""
    try:
        parts = urlsplit(location.strip())
        host = f"{parts.hostname}:{parts.port}" if parts.port else parts.hostname
    except ValueError:
        return "another page"
    return f"{parts.scheme}://{host}"[:100] if parts.scheme and host else "another page"


def _all_engines_failed(payload: dict[str, Any]) -> bool:
    return bool(payload.get("unresponsive_engines"))


def _failures(payload: dict[str, Any]) -> str:
    named = []
    for item in payload.get("unresponsive_engines") or []:
        if isinstance(item, list) and item:
            named.append(" ".join(str(part) for part in item[:2])[:60])
    return ", ".join(named[:5]) or "no reason given"
