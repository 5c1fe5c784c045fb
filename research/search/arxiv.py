"""arXiv through its public Atom API (export.arxiv.org/api/query); no key needed.

At most one request every 3 seconds from the whole process (arXiv's terms; see
research.search.pacing)."""

from __future__ import annotations

import re
import xml.etree.ElementTree as ET

from research.core.errors import ProviderError, RateLimited
from research.search import pacing
from research.search._http import http_get
from research.search.base import SearchResult

DEFAULT_BASE_URL = "https://export.arxiv.org"
_ATOM = "{http://www.w3.org/2005/Atom}"
_SPACES = re.compile(r"\s+")
_UNSAFE_XML = re.compile(rb"<!(?:DOCTYPE|ENTITY)", re.IGNORECASE)
_QUERY_NOISE = re.compile(r"[^\w\s\-.]", re.UNICODE)


class ArxivSearch:
    name = "arxiv"
    academic = True

    def __init__(self, base_url: str | None = None, *, pace: float = 1.0,
                 since: str | None = None) -> None:
        self.since = since  # YYYY-MM-DD: only papers submitted since (an update)
        self.base_url = (base_url or DEFAULT_BASE_URL).rstrip("/")
        self.pace = pacing.pacer(self.name, self.base_url, pace, official=DEFAULT_BASE_URL)

    def search(self, query: str, *, max_results: int, timeout: float) -> list[SearchResult]:
        terms = _SPACES.sub(" ", _QUERY_NOISE.sub(" ", query)).strip()
        if not terms:
            return []
        with pacing.turn(self.pace, timeout, "arXiv"):
            try:
                _, body, _ = http_get(
                    f"{self.base_url}/api/query",
                    params={
                        "search_query": f"all:{terms}" + self._dates(),
                        "start": 0,
                        "max_results": max(1, max_results),
                        "sortBy": "relevance",
                    },
                    timeout=timeout,
                    provider=self.name,
                    label="arXiv",
                )
            except RateLimited as exc:
                self.pace.hold(exc.retry_after)
                raise
        return parse_atom(body, self.name)[:max_results]

    def _dates(self) -> str:
        """An update's `submittedDate:[from TO to]` range (YYYYMMDDTTTT, GMT), ANDed with the
        terms: https://info.arxiv.org/help/api/user-manual.html#query_details"""
        if not self.since:
            return ""
        return f" AND submittedDate:[{self.since.replace('-', '')}0000 TO 299912312359]"


def parse_atom(body: bytes, provider: str = "arxiv") -> list[SearchResult]:
    """Entries of an arXiv Atom feed. DTDs and entities are refused (no entity bombs)."""
    if _UNSAFE_XML.search(body):
        raise ProviderError("arXiv sent XML with a DOCTYPE or ENTITY; refused.", provider=provider)
    try:
        root = ET.fromstring(body)
    except ET.ParseError as exc:
        raise ProviderError(f"arXiv sent an unreadable answer ({exc}).", provider=provider) from None
    results: list[SearchResult] = []
    for entry in root.iter(f"{_ATOM}entry"):
        entry_id = _text(entry, "id")
        title = _text(entry, "title")
        summary = _text(entry, "summary")
        if "/api/errors" in entry_id or (title.lower() == "error" and not results):
            raise ProviderError(f"arXiv refused the query: {summary[:200]}", provider=provider)
        url = ""
        for link in entry.iter(f"{_ATOM}link"):
            if link.get("rel", "alternate") == "alternate" and link.get("href"):
                url = link.get("href", "")
                break
        url = url or entry_id
        if not url:
            continue
        published = _text(entry, "published")[:10] or None
        results.append(
            SearchResult(url=url, title=title or url, snippet=summary, provider=provider,
                          published=published)
        )
    return results


def _text(entry: ET.Element, tag: str) -> str:
    node = entry.find(f"{_ATOM}{tag}")
    return _SPACES.sub(" ", node.text or "").strip() if node is not None else ""
