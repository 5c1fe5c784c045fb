"""Constants, presets and the configuration object: defaults, bounds, precedence."""

from __future__ import annotations

import pytest
from pydantic import ValidationError

from research.core.config import Credentials, ResearchConfig, build_config
from research.core.constants import CONSTANTS, PRESETS
from research.core.errors import ConfigError


def test_every_spec_constant_has_its_default() -> None:
    config = build_config(env={})
    assert config.constants() == {
        "SUBTOPIC_COUNT": 6, "SOURCES_PER_SUBTOPIC": 20, "SEARCHES_PER_SUBTOPIC": 5,
        "REVIEW_CYCLES": 2, "MAX_ROUNDS": 2, "BREADTH": 3, "DEPTH": 2,
        "SOURCE_RELEVANCE_THRESHOLD": 0.6,
        "SOURCE_MAX_AGE_DAYS": 0, "REPORT_MAX_WORDS": 3000, "REQUIRE_CLARIFICATION": False,
        "INCLUDE_ACADEMIC_SOURCES": True, "SEARCH_OTHER_SIDE": True, "MAX_PARALLEL_WORKERS": 4,
        "STEP_TIMEOUT_MS": 120000, "TOTAL_TIMEOUT_MS": 1800000,
    }


@pytest.mark.parametrize(("name", "bad", "bounds"), [
    ("SUBTOPIC_COUNT", 11, "between 3 and 10"),
    ("SUBTOPIC_COUNT", 2, "between 3 and 10"),
    ("SOURCES_PER_SUBTOPIC", 51, "between 5 and 50"),
    ("REVIEW_CYCLES", 6, "between 0 and 5"),
    ("MAX_ROUNDS", 0, "between 1 and 5"),
    ("BREADTH", 11, "between 1 and 10"),
    ("DEPTH", 6, "between 1 and 5"),
    ("SOURCE_RELEVANCE_THRESHOLD", 1.5, "between 0 and 1"),
])
def test_out_of_range_values_name_the_setting_and_bounds(name: str, bad: float, bounds: str) -> None:
    with pytest.raises(ConfigError) as err:
        build_config(env={}, **{name: bad})
    assert name in str(err.value) and bounds in str(err.value)


def test_out_of_range_environment_value_is_refused_too() -> None:
    with pytest.raises(ConfigError, match="SUBTOPIC_COUNT must be between 3 and 10"):
        build_config(env={"DEEP_RESEARCH_SUBTOPIC_COUNT": "42"})


def test_non_numeric_environment_value_is_refused() -> None:
    with pytest.raises(ConfigError, match="REVIEW_CYCLES must be a int"):
        build_config(env={"DEEP_RESEARCH_REVIEW_CYCLES": "many"})


def test_precedence_defaults_env_preset_explicit() -> None:
    env = {"DEEP_RESEARCH_SUBTOPIC_COUNT": "8", "DEEP_RESEARCH_REVIEW_CYCLES": "4"}
    assert build_config(env=env).subtopic_count == 8
    quick = build_config(env=env, preset="quick")
    assert quick.subtopic_count == 3 and quick.review_cycles == 0 and quick.max_rounds == 1
    explicit = build_config(env=env, preset="quick", SUBTOPIC_COUNT=5, review_cycles=None)
    assert explicit.subtopic_count == 5 and explicit.review_cycles == 0


def test_presets_are_within_bounds_and_quick_matches_spec() -> None:
    assert set(PRESETS) == {"quick", "standard", "deep", "exhaustive"}
    for name in PRESETS:
        build_config(env={}, preset=name)
    assert PRESETS["quick"]["SUBTOPIC_COUNT"] == 3 and PRESETS["quick"]["REVIEW_CYCLES"] == 0


def test_unknown_preset_provider_and_setting_are_refused() -> None:
    with pytest.raises(ConfigError, match="Unknown preset"):
        build_config(env={}, preset="turbo")
    with pytest.raises(ConfigError, match="openai, gemini or anthropic"):
        build_config(env={"DEEP_RESEARCH_PROVIDER": "claude"})
    with pytest.raises(ConfigError, match="Unknown search provider"):
        build_config(env={"DEEP_RESEARCH_SEARCH": "tavily,bing"})
    with pytest.raises(ConfigError, match="Unknown setting"):
        build_config(env={}, colour="blue")


def test_config_is_frozen() -> None:
    config = build_config(env={})
    with pytest.raises(ValidationError):
        config.subtopic_count = 9  # type: ignore[misc]


def test_role_models_default_to_the_lead_and_can_be_overridden() -> None:
    env = {"DEEP_RESEARCH_PROVIDER": "gemini", "DEEP_RESEARCH_MODEL": "gemini-2.5-pro",
           "DEEP_RESEARCH_WRITER_MODEL": "gemini-2.5-flash",
           "DEEP_RESEARCH_REVIEWER_PROVIDER": "openai"}
    config = build_config(env=env)
    assert config.role("lead").model == "gemini-2.5-pro"
    assert config.role("worker").model == "gemini-2.5-pro"
    assert config.role("writer").model == "gemini-2.5-flash"
    assert config.role("reviewer").provider == "openai"
    assert config.role("reviewer").model == "gpt-5-mini"


def test_academic_sources_follow_the_switch() -> None:
    env = {"DEEP_RESEARCH_SEARCH": "tavily"}
    assert build_config(env=env).active_search_providers() == ("tavily", "arxiv", "semanticscholar")
    off = build_config(env={**env, "DEEP_RESEARCH_INCLUDE_ACADEMIC_SOURCES": "0"})
    assert off.active_search_providers() == ("tavily",)


def test_keys_never_serialise_with_the_config() -> None:
    creds = Credentials.from_env({"OPENAI_API_KEY": "sk-secret-value-1234567890"})
    config = build_config(env={"OPENAI_API_KEY": "sk-secret-value-1234567890"})
    assert "sk-secret" not in config.model_dump_json()
    assert "sk-secret" not in repr(creds)
    assert creds.get("openai") == "sk-secret-value-1234567890"


def test_every_constant_is_a_config_field() -> None:
    fields = set(ResearchConfig.model_fields)
    assert {c.field for c in CONSTANTS.values()} <= fields
