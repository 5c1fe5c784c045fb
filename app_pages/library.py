"""Library: every run, searchable; open, delete, run again, watch a topic (dashboard/watches_view.py),
and compare runs side by side."""

from __future__ import annotations

import math

import streamlit as st

from dashboard import compare_table, compare_view, ui, versions_view, views, watches_view
from research.runs import ACTIVE
from storage.versions import version_groups

PAGE_SIZE = 50

store = ui.store()
jobs = ui.jobs()
person = ui.viewer()  # with sign-in: only this person's runs, in every query below
state = st.session_state

st.title("Library")

cols = st.columns([3, 1, 1])
search = cols[0].text_input("Search questions", key="lib_search", placeholder="words from the question")
status = cols[1].selectbox("Status", ["any", "completed", "running", "waiting", "paused", "failed",
                                      "cancelled", "interrupted", "queued"], key="lib_status",
                            format_func=lambda s: "Any" if s == "any" else views.status_label(s))
status_filter = None if status == "any" else status
total = store.count_runs(search or None, status=status_filter, person=person)
pages = max(1, math.ceil(total / PAGE_SIZE))
page = cols[2].number_input("Page", 1, pages, 1, key="lib_page", help=f"{pages} page(s)")
runs = store.list_runs(search=search or None, status=status_filter, limit=PAGE_SIZE,
                       offset=(int(page) - 1) * PAGE_SIZE, person=person)
# A queued run nothing executes reads "Interrupted", as on its Run page and in the API.
runs = [views.as_shown(r, jobs.is_alive(r.id)) if r.status == "queued" else r for r in runs]

if total == 0:
    if search or status_filter:
        st.info("No run matches this search.")
    else:
        st.info("No research yet. Start your first run on the New research page.")
        st.page_link(ui.PAGES["new"], label="New research", icon=":material/edit_note:")
    st.stop()

st.caption(f"{total} run(s) · page {int(page)} of {pages}")
parent_ids = {r.parent_run_id for r in runs if r.parent_run_id}
parents = {pid: parent.question if (parent := store.get_run(pid, person=person)) else ""
           for pid in parent_ids}
groups = version_groups(store, [r.id for r in runs])  # the versions of one report together
runs = versions_view.grouped(runs, groups)
version_labels = versions_view.version_labels(store, runs, groups)
# One click opens a run, in this tab, on a phone as on a laptop: a list, newest first.
for run, version in zip(runs, version_labels, strict=True):
    st.page_link(ui.PAGES["run"], query_params={"run": run.id},
                 label=views.md_label(run.question, 110), icon=views.status_icon(run))
    st.caption(views.md_text(views.library_line(run, version, parents.get(run.parent_run_id or ""))))
frame = views.library_frame(runs, url_for=lambda rid: f"/run?run={rid}", parents=parents)
frame.insert(2, "Version", version_labels)
with st.expander("All details as a table (sortable)", icon=":material/table:"):
    st.dataframe(
        frame, hide_index=True, width="stretch",
        column_config={
            "Open": st.column_config.LinkColumn("Open", display_text=":material/open_in_new:",
                                                width="small"),
            "Question": st.column_config.TextColumn(width="large"),
            "Cost (USD)": st.column_config.NumberColumn(format="$%.2f"),
        },
    )

labels = {r.id: f"{views.run_name(r, with_time=True)} · {views.run_status_text(r)}"
          for r in runs}

st.subheader("Selected run")
selected = st.selectbox("Run", list(labels), format_func=labels.get, key="lib_selected")
buttons = st.container(horizontal=True)
if buttons.button("Open", icon=":material/open_in_new:", type="primary"):
    ui.open_run(selected)
if buttons.button("Run again", icon=":material/replay:",
                  help="Opens New research filled in with this run's question and settings."):
    st.switch_page(ui.PAGES["new"], query_params={"from": selected})
if buttons.button("Delete", icon=":material/delete:"):
    state["lib_confirm_delete"] = selected
watches_view.watch_control(store, selected, person)  # a finished run: "Watch this topic"

pending = state.get("lib_confirm_delete")
if pending:
    run = store.get_run(pending, person=person)
    if run is None:
        state.pop("lib_confirm_delete", None)
    elif (run.status in ACTIVE and run.status != "queued") or jobs.is_alive(pending):
        st.error("This run is still working. Cancel it on its Run page first, then delete it.")
        state.pop("lib_confirm_delete", None)
    else:
        with st.container(border=True):
            st.warning(f"Delete “{views.md_label(run.question, 120)}” and everything it "
                       "gathered (sources, drafts, report)? This cannot be undone.")
            confirm = st.container(horizontal=True)
            if confirm.button("Yes, delete it", type="primary", key="lib_delete_yes"):
                store.delete_run(pending)
                state.pop("lib_confirm_delete", None)
                state["lib_flash"] = "The run was deleted."
                st.rerun()
            if confirm.button("Keep it", key="lib_delete_no"):
                state.pop("lib_confirm_delete", None)
                st.rerun()

flash = state.pop("lib_flash", None)
if flash:
    st.success(flash)
watches_view.render(store, person)  # watched topics: pause, resume, stop

st.subheader("Compare runs")
chosen = st.multiselect("Pick two or more runs", list(labels), format_func=labels.get, key="lib_compare")
if len(chosen) == 1:
    st.caption("Pick at least one more run to compare.")
elif len(chosen) >= 2:
    table = compare_table.compare_frame(store, chosen, person=person)
    st.dataframe(table.drop(columns=["Run id"]), hide_index=True, width="stretch",
                 column_config={"Cost (USD)": st.column_config.NumberColumn(format="$%.2f")})
    constant = st.selectbox("Compare against", list(compare_table.COMPARE_CONSTANTS), key="lib_compare_constant")
    charts = compare_table.compare_charts(table, constant)
    left, right = st.columns(2)
    for i, (name, fig) in enumerate(charts.items()):
        (left if i % 2 == 0 else right).plotly_chart(fig, key=f"compare_{name}")
    compare_view.panel(store, list(table["Run id"]),
                       [t.replace("<br>", " · ") for t in compare_table.compare_labels(table)],
                       person=person)
