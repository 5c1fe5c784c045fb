"""Passages of a page instead of the page (research/untrusted/excerpts.py, issue 31): what a relevance
score, the gaps call and a claim's check read."""

from __future__ import annotations

from research.untrusted.excerpts import excerpt, without_title

FILLER = " ".join(f"Paragraph {i} is about gardening and nothing else." for i in range(200))


def test_an_excerpt_keeps_the_sentence_with_the_claims_figure_within_the_limit() -> None:
    page = (f"{FILLER} Heat pump sales rose 38% in Poland in 2023. {FILLER} "
            f"Heat pump sales in Poland rose again. {FILLER}")
    chosen = excerpt(page, "Heat pump sales in Poland rose 38% [2].", limit=120)
    assert "Heat pump sales rose 38% in Poland in 2023." in chosen  # the figure decides
    assert len(chosen) <= 120


def test_an_excerpt_keeps_the_opening_then_the_nearest_passages() -> None:
    page = f"OFF-TOPIC: this page is about celebrity gardening.\n{FILLER} Solar panels cut bills."
    chosen = excerpt(page, "solar panels bills", limit=110, head=50)
    assert chosen.startswith("OFF-TOPIC: this page is about celebrity")
    assert chosen.endswith("Solar panels cut bills.") and len(chosen) <= 110


def test_a_short_page_is_sent_whole_and_one_without_overlap_from_its_start() -> None:
    assert excerpt("One  line.\n\n Another line.", "x", limit=500) == "One line.\nAnother line."
    start = excerpt(FILLER, "nuclear fusion", limit=60)
    assert FILLER.startswith(start) and 0 < len(start) <= 60


def test_a_first_line_repeating_the_title_is_dropped_unless_nothing_else_is_left() -> None:
    assert without_title("My title\nThe body.", "My  title") == "The body."
    assert without_title("Another title\nThe body.", "My title") == "Another title\nThe body."
    assert without_title("My title", "My title") == "My title"
