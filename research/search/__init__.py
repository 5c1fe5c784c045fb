"""Search providers behind one seam (`research.search.base.SearchProvider`) and a registry.

To add a provider: write a class with `name`, `academic` and `search(...)`, then add a
builder to `PROVIDERS` (and its name to `research.core.config.SEARCH_PROVIDERS`).
"""

from __future__ import annotations

from collections.abc import Callable

from research.core.config import Credentials, ResearchConfig
from research.core.errors import ConfigError
from research.search.base import SearchProvider, SearchResult


def _tavily(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.tavily import TavilySearch

    key = credentials.get("tavily")
    if not key:
        raise ConfigError(
            "Tavily search needs an API key: set TAVILY_API_KEY, or remove 'tavily' from "
            "DEEP_RESEARCH_SEARCH (the keyless 'web' search needs no key)."
        )
    return TavilySearch(key, base_url=config.tavily_base_url)


def _web(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.web import WebSearch

    return WebSearch()


def _arxiv(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.arxiv import ArxivSearch

    return ArxivSearch(config.arxiv_base_url, pace=config.search_pace)


def _semanticscholar(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.semanticscholar import SemanticScholarSearch

    return SemanticScholarSearch(
        config.semanticscholar_base_url, api_key=credentials.get("semanticscholar"),
        pace=config.search_pace,
    )


def _searxng(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.searxng import SearxngSearch

    return SearxngSearch(config.searxng_base_url or "")


def _brave(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.brave import BraveSearch

    return BraveSearch(_key(credentials, "brave", "Brave Search", "BRAVE_API_KEY"),
                       config.brave_base_url, pace=config.search_pace)


def _exa(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.exa import ExaSearch

    return ExaSearch(_key(credentials, "exa", "Exa", "EXA_API_KEY"), config.exa_base_url)


def _serper(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.serper import SerperSearch

    return SerperSearch(_key(credentials, "serper", "Serper", "SERPER_API_KEY"),
                        config.serper_base_url)


def _key(credentials: Credentials, name: str, label: str, var: str) -> str:
    key = credentials.get(name)
    if not key:
        raise ConfigError(f"{label} needs an API key: set {var}, or remove {name!r} from "
                          "DEEP_RESEARCH_SEARCH (the keyless 'web' search needs no key).")
    return key


def _documents(config: ResearchConfig, credentials: Credentials) -> SearchProvider:
    from research.search.documents import build

    return build(config)


PROVIDERS: dict[str, Callable[[ResearchConfig, Credentials], SearchProvider]] = {
    "tavily": _tavily,
    "web": _web,
    "arxiv": _arxiv,
    "semanticscholar": _semanticscholar,
    "searxng": _searxng,
    "brave": _brave,
    "exa": _exa,
    "serper": _serper,
    "documents": _documents,
}


def build_search_providers(
    config: ResearchConfig, credentials: Credentials
) -> list[SearchProvider]:
    """One provider per name in `config.active_search_providers()`, in that order."""
    providers: list[SearchProvider] = []
    for name in config.active_search_providers():
        builder = PROVIDERS.get(name)
        if builder is None:
            raise ConfigError(
                f"Unknown search provider {name!r}; known providers: {', '.join(PROVIDERS)}."
            )
        providers.append(builder(config, credentials))
    return providers


__all__ = ["PROVIDERS", "SearchProvider", "SearchResult", "build_search_providers"]
