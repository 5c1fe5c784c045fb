"""The desired output shapes the report (issue 39): "a one-page brief" comes out as a brief
(no section per subtopic, short), "a comparison table" leads with a table; the shape is read
from the person's words the same way every time."""

from __future__ import annotations

import io
import re

import docx
import pytest

from research.core.config import build_config
from research.core.shapes import BRIEF, COMPARISON, LITERATURE_REVIEW, MEMO, REPORT, shape_of
from research.export.docx import to_docx
from research.export.run_document import build_document_for_run
from research.report.checks import word_count
from tests.runs import Runner

SMALL = {"preset": "quick", "SUBTOPIC_COUNT": 3, "SOURCES_PER_SUBTOPIC": 5,
         "SEARCHES_PER_SUBTOPIC": 1}


@pytest.mark.parametrize(("want", "shape"), [
    ("", REPORT),
    ("A one-page brief for my manager", BRIEF),
    ("one pager please", BRIEF),
    ("a short summary", BRIEF),
    ("Compare the heat pumps in a table", COMPARISON),
    ("a comparison table of the main options", COMPARISON),
    ("A memo I can send to the board", MEMO),
    ("a literature review of recent studies", LITERATURE_REVIEW),
    ("lots of detail and charts", REPORT),
])
def test_the_desired_output_names_its_shape(want: str, shape: object) -> None:
    assert shape_of(want) is shape


def test_a_brief_is_short_and_has_no_section_per_subtopic(runs: Runner) -> None:
    config = runs.config(**SMALL, want="A one-page brief, please")
    assert config.words_limit() == 450 < config.report_max_words
    store, run_id = runs.with_config(config)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    report = store.get_report(run_id)
    assert report is not None
    headings = re.findall(r"^(#{1,3}) (.+)$", report.markdown, re.MULTILINE)
    h2 = [text for level, text in headings if level == "##"]
    assert "Key points" in h2 and "What to do" in h2
    assert not any(level == "###" for level, _ in headings)  # no section per subtopic
    assert "Analysis by subtopic" not in h2 and "Confidence assessment" not in h2
    doc = build_document_for_run(store, run_id)
    assert word_count(doc.body) <= 450 * 1.2
    # The same shape in every export (Word read back with its own parser).
    word = docx.Document(io.BytesIO(to_docx(doc)))
    assert {"Key points", "What to do"} <= {p.text for p in word.paragraphs}
    plan = store.get_plan(run_id) or []
    assert len(plan) == 3  # researched as usual: only the writing takes the brief's shape


def test_a_comparison_table_leads_with_the_table(runs: Runner) -> None:
    config = runs.config(**SMALL, want="a comparison table of the options")
    store, run_id = runs.with_config(config)
    run = store.get_run(run_id)
    assert run is not None and run.status == "completed", run and run.error
    report = store.get_report(run_id)
    assert report is not None
    h2 = re.findall(r"^## (.+)$", report.markdown, re.MULTILINE)
    assert h2.index("Comparison") < h2.index("Key findings")
    assert re.search(r"^\|.+\|\s*$\n^\|\s*-{3}", report.markdown, re.MULTILINE)
    assert "Analysis by subtopic" not in h2


def test_the_full_report_keeps_its_outline(runs: Runner) -> None:
    config = build_config(env={}, preset="quick")
    assert config.shape() is REPORT and config.words_limit() == config.report_max_words
