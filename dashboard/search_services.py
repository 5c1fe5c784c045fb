"""The search services that need a key or an address (issue 37.2), in the dashboard's words.

The New research form lists the four built-in services always, and SearXNG, Brave Search, Exa
and Serper once they can work (a key, or for SearXNG the instance's address, in Settings or
the environment), plus any an earlier run or the saved settings already chose, so nothing
chosen is hidden. Settings lists them all, each with its "Test" button.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping

from dashboard.readiness import search_usable
from research.core.config import SEARCH_PROVIDERS
from research.untrusted.own_service import own_service_problem

OPTIONAL = ("searxng", "brave", "exa", "serper")
NEEDS = {"searxng": "its address", "brave": "a key", "exa": "a key", "serper": "a key"}
WHERE = {
    "searxng": "Your own SearXNG instance (e.g. http://localhost:8888); its settings.yml must "
               "list json under search: formats.",
    "brave": "A Brave Search API key from https://api-dashboard.search.brave.com (the free plan "
             "allows one search a second).",
    "exa": "An Exa API key from https://dashboard.exa.ai/api-keys.",
    "serper": "A Serper key from https://serper.dev (Google's results).",
}


def options(env: Mapping[str, str], chosen: Iterable[str] = ()) -> list[str]:
    """The services the New research form offers, in the registry's order."""
    keep = set(chosen)
    return [name for name in SEARCH_PROVIDERS
            if name not in OPTIONAL or name in keep or search_usable(env, [name])]


def missing(name: str, env: Mapping[str, str]) -> str | None:
    """What a service still needs before it can work ('a key'), or None."""
    return None if search_usable(env, [name]) else NEEDS.get(name, "a key")


def address_problem(url: str) -> str | None:
    """Why a SearXNG address typed in Settings cannot be used, in plain words (None: it can)."""
    url = url.strip()
    if not url:
        return None
    problem = own_service_problem(url.rstrip("/"))
    return f"The SearXNG address cannot be used: {problem}." if problem else None
