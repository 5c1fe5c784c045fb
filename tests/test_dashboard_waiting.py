"""Run page of a run that waits for the person: clarifying answers and plan review."""

from __future__ import annotations

import time

import pandas as pd
from streamlit.testing.v1 import AppTest

from dashboard import plan_edit
from research.core.records import Subtopic
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    APP,
    CLARIFY_QUESTIONS,
    PLAN,
    FakeExecutor,
    FakesEngine,
    dash_env_fixture,
    fake_engine_fixture,
    fake_jobs_fixture,
    open_run_page,
    running_run,
    waiting_for_answers,
    waiting_for_plan_review,
)


def _button(at: AppTest, label: str):
    return next(b for b in at.button if b.label == label)


def _wait_status(store: Store, run_id: str, statuses: tuple[str, ...], timeout: float = 120) -> str:
    deadline = time.monotonic() + timeout
    while (status := store.get_run(run_id).status) not in statuses:  # type: ignore[union-attr]
        assert time.monotonic() < deadline, f"run still {status}"
        time.sleep(0.3)
    return status


def test_clarifying_questions_get_answer_boxes_and_continue_resumes_the_run(
    dash_env: Store, fake_jobs: FakeExecutor
) -> None:
    run_id = waiting_for_answers(dash_env)
    at = open_run_page(run_id)
    assert not at.exception
    assert any("waiting for you" in i.value for i in at.info)
    boxes = [t for t in at.text_area if t.key and t.key.startswith(f"clarify_{run_id}_")]
    assert [b.label for b in boxes] == CLARIFY_QUESTIONS
    assert not any(p.proto.text.startswith("Running") for p in at.progress)  # no live refresh
    boxes[0].input("To decide on a purchase")
    boxes[1].input("Germany")
    _button(at, "Continue").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == []
    step = dash_env.get_step(run_id, "clarify")
    assert step is not None and step.result["answers"] == ["To decide on a purchase", "Germany"]
    _wait_status(dash_env, run_id, ("completed",), 10)
    assert fake_jobs.calls == [run_id]


def test_plan_review_edits_rename_remove_add_and_reorder_then_start(
    dash_env: Store, fake_jobs: FakeExecutor
) -> None:
    run_id = waiting_for_plan_review(dash_env)
    at = open_run_page(run_id)
    assert not at.exception
    [editor] = at.data_editor
    assert editor.editing_mode == "dynamic"
    shown = editor.value
    assert list(shown["Title"]) == [s.title for s in PLAN]
    assert shown["Questions"].iloc[1] == "How did module prices move?; What do installers charge?"
    at.session_state[f"plan_editor_{run_id}"] = {
        "edited_rows": {2: {"Title": "Subsidies", "Position": 1},
                        1: {"Questions": "What do panels cost?\nWhat does labour cost?"}},
        "added_rows": [{"Title": "Installer shortages", "Questions": "How long are waiting lists?",
                        "Position": 4}],
        "deleted_rows": [0],
    }
    at.run()
    _button(at, "Start research with this plan").click().run()
    assert not at.exception
    assert [e.value for e in at.error] == []
    plan = dash_env.get_plan(run_id) or []
    assert [s.title for s in plan] == ["Subsidies", "Costs", "Installer shortages"]
    assert plan[0].id == "t3"
    assert plan[1].questions == ("What do panels cost?", "What does labour cost?")
    assert plan[2].questions == ("How long are waiting lists?",)
    versions = dash_env.get_plans(run_id)
    assert [v.kind for v in versions] == ["original", "edited"]  # the original is kept
    _wait_status(dash_env, run_id, ("completed",), 10)
    assert fake_jobs.calls == [run_id]


def test_a_plan_with_every_subtopic_removed_is_refused_in_plain_words(
    dash_env: Store, fake_jobs: FakeExecutor
) -> None:
    run_id = waiting_for_plan_review(dash_env)
    at = open_run_page(run_id)
    at.session_state[f"plan_editor_{run_id}"] = {"edited_rows": {}, "added_rows": [],
                                                "deleted_rows": [0, 1, 2]}
    at.run()
    _button(at, "Start research with this plan").click().run()
    assert any("The plan was not accepted" in e.value and "at least one subtopic" in e.value
               for e in at.error)
    assert dash_env.get_step(run_id, "plan_review") is None
    assert fake_jobs.calls == []
    assert dash_env.get_run(run_id).status == "waiting"  # type: ignore[union-attr]


def test_a_waiting_run_can_be_cancelled(dash_env: Store, fake_jobs: FakeExecutor) -> None:
    run_id = waiting_for_answers(dash_env)
    at = open_run_page(run_id)
    assert not any(b.label == "Resume" for b in at.button)
    _button(at, "Cancel").click().run()
    assert dash_env.get_run(run_id).status == "waiting"  # type: ignore[union-attr]  # asks first
    assert not any(b.label == "Write the report from what was gathered" for b in at.button)
    _button(at, "Stop without a report").click().run()
    assert dash_env.get_run(run_id).status == "cancelled"  # type: ignore[union-attr]


def test_cancel_asks_first_and_offers_the_report_from_what_was_gathered(
    dash_env: Store, fake_jobs: FakeExecutor
) -> None:
    run_id = running_run(dash_env)
    at = open_run_page(run_id)
    _button(at, "Cancel").click().run()
    assert dash_env.get_control(run_id) is None  # nothing happens before the person confirms
    assert any("Stop this run?" in m.value for m in at.markdown)
    _button(at, "Keep going").click().run()
    assert not any(b.label == "Stop without a report" for b in at.button)
    assert dash_env.get_control(run_id) is None
    _button(at, "Cancel").click().run()
    _button(at, "Write the report from what was gathered").click().run()
    assert not at.exception and not at.error
    assert dash_env.get_control(run_id) == "wrap"  # research stops; the report is written
    assert dash_env.get_run(run_id).status == "running"  # type: ignore[union-attr]


def test_plan_rows_become_subtopics_in_position_order() -> None:
    frame = plan_edit.plan_frame(PLAN)
    frame.loc[len(frame)] = {"Position": None, "Title": "Extra", "Questions": "a?; b?\nc?",
                             "Description": None, "id": None}
    frame.loc[0, "Position"] = 9
    subs = plan_edit.subtopics_from_frame(frame)
    assert [s.title for s in subs] == ["Costs", "Policy", "Growth figures", "Extra"]
    assert subs[-1] == Subtopic(id="", title="Extra", questions=("a?", "b?", "c?"))
    assert plan_edit.split_questions("one;two; three") == ["one;two", "three"]
    assert plan_edit.split_questions(float("nan")) == []
    assert plan_edit.subtopics_from_frame(pd.DataFrame(columns=plan_edit.COLUMNS)) == []


def test_review_the_plan_end_to_end_from_the_form_to_a_finished_report(
    dash_env: Store, fake_engine: FakesEngine
) -> None:
    """The real engine on the dashboard's real job queue (its model, search and pages are the
    in-process fakes; the form's run over real HTTP is in test_dashboard_new_research.py)."""
    at = AppTest.from_file(APP, default_timeout=30).run()
    at.text_area(key="question").input("How fast is solar power growing worldwide?")
    at.selectbox(key="preset").select("quick").run()
    at.slider(key="c_REVIEW_CYCLES").set_value(0)
    at.checkbox(key="review_plan").check().run()
    _button(at, "Start research").click().run()
    assert not [e.value for e in at.error]
    run_id = dash_env.list_runs()[0].id
    assert _wait_status(dash_env, run_id, ("waiting", "failed")) == "waiting", \
        dash_env.get_run(run_id).error  # type: ignore[union-attr]
    at = open_run_page(run_id)
    [editor] = at.data_editor
    original = list(editor.value["Title"])
    at.session_state[f"plan_editor_{run_id}"] = {
        "edited_rows": {0: {"Title": "Installed capacity by country"}}, "added_rows": [],
        "deleted_rows": [len(original) - 1]}
    at.run()
    _button(at, "Start research with this plan").click().run()
    assert not [e.value for e in at.error]
    assert _wait_status(dash_env, run_id, ("completed", "failed")) == "completed", \
        dash_env.get_run(run_id).error  # type: ignore[union-attr]
    titles = [s.title for s in dash_env.get_plan(run_id) or []]
    assert titles[0] == "Installed capacity by country" and original[-1] not in titles
    assert dash_env.get_report(run_id) is not None
