"""Keyless web search through the `ddgs` metasearch package."""

from __future__ import annotations

from typing import Any

from ddgs import DDGS
from ddgs.exceptions import DDGSException, RatelimitException, TimeoutException

from research.core.errors import ProviderError, ProviderTimeout, RateLimited
from research.search.base import SearchResult
from research.search.dates import span_since


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
                query, max_results=max_results, timelimit=span_since(self.since))
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
