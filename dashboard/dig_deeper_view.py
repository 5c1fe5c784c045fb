"""The "Dig deeper" box under a finished report: a follow-up run on one of its sections.

The follow-up reuses this run's settings and sources (research.related) and is linked to it,
so the Library and the new run's page say what it builds on.
"""

from __future__ import annotations

import streamlit as st
from pydantic import ValidationError

from dashboard import ui, views
from research import ResearchConfig, voice
from research.core.errors import ConfigError
from research.core.records import Run
from research.estimate import estimate, spoken_duration
from research.phases.start.preflight import check_configuration
from research.related import dig_deeper_question, report_sections
from research.runs import Runs


def cost_line(run: Run) -> str:
    """What the follow-up will cost, said before it is started (the same estimate as on the
    New research form, for this run's settings); "" when its settings cannot be read or a
    hosted engine decides its own cost."""
    try:
        config = ResearchConfig(**run.config)
    except ValidationError:
        return ""
    if config.engine != "pipeline":
        return ""
    guess = estimate(config, ui.prices())
    cap = f" (your cap: {voice.money(config.max_cost_usd)})" if config.max_cost_usd else ""
    return (f"A follow-up run with this run's settings: about {spoken_duration(guess.seconds)} "
            f"and {voice.money(guess.cost_usd, about=True)}{cap}, {guess.model_calls:,} model "
            "calls at most; "
            "rough figures, the sources it already has make it cheaper.")


def panel(jobs: Runs, run: Run, markdown: str) -> None:
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
        cost = cost_line(run)
        if cost:
            st.caption(views.dollars(cost))
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
