"""Tavily web search through `tavily-python` (one request per call, no SDK retries).

tavily-python turns HTTP statuses into its own exceptions and drops the response; a
response hook on our own `requests.Session` keeps the status and Retry-After so that a
rate limit (429) and a used-up plan (432/433) are told apart. A 429 holds every Tavily
search of the process for the time it names (research.search.pacing; Tavily sets no pace).
The session sends through the search APIs' own client (research.search._http), whose
deadline bounds the whole answer: requests' timeout bounds each read only.
"""

from __future__ import annotations

from typing import Any

import requests
from tavily import TavilyClient
from tavily import errors as tavily_errors

from research.core.errors import (
    AuthError,
    ProviderError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    redact,
)
from research.core.retry import parse_retry_after
from research.llm.deadline import run_with_deadline
from research.search import pacing
from research.search._http import DeadlineAdapter
from research.search.base import SearchResult
from research.search.dates import iso_date

DEFAULT_BASE_URL = "https://api.tavily.com"

_QUOTA_WORDS = ("plan", "credit", "upgrade", "pay-as-you-go", "paygo", "billing")


class TavilySearch:
    name = "tavily"
    academic = False

    def __init__(self, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        self.base_url = base_url.rstrip("/") if base_url else None
        self.pace = pacing.pacer(self.name, self.base_url or DEFAULT_BASE_URL)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        # The request ends at its own deadline (the session's adapter); this outer limit also
        # covers what happens before it is sent (DNS look-ups have no timeout of their own).
        with pacing.turn(self.pace, timeout, "Tavily"):
            try:
                return run_with_deadline(
                    lambda: self._search(query, max_results, timeout), timeout + 1.0, "Tavily search"
                )
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise

    def _search(self, query: str, max_results: int, timeout: float) -> list[SearchResult]:
        seen: list[requests.Response] = []
        session = requests.Session()
        session.mount("https://", DeadlineAdapter())  # a deadline on the whole answer
        session.mount("http://", DeadlineAdapter())
        session.hooks["response"].append(lambda response, *args, **kwargs: seen.append(response))
        client = TavilyClient(api_key=self._api_key, api_base_url=self.base_url, session=session)
        try:
            payload = client.search(
                query, max_results=max(1, min(20, max_results)), timeout=timeout,
                search_depth="basic", include_raw_content=False,
            )
        except Exception as exc:  # noqa: BLE001 - every SDK failure is mapped below
            raise self._map_error(exc, seen[-1] if seen else None) from None
        finally:
            client.close()
            session.close()
        rows = payload.get("results") if isinstance(payload, dict) else None
        return [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]

    def _map_error(self, exc: Exception, response: requests.Response | None) -> ProviderError:
        status = response.status_code if response is not None else None
        detail = redact(str(exc), [self._api_key])[:300]
        suffix = f": {detail}" if detail else "."
        if isinstance(exc, (tavily_errors.TimeoutError, requests.Timeout)):
            return ProviderTimeout("Tavily did not answer in time.", provider=self.name)
        if isinstance(exc, tavily_errors.UsageLimitExceededError) or status == 429:
            if status == 429 and not any(w in detail.lower() for w in _QUOTA_WORDS):
                retry_after = parse_retry_after(
                    response.headers.get("retry-after") if response is not None else None
                )
                return RateLimited(f"Tavily is rate limiting requests{suffix}",
                                   provider=self.name, retry_after=retry_after)
            return QuotaExhausted(f"Tavily's usage limit for this key is reached{suffix}",
                                  provider=self.name, status=status)
        if isinstance(exc, tavily_errors.ForbiddenError) and status in (432, 433):
            return QuotaExhausted(
                f"Tavily's plan or pay-as-you-go limit is reached (HTTP {status}){suffix}",
                provider=self.name, status=status,
            )
        if isinstance(exc, (tavily_errors.InvalidAPIKeyError, tavily_errors.MissingAPIKeyError,
                            tavily_errors.ForbiddenError)):
            return AuthError(f"Tavily refused the API key (HTTP {status}){suffix} "
                             "Check TAVILY_API_KEY.", provider=self.name, status=status)
        if isinstance(exc, tavily_errors.BadRequestError):
            return ProviderError(f"Tavily rejected the query{suffix}", provider=self.name,
                                 status=400)
        if isinstance(exc, requests.HTTPError) and status is not None:
            return ProviderError(f"Tavily failed with HTTP {status}.", provider=self.name,
                                 status=status)
        if isinstance(exc, requests.RequestException):
            return ProviderError(f"Could not reach Tavily: {exc.__class__.__name__}.",
                                 provider=self.name)
        return ProviderError(f"Tavily search failed{suffix}", provider=self.name, status=status)


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict) or not row.get("url"):
        return None
    score = row.get("score")
    raw = row.get("raw_content")
    return SearchResult(
        url=str(row["url"]),
        title=str(row.get("title") or row["url"]).strip(),
        snippet=str(row.get("content") or "").strip(),
        provider=provider,
        published=iso_date(row.get("published_date")),
        content=str(raw) if raw else None,
        score=float(score) if isinstance(score, (int, float)) else None,
    )
