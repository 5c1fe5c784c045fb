"""The New research form's values: where they start and how they become a ResearchConfig.

Start values, lowest to highest: the constants table, `DEEP_RESEARCH_<NAME>` settings, the
defaults saved on the Settings page, the chosen preset, and (for "Run again") the settings of
an earlier run. The form passes every constant explicitly to `build_config`, which validates
bounds and names the one that is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from research.core.config import (
    ACADEMIC_PROVIDERS,
    DEFAULT_MODELS,
    ENGINES,
    ROLES,
    SEARCH_PROVIDERS,
    Credentials,
    ResearchConfig,
    build_config,
)
from research.core.constants import CONSTANTS, DEFAULTS, PRESETS
from research.core.errors import ConfigError
from research.documents.choice import MIXES, Mix, with_sources

SLIDERS = ("SUBTOPIC_COUNT", "SOURCES_PER_SUBTOPIC", "REVIEW_CYCLES")
CHECKBOXES = ("REQUIRE_CLARIFICATION",)  # shown as "Ask me clarifying questions first"
# INCLUDE_ACADEMIC_SOURCES is not a separate toggle: the "Search providers" list shows every
# provider the run will use, academic ones included, and the constant follows that list.
FROM_SEARCH_LIST = ("INCLUDE_ACADEMIC_SOURCES",)
# BREADTH and DEPTH shape only the breadth x depth schedule: shown when it is chosen.
SCHEDULE_SLIDERS = ("BREADTH", "DEPTH")
ADVANCED = tuple(name for name in CONSTANTS
                 if name not in SLIDERS + CHECKBOXES + FROM_SEARCH_LIST + SCHEDULE_SLIDERS)
SAME_AS_LEAD = "same as lead"

ENGINE_LABELS = {
    "pipeline": "Multi-agent research (built in)",
    "openai-deep-research": "OpenAI deep research (hosted)",
    "gemini-deep-research": "Gemini Deep Research (hosted)",
    "all": "All engines side by side",
}
ENGINE_HELP = {
    "pipeline": "Our own research team plans, searches, reads and writes; every step is visible "
                "and checked here.",
    "openai-deep-research": "Hands the question to OpenAI's deep-research model, which works on "
                            "OpenAI's servers; its report and sources come back here.",
    "gemini-deep-research": "Hands the question to Google's Gemini Deep Research agent, which "
                            "works on Google's servers; its report and sources come back here.",
    "all": "Runs the built-in team and every hosted engine at once, so you can compare their "
           "reports side by side (costs add up).",
}
# A few of each provider's current models, named on the form beside the model's field (any
# other model the provider serves may be typed; prices: research/llm/pricing.py).
MODEL_EXAMPLES = {"openai": "gpt-5-mini, gpt-5, gpt-4.1",
                  "gemini": "gemini-2.5-flash, gemini-2.5-pro",
                  "anthropic": "claude-haiku-4-5, claude-sonnet-5-5, claude-opus-5-5"}
# Which credential each hosted engine needs (research/phases/start/preflight.py checks the same).
ENGINE_NEEDS = {"openai-deep-research": ("openai",), "gemini-deep-research": ("gemini",),
                "all": ("openai", "gemini")}

LANGUAGES = ("English", "German", "French", "Spanish", "Italian", "Portuguese", "Dutch", "Polish",
             "Swedish", "Turkish", "Russian", "Ukrainian", "Arabic", "Hindi", "Chinese",
             "Japanese", "Korean", "Indonesian")
OTHER_LANGUAGE = "Other…"
SCHEDULES = {"rounds": "Rounds (follow-up questions, until nothing new remains)",
             "breadth_depth": "Breadth × depth (new subtopics halve at each level)"}


def available_engines(credentials: Credentials) -> list[str]:
    """The engines whose keys are configured; the built-in pipeline is always offered."""
    return [e for e in ENGINES if all(credentials.get(n) for n in ENGINE_NEEDS.get(e, ()))]


def env_config(env: Mapping[str, str]) -> tuple[ResearchConfig | None, str | None]:
    """The configuration the environment alone describes, or the reason it is invalid."""
    try:
        return build_config(env=env), None
    except ConfigError as exc:
        return None, str(exc)


def constant_values(env: Mapping[str, str], saved: Mapping[str, Any], preset: str) -> dict[str, Any]:
    config, _ = env_config(env)
    values = dict(config.constants()) if config else dict(DEFAULTS)
    values.update(saved)
    values.update(PRESETS.get(preset, {}))
    return values


def default_search(config: ResearchConfig | None) -> list[str]:
    """The providers a run with these settings will search: the form starts with exactly
    those, so nothing is used that the person cannot see (academic ones included)."""
    if config is not None:
        return list(config.active_search_providers())
    return ["web", *ACADEMIC_PROVIDERS] if DEFAULTS["INCLUDE_ACADEMIC_SOURCES"] else ["web"]


def search_of(config: Mapping[str, Any]) -> list[str]:
    """The providers a stored run's config searched (its chosen list plus academic defaults)."""
    chosen = [s for s in config.get("search_providers") or [] if s in SEARCH_PROVIDERS]
    if not chosen:
        return []
    academic = [s for s in chosen if s in ACADEMIC_PROVIDERS]
    if config.get("include_academic_sources", DEFAULTS["INCLUDE_ACADEMIC_SOURCES"]) and not academic:
        academic = list(ACADEMIC_PROVIDERS)
    elif not config.get("include_academic_sources", DEFAULTS["INCLUDE_ACADEMIC_SOURCES"]):
        academic = []
    return [s for s in chosen if s not in ACADEMIC_PROVIDERS] + academic


def run_form_values(config: Mapping[str, Any], question: str = "") -> dict[str, Any]:
    """An earlier run's stored settings (`Run.config`, or a ResearchConfig's dump) in form
    terms ("Run again"); older runs may lack a key."""
    values: dict[str, Any] = {name: config[c.field] for name, c in CONSTANTS.items() if c.field in config}
    return {
        "question": question,
        "preset": config.get("preset") if config.get("preset") in PRESETS else "standard",
        "constants": values,
        "provider": config.get("provider"),
        "model": config.get("model"),
        "role_models": config.get("role_models") or {},
        "search": search_of(config),
        "engine": config.get("engine") if config.get("engine") in ENGINES else "pipeline",
        "report_language": config.get("report_language") or "English",
        "max_cost_usd": float(config.get("max_cost_usd") or 0.0),
        "max_tokens": int(config.get("max_tokens") or 0),
        "max_sources": int(config.get("max_sources") or 0),
        "review_plan": bool(config.get("review_plan")),
        "schedule": config.get("schedule") if config.get("schedule") in SCHEDULES else "rounds",
        "source_mix": _mix(config),
        "doc_collection": str(config.get("document_collection") or ""),
        "doc_ids": [str(d) for d in config.get("document_ids") or []],
        "done_when": str(config.get("done_when") or ""),
        "want": str(config.get("want") or ""),
        "steer": bool(config.get("steer")),
    }


def _mix(config: Mapping[str, Any]) -> str:
    """"web", "documents" or "both": what a stored run's config read."""
    providers = list(config.get("search_providers") or [])
    if "documents" not in providers:
        return "web"
    return "both" if any(p != "documents" for p in providers) else "documents"


def build_form_config(
    env: Mapping[str, str], *, preset: str, constants: Mapping[str, Any], provider: str, model: str,
    role_models: Mapping[str, tuple[str, str]], search: list[str],
    extra: Mapping[str, Any] | None = None, mix: str = "web", collection: str = "",
    document_ids: Sequence[str] = (),
) -> ResearchConfig:
    """Raises ConfigError with a plain-words message naming the setting that is wrong.

    `extra` carries the run options that are not SPEC constants: engine, report_language,
    max_cost_usd, max_tokens, max_sources, review_plan, schedule, done_when, want. `mix` says
    whether the run reads the web, the person's documents (`collection`, or all of them) or both.
    """
    if mix not in MIXES:
        raise ConfigError(f"Unknown source choice {mix!r}.")
    if not search and mix != "documents":
        raise ConfigError("Choose at least one search provider.")
    roles: dict[str, dict[str, str]] = {}
    for role, (role_provider, role_model) in role_models.items():
        if role not in ROLES or role == "lead":
            continue
        if role_provider == SAME_AS_LEAD and not role_model.strip():
            continue
        chosen = provider if role_provider == SAME_AS_LEAD else role_provider
        roles[role] = {"provider": chosen,
                       "model": role_model.strip() or (model if chosen == provider else DEFAULT_MODELS[chosen])}
    overrides: dict[str, Any] = dict(constants)
    overrides["INCLUDE_ACADEMIC_SOURCES"] = any(s in ACADEMIC_PROVIDERS for s in search)
    config = build_config(
        env=env, preset=preset, **overrides, provider=provider,
        model=model.strip() or DEFAULT_MODELS.get(provider, ""), role_models=roles,
        search_providers=tuple(search) or ("web",), **dict(extra or {}),
    )
    chosen: Mix = "documents" if mix == "documents" else "both" if mix == "both" else "web"
    return with_sources(config, chosen, collection=collection, document_ids=document_ids)
