"""One run: live progress while it works, the person's part when it waits (answers, plan
review), then its plan, sources, rounds, review, verification, report, engines and cost."""

from __future__ import annotations

from typing import Any

import streamlit as st
from pydantic import ValidationError

from dashboard import budget, engines_view, plan_edit, rounds_view, ui, verification_view, views
from dashboard.documents_view import show_run_passages
from dashboard.jobs import ACTIVE, RESUMABLE, status_of
from research import (
    ResearchConfig,
    answer_clarification,
    approve_plan,
    cancel,
    pause,
    pending_clarification,
    unpause,
)
from research.errors import ConfigError, ResearchError
from research.export import to_markdown
from research.phases.preflight import check_configuration
from research.progress import percent
from research.related import dig_deeper_question, report_sections, section_text

ui.require_navigation()

REFRESH_S = 2.0
TABS = ["Plan", "Sources", "Rounds", "Review", "Verification", "Report", "Engines", "Tokens and cost"]

store = ui.store()
jobs = ui.jobs()
state = st.session_state
run_id = st.query_params.get("run")

if not run_id:
    st.title("Run")
    st.info("No run is selected. Start one on the New research page or open one from the Library.")
    for run in store.list_runs(limit=10):
        st.page_link(ui.PAGES["run"], query_params={"run": run["id"]},
                     label=f"{views.run_status_text(run)} · {views.label_text(run['question'], 90)}")
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
parent_id = run.get("parent_run_id")
if parent_id:
    parent = store.get_run(parent_id)
    if parent is None:
        st.caption("This run built on an earlier run that has since been deleted.")
    else:
        st.page_link(ui.PAGES["run"], query_params={"run": parent_id}, icon=":material/account_tree:",
                     label="Builds on: " + views.md_text(views.label_text(parent["question"], 100)))


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
    if status == "waiting":
        st.info("This run is waiting for you: answer the questions or review the plan below, "
                "then continue.")
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
st.fragment(run_every=REFRESH_S if initially_active else None)(live_panel)()


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
            st.caption("Your answers shape the plan. Leave a box empty to let the lead decide.")
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
        else:
            st.write("The run stopped to wait for you, but nothing is left to answer.")
            if st.button("Continue", type="primary", icon=":material/play_arrow:"):
                _continue("Nothing was asked")

tab_names = [t for t in TABS if t != "Engines" or engines_view.has_engines(store, run_id, config)]
tabs = dict(zip(tab_names, st.tabs(tab_names, key="tab", bind="query-params"), strict=True))
plan_tab, sources_tab, rounds_tab, review_tab = tabs["Plan"], tabs["Sources"], tabs["Rounds"], tabs["Review"]
verification_tab, report_tab, usage_tab = tabs["Verification"], tabs["Report"], tabs["Tokens and cost"]
engines_tab = tabs.get("Engines")

if plan_tab.open:
    with plan_tab:
        plan = store.get_plan(run_id)
        if not plan:
            st.info("The plan appears here once the lead has split the question into subtopics.")
        for i, sub in enumerate(plan or [], 1):
            marker = (" *(reused from the earlier run)*" if sub.get("inherited") else
                      f" *(added in round {sub['round']})*" if int(sub.get("round") or 1) > 1 else "")
            st.markdown(f"**{i}. {views.md_text(sub.get('title'))}**{marker}  \n"
                        f"{views.md_text(sub.get('description'))}")
            questions = sub.get("questions") or []
            if questions:
                st.markdown("\n".join(f"- {views.md_text(q)}" for q in questions))
        versions = store.get_plans(run_id)
        if plan and any(v["kind"] == "edited" for v in versions):
            with st.expander("The original plan, before your edits"):
                st.markdown("\n".join(f"{i}. {views.md_text(s.get('title'))}"
                                      for i, s in enumerate(versions[0]["subtopics"], 1)))

if rounds_tab.open:
    with rounds_tab:
        steps = store.get_steps(run_id)
        results = rounds_view.round_steps(steps)
        plan = store.get_plan(run_id)
        totals = run.get("totals") or {}
        stop = totals.get("stop_reason") or next(
            (r["stop_reason"] for r in reversed(results) if r.get("stop_reason")), None)
        if stop:
            st.info("**Why research stopped:** " + views.md_text(rounds_view.stop_text(stop, config)))
        if not results:
            st.info("After each research round the lead judges how well every subtopic is "
                    "covered and decides what to do with the workers' follow-up questions; "
                    "that appears here.")
        lookups = {str(s["key"]): s for s in steps if s.get("kind") == "followup"}
        for result in results:
            round_no = int(result.get("round") or 0)
            st.subheader(f"Round {round_no}")
            coverage = rounds_view.coverage_frame(result, plan)
            if len(coverage):
                st.markdown("**Coverage per subtopic**")
                st.dataframe(coverage, hide_index=True, width="stretch")
            triage = rounds_view.triage_frame(result, plan, lookups)
            if len(triage):
                st.markdown("**Follow-up questions and what was decided**")
                st.dataframe(triage, hide_index=True, width="stretch",
                             column_config={"Question": st.column_config.TextColumn(width="large"),
                                            "Reason": st.column_config.TextColumn(width="large")})
            else:
                st.caption("No follow-up questions came up in this round.")
            added = rounds_view.new_subtopics(plan, round_no)
            if added:
                st.markdown(f"**New subtopics for round {round_no + 1}:** "
                            + "; ".join(views.md_text(t) for t in added))
            if result.get("stop_reason"):
                st.caption("Research stopped here: "
                           + views.md_text(rounds_view.stop_text(result["stop_reason"], config)))

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
        show_run_passages(store, run_id)
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

def _downloads(doc: Any, markdown: str, *, name: str, key: str, labels: tuple[str, str]) -> None:
    """Markdown download, and a PDF made on request (kept for this session)."""
    buttons = st.container(horizontal=True)
    suffix = f"_{key}" if key else ""
    buttons.download_button(labels[0], markdown.encode("utf-8"), file_name=f"{name}.md",
                            mime="text/markdown", icon=":material/download:", on_click="ignore",
                            key=f"md{suffix}" if key else None)
    pdf_key = f"_pdf_{name}"
    if state.get(pdf_key):
        buttons.download_button(labels[1], state[pdf_key], file_name=f"{name}.pdf",
                                mime="application/pdf", icon=":material/picture_as_pdf:",
                                on_click="ignore", key=f"pdf{suffix}" if key else None)
    elif buttons.button("Prepare PDF", icon=":material/picture_as_pdf:",
                        key=f"prepare_pdf{suffix}" if key else None):
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


def _dig_deeper(markdown: str, sections: list[str]) -> None:
    """Start a follow-up run on one section, with this run's settings and sources."""
    with st.container(border=True):
        st.markdown("**Dig deeper.** Pick a section to research further. A new run starts with "
                    "this run's sources and settings and is linked to this one.")
        cols = st.columns([3, 1], vertical_alignment="bottom")
        section = cols[0].selectbox("Section", sections, key=f"dig_{run_id}")
        if not cols[1].button("Dig deeper", icon=":material/zoom_in:", type="primary"):
            return
        question = dig_deeper_question(run["question"], section, section_text(markdown, section))
        creds = ui.credentials()
        try:
            parent_config = ResearchConfig(**(run.get("config") or {}))
            check_configuration(parent_config, creds)
            child = jobs.start(question, parent_config, creds, prices=ui.prices(), parent_run_id=run_id)
        except ValidationError:
            st.error("This run's settings are from an older version and cannot be reused. Start "
                     "a new run on the New research page instead.")
        except ConfigError as exc:
            st.error(f"Nothing was started: {exc}")
        else:
            ui.open_run(child)


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
                _downloads(doc, report["markdown"], name=f"report-{run_id}", key="",
                           labels=("Download Markdown", "Download PDF"))
                if doc.verification:
                    st.info(f"**Verification:** {views.md_text(doc.verification)}")
                for note in doc.notes:
                    st.warning(views.md_text(note))
                st.markdown(views.report_markdown(doc))
                st.subheader("Sources")
                st.markdown(views.sources_markdown(doc))
                sections = report_sections(report["markdown"])
                if sections and run["status"] == "completed":
                    _dig_deeper(report["markdown"], sections)

if engines_tab is not None and engines_tab.open:
    with engines_tab:
        entries = engines_view.columns(store, run_id)
        if not entries:
            st.info("The hosted engines' reports appear here when they finish.")
        for column, entry in zip(st.columns(max(1, len(entries)), gap="medium"), entries, strict=False):
            with column:
                st.subheader(views.md_text(entry.label))
                cost = f"\\${entry.cost_usd:.4f}" if entry.cost_usd is not None else "cost unknown"
                cited = f"{entry.cited_sources} source{'' if entry.cited_sources == 1 else 's'} cited"
                st.caption(f"{engines_view.status_text(entry.status)} · {cost} · {entry.words:,} words · {cited}")
                if entry.error:
                    st.error(views.md_text(entry.error))
                if entry.doc is None:
                    if entry.status == "completed":
                        st.warning("This report could not be shown.")
                    elif not entry.error:
                        st.info("Still working; the report appears here when it is done.")
                    continue
                _downloads(entry.doc, to_markdown(entry.doc), name=f"report-{run_id}-{entry.engine}",
                           key=entry.engine, labels=("Markdown", "PDF"))
                st.markdown(views.report_markdown(entry.doc))

if usage_tab.open:
    with usage_tab:
        usage = store.get_usage(run_id)
        totals = store.usage_totals(run_id)
        cols = st.columns(3)
        cols[0].metric("Model calls", totals["calls"])
        cols[1].metric("Tokens", f"{totals['tokens']:,}")
        cols[2].metric("Estimated cost", f"${totals['cost_usd']:.4f}")
        if config.get("max_cost_usd"):
            st.caption(f"Cost cap for this run: \\${float(config['max_cost_usd']):.2f}. Prices come "
                       "from the same table as the estimate on the New research page.")
        if usage:
            st.dataframe(views.usage_frame(usage), hide_index=True, width="stretch",
                         column_config={"Cost (USD)": st.column_config.NumberColumn(format="$%.4f")})
        else:
            st.info("No model calls recorded yet.")
