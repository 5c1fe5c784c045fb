"""Steering in the dashboard (issue 14, point 2): "Ask me between rounds" on New research, and
on the Run page of a run waiting between rounds, the lead's proposals to tick, your own
branches to add, and "Enough: write the report"."""

from __future__ import annotations

import time

import pytest
from streamlit.testing.v1 import AppTest

from research.core.config import build_config
from research.core.records import Subtopic
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    FakeExecutor,
    dash_env_fixture,
    fake_jobs_fixture,
    open_run_page,
)

PLAN = [Subtopic("t1", "Costs", questions=("What?",)),
        Subtopic("t2", "Adoption", questions=("Who?",)),
        Subtopic("r2t1", "Grid limits", description="Several sources disagree",
                 questions=("Grid limits?",), round=2, parent="t2"),
        Subtopic("r2t2", "Installer shortage", description="Named as a bottleneck",
                 questions=("Installers?",), round=2, parent="t1")]


def waiting_to_steer(store: Store) -> str:
    """A run stopped after round 1 with two proposals, as research.phases.decide.steer leaves it."""
    config = build_config(env={}, preset="quick", MAX_ROUNDS=3, steer=True)
    run_id = store.create_run("How is heat pump adoption changing?", config.model_dump(mode="json"))
    store.set_run_status(run_id, "running")
    store.save_plan(run_id, PLAN)
    store.start_step(run_id, "steer:1", kind="steer", label="Asking you")
    store.finish_step(run_id, "steer:1", result={"round": 1, "answer": None, "proposals": [
        {"n": 1, "id": "r2t1", "title": "Grid limits", "why": "Several sources disagree"},
        {"n": 2, "id": "r2t2", "title": "Installer shortage", "why": "Named as a bottleneck"}]})
    store.set_run_status(run_id, "waiting")
    return run_id


def _wait_completed(store: Store, run_id: str) -> None:
    deadline = time.monotonic() + 10
    while store.get_run(run_id).status != "completed":  # type: ignore[union-attr]
        assert time.monotonic() < deadline
        time.sleep(0.2)


def test_tick_add_and_follow_resumes_with_the_chosen_branches(
    dash_env: Store, fake_jobs: FakeExecutor
) -> None:
    run_id = waiting_to_steer(dash_env)
    at = open_run_page(run_id)
    assert not at.exception
    assert any("what should we explore next" in h.value for h in at.subheader)
    boxes = [c for c in at.checkbox if c.key and c.key.startswith(f"steer_{run_id}_")]
    assert [b.label for b in boxes] == ["Grid limits", "Installer shortage"]
    boxes[1].uncheck()
    at.text_area(key=f"steer_add_{run_id}").input("Noise rules in cities")
    next(b for b in at.button if b.label == "Follow these").click().run()
    assert not at.exception and [e.value for e in at.error] == []
    step = dash_env.get_step(run_id, "steer:1")
    assert step is not None and step.result["answer"] == {"follow": [1], "add": ["Noise rules in cities"],
                                        "enough": False}
    round_two = [s.title for s in dash_env.get_plan(run_id) or [] if s.round == 2]
    assert round_two == ["Grid limits", "Noise rules in cities"]
    _wait_completed(dash_env, run_id)
    assert fake_jobs.calls == [run_id]


def test_enough_drops_the_next_round_and_resumes(dash_env: Store, fake_jobs: FakeExecutor) -> None:
    run_id = waiting_to_steer(dash_env)
    at = open_run_page(run_id)
    next(b for b in at.button if b.label == "Enough: write the report").click().run()
    assert not at.exception
    assert all(s.round == 1 for s in dash_env.get_plan(run_id) or [])
    step = dash_env.get_step(run_id, "steer:1")
    assert step is not None and step.result["answer"]["enough"] is True
    _wait_completed(dash_env, run_id)


def test_ask_me_between_rounds_reaches_the_stored_config(
    dash_env: Store, fake_jobs: FakeExecutor, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-0123456789abcdef")
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.checkbox(key="steer").check().run()
    at.text_area(key="question").input("Which heat pumps are cheapest to run?").run()
    next(b for b in at.button if b.label == "Start research").click().run()
    [run] = dash_env.list_runs()
    assert run.config["steer"] is True
