""""Test connection" on the Settings page: one tiny real call per provider, in plain words.

A result stays on the page until that provider is tested again, and a model provider whose
test failed with the key now in use keeps Start disabled on the New research form (`failed`),
so a first run cannot walk into a key that is known not to work.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Mapping
from dataclasses import dataclass

from research.core.config import ACADEMIC_PROVIDERS, Credentials, build_config
from research.core.errors import (
    AuthError,
    ProviderTimeout,
    QuotaExhausted,
    RateLimited,
    ResearchError,
    redact,
)
from research.core.retry import RetryPolicy
from research.export.method import PROVIDER_NAMES
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Message
from research.search import build_search_providers

TIMEOUT_S = 20.0
RESULTS = "connection_checks"  # session state: what -> Check, shown until tested again

# What the operating system's network errors mean, in words (the "[Errno -2] ..." of a socket).
_OS_WORDS = (
    (re.compile(r"name or service not known|nodename nor servname|getaddrinfo failed|"
                r"temporary failure in name resolution|no address associated", re.I),
     "the server's name could not be found (check the address, or this computer's network)"),
    (re.compile(r"connection refused", re.I),
     "nothing answers at that address (is the server running, on that port?)"),
    (re.compile(r"network is unreachable|no route to host", re.I),
     "this computer cannot reach the network"),
    (re.compile(r"certificate verify failed|ssl", re.I),
     "the server's security certificate was not accepted"),
    (re.compile(r"timed out|timeout", re.I), f"it did not answer within {TIMEOUT_S:.0f} seconds"),
)
_ERRNO = re.compile(r"\[Errno -?\d+\]\s*")
_SETTING = re.compile(r"\b[A-Z][A-Z_]*_API_KEY\b")


@dataclass(frozen=True)
class Check:
    ok: bool
    message: str
    key: str  # fingerprint of the key and address it was made with (never the key itself)


def display_name(name: str) -> str:
    return PROVIDER_NAMES.get(name, name)


def fingerprint(name: str, env: Mapping[str, str]) -> str:
    """A one-way fingerprint of what a test of `name` used: a changed key or address makes
    an earlier result stale."""
    upper = name.upper().replace("SEMANTICSCHOLAR", "SEMANTIC_SCHOLAR")
    used = "\n".join(env.get(f"{upper}_{part}", "") for part in ("API_KEY", "BASE_URL"))
    return hashlib.sha256(used.encode()).hexdigest()[:16]


def failed(results: Mapping[str, Check], env: Mapping[str, str]) -> dict[str, str]:
    """Providers whose last test failed with the key and address in use now: their message."""
    return {name: r.message for name, r in results.items()
            if not r.ok and r.key == fingerprint(name, env)}


def plain(exc: ResearchError, name: str, secrets: list[str]) -> str:
    """Why a test failed, in words: the cause and what to do, not the socket's error text."""
    who = display_name(name)
    if isinstance(exc, AuthError):
        setting = _SETTING.search(str(exc))
        where = f" ({setting.group(0)})" if setting else ""
        return (f"{who} refused the key: check it above{where}; it may be mistyped, revoked, "
                "or for another account.")
    if isinstance(exc, QuotaExhausted):
        return f"{who} accepted the key, but the account's quota or credit is used up."
    if isinstance(exc, RateLimited):
        return f"{who} is limiting requests right now: the key works; try again in a minute."
    text = redact(str(exc), secrets)
    for pattern, words in _OS_WORDS:
        if pattern.search(text):
            return f"Could not reach {who}: {words}."
    if isinstance(exc, ProviderTimeout):
        return f"Could not reach {who}: it did not answer within {TIMEOUT_S:.0f} seconds."
    return _ERRNO.sub("", text)


def check_llm(provider: str, model: str, env: Mapping[str, str]) -> tuple[bool, str]:
    credentials = Credentials.from_env(env)
    try:
        config = build_config(env=env, provider=provider, model=model, role_models={})
        llm = RoleLLM(build_llm(provider, model, config, credentials), "lead", UsageMeter(),
                      policy=RetryPolicy(attempts=1), call_timeout=TIMEOUT_S)
        llm.text([Message("user", "Connection check: reply with the single word OK.")])
    except ResearchError as exc:
        return False, plain(exc, provider, credentials.secrets())
    except Exception:  # noqa: BLE001 - reported in plain words
        return False, (f"Could not reach {display_name(provider)}: something unexpected went "
                       "wrong; check the address and the key.")
    return True, f"{display_name(provider)} works: {model} answered."


def check_search(name: str, env: Mapping[str, str]) -> tuple[bool, str]:
    credentials = Credentials.from_env(env)
    try:
        config = build_config(env=env, search_providers=(name,),
                              INCLUDE_ACADEMIC_SOURCES=name in ACADEMIC_PROVIDERS)
        providers = build_search_providers(config, credentials)
        results = providers[0].search("renewable energy", max_results=1, timeout=TIMEOUT_S)
    except ResearchError as exc:
        return False, plain(exc, name, credentials.secrets())
    except Exception:  # noqa: BLE001 - reported in plain words
        return False, (f"Could not reach {display_name(name)}: something unexpected went "
                       "wrong; check the address and the key.")
    if not results:
        return True, f"{display_name(name)} answered but found nothing for a test query."
    return True, f"{display_name(name)} works: found “{results[0].title[:80]}”."
