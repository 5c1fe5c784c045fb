"""The Run page's tabs, one render function each, and the tab row that lays them out.

Every function reads what the store holds now, so while a run works the tabs are drawn again
inside a refreshing fragment and show what exists so far: the plan once it is made, sources
as they are kept, rounds and reviews as they finish, verdicts as they arrive, and the newest
draft. Text from the web and models goes through `views.md_text` before it reaches Markdown.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import streamlit as st

from dashboard import engines_view, research_map, rounds_view, run_report, verification_view, views
from dashboard.documents_view import show_run_passages
from dashboard.run_report import download_buttons
from research import voice
from research.core.records import Run
from research.export.formats import file_stem
from research.runs import ACTIVE
from storage import Store

TABS = ["Plan", "Map", "Sources", "Rounds", "Review", "Verification", "Report", "Engines", "Tokens and cost"]


def plan_tab(store: Store, run: Run) -> None:
    """The plan (and the original one, if the person edited it)."""
    run_id = run.id
    plan = store.get_plan(run_id)
    if not plan:
        st.info("The plan appears here as soon as the question has been split into subtopics."
                if run.status in ACTIVE or run.status == "waiting" else
                "This run ended before a plan was made.")
    for i, sub in enumerate(plan or [], 1):
        marker = (" *(reused from the earlier run)*" if sub.inherited else
                  f" *(added in round {sub.round})*" if sub.round > 1 else "")
        st.markdown(f"**{i}. {views.md_text(sub.title)}**{marker}  \n"
                    f"{views.md_text(sub.description)}")
        if sub.questions:
            st.markdown("\n".join(f"- {views.md_text(q)}" for q in sub.questions))
    versions = store.get_plans(run_id)
    if plan and any(v.kind == "edited" for v in versions):
        with st.expander("The original plan, before your edits"):
            st.markdown("\n".join(f"{i}. {views.md_text(s.title)}"
                                  for i, s in enumerate(versions[0].subtopics, 1)))


def clicked_branch(event: Any) -> str | None:
    """The id of the sunburst slice the person clicked (Streamlit reports a click on a
    hierarchical chart as a one-point selection carrying the slice's id), or None."""
    try:
        points = event["selection"]["points"]
    except (KeyError, TypeError):
        return None
    return str(points[0].get("id")) if points and points[0].get("id") is not None else None


def map_tab(store: Store, run: Run) -> None:
    """The research map (dashboard.research_map) and, for a chosen branch, its findings and
    sources."""
    run_id = run.id
    sources = store.get_sources(run_id, with_text=False)
    findings = store.get_findings(run_id)
    tree = research_map.branches(run.question, store.get_plan(run_id) or [],
                                 store.get_steps(run_id), sources, findings,
                                 finished=run.status not in ACTIVE)
    if len(tree) == 1:
        st.info("The map grows here once the lead has planned the research.")
        return
    event = st.plotly_chart(research_map.figure(tree), key="research_map", on_select="rerun",
                            selection_mode="points")
    st.caption("Click a branch to see its findings and sources below (and to zoom in; click the "
               "centre to zoom out); " + research_map.legend() + ".")
    choices = {b.id: b for b in tree[1:] if b.subtopic_id}
    clicked = clicked_branch(event)
    if clicked in choices and clicked != st.session_state.get("_map_clicked"):
        # A new click picks the branch; the list below still lets the person choose another.
        st.session_state["_map_clicked"] = clicked
        st.session_state["map_branch"] = clicked
    chosen = st.selectbox("Show a branch's findings and sources", list(choices),
                          format_func=lambda i: views.label_text(  # options are plain text
                              f"{choices[i].kind}: {choices[i].label} ({choices[i].state})", 80),
                          index=None, key="map_branch")
    if chosen is None:
        return
    branch = choices[chosen]
    if branch.reason:
        st.caption(views.md_text(branch.reason))
    mine = [f for f in findings if f.subtopic_id == branch.subtopic_id and f.kind == "finding"]
    for f in mine[:30]:
        st.markdown("- " + views.md_text(f.claim))
    kept = [s for s in sources if s.subtopic_id == branch.subtopic_id]
    if kept:
        st.dataframe(views.sources_frame(kept, store.get_plan(run_id)), hide_index=True,
                     width="stretch", column_config={"Link": st.column_config.LinkColumn(
                         "Open", display_text=":material/open_in_new:", width="small")})
    if not mine and not kept:
        st.caption("Nothing found on this branch yet.")


def rounds_tab(store: Store, run: Run) -> None:
    """Per research round: coverage, follow-up questions and what was decided."""
    run_id = run.id
    config = run.config
    steps = store.get_steps(run_id)
    results = rounds_view.round_steps(steps)
    plan = store.get_plan(run_id)
    stop = run.totals.stop_reason or next(
        (r["stop_reason"] for r in reversed(results) if r.get("stop_reason")), None)
    if stop:
        st.info("**Why research stopped:** " + views.md_text(rounds_view.stop_text(stop, config)))
    if not results:
        st.info("After each research round the planner judges how well every subtopic is "
                "covered and decides what to do with the workers' follow-up questions; "
                "that appears here.")
    lookups = {s.key: s for s in steps if s.kind == "followup"}
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


def sources_tab(store: Store, run: Run) -> None:
    """Every kept source with filters and charts; pages looked at but not kept."""
    run_id = run.id
    sources = store.get_sources(run_id, with_text=False)
    if not sources:
        st.info("Sources appear here as the research finds them.")
    else:
        frame = views.sources_frame(sources, store.get_plan(run_id))
        cols = st.columns(4)
        chosen_subtopics = cols[0].multiselect("Subtopic", sorted(frame["Subtopic"].unique()))
        top_domains = frame["Domain"].value_counts().index.tolist()
        chosen_domains = cols[1].multiselect("Domain", top_domains)
        chosen_kinds = cols[2].multiselect(
            "Kind of source", views.kinds_present(frame),
            help="Derived from the address, the search service and the page's own date and "
                 "author: peer-reviewed papers and official sites are usually the strongest.")
        min_relevance = cols[3].slider("Minimum relevance", 0.0, 1.0, 0.0, 0.05)
        shown = views.filter_sources(frame, subtopics=chosen_subtopics, domains=chosen_domains,
                                     min_relevance=min_relevance, kinds=chosen_kinds)
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
            st.dataframe([{"Page": s.url, "Why": s.reason} for s in skipped[:2000]],
                         hide_index=True, width="stretch")


def review_tab(store: Store, run: Run) -> None:
    """Each review cycle: verdict, issues by severity, checks, what the revision changed."""
    run_id = run.id
    reviews = store.get_reviews(run_id)
    drafts = {d.version: d for d in store.get_drafts(run_id)}
    if not reviews:
        st.info("Review feedback appears here after the first draft has been reviewed."
                if run.config.get("review_cycles", 1) else
                "This run was set to skip review (0 review cycles).")
    for review in reviews:
        verdict = (":material/check_circle: Approved" if review.approved
                   else ":material/edit: Changes requested")
        with st.container(border=True):
            st.markdown(f"**Review cycle {review.cycle}: {verdict}** (draft {review.draft_version})")
            if review.model_approved != review.approved:
                st.caption("The reviewer model approved, but the automatic checks did not pass."
                           if review.model_approved else
                           "The automatic checks passed, but the reviewer asked for changes.")
            groups = views.group_issues(review.issues)
            for severity, issues in groups.items():
                st.markdown(f"**{severity.capitalize()} severity** ({len(issues)})")
                st.markdown("\n".join(
                    f"- *{views.md_text(i.section or 'General')}*: {views.md_text(i.issue)}"
                    + (f"  \n  Suggestion: {views.md_text(i.suggestion)}" if i.suggestion else "")
                    for i in issues))
            if not groups:
                st.markdown("No issues raised.")
            if review.strengths:
                st.markdown("**Strengths**\n" + "\n".join(f"- {views.md_text(s)}" for s in review.strengths))
            rows = views.checks_rows(review.checks or {})
            if rows:
                st.markdown("**Automatic checks**")
                st.dataframe([{"Check": c, "Result": r} for c, r in rows], hide_index=True)
            old, new = drafts.get(review.draft_version), drafts.get(review.draft_version + 1)
            if old and new:
                added, removed = views.diff_stats(old.text, new.text)
                with st.expander(f"What changed in the revision (+{added} / −{removed} lines)"):
                    st.code(views.draft_diff(old.text, new.text,
                                             old_name=f"draft {old.version}",
                                             new_name=f"draft {new.version}"),
                            language="diff")


def verification_tab(store: Store, run: Run) -> None:
    """Claim verdicts as they arrive, with filters and one claim in detail."""
    run_id = run.id
    verdicts = store.get_verifications(run_id)
    if not verdicts:
        st.info("Every cited claim is checked against its sources after the review; the "
                "verdicts appear here as they arrive." if run.status in ACTIVE else
                "No claims were checked in this run: it ended before the checking step, or "
                "it was handed to a hosted engine, which does not check claims here.")
    else:
        checked = verification_view.summary_of(store, run_id)
        top, bottom = st.columns(2), st.columns(2)  # 2 x 2: no figure cut off on a phone
        top[0].metric(verification_view.share_label(checked), verification_view.share_text(checked))
        top[1].metric("Removed", checked.unsupported_removed)
        bottom[0].metric("Qualified", checked.rewritten)
        bottom[1].metric("Marked single-source", checked.single_source)
        if checked.line:
            st.caption(views.md_text(checked.line))
        if checked.unverified_subtopics:
            st.warning("Unverified subtopics (marked in the report): "
                       + "; ".join(views.md_text(t) for t in checked.unverified_subtopics))
        by_id = {s.id: s for s in store.get_sources(run_id, with_text=False)}
        frame = verification_view.verdicts_frame(verdicts, by_id)
        cols = st.columns(2)
        outcomes = cols[0].multiselect("Outcome", sorted(frame["Outcome"].unique()), key="v_outcome")
        sections = cols[1].multiselect("Section", list(dict.fromkeys(frame["Section"])), key="v_section")
        shown = verification_view.filter_verdicts(frame, outcomes=outcomes, sections=sections)
        st.caption(f"{len(shown)} of {len(frame)} claims")
        st.dataframe(shown[verification_view.SHOWN_COLUMNS], hide_index=True, width="stretch",
                     height=360,
                     column_config={"Claim": st.column_config.TextColumn("Claim", width="large"),
                                    "Passage": st.column_config.TextColumn("Passage", width="large")})
        rows = {v.claim_id: v for v in verdicts}
        numbers = dict(zip(frame["Claim id"], frame["#"], strict=True))
        choice = st.selectbox("Look at one claim", [c for c in shown["Claim id"] if c in rows],
                              format_func=lambda cid: verification_view.claim_choice_label(
                                  rows[cid], numbers.get(cid)),
                              key="v_claim")
        if choice:
            with st.container(border=True):
                st.markdown(verification_view.claim_detail_markdown(rows[choice], by_id))


def engines_tab(store: Store, run: Run) -> None:
    """The hosted engines' reports side by side."""
    run_id = run.id
    entries = engines_view.columns(store, run_id)
    if not entries:
        st.info("The hosted engines' reports appear here when they finish.")
    for column, entry in zip(st.columns(max(1, len(entries)), gap="medium"), entries, strict=False):
        with column:
            st.subheader(views.md_text(entry.label))
            cost = views.dollars(voice.money(entry.cost_usd)) if entry.cost_usd is not None \
                else "cost unknown"
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
            download_buttons(store, run_id, entry.doc, stamp=str(entry.words), key=entry.engine,
                             name=f"{file_stem(run.question, run.created_at)}-{entry.engine}", formats=("pdf", "docx", "md"))
            st.markdown(views.report_markdown(entry.doc))


def usage_tab(store: Store, run: Run) -> None:
    """Tokens and estimated cost per role and model."""
    run_id = run.id
    config = run.config
    usage = store.get_usage(run_id)
    totals = store.usage_totals(run_id)
    cols = st.columns(3)
    cols[0].metric("Model calls", totals.calls)
    cols[1].metric("Tokens", f"{totals.tokens:,}", help="The pieces of words the models read "
                   "and wrote (a token is about three quarters of a word): what they charge by.")
    cols[2].metric("Estimated cost", views.dollars(voice.money(totals.cost_usd)))
    if config.get("max_cost_usd"):
        cap = views.dollars(voice.money(float(config["max_cost_usd"])))
        st.caption(f"Cost cap for this run: {cap}. Prices come from the same table as the "
                   "estimate on the New research page.")
    if usage:
        st.dataframe(views.usage_frame(usage), hide_index=True, width="stretch",
                     column_config={"Cost (USD)": st.column_config.NumberColumn(format="$%.3f")})
    else:
        st.info("No model calls recorded yet.")


def panel(store: Store, run: Run, *, finished: bool) -> None:
    """Plan, sources, rounds, review, verification, draft, engines, cost: what exists now.
    Only the open tab is drawn; a finished run's report leads the page, so it has no tab."""
    run_id = run.id
    current = store.get_run(run_id) or run
    names = [t for t in TABS
             if t != "Engines" or engines_view.has_engines(store, run_id, run.config)]
    if finished:
        names = [t for t in names if t != "Report"]
    for name, tab in zip(names, st.tabs(names, key="tab", bind="query-params"), strict=True):
        if tab.open:
            with tab:
                RENDER[name](store, current)


RENDER: dict[str, Callable[[Store, Run], None]] = {
    "Plan": plan_tab, "Map": map_tab, "Sources": sources_tab, "Rounds": rounds_tab,
    "Review": review_tab, "Verification": verification_tab,
    "Report": run_report.draft_in_progress,
    "Engines": engines_tab, "Tokens and cost": usage_tab}
