"""The search seam: a provider turns a query into results. Nothing more."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol


@dataclass(frozen=True)
class SearchResult:
    url: str
    title: str
    snippet: str
    provider: str
    published: str | None = None   # ISO date (YYYY-MM-DD) when the provider knows it
    content: str | None = None     # full text when the provider already returns it
    score: float | None = None     # the provider's own ranking score, if any
    in_hand: bool = False          # `content` is the source itself: read it, fetch nothing


class SearchProvider(Protocol):
    """One search backend. `search` makes one attempt and raises ProviderError on failure."""

    name: str
    academic: bool

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]: ...
