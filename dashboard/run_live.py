"""The Run page's live panel: progress, timings, budget meters, what the run's status means,
the pause / resume / cancel buttons, the steps and the activity log.

It reads the store afresh every time, so the page draws it in a fragment that refreshes while
the run works; when the run starts or stops working, the whole page is drawn again (live
refresh on or off, the finished report leading).
"""

from __future__ import annotations

import streamlit as st

from dashboard import budget, ui, views
from dashboard.queue_view import show_queue_place
from research import voice
from research.core.errors import ConfigError
from research.core.progress import percent
from research.core.records import Run
from research.runs import ACTIVE, RESUMABLE, Runs, status_of
from storage import Store

_MESSAGE = "_run_message"  # a control's failure, shown on the next drawing of the panel


def remember_active(run_id: str, active: bool) -> None:
    """Whether the run was working when the page was drawn, so the panel sees it change."""
    st.session_state[f"_active_{run_id}"] = active


def control(jobs: Runs, run_id: str, action: str) -> None:
    """Pause / continue / resume / cancel / write up now, through the door to runs
    (research/runs/)."""
    st.session_state.pop(_confirm_key(run_id), None)
    person = ui.viewer()
    try:
        if action == "pause":
            jobs.pause(run_id, person=person)
        elif action == "unpause":
            jobs.unpause(run_id, person=person)
        elif action == "resume":
            jobs.resume(run_id, ui.credentials(), prices=ui.prices(), person=person)
        elif action == "cancel":  # a run nothing executes is recorded as cancelled at once
            jobs.cancel(run_id, person=person)
        elif action == "wrap":  # stop researching, write the report from what was gathered
            jobs.wrap_up(run_id, person=person)
    except ConfigError as exc:
        st.session_state[_MESSAGE] = str(exc)


def panel(store: Store, jobs: Runs, run_id: str) -> None:
    """The live panel of one run, as the store has it now (one read: `Store.live_view`)."""
    view = store.live_view(run_id, events=views.EVENT_TAIL)
    current = view.run
    if current is None:
        st.error("This run was deleted.")
        return
    alive = jobs.is_alive(run_id)
    status = status_of(current, alive)
    steps, activity = view.steps, view.activity
    pct = percent(current, steps)
    elapsed, remaining = views.timing(current, pct)

    warnings = views.run_warnings(current) if status == "completed" else []
    st.progress(pct / 100, text=f"{voice.run_label(current, status)} · {pct}%")
    cols = st.columns(4)
    cols[0].metric("Elapsed", views.duration_text(elapsed))
    cols[1].metric("Estimated remaining",
                   views.duration_text(remaining) if remaining is not None else "—")
    sources = activity.sources if activity else 0
    cols[2].metric("Sources so far", sources)
    cols[3].metric("Steps done", f"{activity.steps_done if activity else 0} of "
                                 f"{activity.steps_total if activity else 0}")
    for meter in budget.meters(current.config, view.usage, sources):
        st.progress(meter.fraction, text=views.dollars(meter.text))

    message = st.session_state.pop(_MESSAGE, None)
    if message:
        st.error(message)
    for warning in warnings:
        st.warning(views.md_text(voice.plain_error(warning)), icon=":material/warning:")
    stopped = budget.budget_stop(current, store.get_report(run_id) if status == "completed" else None)
    if stopped and not warnings:
        st.warning(views.md_text(stopped) + (" The report covers what was gathered until then."
                                             if status == "completed" else ""))
    show_queue_place(jobs.queue_place(run_id))
    _status_note(store, current, status)
    _buttons(jobs, run_id, status, alive)

    events = views.typed_events(view.events)
    if not steps and not events:  # just started: no two empty tables marked "empty"
        st.caption("The steps and the activity log appear here as soon as the first step starts.")
    else:
        with st.expander("Steps", expanded=status in ACTIVE):
            st.dataframe(views.steps_frame(steps), hide_index=True, width="stretch")
        with st.expander("Activity log (latest first)", expanded=status in ACTIVE):
            st.dataframe(views.events_frame(events), hide_index=True, width="stretch",
                         height=260)

    was_active = st.session_state.get(f"_active_{run_id}")
    now_active = status in ACTIVE
    remember_active(run_id, now_active)
    if was_active is not None and was_active != now_active:
        st.rerun()  # the whole page: start or stop live refresh, show the finished report


def setup_failed(store: Store, run: Run) -> bool:
    """The run failed before research began: its pre-flight check of the models and search
    services (a refused key, an unreachable server), so nothing was gathered to show."""
    if run.status != "failed":
        return False
    step = store.get_step(run.id, "preflight")
    return step is not None and step.status == "failed"


def _status_note(store: Store, current: Run, status: str) -> None:
    """What the status means for the person, and what they can do about it."""
    if status == "waiting":
        st.info("This run is waiting for you: answer the questions or review the plan below, "
                "then continue.")
    if status == "failed" and current.error and setup_failed(store, current):
        # A key or an address that does not work: not a dead end, the way to fix it.
        why = views.md_text(voice.plain_error(current.error))  # said once, never "... could not start"
        st.error(why if "could not start" in current.error else f"The research could not start: {why}")
        st.page_link(ui.PAGES["settings"], label="Open Settings to fix it",
                     icon=":material/settings:")
        st.caption("Then come back here and press Resume: nothing needs to be typed again.")
    elif status == "failed":
        st.error(views.md_text(voice.status_line(current, status)))
    elif status == "interrupted":
        # The reason the process stored as it stopped (a full disk, Ctrl-C), or the store's
        # when it died before it could (issue 40, point 4): as `--resume` says it.
        st.warning(views.md_text(voice.status_line(current, status)))
    elif status in ("paused", "cancelled"):
        st.info(views.md_text(voice.status_line(current, status)))
    if current.control == "pause" and status == "running":
        st.caption("Pausing after the current step of work…")


def _buttons(jobs: Runs, run_id: str, status: str, alive: bool) -> None:
    """Pause, Resume and Cancel, each only where it means something."""
    row = st.container(horizontal=True)
    if status == "running":
        row.button("Pause", icon=":material/pause:", on_click=control,
                   args=(jobs, run_id, "pause"))
    if status == "paused":
        row.button("Resume", icon=":material/play_arrow:", type="primary", on_click=control,
                   args=(jobs, run_id, "unpause"))
    if status in RESUMABLE - {"paused"} and not alive:
        row.button("Resume", icon=":material/play_arrow:", type="primary", on_click=control,
                   args=(jobs, run_id, "resume"))
    working = status in ("running", "paused")
    if working or (status in ("interrupted", "waiting") and not alive):
        row.button("Cancel", icon=":material/stop:", on_click=_ask_to_confirm, args=(run_id,))
    if st.session_state.get(_confirm_key(run_id)):
        _confirm_cancel(jobs, run_id, working=working)


def _confirm_key(run_id: str) -> str:
    return f"_confirm_cancel_{run_id}"


def _ask_to_confirm(run_id: str) -> None:
    st.session_state[_confirm_key(run_id)] = True


def _confirm_cancel(jobs: Runs, run_id: str, *, working: bool) -> None:
    """Cancel asks first, and offers what a person usually wants instead: the report from
    what was gathered so far (a working run only)."""
    with st.container(border=True):
        st.markdown("**Stop this run?** Everything gathered so far is kept.")
        if working:
            st.caption("Or stop researching now and get the report written and checked from "
                       "the sources found so far.")
        choices = st.container(horizontal=True)
        if working:
            choices.button("Write the report from what was gathered", type="primary",
                           icon=":material/edit_note:", on_click=control,
                           args=(jobs, run_id, "wrap"))
        choices.button("Stop without a report", icon=":material/stop:", on_click=control,
                       args=(jobs, run_id, "cancel"))
        choices.button("Keep going", on_click=st.session_state.pop,
                       args=(_confirm_key(run_id), None))
