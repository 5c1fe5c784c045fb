"""Exa: a search engine built for AI agents (its own neural index); a key (`x-api-key`).

Request (https://exa.ai/docs/reference/search): `POST https://api.exa.ai/search` with a JSON
body `{"query", "numResults", "type": "auto", "contents": {...}}`. Contents are asked for as
`highlights` only: the passages of each page most relevant to the query, which make the
snippet. The full text (`contents.text`) is not asked for: pages are read by our own fetcher,
under our own URL and size rules, like every other service's results. Each result has `url`,
`title`, `publishedDate` (ISO), `author`, `highlights` and sometimes `score`.

Errors (https://exa.ai/docs/reference/error-codes): 400 a bad request, 401 a missing or invalid
key, 402 no credits left (NO_MORE_CREDITS) or the key's budget spent (API_KEY_BUDGET_EXCEEDED),
403 a feature the key may not use, 429 too many requests (the allowed rate depends on the
account and is not announced in headers, so no pace is kept ahead: a 429 holds every Exa
search of the process for its Retry-After, or a second), 5xx Exa's own trouble.
"""

from __future__ import annotations

from typing import Any

from research.core.errors import AuthError, ProviderError, RateLimited
from research.search import pacing
from research.search._http import http_post_json, json_answer
from research.search.base import SearchResult
from research.search.dates import iso_date

DEFAULT_BASE_URL = "https://api.exa.ai"
LABEL = "Exa"
HIGHLIGHT_CHARS = 600


class ExaSearch:
    name = "exa"
    academic = False

    def __init__(self, api_key: str, base_url: str | None = None) -> None:
        self._api_key = api_key
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.pace = pacing.pacer(self.name, self.base_url)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        if not query.strip():
            return []
        with pacing.turn(self.pace, timeout, LABEL):
            try:
                _, body, _ = http_post_json(
                    f"{self.base_url}/search",
                    {"query": query.strip(), "numResults": max(1, min(100, max_results)),
                     "type": "auto",
                     "contents": {"highlights": {"maxCharacters": HIGHLIGHT_CHARS}}},
                    headers={"x-api-key": self._api_key, "Accept": "application/json"},
                    timeout=timeout, provider=self.name, label=LABEL, secrets=(self._api_key,),
                )
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise
            except AuthError as exc:
                if exc.status == 401:
                    raise AuthError("Exa refused the API key in EXA_API_KEY (HTTP 401)",
                                    provider=self.name, status=401) from None
                raise
        payload = json_answer(body, provider=self.name, label=LABEL)
        rows = payload.get("results")
        if rows is not None and not isinstance(rows, list):
            raise ProviderError("Exa sent results of an unexpected shape.", provider=self.name)
        return [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict) or not isinstance(row.get("url"), str):
        return None
    url = row["url"].strip()
    highlights = row.get("highlights")
    snippet = " … ".join(str(h).strip() for h in highlights if str(h).strip()) if isinstance(
        highlights, list) else ""
    score = row.get("score")
    return SearchResult(
        url=url,
        title=str(row.get("title") or url).strip(),
        snippet=snippet or str(row.get("summary") or "").strip(),
        provider=provider,
        published=iso_date(row.get("publishedDate")),
        score=float(score) if isinstance(score, (int, float)) else None,
    )
