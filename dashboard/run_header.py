"""The top of the Run page: which run the link names, and its heading.

The run id comes from the `run` query parameter, so a shared or bookmarked link opens the
same run. A missing or unknown id ends the page with a plain-words way on, never an error.
"""

from __future__ import annotations

import streamlit as st

from dashboard import ui, views
from research.core.records import Run
from storage import Store

TITLE_CHARS = 160  # the heading shows this much of the question; the rest is one click away


def chosen_run(store: Store) -> Run:
    """The run the link names; without one, a list of recent runs or a way to the Library, and
    the page stops there."""
    run_id = st.query_params.get("run")
    person = ui.viewer()  # with sign-in, another person's run id reads as no run at all
    if not run_id:
        st.title("Run")
        st.info("No run is selected. Start one on the New research page or open one from the Library.")
        for recent in store.list_runs(limit=10, person=person):
            st.page_link(ui.PAGES["run"], query_params={"run": recent.id},
                         label=f"{views.md_text(views.run_name(recent, with_time=True))} · "
                               f"{views.run_status_text(recent)}")
        st.stop()
    run = store.get_run(run_id, person=person)
    if run is None:
        st.title("Run")
        st.error("There is no such run: it may have been deleted, or the link is incomplete. "
                 "Open the Library to see every run.")
        st.page_link(ui.PAGES["library"], label="Open the Library", icon=":material/library_books:")
        st.stop()
    # Said again, so the address bar carries it: a link from this page to itself (the list
    # above) opens the run without changing the address, and the next click (Resume) then
    # found no run selected (issue 39's journey, tests/test_browser_journey.py).
    st.query_params["run"] = run_id
    return run


def heading(store: Store, run: Run) -> None:
    """The question (a long one trimmed, in full one click away) and the run it builds on."""
    st.title("Research run")
    st.markdown(f"#### {views.md_text(views.label_text(run.question, TITLE_CHARS))}")
    if len(" ".join(run.question.split())) > TITLE_CHARS:  # a dig-deeper run's long question
        with st.expander("The full question"):
            st.markdown(views.md_text(run.question))
    parent_id = run.parent_run_id
    if not parent_id:
        return
    parent = store.get_run(parent_id, person=ui.viewer())
    if parent is None:
        st.caption("This run built on an earlier run that has since been deleted.")
    else:
        st.page_link(ui.PAGES["run"], query_params={"run": parent_id}, icon=":material/account_tree:",
                     label="Builds on: " + views.md_label(parent.question, 100))
