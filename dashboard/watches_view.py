"""Library → watched topics: watch a finished run daily, weekly or monthly, and list, pause,
resume or stop one's watches (research/living/watches.py decides when; the job engine's
schedule runs the updates, research/runs/engine.py).

Every read and change passes the viewer as `person`: a person sees and controls only their own
watches, and a watch's updates run as theirs, on the team's workers.
"""

from __future__ import annotations

from datetime import UTC, datetime

import streamlit as st

from dashboard import views
from research import voice
from research.living import watches
from storage import Store
from storage import watches as watchstore

EVERY_TEXT = {"daily": "every day", "weekly": "every week", "monthly": "every month"}


def when(stamp: str | None) -> str:
    """'2026-03-02 09:00 UTC' from the store's ISO text."""
    return f"{stamp[:10]} {stamp[11:16]} UTC" if stamp else "never"


def watch_control(store: Store, run_id: str, person: str | None) -> None:
    """"Watch this topic" for the selected run (only a finished run can be watched)."""
    run = store.get_run(run_id, person=person)
    if run is None or run.status != "completed":
        return
    watched = [w for w in watchstore.list_watches(store, person=person)
               if run_id in (w.run_id, w.first_run_id)]
    if watched:
        st.caption(f"This topic is watched ({EVERY_TEXT[watched[0].every]}); see Watched "
                   "topics below.")
        return
    with st.expander("Watch this topic", icon=":material/visibility:"):
        st.caption("The report is updated with what is new on a schedule. You are told only "
                   "when something changed; an update that found nothing is not kept.")
        with st.form(f"watch_{run_id}"):
            every = st.selectbox("How often", list(EVERY_TEXT), format_func=EVERY_TEXT.get)
            cap = st.number_input("Budget for each update (USD, 0: the run's own)", 0.0, 100.0,
                                  0.0, step=0.05)
            share = st.number_input("Tell me only when more than this share of the report's "
                                    "claims changed (%)", 0, 100, 0, step=5,
                                    help="0: any change at all.")
            if st.form_submit_button("Watch", type="primary"):
                try:
                    watches.watch(store, run_id, every=every, now=datetime.now(UTC),
                                  person=person, cost_cap=float(cap) or None,
                                  threshold=share / 100)
                except ValueError as exc:
                    st.error(views.md_text(exc))
                else:
                    st.session_state["lib_flash"] = (
                        f"Watching this topic {EVERY_TEXT[every]}.")
                    st.rerun()


def render(store: Store, person: str | None) -> None:
    """The person's watched topics, each with Pause/Resume and Stop."""
    mine = watchstore.list_watches(store, person=person)
    if not mine:
        return
    st.subheader("Watched topics")
    for watch in mine:
        run = store.get_run(watch.run_id, person=person)
        question = run.question if run else "(the watched report was deleted)"
        with st.container(border=True):
            cols = st.columns([4, 1, 1])
            cols[0].markdown(f"**{views.md_label(question, 100)}**")
            state = "paused" if watch.state == "paused" else f"next update {when(watch.next_at)}"
            budget = (f" · {views.dollars(voice.money(watch.cost_cap))} per update"
                      if watch.cost_cap else "")
            cols[0].caption(f"{EVERY_TEXT[watch.every].capitalize()} · {state}{budget} · "
                            f"{watch.updates_kept} update(s) kept · last looked "
                            f"{when(watch.last_checked_at)}")
            if watch.last_result:
                cols[0].caption(views.md_text(watch.last_result))
            if watch.state == "paused":
                if cols[1].button("Resume", key=f"watch_resume_{watch.id}"):
                    watches.resume_watch(store, watch.id, now=datetime.now(UTC), person=person)
                    st.rerun()
            elif cols[1].button("Pause", key=f"watch_pause_{watch.id}"):
                watchstore.set_state(store, watch.id, "paused", person=person)
                st.rerun()
            if cols[2].button("Stop", key=f"watch_stop_{watch.id}",
                              help="Stop watching; the reports made so far stay in the Library."):
                watchstore.remove_watch(store, watch.id, person=person)
                st.session_state["lib_flash"] = "Stopped watching that topic."
                st.rerun()
