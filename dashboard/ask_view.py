""""Ask the report": the conversation under a finished report (issue 35).

A person types a question and gets, in seconds, an answer written only from this run's
sources, citing them with the report's numbers (each citation opens the same source as in the
report) and checked like the report; the conversation is kept with the run and shown when the
run is opened again. A question the sources cannot answer offers "Research it": a follow-up
run built on this one with the question as its brief. The engine is `research.ask`; this file
only draws it. A link near the top of the report (`run_report.jump_links`) reaches the box without
scrolling through the report.
"""

from __future__ import annotations

import dataclasses

import streamlit as st
from pydantic import ValidationError

from dashboard import doc_citations, ui, views
from research.ask import Answer, AskError, ask, conversation, cost_cap, research_it
from research.core.errors import ConfigError
from research.core.records import Run
from research.export.document import ReportDocument, ReportSource
from research.phases.start.preflight import check_configuration
from research.runs import Runs
from storage import Store

ANCHOR = "ask-the-report"


def panel(store: Store, jobs: Runs, run: Run, doc: ReportDocument) -> None:
    """The run's questions and answers, and the box to ask another."""
    st.subheader("Ask the report", anchor=ANCHOR)
    st.caption("Answers come only from this run's own sources, cite them with the report's "
               "numbers and are checked against them like the report. Each answer takes a few "
               "model calls, counted in this run's cost.")
    person = ui.viewer()
    try:
        asked = conversation(store, run.id, person=person)
    except AskError as exc:
        st.error(str(exc))
        return
    for answer in asked:
        _answer(store, jobs, run, doc, answer)
    cap = cost_cap(store, run, ui.prices())
    if cap is not None:
        st.caption(views.dollars(cap.line))
    with st.form(key=f"ask_{run.id}", clear_on_submit=True, border=False):
        question = st.text_area("Your question", key=f"ask_q_{run.id}", height=80,
                                placeholder="e.g. Which of these is cheapest? Is that figure "
                                            "from 2024 or older?")
        sent = st.form_submit_button("Ask", icon=":material/send:", type="primary")
    if not sent:
        return
    if not (question or "").strip():
        st.warning("Type a question first.")
        return
    with st.spinner("Reading this run's sources and checking the answer..."):
        try:
            ask(store, run.id, question, credentials=ui.credentials(), person=person,
                prices=ui.prices())
        except (AskError, ConfigError) as exc:
            st.error(f"No answer: {exc}")
            return
    st.rerun()


def _answer(store: Store, jobs: Runs, run: Run, doc: ReportDocument, answer: Answer) -> None:
    with st.chat_message("user"):
        st.markdown(views.md_text(answer.question))
    with st.chat_message("assistant"):
        cited = dataclasses.replace(doc, body=answer.text, sources=tuple(
            ReportSource(number=s.number, source_id=s.source_id, title=s.title, url=s.url,
                         domain="", published=None, subtopic=None) for s in answer.sources))
        st.markdown(views.report_markdown(cited))
        if answer.sources:
            st.caption(views.sources_markdown(cited))
            doc_citations.answer_passages(store, doc, cited)  # a passage of one's documents
        if answer.check_line:
            st.caption(views.md_text(answer.check_line))
        if not answer.answered and st.button("Research it", icon=":material/travel_explore:",
                                             key=f"research_it_{answer.turn_id}",
                                             help="Start a follow-up run built on this one, "
                                                  "with this question as its brief."):
            _research_it(store, jobs, run, answer)


def _research_it(store: Store, jobs: Runs, run: Run, answer: Answer) -> None:
    creds = ui.credentials()
    try:
        from research import ResearchConfig

        check_configuration(ResearchConfig(**run.config), creds)
        child = research_it(jobs, store, run.id, answer.turn_id, credentials=creds,
                            person=ui.viewer(), prices=ui.prices())
    except ValidationError:
        st.error("This run's settings are from an older version and cannot be reused. Start "
                 "a new run on the New research page instead.")
    except (AskError, ConfigError) as exc:
        st.error(f"Nothing was started: {exc}")
    else:
        ui.open_run(child)
