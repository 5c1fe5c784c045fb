"""Can a run start? Plain-words reasons (no setting names) and the runs that want attention.

The New research page disables Start until a model and at least one search service are usable,
and says why in words a newcomer understands; it also greets a returning person with the runs
still working or waiting for an answer (they go on when the browser tab is closed).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from research.core.records import Run
from research.export.method import PROVIDER_NAMES
from storage import Store

KEYED_SEARCH = {"tavily": ("TAVILY_API_KEY",), "brave": ("BRAVE_API_KEY",),
                "exa": ("EXA_API_KEY",), "serper": ("SERPER_API_KEY",),
                "searxng": ("SEARXNG_BASE_URL",)}  # SearXNG: no key, the instance's address
KEY_EXPLAINED = (
    "An API key is a long secret code that lets this app use a company's AI models on your "
    "account; you pay that company only for what your runs use. Create one on the OpenAI, "
    "Google AI Studio or Claude Console website, then paste it on the Settings page (a free search service is "
    "already included)."
)
ATTENTION = ("running", "paused", "queued", "waiting")


def search_usable(env: Mapping[str, str], chosen: Iterable[str]) -> list[str]:
    """The chosen search services that can work now (a key where one is needed)."""
    return [name for name in chosen
            if all((env.get(var) or "").strip() for var in KEYED_SEARCH.get(name, ()))]


def blockers(env: Mapping[str, str], *, provider: str, configured: Iterable[str],
             search: Iterable[str]) -> list[str]:
    """Why Start is disabled, in plain words ([] when a run can start)."""
    reasons = []
    if provider not in set(configured):
        reasons.append(f"{PROVIDER_NAMES.get(provider, provider)} has no key yet: add one on the "
                       "Settings page, or choose a model provider that has one.")
    chosen = list(search)
    if not search_usable(env, chosen):
        reasons.append("No search service that can work is chosen: pick at least one under "
                       "\u201cSearch services\u201d (web search needs no key).")
    return reasons


def search_label(name: str, env: Mapping[str, str]) -> str:
    """'Tavily (needs a key)' / 'SearXNG (needs its address)' / 'DuckDuckGo web search'."""
    label = PROVIDER_NAMES.get(name, name)
    needs = "its address" if name == "searxng" else "a key"
    return label + ("" if search_usable(env, [name]) else f" (needs {needs})")


def runs_wanting_attention(store: Store, limit: int = 5, *,
                           person: str | None = None) -> list[Run]:
    """Runs (of `person`; None: anyone's) still working, paused or waiting for an answer,
    newest first."""
    found: list[Run] = []
    for status in ATTENTION:
        found += store.list_runs(status=status, limit=limit, person=person)
    found.sort(key=lambda r: r.created_at, reverse=True)
    return found[:limit]
