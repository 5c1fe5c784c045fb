"""Run page filled from the store: live panel, source table, review feedback, report, escaping."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixture
    APP,
    EVIL_TITLE,
    dash_env_fixture,
    finished_run,
    on_postgresql,
    open_run_page,
)

pytestmark = pytest.mark.usefixtures("dash_env")


def _all_text(at: AppTest) -> str:
    parts = [m.value for m in at.markdown] + [e.value for e in at.error] + [c.value for c in at.caption]
    return "\n".join(str(p) for p in parts)


def test_completed_run_shows_full_progress_steps_and_no_live_refresh(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    at = open_run_page(run_id)
    assert not at.exception
    assert at.progress[0].value == 100
    steps = at.dataframe[0].value
    assert list(steps["Step"])[:2] == ["Checking the providers", "Planning the research"]
    assert set(steps["State"]) == {"Done"}
    assert [b.label for b in at.button if b.label in ("Pause", "Cancel", "Resume")] == []


def test_source_table_lists_every_source_with_filters_and_charts(dash_env: Store) -> None:
    run_id = finished_run(dash_env, sources=12)
    at = open_run_page(run_id, "Sources")
    assert not at.exception
    table = next(df.value for df in at.dataframe if "Relevance" in df.value.columns)
    assert len(table) == 12
    assert {"Title", "Link", "Domain", "Subtopic", "Relevance", "Published", "Provider",
            "Cited in"} <= set(table.columns)
    assert EVIL_TITLE.split()[0] in table["Title"].iloc[0] or EVIL_TITLE in set(table["Title"])
    assert set(table["Subtopic"]) == {"Growth figures", "Costs"}
    at.multiselect[0].set_value(["Costs"]).run()
    filtered = next(df.value for df in at.dataframe if "Relevance" in df.value.columns)
    assert set(filtered["Subtopic"]) == {"Costs"} and len(filtered) == 6
    at.slider[0].set_value(0.85).run()
    filtered = next(df.value for df in at.dataframe if "Relevance" in df.value.columns)
    assert (filtered["Relevance"] >= 0.85).all()
    assert len(at.get("plotly_chart")) == 4


def test_review_feedback_shows_verdict_issues_by_severity_checks_and_changes(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    at = open_run_page(run_id, "Review")
    assert not at.exception
    text = _all_text(at)
    assert "Review cycle 1: :material/edit: Changes requested" in text  # no emoji font needed
    assert "High severity" in text and "Low severity" in text
    assert "Storage claim rests on one source" in text
    assert "Suggestion: Add a second source for storage" in text
    assert "Clear executive summary" in text
    checks = next(df.value for df in at.dataframe if "Check" in df.value.columns)
    assert "Every citation points to a gathered source" in set(checks["Check"])
    assert any("What changed in the revision" in e.label for e in at.expander)
    assert any("+## Open questions" in c.value for c in at.code)


def test_report_links_citations_to_sources_and_never_renders_web_text_as_markup(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    at = open_run_page(run_id, "Report")
    assert not at.exception
    body = "\n".join(m.value for m in at.markdown)
    assert "[[1]](https://example1.org/article-1)" in body
    assert "\\$0.10" in body  # a price is not typeset as maths
    # The hostile title is escaped: no raw tag, no javascript link.
    assert not re.search(r"(?<!\\)<img", body)
    assert "](javascript" not in body
    assert "\\<img" in body
    labels = [b.label for b in at.get("download_button")]
    assert labels == ["PDF", "Word", "Markdown", "BibTeX", "RIS", "Evidence CSV", "Evidence Excel"]
    assert not any(b.label == "Prepare PDF" for b in at.button)  # one click, no preparing


def test_tokens_and_cost_per_role(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    at = open_run_page(run_id, "Tokens and cost")
    table = at.dataframe[-1].value
    assert set(table["Role"]) == {"Researchers", "Writer"}  # what each does (research/voice.py)
    assert round(table["Cost (USD)"].sum(), 3) == 0.019


def test_unknown_run_id_is_explained(dash_env: Store) -> None:
    at = open_run_page("nope")
    assert any("There is no such run" in e.value for e in at.error)
    assert not any("nope" in e.value for e in at.error)  # no ids in the page


def test_interrupted_run_offers_resume_and_explains_why(dash_env: Store) -> None:
    run_id = finished_run(dash_env, status="interrupted")
    at = open_run_page(run_id)
    assert any("Interrupted" in w.value for w in at.warning)  # as every surface says it
    assert any(b.label == "Resume" for b in at.button)


def test_live_panel_tails_the_event_log(dash_env: Store) -> None:
    run_id = finished_run(dash_env, events=600)
    at = open_run_page(run_id)
    log = next(df.value for df in at.dataframe if "Event" in df.value.columns)
    assert len(log) == 200
    assert log["Message"].iloc[0] == "event 599"


@on_postgresql
def test_on_postgresql_every_tab_shows_the_same(dash_env: Store) -> None:
    """Each check above again, on one PostgreSQL database: the rows the tabs show come back
    from the other dialect (one database and job queue for all, not one per check)."""
    for check in (test_completed_run_shows_full_progress_steps_and_no_live_refresh,
                  test_source_table_lists_every_source_with_filters_and_charts,
                  test_review_feedback_shows_verdict_issues_by_severity_checks_and_changes,
                  test_report_links_citations_to_sources_and_never_renders_web_text_as_markup,
                  test_tokens_and_cost_per_role, test_interrupted_run_offers_resume_and_explains_why,
                  test_live_panel_tails_the_event_log):
        check(dash_env)
