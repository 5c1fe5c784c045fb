"""The person's part of a run that waits for them: answer the clarifying questions, review
the plan, or choose what to explore next; then the run carries on in the background.

Nothing here runs the research: answers and choices are stored through the engine's API and
the job manager resumes the run, so it goes on if the tab is closed.
"""

from __future__ import annotations

from collections.abc import Callable
from functools import partial

import streamlit as st

from dashboard import plan_edit, steer_view, ui, views
from dashboard.jobs import JobManager
from research import answer_clarification, approve_plan, pending_clarification, pending_steering
from research.core.errors import ConfigError
from research.core.records import Run, Subtopic
from storage import Store


def continue_run(jobs: JobManager, run_id: str, after: str) -> None:
    """Continue a waiting run in the background, then show it working."""
    try:
        jobs.resume(run_id, ui.credentials(), prices=ui.prices(), person=ui.viewer())
    except ConfigError as exc:
        st.error(f"{after}, but the run could not continue: {exc}")
    else:
        st.rerun()


def panel(store: Store, jobs: JobManager, run: Run) -> None:
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
    """The plan as an editable table; the original plan is kept beside the edited one."""
    st.subheader("Review the plan")
    st.caption("Rename, remove or add subtopics, change their order with the Position "
               "column, and edit their questions (one per line, or separated by “; ”). "
               "The original plan is kept.")
    edited = st.data_editor(
        plan_edit.plan_frame(plan), key=f"plan_editor_{run_id}", num_rows="dynamic",
        hide_index=True, width="stretch",
        column_config={
            "Position": st.column_config.NumberColumn("Position", min_value=1, step=1,
                                                      width="small"),
            "Title": st.column_config.TextColumn("Title", width="medium"),
            "Questions": st.column_config.TextColumn("Questions", width="large"),
            "Description": st.column_config.TextColumn("Description", width="medium"),
            "id": None,
        },
    )
    if st.button("Start research with this plan", type="primary", icon=":material/play_arrow:"):
        try:
            approve_plan(store, run_id, plan_edit.subtopics_from_frame(edited))
        except ConfigError as exc:
            st.error(f"The plan was not accepted: {exc}")
        else:
            carry_on("The plan was saved")
