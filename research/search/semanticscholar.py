"""Semantic Scholar's Graph API paper search; a key (x-api-key) is optional.

At most one request a second from the whole process, with or without a key (see
research.search.pacing)."""

from __future__ import annotations

import json
from typing import Any

from research.core.errors import ProviderError, RateLimited
from research.search import pacing
from research.search._http import http_get
from research.search.base import SearchResult

DEFAULT_BASE_URL = "https://api.semanticscholar.org"
FIELDS = "title,url,abstract,year,publicationDate,openAccessPdf"


class SemanticScholarSearch:
    name = "semanticscholar"
    academic = True

    def __init__(self, base_url: str | None = None, api_key: str | None = None, *,
                 pace: float = 1.0, since: str | None = None) -> None:
        self.since = since  # YYYY-MM-DD: only papers published since (an update)
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self._api_key = api_key
        self.pace = pacing.pacer(self.name, self.base_url, pace, official=DEFAULT_BASE_URL)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        with pacing.turn(self.pace, timeout, "Semantic Scholar"):
            try:
                _, body, _ = http_get(
                    f"{self.base_url}/graph/v1/paper/search",
                    params=self._params(query, max_results),
                    headers={"x-api-key": self._api_key} if self._api_key else None,
                    timeout=timeout,
                    provider=self.name,
                    label="Semantic Scholar",
                    secrets=(self._api_key,) if self._api_key else (),
                )
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise
        try:
            payload = json.loads(body)
        except ValueError:
            raise ProviderError("Semantic Scholar sent an answer that is not JSON.",
                                provider=self.name) from None
        papers = payload.get("data") if isinstance(payload, dict) else None
        return [r for r in (_result(p, self.name) for p in papers or []) if r][:max_results]

    def _params(self, query: str, max_results: int) -> dict[str, str | int]:
        """The search's parameters; an update adds `publicationDateOrYear=<since>:` (an
        open-ended range: https://api.semanticscholar.org/api-docs/graph#tag/Paper-Data/
        operation/get_graph_paper_relevance_search)."""
        params: dict[str, str | int] = {"query": query.strip(),
                                        "limit": max(1, min(100, max_results)), "fields": FIELDS}
        if self.since:
            params["publicationDateOrYear"] = f"{self.since}:"
        return params


def _result(paper: Any, provider: str) -> SearchResult | None:
    if not isinstance(paper, dict):
        return None
    pdf = paper.get("openAccessPdf")
    url = (pdf.get("url") if isinstance(pdf, dict) else None) or paper.get("url")
    if not url:
        return None
    published = paper.get("publicationDate") or (
        f"{paper['year']}-01-01" if paper.get("year") else None
    )
    title = str(paper.get("title") or url).strip()
    return SearchResult(
        url=str(url), title=title, snippet=str(paper.get("abstract") or "").strip(),
        provider=provider, published=str(published)[:10] if published else None,
    )
