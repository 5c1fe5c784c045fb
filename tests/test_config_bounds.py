"""Every setting from every source is checked against its bounds; NaN and infinities are refused."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
from streamlit.testing.v1 import AppTest

from dashboard.settings_files import SettingsFileError, load_defaults, save_defaults
from research.core.config import build_config
from research.core.constants import CONSTANTS, PRESETS, bound_problem
from research.core.errors import ConfigError
from tests.cli_helpers import RunCli
from tests.dashboard_fixtures import APP, dash_env_fixture  # noqa: F401 - fixture


@pytest.mark.parametrize("raw", ["nan", "NaN", "inf", "-inf", "1e999"])
def test_nan_and_infinity_in_the_environment_are_refused_naming_the_bounds(raw: str) -> None:
    env = {"DEEP_RESEARCH_SOURCE_RELEVANCE_THRESHOLD": raw}
    with pytest.raises(ConfigError) as caught:
        build_config(env=env)
    message = str(caught.value)
    assert "SOURCE_RELEVANCE_THRESHOLD" in message and "between 0 and 1" in message


@pytest.mark.parametrize("value", [math.nan, math.inf, -math.inf])
def test_nan_from_a_widget_or_flag_is_refused(value: float) -> None:
    with pytest.raises(ConfigError, match="SOURCE_RELEVANCE_THRESHOLD must be a number between 0 and 1"):
        build_config(env={}, SOURCE_RELEVANCE_THRESHOLD=value)
    with pytest.raises(ConfigError, match="max_cost_usd|cost cap"):
        build_config(env={}, max_cost_usd=value)


@pytest.mark.parametrize("preset", list(PRESETS))
def test_an_out_of_range_environment_value_is_refused_even_when_a_preset_overrides_it(preset: str) -> None:
    with pytest.raises(ConfigError) as caught:
        build_config(env={"DEEP_RESEARCH_SUBTOPIC_COUNT": "1000"}, preset=preset)
    assert str(caught.value) == ("SUBTOPIC_COUNT must be between 3 and 10 (got 1000) in the "
                                 "environment (DEEP_RESEARCH_SUBTOPIC_COUNT).")


def test_every_preset_value_is_within_its_bounds() -> None:
    for values in PRESETS.values():
        for name, value in values.items():
            assert bound_problem(name, value) is None, (name, value)
    assert bound_problem("SUBTOPIC_COUNT", 3.5) is not None
    assert bound_problem("REQUIRE_CLARIFICATION", "yes") is not None
    assert all(bound_problem(n, c.default) is None for n, c in CONSTANTS.items())


def test_cli_refuses_nan_threshold_and_a_big_count_under_a_preset(run_cli: RunCli, tmp_path: Path) -> None:
    nan = run_cli(["question"], {"DEEP_RESEARCH_DB": str(tmp_path / "x.db"),
                              "DEEP_RESEARCH_SOURCE_RELEVANCE_THRESHOLD": "nan"}, tmp_path)
    assert nan.returncode == 2 and "SOURCE_RELEVANCE_THRESHOLD" in nan.stderr
    assert "between 0 and 1" in nan.stderr and "Traceback" not in nan.stderr
    big = run_cli(["question", "--preset", "quick"],
               {"DEEP_RESEARCH_DB": str(tmp_path / "x.db"), "DEEP_RESEARCH_SUBTOPIC_COUNT": "1000"},
               tmp_path)
    assert big.returncode == 2 and "SUBTOPIC_COUNT must be between 3 and 10" in big.stderr


def test_saved_defaults_refuse_nan_and_ignore_it_in_the_file(tmp_path: Path) -> None:
    path = tmp_path / "defaults.json"
    with pytest.raises(SettingsFileError, match="SOURCE_RELEVANCE_THRESHOLD must be a number between 0 and 1"):
        save_defaults({"SOURCE_RELEVANCE_THRESHOLD": math.nan}, path)
    path.write_text('{"SOURCE_RELEVANCE_THRESHOLD": NaN, "SUBTOPIC_COUNT": Infinity, "REVIEW_CYCLES": 1}')
    assert load_defaults(path) == {"REVIEW_CYCLES": 1}
    assert json.loads(path.read_text())["REVIEW_CYCLES"] == 1


@pytest.mark.usefixtures("dash_env")
def test_dashboard_form_never_shows_nan_and_names_the_bad_setting(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("DEEP_RESEARCH_SOURCE_RELEVANCE_THRESHOLD", "nan")
    at = AppTest.from_file(APP, default_timeout=30).run()
    assert not at.exception
    warnings = " ".join(w.value for w in at.warning)
    assert "SOURCE_RELEVANCE_THRESHOLD" in warnings and "between 0 and 1" in warnings
    numbers = [w.value for w in (*at.slider, *at.number_input) if isinstance(w.value, float)]
    assert numbers and not any(math.isnan(v) for v in numbers)
