""""Test connection" on the Settings page: one tiny real call per provider, in plain words."""

from __future__ import annotations

from collections.abc import Mapping

from research.core.config import ACADEMIC_PROVIDERS, Credentials, build_config
from research.core.errors import ResearchError, redact
from research.core.retry import RetryPolicy
from research.llm import build_llm
from research.llm.base import RoleLLM
from research.llm.budget import UsageMeter
from research.llm.messages import Message
from research.search import build_search_providers

TIMEOUT_S = 20.0


def check_llm(provider: str, model: str, env: Mapping[str, str]) -> tuple[bool, str]:
    credentials = Credentials.from_env(env)
    try:
        config = build_config(env=env, provider=provider, model=model, role_models={})
        llm = RoleLLM(build_llm(provider, model, config, credentials), "lead", UsageMeter(),
                      policy=RetryPolicy(attempts=1), call_timeout=TIMEOUT_S)
        answer = llm.text([Message("user", "Connection check: reply with the single word OK.")])
    except ResearchError as exc:
        return False, redact(str(exc), credentials.secrets())
    except Exception as exc:  # noqa: BLE001 - reported in plain words
        return False, f"Unexpected problem ({exc.__class__.__name__}); check the address and key."
    return True, f"{provider}/{model} answered ({len(answer)} characters)."


def check_search(name: str, env: Mapping[str, str]) -> tuple[bool, str]:
    credentials = Credentials.from_env(env)
    try:
        config = build_config(env=env, search_providers=(name,),
                              INCLUDE_ACADEMIC_SOURCES=name in ACADEMIC_PROVIDERS)
        providers = build_search_providers(config, credentials)
        results = providers[0].search("renewable energy", max_results=1, timeout=TIMEOUT_S)
    except ResearchError as exc:
        return False, redact(str(exc), credentials.secrets())
    except Exception as exc:  # noqa: BLE001 - reported in plain words
        return False, f"Unexpected problem ({exc.__class__.__name__})."
    if not results:
        return True, f"{name} answered but found nothing for a test query."
    return True, f"{name} works: found “{results[0].title[:80]}”."
