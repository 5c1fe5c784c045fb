"""One run: live progress while it works, the person's part when it waits (answers, plan
review), then its plan, sources, rounds, review, verification, report, engines and cost."""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from dashboard import budget, engines_view, plan_edit, run_report, run_tabs, steer_view, ui, views
from dashboard.jobs import ACTIVE, RESUMABLE, status_of
from dashboard.queue_view import show_queue_place
from research import (
    ResearchConfig,
    answer_clarification,
    approve_plan,
    cancel,
    pause,
    pending_clarification,
    pending_steering,
    unpause,
)
from research.errors import ConfigError, ResearchError
from research.export.run_document import build_document_for_run
from research.phases.preflight import check_configuration
from research.progress import percent
from research.related import dig_deeper_question, report_sections

ui.require_navigation()

REFRESH_S = 2.0
TITLE_CHARS = 160  # the heading shows this much of the question; the rest is one click away
TABS = ["Plan", "Map", "Sources", "Rounds", "Review", "Verification", "Report", "Engines", "Tokens and cost"]

store = ui.store()
jobs = ui.jobs()
state = st.session_state
run_id = st.query_params.get("run")

if not run_id:
    st.title("Run")
    st.info("No run is selected. Start one on the New research page or open one from the Library.")
    for run in store.list_runs(limit=10):
        st.page_link(ui.PAGES["run"], query_params={"run": run["id"]},
                     label=f"{views.md_text(views.run_name(run, with_time=True))} · {views.run_status_text(run)}")
    st.stop()

run = store.get_run(run_id)
if run is None:
    st.title("Run")
    st.error("There is no such run: it may have been deleted, or the link is incomplete. "
             "Open the Library to see every run.")
    st.page_link(ui.PAGES["library"], label="Open the Library", icon=":material/library_books:")
    st.stop()

st.title("Research run")
st.markdown(f"#### {views.md_text(views.label_text(run['question'], TITLE_CHARS))}")
if len(" ".join(str(run["question"]).split())) > TITLE_CHARS:  # a dig-deeper run's long question
    with st.expander("The full question"):
        st.markdown(views.md_text(run["question"]))
parent_id = run.get("parent_run_id")
if parent_id:
    parent = store.get_run(parent_id)
    if parent is None:
        st.caption("This run built on an earlier run that has since been deleted.")
    else:
        st.page_link(ui.PAGES["run"], query_params={"run": parent_id}, icon=":material/account_tree:",
                     label="Builds on: " + views.md_label(parent["question"], 100))


def _control(action: str) -> None:
    """Pause / continue / cancel; resuming a run nobody executes goes through the job manager."""
    try:
        if action == "pause":
            pause(store, run_id)
        elif action == "unpause":
            unpause(store, run_id)
        elif action == "resume":
            jobs.resume(run_id, ui.credentials(), prices=ui.prices())
        elif action == "cancel":
            cancel(store, run_id)
        elif action == "abandon":  # nothing executes it: record the cancellation directly
            store.set_run_status(run_id, "cancelled")
    except ConfigError as exc:
        state["_run_message"] = str(exc)


def live_panel() -> None:
    current = store.get_run(run_id)
    if current is None:
        st.error("This run was deleted.")
        return
    alive = jobs.is_alive(run_id)
    status = status_of(current, alive)
    steps = store.get_steps(run_id)
    activity = store.latest_activity(run_id)
    pct = percent(current, steps)
    elapsed, remaining = views.timing(current, pct)

    warnings = views.run_warnings(current) if status == "completed" else []
    shown = views.run_status_text(current) if status == "completed" else status.capitalize()
    st.progress(pct / 100, text=f"{shown} · {pct}%")
    cols = st.columns(4)
    cols[0].metric("Elapsed", views.duration_text(elapsed))
    cols[1].metric("Estimated remaining",
                   views.duration_text(remaining) if remaining is not None else "—")
    cols[2].metric("Sources so far", int(activity.get("sources") or 0))
    cols[3].metric("Steps done", f"{activity.get('steps_done', 0)} of {activity.get('steps_total', 0)}")
    for meter in budget.meters(current.get("config") or {}, store.usage_totals(run_id),
                               int(activity.get("sources") or 0)):
        st.progress(meter.fraction, text=views.dollars(meter.text))

    message = state.pop("_run_message", None)
    if message:
        st.error(message)
    for warning in warnings:
        st.warning(views.md_text(warning), icon=":material/warning:")
    stopped = budget.budget_stop(current, store.get_report(run_id) if status == "completed" else None)
    if stopped and not warnings:
        st.warning(views.md_text(stopped) + (" The report covers what was gathered until then."
                                             if status == "completed" else ""))
    show_queue_place(jobs.queue_place(run_id))
    if status == "waiting":
        st.info("This run is waiting for you: answer the questions or review the plan below, "
                "then continue.")
    if status == "failed" and current.get("error"):
        st.error(f"The run stopped: {views.md_text(current['error'])}")
    elif status == "interrupted":
        st.warning("This run was interrupted (the server stopped while it worked). Everything "
                   "gathered so far is kept: press Resume to continue where it stopped.")
    elif status == "paused":
        st.info("Paused. Press Resume to continue.")
    elif status == "cancelled":
        st.info("The run was cancelled. Everything gathered so far is kept.")
    if current.get("control") == "pause" and status == "running":
        st.caption("Pausing after the current step of work…")

    buttons = st.container(horizontal=True)
    if status == "running":
        buttons.button("Pause", icon=":material/pause:", on_click=_control, args=("pause",))
    if status == "paused":
        buttons.button("Resume", icon=":material/play_arrow:", type="primary", on_click=_control,
                       args=("unpause",))
    if status in RESUMABLE - {"paused"} and not alive:
        buttons.button("Resume", icon=":material/play_arrow:", type="primary", on_click=_control,
                       args=("resume",))
    if status in ("running", "paused"):
        buttons.button("Cancel", icon=":material/stop:", on_click=_control, args=("cancel",))
    elif status in ("interrupted", "waiting") and not alive:
        buttons.button("Cancel", icon=":material/stop:", on_click=_control, args=("abandon",))

    with st.expander("Steps", expanded=status in ACTIVE):
        st.dataframe(views.steps_frame(steps), hide_index=True, width="stretch")
    with st.expander("Activity log (latest first)", expanded=status in ACTIVE):
        events = views.tail_events(store, run_id, int(activity.get("last_event_id") or 0))
        st.dataframe(views.events_frame(events), hide_index=True, width="stretch", height=260)

    was_active = state.get(f"_active_{run_id}")
    now_active = status in ACTIVE
    state[f"_active_{run_id}"] = now_active
    if was_active is not None and was_active != now_active:
        st.rerun()  # the whole page: start or stop live refresh, show the finished report


config = run.get("config") or {}
initial_status = status_of(run, jobs.is_alive(run_id))
initially_active = initial_status in ACTIVE
state[f"_active_{run_id}"] = initially_active


def _continue(after: str) -> None:
    """Continue a waiting run in the background, then show it working."""
    try:
        jobs.resume(run_id, ui.credentials(), prices=ui.prices())
    except ConfigError as exc:
        st.error(f"{after}, but the run could not continue: {exc}")
    else:
        st.rerun()


if initial_status == "waiting":
    asked = pending_clarification(store, run_id)
    plan_to_review = store.get_plan(run_id) if (
        config.get("review_plan") and store.get_step(run_id, "plan_review") is None
    ) else None
    with st.container(border=True):
        if asked:
            st.subheader("A few questions before the research starts")
            st.caption("Your answers shape the plan. Leave a box empty to let the planner decide.")
            with st.form(f"clarify_{run_id}"):
                answers = [st.text_area(views.md_text(q), key=f"clarify_{run_id}_{i}", height=80)
                           for i, q in enumerate(asked["questions"])]
                submitted = st.form_submit_button("Continue", type="primary", icon=":material/play_arrow:")
            if submitted:
                try:
                    answer_clarification(store, run_id, answers)
                except ConfigError as exc:
                    st.error(f"The answers could not be saved: {exc}")
                else:
                    _continue("Your answers were saved")
        elif plan_to_review:
            st.subheader("Review the plan")
            st.caption("Rename, remove or add subtopics, change their order with the Position "
                       "column, and edit their questions (one per line, or separated by “; ”). "
                       "The original plan is kept.")
            edited = st.data_editor(
                plan_edit.plan_frame(plan_to_review), key=f"plan_editor_{run_id}", num_rows="dynamic",
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
                    _continue("The plan was saved")
        elif pending_steering(store, run_id) is not None:
            steer_view.panel(store, run_id, pending_steering(store, run_id) or {}, _continue)
        else:
            st.write("The run stopped to wait for you, but nothing is left to answer.")
            if st.button("Continue", type="primary", icon=":material/play_arrow:"):
                _continue("Nothing was asked")


def _dig_deeper(markdown: str, sections: list[str]) -> None:
    """Start a follow-up run on one section, with this run's settings and sources."""
    with st.container(border=True):
        st.markdown("**Dig deeper.** Pick a section to research further. A new run starts with "
                    "this run's sources and settings and is linked to this one.")
        cols = st.columns([3, 1], vertical_alignment="bottom")
        section = cols[0].selectbox("Section", sections, key=f"dig_{run_id}")
        if not cols[1].button("Dig deeper", icon=":material/zoom_in:", type="primary"):
            return
        question = dig_deeper_question(run["question"], section)
        creds = ui.credentials()
        try:
            parent_config = ResearchConfig(**{**(run.get("config") or {}),
                                              "dig_deeper_section": section})
            check_configuration(parent_config, creds)
            child = jobs.start(question, parent_config, creds, prices=ui.prices(), parent_run_id=run_id)
        except ValidationError:
            st.error("This run's settings are from an older version and cannot be reused. Start "
                     "a new run on the New research page instead.")
        except ConfigError as exc:
            st.error(f"Nothing was started: {exc}")
        else:
            ui.open_run(child)



def _report_doc() -> tuple[dict[str, Any] | None, Any]:
    """The finished report and its document, or (None, None) while there is none."""
    report = store.get_report(run_id)
    if report is None or run.get("status") != "completed":
        return None, None
    try:
        return report, build_document_for_run(store, run_id)
    except ResearchError as exc:
        st.error(f"The report could not be shown: {exc}")
        return None, None


def tabs_panel() -> None:
    """Plan, sources, rounds, review, verification, draft, engines, cost: what exists now."""
    current = store.get_run(run_id) or run
    names = [t for t in TABS if t != "Engines" or engines_view.has_engines(store, run_id, config)]
    if finished:
        names = [t for t in names if t != "Report"]  # the report leads the page instead
    for name, tab in zip(names, st.tabs(names, key="tab", bind="query-params"), strict=True):
        if tab.open:
            with tab:
                RENDER[name](store, current)


RENDER = {"Plan": run_tabs.plan_tab, "Map": run_tabs.map_tab, "Sources": run_tabs.sources_tab,
          "Rounds": run_tabs.rounds_tab, "Review": run_tabs.review_tab,
          "Verification": run_tabs.verification_tab,
          "Report": lambda store, current: run_report.draft_in_progress(store, current),
          "Engines": run_tabs.engines_tab, "Tokens and cost": run_tabs.usage_tab}

report, doc = _report_doc()
finished = doc is not None
if finished:
    run_report.report_first(store, run, report, doc)
    sections = report_sections(report["markdown"])
    if sections:
        _dig_deeper(report["markdown"], sections)
    with st.expander("How the run went: progress, plan, sources, rounds, review, verification, "
                     "cost", icon=":material/query_stats:"):
        st.fragment(live_panel)()
        tabs_panel()
else:
    st.fragment(run_every=REFRESH_S if initially_active else None)(live_panel)()
    st.fragment(run_every=REFRESH_S if initially_active else None)(tabs_panel)()
