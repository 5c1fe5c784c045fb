"""The person's part of a run that waits for them: answer the clarifying questions, review
the plan, or choose what to explore next; then the run carries on in the background.

Nothing here runs the research: answers and choices are stored through the engine's API and
the door to runs (`Runs.resume`) queues the run again, so it goes on if the tab is closed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

from dashboard import plan_edit, steer_view, ui, views
from research import answer_clarification, approve_plan, pending_clarification, pending_steering
from research.core.errors import ConfigError
from research.core.records import Run, Subtopic
from research.runs import Runs
from storage import Store


def continue_run(jobs: Runs, run_id: str, after: str) -> None:
    """Continue a waiting run in the background, then show it working."""
    try:
        jobs.resume(run_id, ui.credentials(), prices=ui.prices(), person=ui.viewer())
    except ConfigError as exc:
        st.error(f"{after}, but the run could not continue: {exc}")
    else:
        st.rerun()


def panel(store: Store, jobs: Runs, run: Run) -> None:
    """Whatever the run waits for: questions, the plan, the next round, or nothing left."""
    run_id = run.id
    config = run.config
    carry_on = partial(continue_run, jobs, run_id)
    asked = pending_clarification(store, run_id)
    plan_to_review = store.get_plan(run_id) if (
        config.get("review_plan") and store.get_step(run_id, "plan_review") is None
    ) else None
    with st.container(border=True):
        if asked:
            _clarify(store, run_id, asked["questions"], carry_on)
        elif plan_to_review:
            _review_plan(store, run_id, plan_to_review, carry_on)
        elif pending_steering(store, run_id) is not None:
            steer_view.panel(store, run_id, pending_steering(store, run_id) or {}, carry_on)
        else:
            st.write("The run stopped to wait for you, but nothing is left to answer.")
            if st.button("Continue", type="primary", icon=":material/play_arrow:"):
                carry_on("Nothing was asked")


def _clarify(store: Store, run_id: str, questions: list[str], carry_on: Callable[[str], None]) -> None:
    """One answer box per clarifying question; empty boxes let the planner decide."""
    st.subheader("A few questions before the research starts")
    st.caption("Your answers shape the plan. Leave a box empty to let the planner decide.")
    with st.form(f"clarify_{run_id}"):
        answers = [st.text_area(views.md_text(q), key=f"clarify_{run_id}_{i}", height=80)
                   for i, q in enumerate(questions)]
        submitted = st.form_submit_button("Continue", type="primary", icon=":material/play_arrow:")
    if submitted:
        try:
            answer_clarification(store, run_id, answers)
        except ConfigError as exc:
            st.error(f"The answers could not be saved: {exc}")
        else:
            carry_on("Your answers were saved")


def _review_plan(store: Store, run_id: str, plan: list[Subtopic], carry_on: Callable[[str], None]) -> None:
    """The plan as one card per subtopic (title, questions, what it covers), each movable and
    removable, plus a card to add; the original plan is kept beside the edited one."""
    st.subheader("Review the plan")
    st.caption("Rename, remove, add or reorder subtopics and edit their questions (one per "
               "line). The original plan is kept.")
    order_key = f"plan_order_{run_id}"
    if order_key not in st.session_state:
        st.session_state[order_key] = [s.id for s in plan]
    order: list[str] = st.session_state[order_key]
    planned = {s.id: s for s in plan}
    for position, key in enumerate(order):
        text = plan_edit.card_text(planned.get(key))
        field = f"plan_{run_id}_{key}"
        with st.container(border=True):
            st.markdown(f"**Subtopic {position + 1}**")
            # (labels stay the same as cards move: a widget keeps its text by its key)
            st.text_input("Title", value=text.title, key=f"{field}_title")
            st.text_area("Questions it answers (one per line)", value=text.questions,
                         key=f"{field}_questions", height=90)
            st.text_input("What it covers", value=text.description, key=f"{field}_description")
            row = st.container(horizontal=True)
            row.button("Up", icon=":material/arrow_upward:", key=f"{field}_up",
                       disabled=position == 0, on_click=_reorder,
                       args=(order_key, plan_edit.moved(order, position, -1)))
            row.button("Down", icon=":material/arrow_downward:", key=f"{field}_down",
                       disabled=position == len(order) - 1, on_click=_reorder,
                       args=(order_key, plan_edit.moved(order, position, 1)))
            row.button("Remove", icon=":material/delete:", key=f"{field}_remove",
                       on_click=_reorder, args=(order_key, [k for k in order if k != key]))
    st.button("Add a subtopic", icon=":material/add:", key=f"plan_{run_id}_add",
              on_click=_reorder, args=(order_key, plan_edit.added(order)))
    if st.button("Start research with this plan", type="primary", icon=":material/play_arrow:"):
        texts = {key: plan_edit.CardText(
            str(st.session_state.get(f"plan_{run_id}_{key}_title") or ""),
            str(st.session_state.get(f"plan_{run_id}_{key}_questions") or ""),
            str(st.session_state.get(f"plan_{run_id}_{key}_description") or ""),
        ) for key in order}
        try:
            approve_plan(store, run_id, plan_edit.subtopics_from_cards(order, texts))
        except ConfigError as exc:
            st.error(f"The plan was not accepted: {exc}")
        else:
            st.session_state.pop(order_key, None)
            carry_on("The plan was saved")


def _reorder(order_key: str, order: list[str]) -> None:
    st.session_state[order_key] = order
