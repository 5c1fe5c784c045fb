"""Serper: Google's results through serper.dev's API; a key (`X-API-KEY`).

Request (its playground, https://serper.dev/playground, shows each request as code; the same
call in langchain's GoogleSerperAPIWrapper, https://reference.langchain.com/python/langchain-community/utilities/google_serper/GoogleSerperAPIWrapper):
`POST https://google.serper.dev/search` with `X-API-KEY: <key>` and a JSON body `{"q", "num"}`
(`num` 10 by default; more than 10 costs two credits, so 20 is asked only when more than 10 are
wanted). The answer's `organic` list holds the web results, each with `title`, `link`,
`snippet`, `position` and sometimes `date` ("Jan 5, 2024" or "3 days ago"); `answerBox`,
`knowledgeGraph`, `peopleAlsoAsk` and `relatedSearches` are Google's boxes, not sources.

Serper publishes no error reference; what it answers: 401/403 {"message": "Unauthorized.",
"statusCode": 403} for a bad key, 400 {"message": "Not enough credits"} when the account's
credits are spent, 429 when the plan's queries per second are exceeded (the number depends on
the plan, https://serper.dev pricing; no header says how long to wait, so a 429 holds every
Serper search of the process for its Retry-After or a second), 5xx Serper's own trouble.
"""

from __future__ import annotations

from typing import Any

from research.core.errors import AuthError, ProviderError, QuotaExhausted, RateLimited
from research.search import pacing
from research.search._http import http_post_json, json_answer
from research.search.base import SearchResult
from research.search.dates import written_date

DEFAULT_BASE_URL = "https://google.serper.dev"
LABEL = "Serper"


class SerperSearch:
    name = "serper"
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
                    {"q": query.strip(), "num": 10 if max_results <= 10 else 20},
                    headers={"X-API-KEY": self._api_key, "Accept": "application/json"},
                    timeout=timeout, provider=self.name, label=LABEL, secrets=(self._api_key,),
                )
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise
            except AuthError as exc:
                raise AuthError(f"Serper refused the API key in SERPER_API_KEY (HTTP {exc.status})",
                                provider=self.name, status=exc.status) from None
            except ProviderError as exc:
                if exc.status == 400 and "credit" in str(exc).lower():
                    raise QuotaExhausted(
                        "Serper's credits for this key are used up. Top up at serper.dev, or "
                        "choose another service.", provider=self.name, status=400) from None
                raise
        payload = json_answer(body, provider=self.name, label=LABEL)
        rows = payload.get("organic")
        return [r for r in (_result(row, self.name) for row in rows or []) if r][:max_results]


def _result(row: Any, provider: str) -> SearchResult | None:
    if not isinstance(row, dict) or not isinstance(row.get("link"), str):
        return None
    url = row["link"].strip()
    return SearchResult(
        url=url,
        title=str(row.get("title") or url).strip(),
        snippet=str(row.get("snippet") or "").strip(),
        provider=provider,
        published=written_date(row.get("date")),
    )
