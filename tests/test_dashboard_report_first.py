"""The report first (a finished run leads with summary, downloads and report) and live tabs (a
running run's tabs show the plan, sources, verdicts and newest draft stored so far)."""

from __future__ import annotations

from typing import Any

from streamlit.testing.v1 import AppTest

from dashboard import run_report
from research.core.records import Run, Verdict
from storage import Store
from tests.dashboard_fixtures import (  # noqa: F401 - fixtures
    DRAFT_1,
    PLAN,
    dash_env_fixture,
    finished_run,
    open_run_page,
    running_run,
    source,
)


def _kinds(at: AppTest) -> list[str]:
    """The main area's top-level elements in order (their type names)."""
    return [node.type for node in at.main.children.values()]


def test_finished_run_leads_with_summary_downloads_then_report(dash_env: Store) -> None:
    run_id = finished_run(dash_env)
    dash_env.set_run_warnings(run_id, ["Stopped by the budget."])
    dash_env.save_verifications(run_id, [
        Verdict("c1", "Solar grew.", ("s0001",), "SUPPORTED", status="supported", passage="grew",
                section="Executive summary")])
    at = open_run_page(run_id)
    assert not at.exception
    assert not at.success  # a run with warnings is never shown as a plain success
    summary = at.warning[0].value.replace("\\", "")  # md_text escapes ( )
    assert "Stopped by the budget." in summary
    assert "3 sources cited (6 kept)" in summary and "1 of 1 claims verified" in summary
    assert "1 warning" in summary
    labels = [b.proto.label for b in at.get("download_button")]
    assert labels[:3] == ["PDF", "Word", "Markdown"]
    # The report comes before the progress details, which sit in a collapsed section.
    texts = [m.value for m in at.markdown]
    report_at = next(i for i, t in enumerate(texts) if "Solar capacity grew fast" in t)
    details = next(e for e in at.expander if e.label.startswith("How the run went"))
    assert details.proto.expanded is False
    assert report_at >= 0 and at.progress  # the progress bar is still there, inside it
    tab_labels = [t.label for t in at.tabs]
    assert "Report" not in tab_labels and "Plan" in tab_labels
    # Sources, the question box and how the run was checked are one click from the top, not
    # thousands of pixels down: links above the report to anchors that exist below it.
    jump = next(i for i, t in enumerate(texts) if "#report-sources" in t)
    assert jump < report_at
    assert "#ask-the-report" in texts[jump] and "#how-the-run-went" in texts[jump]
    anchors = {h.proto.anchor for h in at.get("subheader") + at.get("header")}
    assert {"report-sources", "ask-the-report", "how-the-run-went"} <= anchors, anchors


def test_a_report_note_is_counted_in_the_summary_and_shown_once(dash_env: Store) -> None:
    """A caveat the report carries (a model answered short) makes the summary line say
    "1 warning" in a yellow box, never "no warnings" above a yellow note; and the note is
    shown once, not again under the summary."""
    run_id = finished_run(dash_env)
    report = dash_env.get_report(run_id)
    assert report is not None
    note = ("Only 2 of the 3 decisions on follow-up questions asked for came back; "
            "1 follow-up question was set aside undecided.")
    dash_env.save_report(run_id, report.markdown, meta={**report.meta, "notes": [note]})
    at = open_run_page(run_id)
    assert not at.exception
    assert not at.success
    boxes = [w.value.replace("\\", "") for w in at.warning]
    assert "no warnings" not in boxes[0] and "1 warning" in boxes[0]
    assert sum(note in b for b in boxes) == 1


def test_export_bytes_are_built_once_per_run_and_format() -> None:
    calls: list[int] = []

    def build() -> bytes:
        calls.append(1)
        return b"%PDF-1.7"

    key = ("run-x", "", "stamp", "pdf")
    assert run_report.cached_export(key, build) == b"%PDF-1.7"
    assert run_report.cached_export(key, build) == b"%PDF-1.7"
    assert len(calls) == 1

    def broken() -> bytes:
        raise RuntimeError("boom")

    bad = ("run-x", "", "stamp", "docx")
    try:
        run_report.cached_export(bad, broken)
    except RuntimeError:
        pass
    assert run_report.export_failure(bad) == "a problem in the program itself"


def _tab(run_id: str, tab: str) -> AppTest:
    at = open_run_page(run_id, tab)
    assert not at.exception
    return at


def _all_text(at: AppTest) -> str:
    parts: list[Any] = [m.value for m in at.markdown] + [i.value for i in at.info]
    parts += [w.value for w in at.warning]
    return "\n".join(str(p) for p in parts)


def test_running_run_tabs_show_what_exists_so_far(dash_env: Store) -> None:
    run_id = running_run(dash_env)
    assert "appears here" in _all_text(_tab(run_id, "Plan"))
    dash_env.save_plan(run_id, PLAN)
    assert "Growth figures" in _all_text(_tab(run_id, "Plan"))  # as soon as it is made

    records = [source(1), source(2)]
    dash_env.start_step(run_id, "research:t1", kind="research", label="Researching")
    dash_env.complete_research_step(run_id, "research:t1", sources=records, findings=[],
                                    queries=[], skipped=[])
    at = _tab(run_id, "Sources")
    table = next(df.value for df in at.dataframe if "Relevance" in df.value.columns)
    assert len(table) == 2  # kept sources show while the run goes on

    dash_env.save_draft(run_id, 1, "partial", DRAFT_1, {1: "s0001", 2: "s0002"}, 30)
    text = _all_text(_tab(run_id, "Report"))
    assert "Draft in progress" in text and "Solar capacity grew fast" in text

    dash_env.save_verifications(run_id, [
        Verdict("c1", "Solar grew.", ("s0001",), "SUPPORTED", status="supported", passage="grew",
                section="Summary")])
    at = _tab(run_id, "Verification")
    verdicts = next(df.value for df in at.dataframe if "Claim" in df.value.columns)
    assert list(verdicts["Claim"]) == ["Solar grew."]


def test_setting_names_become_plain_words_and_runs_are_named_by_question() -> None:
    from dashboard import views

    assert views.plain_words("MAX_ROUNDS reached; set OPENAI_API_KEY") == (
        "\u201cresearch rounds\u201d reached; set the OpenAI key")
    assert views.plain_words("DEEP_RESEARCH_SUBTOPIC_COUNT must be 3-10") == (
        "\u201csubtopics\u201d must be 3-10")
    assert views.plain_words("HTTP_ERROR stays") == "HTTP_ERROR stays"  # only known names
    run = Run(id="abc123", question="Solar?", status="completed",
              created_at="2024-07-01T10:20:00Z", config={"preset": "quick"})
    assert views.run_name(run) == "Solar? · 2024-07-01 · Quick"
    assert views.run_name(run, with_time=True) == "Solar? · 2024-07-01 10:20 · Quick"


def test_a_long_dig_deeper_question_is_trimmed_in_the_heading(dash_env: Store) -> None:
    long_question = "Dig deeper: " + "a flattened | table | row " * 40
    run_id = finished_run(dash_env, long_question)
    at = open_run_page(run_id)
    heading = next(m.value for m in at.markdown if m.value.startswith("#### "))
    assert len(heading) < 200 and heading.endswith("…")
    assert any(e.label == "The full question" for e in at.expander)


def test_report_tab_grows_as_sections_are_written(dash_env: Store) -> None:
    """Sections appear in the Report tab while the run is going, each as it is finished (the
    live fragment reruns; no reload), and the final draft replaces the partial one."""
    from tests.dashboard_fixtures import DRAFT_2

    run_id = running_run(dash_env)
    at = _tab(run_id, "Report")
    assert "appears here as soon as the first part of it is written" in _all_text(at)
    first = "## Key findings\n\n- Storage is the bottleneck [1].\n"
    dash_env.save_draft(run_id, 1, "partial", first, {1: "s0001"}, 6)
    text = _all_text(at.run())
    assert "Storage is the bottleneck" in text and "1 section (6 words) written so far" in text
    assert "Grid build-out" not in text
    second = first + "\n## Open questions\n\nGrid build-out remains uncertain [1].\n"
    dash_env.save_draft(run_id, 1, "partial", second, {1: "s0001"}, 11)
    text = _all_text(at.run())  # the same page, rerun as its live fragment does
    assert "Grid build-out remains uncertain" in text and "2 sections (11 words)" in text
    dash_env.save_draft(run_id, 1, "draft", DRAFT_2, {1: "s0001", 2: "s0002"}, 30)
    text = _all_text(at.run())
    assert "written so far" not in text and "version 1, 30 words" in text
    assert "Solar capacity grew fast" in text
