"""The New research form's values: where they start and how they become a ResearchConfig.

Start values, lowest to highest: the constants table, `DEEP_RESEARCH_<NAME>` settings, the
defaults saved on the Settings page, the chosen preset, and (for "Run again") the settings of
an earlier run. The form passes every constant explicitly to `build_config`, which validates
bounds and names the one that is wrong.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from research.config import DEFAULT_MODELS, ROLES, SEARCH_PROVIDERS, ResearchConfig, build_config
from research.constants import CONSTANTS, DEFAULTS, PRESETS
from research.errors import ConfigError

SLIDERS = ("SUBTOPIC_COUNT", "SOURCES_PER_SUBTOPIC", "REVIEW_CYCLES")
ADVANCED = tuple(name for name in CONSTANTS if name not in SLIDERS)
SAME_AS_LEAD = "same as lead"


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


def run_form_values(run: Mapping[str, Any]) -> dict[str, Any]:
    """An earlier run's settings in form terms ("Run again")."""
    config = run.get("config") or {}
    values: dict[str, Any] = {name: config[c.field] for name, c in CONSTANTS.items() if c.field in config}
    return {
        "question": run.get("question") or "",
        "preset": config.get("preset") if config.get("preset") in PRESETS else "standard",
        "constants": values,
        "provider": config.get("provider"),
        "model": config.get("model"),
        "role_models": config.get("role_models") or {},
        "search": [s for s in config.get("search_providers") or [] if s in SEARCH_PROVIDERS],
    }


def build_form_config(
    env: Mapping[str, str], *, preset: str, constants: Mapping[str, Any], provider: str, model: str,
    role_models: Mapping[str, tuple[str, str]], search: list[str],
) -> ResearchConfig:
    """Raises ConfigError with a plain-words message naming the setting that is wrong."""
    if not search:
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
    return build_config(
        env=env, preset=preset, **overrides, provider=provider,
        model=model.strip() or DEFAULT_MODELS.get(provider, ""), role_models=roles,
        search_providers=tuple(search),
    )
