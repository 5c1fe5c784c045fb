"""Run page of a run that waits for the person: clarifying answers and plan review."""

from __future__ import annotations

import time

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
    assert not at.data_editor  # cards, not a spreadsheet (a phone could not use the table)

    def field(sub: str, name: str) -> str:
        return f"plan_{run_id}_{sub}_{name}"

    assert [at.text_input(key=field(s.id, "title")).value for s in PLAN] == [s.title for s in PLAN]
    assert (at.text_area(key=field("t2", "questions")).value
            == "How did module prices move?\nWhat do installers charge?")
    at.text_input(key=field("t3", "title")).set_value("Subsidies")
    at.text_area(key=field("t2", "questions")).set_value(
        "What do panels cost?\nWhat does labour cost?").run()
    at.button(key=field("t3", "up")).click().run()
    at.button(key=field("t3", "up")).click().run()  # Subsidies first
    at.button(key=field("t1", "remove")).click().run()
    at.button(key=f"plan_{run_id}_add").click().run()
    at.text_input(key=field("new-1", "title")).set_value("Installer shortages")
    at.text_area(key=field("new-1", "questions")).set_value("How long are waiting lists?").run()
    assert at.text_input(key=field("t3", "title")).value == "Subsidies"  # kept through moves
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
    for sub in ("t1", "t2", "t3"):
        at.button(key=f"plan_{run_id}_{sub}_remove").click().run()
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


def test_plan_cards_become_subtopics_in_the_persons_order() -> None:
    order = plan_edit.moved([s.id for s in PLAN], 0, 2)  # the first card to the end
    assert order == ["t2", "t3", "t1"]
    assert plan_edit.moved(order, 0, -1) == order  # the top card stays on top
    order = plan_edit.added(order)
    assert order[-1] == "new-1" and plan_edit.added(order)[-1] == "new-2"
    texts = {s.id: plan_edit.card_text(s) for s in PLAN}
    texts["new-1"] = plan_edit.CardText("Extra", "a?; b?\nc?")
    subs = plan_edit.subtopics_from_cards(order, texts)
    assert [s.title for s in subs] == ["Costs", "Policy", "Growth figures", "Extra"]
    assert subs[0].questions == PLAN[1].questions and subs[0].id == "t2"
    assert subs[-1] == Subtopic(id="", title="Extra", questions=("a?", "b?", "c?"))
    assert plan_edit.split_questions("one;two; three") == ["one;two", "three"]
    assert plan_edit.split_questions(None) == []
    assert plan_edit.subtopics_from_cards([], {}) == []


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
    # The run stores "waiting" a moment before its job ends; until then the page shows it
    # running (research.runs.status_of), without the plan to review.
    deadline = time.monotonic() + 60
    while fake_engine.runs.is_alive(run_id):
        assert time.monotonic() < deadline, "the run's job did not end after it began to wait"
        time.sleep(0.05)
    at = open_run_page(run_id)
    planned = dash_env.get_plan(run_id) or []
    original = [s.title for s in planned]
    at.text_input(key=f"plan_{run_id}_{planned[0].id}_title").set_value(
        "Installed capacity by country").run()
    at.button(key=f"plan_{run_id}_{planned[-1].id}_remove").click().run()
    _button(at, "Start research with this plan").click().run()
    assert not [e.value for e in at.error]
    assert _wait_status(dash_env, run_id, ("completed", "failed")) == "completed", \
        dash_env.get_run(run_id).error  # type: ignore[union-attr]
    titles = [s.title for s in dash_env.get_plan(run_id) or []]
    assert titles[0] == "Installed capacity by country" and original[-1] not in titles
    assert dash_env.get_report(run_id) is not None
