"""Run page: the Rounds tab (coverage, triage, why research stopped) and the Engines tab
(hosted reports side by side, each with its own downloads, nothing rendered as markup)."""

from __future__ import annotations

import re

import pytest
from streamlit.testing.v1 import AppTest

from dashboard import rounds_view
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixture
    APP,
    add_engine_reports,
    add_rounds,
    dash_env_fixture,
    finished_run,
    open_run_page,
)

pytestmark = pytest.mark.usefixtures("dash_env")




def _frame(at: AppTest, column: str):
    return [df.value for df in at.dataframe if column in df.value.columns]


def test_rounds_tab_shows_coverage_triage_and_why_research_stopped(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    add_rounds(dash_env, run_id)
    at = open_run_page(run_id, "Rounds")
    assert not at.exception
    # (the page's own sections, below the report, are not the tab's)
    page_sections = ("Sources", "Ask the report", "Behind the report")
    assert [h.value for h in at.subheader if h.value not in page_sections] == ["Round 1", "Round 2"]
    assert any("Why research stopped" in i.value and "maximum number of research rounds" in i.value
               for i in at.info)
    coverage = _frame(at, "Coverage")
    assert list(coverage[0]["Subtopic"]) == ["Growth figures", "Costs"]
    assert list(coverage[0]["Coverage"]) == ["Answered", "Conflicting"]
    assert list(coverage[1]["Subtopic"]) == ["Grid connection queues"]
    [triage] = _frame(at, "Decision")
    assert list(triage["Decision"]) == ["🚫 Filtered", "🔎 Answered by a quick lookup",
                                        "⬆️ New subtopic next round"]
    assert list(triage["Reason"])[0] == "redundant with the plan"
    assert triage["Searches"].iloc[1] == 2 and triage["Lookup"].iloc[1] == "Done · 3 sources"
    assert triage["Question"].iloc[0] == "Is <b>rooftop</b> solar counted?"  # plain text in a table
    body = "\n".join(m.value for m in at.markdown)
    assert "New subtopics for round 2:** Grid connection queues" in body


def test_rounds_tab_before_any_round_explains_what_will_appear(dash_env: Store) -> None:
    at = open_run_page(finished_run(dash_env), "Rounds")
    assert any("follow-up questions" in i.value for i in at.info)


def test_stop_reasons_read_as_plain_words() -> None:
    assert rounds_view.stop_text("MAX_ROUNDS reached.", {"max_rounds": 3}) == \
        "The maximum number of research rounds (3) was reached."
    assert rounds_view.stop_text("DEPTH reached.", {"max_rounds": 1, "depth": 4}) == \
        "The maximum number of research rounds (4) was reached."
    assert "nothing" in rounds_view.stop_text("No new, relevant, non-redundant question remains.")
    budget = "Research stopped because the cost cap of $0.05 was reached ($0.06 spent)."
    assert rounds_view.stop_text(budget) == budget


def test_engines_tab_shows_hosted_reports_side_by_side_with_their_own_downloads(dash_env: Store) -> None:
    run_id = finished_run(dash_env, engine="all")
    add_engine_reports(dash_env, run_id)
    at = open_run_page(run_id, "Engines")
    assert not at.exception
    headings = [h.value.replace("\\", "") for h in at.subheader  # md_text escapes ( )
                if h.value not in ("Sources", "Ask the report", "Behind the report")]
    # (the finished report's own sections come before the tabs)
    assert headings[:3] == ["Multi-agent research (built in)",
                            "OpenAI deep research (o4-mini-deep-research)", "Gemini Deep Research"]
    captions = " | ".join(c.value for c in at.caption)
    assert "Completed · \\$0.42 ·" in captions and "Failed" in captions  # cents, one voice
    assert any("quota exhausted" in e.value for e in at.error)
    downloads = [b for b in at.get("download_button")]
    assert {b.proto.label for b in downloads} >= {"Markdown"}
    # The report at the top, then built in + OpenAI in the Engines tab; PDF in one click each.
    assert len([b for b in downloads if b.proto.label == "Markdown"]) == 3
    assert len([b for b in downloads if b.proto.label == "PDF"]) == 3
    body = "\n".join(m.value for m in at.markdown)
    assert "Modules got cheaper" in body
    assert not re.search(r"(?<!\\)<img", body)
    assert "](javascript" not in body
    assert "evil.example" not in body  # no tracking image, no link the page asked for
    assert not re.search(r"(?<!\\)!\[", body)


def test_engines_tab_is_absent_for_a_pipeline_only_run(dash_env: Store) -> None:
    at = open_run_page(finished_run(dash_env))
    labels = [t.label for t in at.tabs]
    assert "Rounds" in labels and "Engines" not in labels
