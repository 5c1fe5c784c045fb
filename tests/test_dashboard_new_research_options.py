"""New research: engine choice, report language, budget caps against the estimate, the two
pauses, the research schedule, and building on a similar earlier run."""

from __future__ import annotations

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import form
from dashboard.estimate import estimate
from research.core.config import Credentials, build_config
from research.llm.pricing import PriceTable
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    finished_run,
)

OPENAI_KEY = "sk-test-0123456789abcdef"


def _page() -> AppTest:
    return AppTest.from_file(APP, default_timeout=30).run()


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _start(at: AppTest, question: str = "How fast is wind power growing offshore?") -> AppTest:
    at.text_area(key="question").input(question).run()
    _button(at, "Start research").click().run()
    assert not [e.value for e in at.error], [e.value for e in at.error]
    return at


def test_only_engines_whose_keys_are_set_are_offered_each_explained(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    at = _page()
    assert at.selectbox(key="engine").options == ["Multi-agent research (built in)"]
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    at = _page()
    assert at.selectbox(key="engine").options == ["Multi-agent research (built in)",
                                                  "OpenAI deep research (hosted)"]
    monkeypatch.setenv("GEMINI_API_KEY", "gm-test-0123456789abcdef")
    at = _page()
    assert len(at.selectbox(key="engine").options) == 4
    at.selectbox(key="engine").select("gemini-deep-research").run()
    assert any("Gemini Deep Research agent" in c.value for c in at.caption)
    assert any("no estimate" in i.value for i in at.info)  # a hosted engine sizes its own work


def test_engine_choice_follows_the_configured_keys() -> None:
    assert form.available_engines(Credentials()) == ["pipeline"]
    both = Credentials.from_env({"OPENAI_API_KEY": "a", "GEMINI_API_KEY": "b"})
    assert form.available_engines(both) == ["pipeline", "openai-deep-research",
                                            "gemini-deep-research", "all"]


def test_the_estimate_shows_the_cost_cap_and_warns_when_it_is_exceeded(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)  # the estimate needs a usable model
    at = _page()
    at.selectbox(key="preset").select("standard").run()
    guess = estimate(build_config(env={}, preset="standard", search_providers=("web",)), PriceTable())
    assert guess.cost_usd > 0.01
    at.number_input(key="max_cost_usd").set_value(0.01).run()
    cost = next(m for m in at.metric if m.label == "Cost")
    assert "(cap \\$0.01)" in cost.value  # escaped: two $ would typeset maths
    assert any("above your cost cap of \\$0.01" in w.value for w in at.warning)
    at.number_input(key="max_cost_usd").set_value(1000.0).run()
    assert not any("cost cap" in w.value for w in at.warning)
    at.number_input(key="max_tokens").set_value(1000).run()
    assert any("above your token cap of 1,000" in w.value for w in at.warning)


def test_language_budget_pauses_and_schedule_reach_the_stored_config(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    at = _page()
    at.selectbox(key="language_choice").select(form.OTHER_LANGUAGE).run()  # shows its box
    at.text_input(key="language_other").input("Catalan")
    at.number_input(key="max_cost_usd").set_value(2.5)
    at.number_input(key="max_tokens").set_value(400_000)
    at.number_input(key="max_sources").set_value(40)
    at.checkbox(key="c_REQUIRE_CLARIFICATION").check()
    at.checkbox(key="review_plan").check()
    at.selectbox(key="schedule").select("breadth_depth").run()
    at.selectbox(key="engine").select("openai-deep-research").run()
    _start(at)
    [run] = dash_env.list_runs()
    config = run.config
    assert config["report_language"] == "Catalan"
    assert (config["max_cost_usd"], config["max_tokens"], config["max_sources"]) == (2.5, 400_000, 40)
    assert config["require_clarification"] is True and config["review_plan"] is True
    assert config["schedule"] == "breadth_depth" and config["engine"] == "openai-deep-research"
    assert run.parent_run_id is None

    # "Run again" brings every one of them back.
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["from"] = run.id
    at.run()
    assert at.selectbox(key="language_choice").value == form.OTHER_LANGUAGE
    assert at.text_input(key="language_other").value == "Catalan"
    assert at.number_input(key="max_cost_usd").value == 2.5
    assert at.checkbox(key="review_plan").value is True
    assert at.checkbox(key="c_REQUIRE_CLARIFICATION").value is True
    assert at.selectbox(key="schedule").value == "breadth_depth"
    assert at.selectbox(key="engine").value == "openai-deep-research"


def test_breadth_and_depth_sliders_come_with_their_schedule_and_reach_the_config(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    at = _page()
    keys = {s.key for s in at.slider}
    assert not {"c_BREADTH", "c_DEPTH"} & keys  # only with the breadth x depth schedule
    at.selectbox(key="schedule").select("breadth_depth").run()  # shows the two sliders
    at.slider(key="c_BREADTH").set_value(5)
    at.slider(key="c_DEPTH").set_value(3).run()
    assert (at.slider(key="c_DEPTH").min, at.slider(key="c_DEPTH").max) == (1, 5)
    _start(at)
    [run] = dash_env.list_runs()
    config = run.config
    assert (config["schedule"], config["breadth"], config["depth"]) == ("breadth_depth", 5, 3)


def test_similar_earlier_runs_are_offered_and_the_new_run_can_build_on_one(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", OPENAI_KEY)
    parent = finished_run(dash_env, "How fast is solar power growing in Europe?")
    finished_run(dash_env, "Which cheeses are made in Normandy?")
    at = _page()
    assert not at.radio  # nothing typed yet, nothing offered
    at.text_area(key="question").input("How fast is solar power growing in Spain?").run()
    [choice] = at.radio
    assert choice.options[0] == "Start from scratch"
    assert len(choice.options) == 2 and "solar power growing in Europe" in choice.options[1]
    assert any("similar" in str(p.proto.label) for p in at.get("page_link"))
    choice.set_value(parent).run()
    _button(at, "Start research").click().run()
    assert not [e.value for e in at.error]
    child = next(r for r in dash_env.list_runs() if r.question.endswith("in Spain?"))
    assert child.parent_run_id == parent


def test_an_unrelated_question_offers_no_earlier_run(dash_env: Store) -> None:
    finished_run(dash_env, "How fast is solar power growing in Europe?")
    at = _page()
    at.text_area(key="question").input("Which cheeses are made in Normandy?").run()
    assert not at.radio
