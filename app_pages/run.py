"""One run: live progress while it works, the person's part when it waits (answers, plan
review, the next round), then the report first, with how the run went folded below it.

This page is the table of contents; each part is a render function in `dashboard/`.
"""

from __future__ import annotations

import streamlit as st

from dashboard import (
    ask_view,
    dig_deeper_view,
    run_header,
    run_live,
    run_report,
    run_tabs,
    run_waiting,
    ui,
    versions_view,
)
from research.runs import ACTIVE, status_of

REFRESH_S = 2.0  # how often the live panel and the open tab are drawn again while a run works

store = ui.store()
jobs = ui.jobs()
run = run_header.chosen_run(store)  # the page stops here without a run to show
run_header.heading(store, run)

status = status_of(run, jobs.is_alive(run.id))
run_live.remember_active(run.id, status in ACTIVE)
if status == "waiting":
    run_waiting.panel(store, jobs, run)

report, doc = run_report.finished_report(store, run)
if report is not None and doc is not None:  # the report leads; how the run went folds below
    run_report.report_first(store, run, report, doc)
    dig_deeper_view.panel(jobs, run, report.markdown)
    versions_view.panel(store, run, report.markdown, person=ui.viewer())
    ask_view.panel(store, jobs, run, doc)  # reached from the link at the report's top
    st.subheader("Behind the report", anchor=run_report.DETAILS_ANCHOR)
    with st.expander("How the run went: progress, plan, sources, rounds, review, verification, "
                     "cost", icon=":material/query_stats:"):
        st.fragment(run_live.panel)(store, jobs, run.id)
        run_tabs.panel(store, run, finished=True)
else:  # working, waiting or stopped: both parts refresh while the run works
    every = REFRESH_S if status in ACTIVE else None
    st.fragment(run_every=every)(run_live.panel)(store, jobs, run.id)
    if not run_live.setup_failed(store, run):  # (a run that never started has nothing to tab)
        st.fragment(run_every=every)(run_tabs.panel)(store, run, finished=False)
