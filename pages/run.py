"""One run: live progress while it works, then its plan, sources, review, report and cost."""

from __future__ import annotations

import streamlit as st

from dashboard import ui, verification_view, views
from dashboard.jobs import ACTIVE, RESUMABLE, status_of
from research import cancel, pause, unpause
from research.errors import ConfigError, ResearchError
from research.progress import percent

REFRESH_S = 2.0
TABS = ["Plan", "Sources", "Review", "Verification", "Report", "Tokens and cost"]

store = ui.store()
jobs = ui.jobs()
state = st.session_state
run_id = st.query_params.get("run")

if not run_id:
    st.title("Run")
    st.info("No run is selected. Start one on the New research page or open one from the Library.")
    for run in store.list_runs(limit=10):
        st.page_link(ui.PAGES["run"], query_params={"run": run["id"]},
                     label=f"{views.status_label(run['status'])} · {views.label_text(run['question'], 90)}")
    st.stop()

run = store.get_run(run_id)
if run is None:
    st.title("Run")
    st.error(f"There is no run with the id “{run_id}”. It may have been deleted. "
             "Open the Library to see every run.")
    st.page_link(ui.PAGES["library"], label="Open the Library", icon=":material/library_books:")
    st.stop()

st.title("Research run")
st.markdown(f"#### {views.md_text(run['question'])}")


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

    st.progress(pct / 100, text=f"{status.capitalize()} · {pct}%")
    cols = st.columns(4)
    cols[0].metric("Elapsed", views.duration_text(elapsed))
    cols[1].metric("Estimated remaining",
                   views.duration_text(remaining) if remaining is not None else "—")
    cols[2].metric("Sources so far", int(activity.get("sources") or 0))
    cols[3].metric("Steps done", f"{activity.get('steps_done', 0)} of {activity.get('steps_total', 0)}")

    message = state.pop("_run_message", None)
    if message:
        st.error(message)
    if status == "failed" and current.get("error"):
        st.error(f"The run stopped: {current['error']}")
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
    elif status == "interrupted" and not alive:
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


initially_active = status_of(run, jobs.is_alive(run_id)) in ACTIVE
state[f"_active_{run_id}"] = initially_active
st.fragment(run_every=REFRESH_S if initially_active else None)(live_panel)()

plan_tab, sources_tab, review_tab, verification_tab, report_tab, usage_tab = st.tabs(TABS, key="tab", bind="query-params")

if plan_tab.open:
    with plan_tab:
        plan = store.get_plan(run_id)
        if not plan:
            st.info("The plan appears here once the lead has split the question into subtopics.")
        for i, sub in enumerate(plan or [], 1):
            st.markdown(f"**{i}. {views.md_text(sub.get('title'))}**  \n{views.md_text(sub.get('description'))}")
            questions = sub.get("questions") or []
            if questions:
                st.markdown("\n".join(f"- {views.md_text(q)}" for q in questions))

if sources_tab.open:
    with sources_tab:
        sources = store.get_sources(run_id, with_text=False)
        if not sources:
            st.info("Sources appear here as the research finds them.")
        else:
            frame = views.sources_frame(sources, store.get_plan(run_id))
            cols = st.columns(3)
            chosen_subtopics = cols[0].multiselect("Subtopic", sorted(frame["Subtopic"].unique()))
            top_domains = frame["Domain"].value_counts().index.tolist()
            chosen_domains = cols[1].multiselect("Domain", top_domains)
            min_relevance = cols[2].slider("Minimum relevance", 0.0, 1.0, 0.0, 0.05)
            shown = views.filter_sources(frame, subtopics=chosen_subtopics, domains=chosen_domains,
                                         min_relevance=min_relevance)
            st.caption(f"{len(shown)} of {len(frame)} sources")
            st.dataframe(
                shown, hide_index=True, width="stretch", height=420,
                column_config={
                    "Link": st.column_config.LinkColumn("Open", display_text=":material/open_in_new:",
                                                        width="small"),
                    "Title": st.column_config.TextColumn("Title", width="large"),
                    "Relevance": st.column_config.ProgressColumn("Relevance", min_value=0.0,
                                                                 max_value=1.0, format="%.2f"),
                },
            )
            charts = views.source_charts(shown)
            left, right = st.columns(2)
            left.plotly_chart(charts["subtopics"], key="chart_subtopics")
            right.plotly_chart(charts["relevance"], key="chart_relevance")
            left.plotly_chart(charts["domains"], key="chart_domains")
            right.plotly_chart(charts["dates"], key="chart_dates")
        skipped = store.get_skipped(run_id)
        if skipped:
            with st.expander(f"Pages looked at but not kept ({len(skipped)})"):
                st.dataframe([{"Page": s["url"], "Why": s["reason"]} for s in skipped[:2000]],
                             hide_index=True, width="stretch")

if review_tab.open:
    with review_tab:
        reviews = store.get_reviews(run_id)
        drafts = {d["version"]: d for d in store.get_drafts(run_id)}
        if not reviews:
            st.info("Review feedback appears here after the first draft has been reviewed."
                    if run["config"].get("review_cycles", 1) else
                    "This run was set to skip review (0 review cycles).")
        for review in reviews:
            verdict = "✅ Approved" if review["approved"] else "✍️ Changes requested"
            with st.container(border=True):
                st.markdown(f"**Review cycle {review['cycle']}: {verdict}** (draft {review['draft_version']})")
                if review["model_approved"] != review["approved"]:
                    st.caption("The reviewer model approved, but the automatic checks did not pass."
                               if review["model_approved"] else
                               "The automatic checks passed, but the reviewer asked for changes.")
                groups = views.group_issues(review.get("issues") or [])
                for severity, issues in groups.items():
                    st.markdown(f"**{severity.capitalize()} severity** ({len(issues)})")
                    st.markdown("\n".join(
                        f"- *{views.md_text(i.get('section') or 'General')}*: {views.md_text(i.get('issue'))}"
                        + (f"  \n  Suggestion: {views.md_text(i.get('suggestion'))}" if i.get("suggestion") else "")
                        for i in issues))
                if not groups:
                    st.markdown("No issues raised.")
                strengths = review.get("strengths") or []
                if strengths:
                    st.markdown("**Strengths**\n" + "\n".join(f"- {views.md_text(s)}" for s in strengths))
                rows = views.checks_rows(review.get("checks") or {})
                if rows:
                    st.markdown("**Automatic checks**")
                    st.dataframe([{"Check": c, "Result": r} for c, r in rows], hide_index=True)
                old, new = drafts.get(review["draft_version"]), drafts.get(review["draft_version"] + 1)
                if old and new:
                    added, removed = views.diff_stats(old["text"], new["text"])
                    with st.expander(f"What changed in the revision (+{added} / −{removed} lines)"):
                        st.code(views.draft_diff(old["text"], new["text"],
                                                 old_name=f"draft {old['version']}",
                                                 new_name=f"draft {new['version']}"),
                                language="diff")

if verification_tab.open:
    with verification_tab:
        verdicts = store.get_verifications(run_id)
        if not verdicts:
            st.info("Every cited claim is checked against its sources after the review; the "
                    "verdicts appear here then.")
        else:
            checked = verification_view.summary_of(store, run_id)
            cols = st.columns(4)
            cols[0].metric("Supported claims", verification_view.share_text(checked))
            cols[1].metric("Removed", checked["unsupported_removed"])
            cols[2].metric("Qualified", checked["rewritten"])
            cols[3].metric("Single-source, marked", checked["single_source"])
            if checked["line"]:
                st.caption(views.md_text(checked["line"]))
            if checked["unverified_subtopics"]:
                st.warning("Unverified subtopics (marked in the report): "
                           + "; ".join(views.md_text(t) for t in checked["unverified_subtopics"]))
            by_id = {s["id"]: s for s in store.get_sources(run_id, with_text=False)}
            frame = verification_view.verdicts_frame(verdicts, by_id)
            cols = st.columns(2)
            outcomes = cols[0].multiselect("Outcome", sorted(frame["Outcome"].unique()), key="v_outcome")
            sections = cols[1].multiselect("Section", list(dict.fromkeys(frame["Section"])), key="v_section")
            shown = verification_view.filter_verdicts(frame, outcomes=outcomes, sections=sections)
            st.caption(f"{len(shown)} of {len(frame)} claims")
            st.dataframe(shown, hide_index=True, width="stretch", height=360,
                         column_config={"Claim": st.column_config.TextColumn("Claim", width="large"),
                                        "Passage": st.column_config.TextColumn("Passage", width="large")})
            rows = {v["claim_id"]: v for v in verdicts}
            choice = st.selectbox("Look at one claim", [c for c in shown["Claim id"] if c in rows],
                                  format_func=lambda cid: verification_view.claim_choice_label(rows[cid]),
                                  key="v_claim")
            if choice:
                with st.container(border=True):
                    st.markdown(verification_view.claim_detail_markdown(rows[choice], by_id))

if report_tab.open:
    with report_tab:
        report = store.get_report(run_id)
        if report is None:
            st.info("The report appears here when the run completes.")
        else:
            from research.export.run_document import build_document_for_run

            try:
                doc = build_document_for_run(store, run_id)
            except ResearchError as exc:
                st.error(f"The report could not be shown: {exc}")
            else:
                buttons = st.container(horizontal=True)
                buttons.download_button("Download Markdown", report["markdown"].encode("utf-8"),
                                        file_name=f"report-{run_id}.md", mime="text/markdown",
                                        icon=":material/download:", on_click="ignore")
                pdf_key = f"_pdf_{run_id}"
                if state.get(pdf_key):
                    buttons.download_button("Download PDF", state[pdf_key], file_name=f"report-{run_id}.pdf",
                                            mime="application/pdf", icon=":material/picture_as_pdf:",
                                            on_click="ignore")
                elif buttons.button("Prepare PDF", icon=":material/picture_as_pdf:"):
                    with st.spinner("Creating the PDF…"):
                        try:
                            from research.export import to_pdf

                            state[pdf_key] = to_pdf(doc)
                        except ResearchError as exc:
                            st.error(f"The PDF could not be created: {exc} The Markdown download still works.")
                        except Exception as exc:  # noqa: BLE001 - shown in plain words, never a traceback
                            st.error(f"The PDF could not be created ({exc.__class__.__name__}). "
                                     "The Markdown download still works.")
                        else:
                            st.rerun()
                if doc.verification:
                    st.info(f"**Verification:** {views.md_text(doc.verification)}")
                for note in doc.notes:
                    st.warning(views.md_text(note))
                st.markdown(views.report_markdown(doc))
                st.subheader("Sources")
                st.markdown(views.sources_markdown(doc))

if usage_tab.open:
    with usage_tab:
        usage = store.get_usage(run_id)
        totals = store.usage_totals(run_id)
        cols = st.columns(3)
        cols[0].metric("Model calls", totals["calls"])
        cols[1].metric("Tokens", f"{totals['tokens']:,}")
        cols[2].metric("Estimated cost", f"${totals['cost_usd']:.4f}")
        if usage:
            st.dataframe(views.usage_frame(usage), hide_index=True, width="stretch",
                         column_config={"Cost (USD)": st.column_config.NumberColumn(format="$%.4f")})
        else:
            st.info("No model calls recorded yet.")
