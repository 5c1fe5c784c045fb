"""Keyless web search through the `ddgs` metasearch package."""

from __future__ import annotations

from datetime import date
from typing import Any

from ddgs import DDGS
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from research.core.errors import ProviderError, ProviderTimeout, RateLimited
from research.search.base import SearchResult


class WebSearch:
    name = "web"
    academic = False

    def __init__(self, *, since: str | None = None) -> None:
        self.since = since  # YYYY-MM-DD: only what was published since (an update)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        try:
            rows = DDGS(timeout=max(1, int(timeout))).text(
                query, max_results=max_results, timelimit=timelimit(self.since))
        except RatelimitException as exc:
            raise RateLimited(f"Web search is rate limiting requests ({_short(exc)}).",
                              provider=self.name) from None
        except TimeoutException:
            raise ProviderTimeout("Web search did not answer in time.",
                                  provider=self.name) from None
        except DDGSException as exc:
            if "no results" in str(exc).lower():
                return []
            raise ProviderError(f"Web search failed: {_short(exc)}", provider=self.name) from None
        return [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]


def timelimit(since: str | None) -> str | None:
    """ddgs's coarse `timelimit` ("d", "w", "m", "y") that covers the days since `since`
    (the search engines behind it take no exact date); None: no limit."""
    if not since:
        return None
    try:
        days = (date.today() - date.fromisoformat(since)).days
    except ValueError:
        return None
    for limit, span in (("d", 1), ("w", 7), ("m", 31), ("y", 366)):
        if days < span:
            return limit
    return None


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict):
        return None
    url = row.get("href") or row.get("url")
    if not url:
        return None
    return SearchResult(url=str(url), title=str(row.get("title") or url).strip(),
                        snippet=str(row.get("body") or "").strip(), provider=provider)


def _short(exc: BaseException) -> str:
    return (str(exc) or exc.__class__.__name__)[:200]
