"""The "Dig deeper" box under a finished report: a follow-up run on one of its sections.

The follow-up reuses this run's settings and sources (research.related) and is linked to it,
so the Library and the new run's page say what it builds on.
"""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from dashboard import ui
from dashboard.jobs import JobManager
from research import ResearchConfig
from research.core.errors import ConfigError
from research.core.records import Run
from research.phases.start.preflight import check_configuration
from research.related import dig_deeper_question, report_sections


def panel(jobs: JobManager, run: Run, markdown: str) -> None:
    """Pick a section of the report and start a follow-up run on it (none for a report
    without sections)."""
    sections = report_sections(markdown)
    if not sections:
        return
    run_id = run.id
    with st.container(border=True):
        st.markdown("**Dig deeper.** Pick a section to research further. A new run starts with "
                    "this run's sources and settings and is linked to this one.")
        cols = st.columns([3, 1], vertical_alignment="bottom")
        section = cols[0].selectbox("Section", sections, key=f"dig_{run_id}")
        if not cols[1].button("Dig deeper", icon=":material/zoom_in:", type="primary"):
            return
        question = dig_deeper_question(run.question, section)
        creds = ui.credentials()
        try:
            parent_config = ResearchConfig(**{**run.config,
                                              "dig_deeper_section": section})
            check_configuration(parent_config, creds)
            child = jobs.start(question, parent_config, creds, prices=ui.prices(),
                               parent_run_id=run_id, person=ui.viewer())
        except ValidationError:
            st.error("This run's settings are from an older version and cannot be reused. Start "
                     "a new run on the New research page instead.")
        except ConfigError as exc:
            st.error(f"Nothing was started: {exc}")
        else:
            ui.open_run(child)
