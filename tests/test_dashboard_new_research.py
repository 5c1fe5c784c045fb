"""New research page: validation messages, presets, estimate, "run again", and a real start."""

from __future__ import annotations

import os
import socket
import time

import pytest
from streamlit.testing.v1 import AppTest

from research.core.constants import MAX_QUESTION_CHARS
from research.runs import engine as durable
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    FakesEngine,
    dash_env_fixture,
    fake_engine_fixture,
    finished_run,
    on_postgresql,
)

pytestmark = pytest.mark.usefixtures("dash_env")


def _page() -> AppTest:
    return AppTest.from_file(APP, default_timeout=30).run()


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _texts(at: AppTest) -> list[str]:
    return [e.value for e in at.error]


def test_empty_question_is_refused_next_to_the_field_and_nothing_starts(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    at = _page()
    _button(at, "Start research").click().run()
    assert "Please type a research question." in _texts(at)
    assert dash_env.count_runs() == 0


def test_overlong_question_is_flagged_while_typing(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")
    at = _page()
    at.text_area(key="question").input("x" * (MAX_QUESTION_CHARS + 1)).run()
    assert any("too long" in t and str(MAX_QUESTION_CHARS) in t for t in _texts(at))
    _button(at, "Start research").click().run()
    assert dash_env.count_runs() == 0


def test_without_a_model_provider_settings_come_first_and_start_is_disabled(dash_env: Store) -> None:
    at = _page()
    assert any("No model provider is set up" in t for t in _texts(at))
    first = at.markdown[0].value
    assert first.startswith("**First, add a key") and "API key" in first
    assert "OPENAI_API_KEY" not in first and "DEEP_RESEARCH" not in first
    at.text_area(key="question").input("How fast is solar power growing?").run()
    start = _button(at, "Start research")
    assert start.disabled
    assert any("has no key yet" in c.value for c in at.caption)
    assert not any(m.label == "Cost" for m in at.metric)  # no cost estimate without a model
    page_text = " ".join([m.value for m in at.markdown] + [c.value for c in at.caption]
                         + [e.value for e in at.error])
    assert "_API_KEY" not in page_text and "DEEP_RESEARCH_" not in page_text
    _button(at, "Add a key in Settings").click().run()
    assert at.title[0].value == "Settings"
    assert dash_env.count_runs() == 0


def test_welcome_back_lists_runs_in_progress_and_waiting(dash_env: Store) -> None:
    from tests.dashboard_fixtures import waiting_for_answers

    waiting_for_answers(dash_env, "Heat pumps in cold climates?")
    running = finished_run(dash_env, "How fast is solar power growing?", status="running")
    dash_env.heartbeat(running, f"pid:{os.getpid()}@{socket.gethostname()}")  # alive here
    at = _page()
    links = [str(link.proto.label) for link in at.get("page_link")]
    assert any(label.startswith("Waiting for you: Heat pumps in cold climates?")  # as the Library
               for label in links)
    assert any(label.startswith("Running: How fast is solar power growing?") for label in links)


def test_preset_sets_the_sliders_and_the_estimate_follows(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # the estimate needs a model
    at = _page()
    cost_before = [m.value for m in at.metric]
    at.selectbox(key="preset").select("quick").run()
    assert at.slider(key="c_SUBTOPIC_COUNT").value == 3
    assert at.slider(key="c_REVIEW_CYCLES").value == 0
    at.selectbox(key="preset").select("exhaustive").run()
    assert at.slider(key="c_SUBTOPIC_COUNT").value == 10
    assert [m.value for m in at.metric] != cost_before
    labels = [m.label for m in at.metric]
    assert {"Web searches", "Model calls", "Time", "Cost"} <= set(labels)


def test_out_of_range_advanced_value_is_refused_with_its_bound(dash_env: Store) -> None:
    at = _page()
    at.number_input(key="c_SEARCHES_PER_SUBTOPIC").set_value(10).run()
    assert not at.exception
    at.multiselect(key="search").set_value([]).run()
    assert any("at least one search provider" in t for t in _texts(at))


def test_run_again_fills_the_form_with_that_runs_settings(dash_env: Store) -> None:
    run_id = finished_run(dash_env, "Is nuclear power getting cheaper?", SUBTOPIC_COUNT=7,
                          SOURCES_PER_SUBTOPIC=12, REVIEW_CYCLES=4)
    at = AppTest.from_file(APP, default_timeout=30)
    at.query_params["from"] = run_id
    at.run()
    assert at.text_area(key="question").value == "Is nuclear power getting cheaper?"
    assert at.slider(key="c_SUBTOPIC_COUNT").value == 7
    assert at.slider(key="c_SOURCES_PER_SUBTOPIC").value == 12
    assert at.slider(key="c_REVIEW_CYCLES").value == 4


def _start_and_see_it_complete(at: AppTest, store: Store) -> None:
    """Start a small run from the form, wait for the job queue to finish it, and see the Run
    page show it complete with its report."""
    at.text_area(key="question").input("How fast is solar power growing worldwide?")
    at.selectbox(key="preset").select("quick").run()
    at.slider(key="c_SUBTOPIC_COUNT").set_value(3)
    at.slider(key="c_SOURCES_PER_SUBTOPIC").set_value(5)
    at.slider(key="c_REVIEW_CYCLES").set_value(1).run()
    _button(at, "Start research").click().run()
    assert not _texts(at), _texts(at)
    runs = store.list_runs()
    assert len(runs) == 1
    run_id = runs[0].id
    assert at.query_params.get("run") in (run_id, [run_id])
    deadline = time.monotonic() + 120
    while store.get_run(run_id).status not in ("completed", "failed", "cancelled"):  # type: ignore[union-attr]
        assert time.monotonic() < deadline, "the run did not finish in time"
        time.sleep(0.05)
    assert store.get_run(run_id).status == "completed", store.get_run(run_id).error  # type: ignore[union-attr]
    at.run()
    assert at.progress[0].value == 100
    assert "100%" in at.progress[0].proto.text
    at.query_params["tab"] = "Report"
    at.run()
    assert any("Sources" == h.value for h in at.subheader)
    assert not at.exception


def test_start_runs_in_the_background_and_the_run_page_sees_it_complete(
    dash_env: Store, standin_env: dict[str, str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """The dashboard's own job manager and engine, over real HTTP through the real SDKs to the
    stand-in, with the keys the dashboard reads from its environment."""
    for name, value in standin_env.items():
        monkeypatch.setenv(name, value)
    _start_and_see_it_complete(_page(), dash_env)


@on_postgresql
def test_on_postgresql_the_form_and_the_job_queue_work_the_same(
    dash_env: Store, fake_engine: FakesEngine, monkeypatch: pytest.MonkeyPatch
) -> None:
    """On a team's PostgreSQL the runs, and the job queue with them, live in that database:
    a started run executes from its queue (the engine on the in-process fakes), and the
    welcome-back links and "run again" read it back."""
    monkeypatch.setattr(durable, "POLL_S", 0.1)  # the queue is polled more often than 0.5 s
    _start_and_see_it_complete(_page(), dash_env)
    test_welcome_back_lists_runs_in_progress_and_waiting(dash_env)
    test_run_again_fills_the_form_with_that_runs_settings(dash_env)


def test_a_first_question_is_one_box_a_preset_and_the_estimate(
    dash_env: Store, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Quick by default for a first run; every other control one "More settings" away; a moved
    slider shows "Custom", and choosing Quick again puts Quick's values back; the next visit
    starts from the preset last used."""
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-used")  # the estimate needs a model
    at = _page()
    assert at.selectbox(key="preset").value == "quick"
    assert at.slider(key="c_SUBTOPIC_COUNT").value == 3
    [more] = [e for e in at.expander if e.label.startswith("More settings")]
    inside = {w.key for w in more.get("slider") + more.get("selectbox") + more.get("multiselect")}
    assert {"c_SUBTOPIC_COUNT", "provider", "engine", "search"} <= inside
    assert "preset" not in inside  # the preset and the estimate stay on top
    assert {"Model calls", "Cost"} <= {m.label for m in at.metric}
    at.slider(key="c_SUBTOPIC_COUNT").set_value(6).run()
    assert at.selectbox(key="preset").value == "custom"
    assert "Custom" in at.selectbox(key="preset").format_func("custom")
    at.selectbox(key="preset").select("quick").run()
    assert at.slider(key="c_SUBTOPIC_COUNT").value == 3  # Quick again: its values again

    from research.core.config import build_config

    dash_env.create_run("Tides?", build_config(env={}, preset="deep").model_dump(mode="json"))
    assert _page().selectbox(key="preset").value == "deep"  # the preset last used
