"""Deterministic draft checks: citations resolve, cited share, word count, staleness."""

from __future__ import annotations

from datetime import date

from research.core.records import Source
from research.report.checks import DraftChecks, cited_numbers, problems, run_checks, word_count

SOURCES = {
    "a": Source(id="a", url="https://a.example/", published="2026-05-01"),
    "b": Source(id="b", url="https://b.example/", published="2019-01-01"),
    "c": Source(id="c", url="https://c.example/", published=None),
}
NUMBERING = {1: "a", 2: "b", 3: "c"}


def _checks(text: str, **kw: int) -> DraftChecks:
    return run_checks(text, NUMBERING, SOURCES, max_words=kw.get("max_words", 500),
                      max_age_days=kw.get("max_age_days", 0), today=date(2026, 11, 22))


def test_grouped_and_range_citations_are_expanded() -> None:
    assert cited_numbers("x [1] y [2, 3] z [1-3] w [4][5]") == [1, 2, 3, 1, 2, 3, 4, 5]


def test_markdown_links_are_not_citations() -> None:
    assert cited_numbers("see [1](http://x.example) and [2]") == [2]


def test_unresolved_citations_are_reported() -> None:
    checks = _checks("Adoption rose by a third in 2025 [1]. Prices fell sharply last year [7].")
    assert checks.unresolved_citations == [7]
    assert not checks.all_citations_resolve and not checks.passed
    assert any("[7]" in p for p in problems(checks))


def test_cited_share_counts_factual_sentences_only() -> None:
    text = ("# Title\n\n## Key findings\n\nAdoption rose by a third in 2025 [1]. "
            "Installers report long waiting lists everywhere now. Sales doubled in two "
            "years across Europe [3].\n\n| a | b |\n|---|---|\n| 1 | 2 |\n\n"
            "## Open questions and gaps\n\nNobody knows what happens after the subsidy ends.")
    checks = _checks(text)
    # The table row gives figures without a citation: it is a factual statement too.
    assert checks.sentences == 4 and checks.cited_sentences == 2
    assert checks.cited_share == round(2 / 4, 3)


def test_word_limit_and_stale_sources() -> None:
    text = "Heat pumps sold well in the cold north of Europe [2]. " * 20
    checks = _checks(text, max_words=50)
    assert checks.word_count > 50 and not checks.within_word_limit
    assert checks.stale_sources == ["b"] and checks.stale_share == 1.0
    assert any("limit is 50" in p for p in problems(checks))


def test_clean_draft_passes() -> None:
    text = "Adoption rose by a third in 2025 [1]. Sales doubled in two years across Europe [3]."
    checks = _checks(text)
    assert checks.passed and problems(checks) == []
    assert word_count("one two [3] three") == 3


def test_removed_citations_and_uncited_statements_go_back_to_the_writer() -> None:
    text = ("## Key findings\n\nAdoption rose by a third in 2025 [1]. Prices fell by a fifth "
            "in two years.\n\n| Country | Share |\n|---|---|\n| Norway | 60% |\n")
    checks = run_checks(text, NUMBERING, SOURCES, max_words=500, max_age_days=0,
                        today=date(2026, 11, 22), removed_citations=2)
    assert checks.removed_citations == 2 and not checks.all_citations_resolve
    assert not checks.passed
    assert checks.uncited_examples == ["Prices fell by a fifth in two years.", "| Norway | 60% |"]
    said = " ".join(problems(checks))
    assert "2 citation(s)" in said and "Prices fell by a fifth" in said and "| Norway | 60% |" in said


def test_a_comparison_asked_for_must_hold_a_table() -> None:
    """The person asked for a comparison table (research/core/shapes.py): a draft without
    one fails its checks and the revision prompt says what is missing."""
    prose = "Adoption rose by a third in 2025 [1]. Sales doubled in two years across Europe [3]."
    table = prose + "\n\n| Option | Cost |\n| --- | --- |\n| Heat pump | 2.5 [1] |\n"
    plain = run_checks(prose, NUMBERING, SOURCES, max_words=500, max_age_days=0,
                       today=date(2026, 11, 22), needs_table=True)
    assert not plain.passed and not plain.has_table
    assert any("comparison table was asked for" in p for p in problems(plain))
    tabled = run_checks(table, NUMBERING, SOURCES, max_words=500, max_age_days=0,
                        today=date(2026, 11, 22), needs_table=True)
    assert tabled.has_table and tabled.passed and problems(tabled) == []
    assert _checks(prose).passed  # a report not asked to compare needs no table
